"""Observations: where a real ORT session put each node (docs/contract.md §5).

partsim's own observation JSON (``schemaVersion``), and importers for what
devices record: the per-level records of ``shared/observed/*/observed.json``
(``get_provider_graph_assignment_info`` + optimized model + VERBOSE log) and a
plain ORT profiling JSON (``enable_profiling``; ``<node>_kernel_time`` events
with ``args.provider``).
"""

import re

from ..errors import ObservationError
from ..sim.pipeline import ORT_LEVEL
from ..sim.pipeline import normalize_level as normalize_level_name

__all__ = ["OBSERVATION_SCHEMA_VERSION", "LEVELS", "normalize_level", "import_observation",
           "observation_from_records", "MEMCPY_OPS", "is_unnamed"]

OBSERVATION_SCHEMA_VERSION = "1.0"
MAX_OBSERVATION_BYTES = 256 * 1024 * 1024

# partsim name -> ORT GraphOptimizationLevel name (one table: partsim.sim.pipeline)
LEVELS = ORT_LEVEL


def normalize_level(level):
    """A session's level (``none``/``disable``/``ORT_DISABLE_ALL`` -> ``disable``, ...), or an
    :class:`ObservationError` naming the levels; ``None`` stays ``None``."""
    if level is None:
        return None
    key = normalize_level_name(level, allowed=ORT_LEVEL)
    if key is None:
        raise ObservationError(f"unknown optimization level {level!r} (use {', '.join(ORT_LEVEL)})")
    return key


def _memcpy_counts(ops):
    return {"fromHost": sum(1 for o in ops if o == "MemcpyFromHost"),
            "toHost": sum(1 for o in ops if o == "MemcpyToHost")}


MEMCPY_OPS = ("MemcpyFromHost", "MemcpyToHost")


_UNNAMED = "<unnamed "


def is_unnamed(name):
    """Was this observed node reported by ORT without a name (``<unnamed OP>#k``)?  Such a node
    cannot be matched to a node of the model by name."""
    return not name or name.startswith(_UNNAMED)


class _UniqueNames:
    """One name per reported node.  ORT reports an unnamed node with an empty name, and the nodes of a
    function it inlined under their names in the body (``_inlfunc_F_r``, the next call of F
    ``_inlfunc_F_token_0_r``; empty again when the body's nodes have no names): several nodes can
    share a name, and keyed by name they would collapse into one.  The first keeps its name; a
    repeat becomes ``name#2``, ``name#3`` …; an empty name ``<unnamed OP>#k``, which no model node is
    called, so verify lists it instead of matching it to a node by accident."""

    def __init__(self):
        self.count = {}

    def __call__(self, name, op):
        base = name or f"{_UNNAMED}{op}>"
        k = self.count.get(base, 0) + 1
        self.count[base] = k
        if name and k == 1:
            return name
        return f"{base}#{k}"


def observation_from_records(rec, runtime="", device="", path="", level=None, strict=True):
    """One session record -> partsim observation.

    ``rec`` is a record of the shared ``observed.json`` format or one made by
    :mod:`partsim.runtime.ort_child` (same keys).  Placement, best source first:
    ``assignment`` (``get_provider_graph_assignment_info``), the VERBOSE
    ``placement`` log (ORT < 1.24), ``profile_nodes``.  Memcpy counts, best first:
    the complete MemcpyTransformer log (all graphs), the optimized model (main graph),
    the profile (each copy ran once), the assignment groups.  With ``strict`` a record
    without any placement is an ObservationError; otherwise it gives an empty one.
    """
    nodes, ops_of, partitions, source, final, final_ops = _placement(rec, level)
    if source is None and strict:
        why = rec.get("create_error") or rec.get("crash") or "no assignment or profile in the record"
        raise ObservationError(f"record for level {rec.get('level')} has no placement: {str(why)[:200]}", path)
    memcpy, memcpy_source = _memcpy_of(rec)
    obs = {
        "schemaVersion": OBSERVATION_SCHEMA_VERSION,
        "source": source,
        "runtime": runtime,
        "device": device,
        "level": normalize_level(level if level is not None else rec.get("level")),
        "requested": list(rec.get("requested") or []),
        "granted": list(rec.get("granted") or []),
        "nodes": dict(sorted(nodes.items())),
        "opTypes": dict(sorted(ops_of.items())),
        "partitions": partitions,
        "memcpy": memcpy,
        "memcpySource": memcpy_source,
    }
    plugin = rec.get("plugin") if isinstance(rec.get("plugin"), dict) else {}
    if plugin.get("package") and plugin.get("version"):  # the plugin EP's release beside ORT's ("runtime")
        obs["plugins"] = {str(plugin["package"]): str(plugin["version"])}
    elif rec.get("qnn"):  # recorded before partsim.runtime.plugin_eps
        obs["plugins"] = {"onnxruntime-qnn": str(rec["qnn"])}
    if final:
        # the second view: what ran after Level 2/3 (compared with the prediction's finalNodes)
        obs["finalNodes"] = dict(sorted(final.items()))
        obs["finalOpTypes"] = dict(sorted(final_ops.items()))
        obs["finalSource"] = "profile (final graph, after Level 2/3)"
    if rec.get("create_error") or rec.get("state") == "create_failed":
        obs["status"] = "session_would_fail"
    elif source is not None:
        obs["status"] = "ok"
    return obs


def _placement(rec, level):
    """Where the record's nodes ran, best source first: ``(nodes, op types, partitions, source, final
    nodes, final op types)``; ``source`` is ``None`` when the record has no placement at all."""
    unique = _UniqueNames()
    nodes, ops_of, partitions = _from_assignment(rec, unique)
    source = "assignment_info" if nodes else None
    lvl = normalize_level(level if level is not None else rec.get("level"))
    final, final_ops = None, {}
    if lvl in ("extended", "layout", "all") and nodes and rec.get("run_error"):
        # the run stopped early, so its profile is partial: only the partitioning-time graph is known
        source = "assignment_info (at partitioning, before Level 2/3: the run failed)"
    elif lvl in ("extended", "layout", "all") and rec.get("profile_nodes"):
        final, final_ops = _final_nodes(rec, nodes)
    if not nodes and final:
        # no assignment info (ORT < 1.24): the profile is all there is, and it is the final graph
        nodes, ops_of, final = final, final_ops, None
        partitions = [{"provider": ep, "nodes": [n]} for n, ep in nodes.items()]
        source = "profile (final graph, after Level 2/3)"
    if not nodes:
        for ep, entry in (rec.get("placement") or {}).items():
            if isinstance(entry, dict) and isinstance(entry.get("nodes"), list):
                for op, name in entry["nodes"]:
                    if op not in MEMCPY_OPS:
                        name = unique(name, op)
                        nodes[name] = ep
                        ops_of[name] = op
        if nodes:
            source = "placement_log"
    if not nodes and rec.get("profile_nodes"):
        for name, op, ep in rec["profile_nodes"]:
            if op in MEMCPY_OPS or not ep:
                continue
            name = unique(name, op)
            nodes[name] = ep
            ops_of[name] = op
        source = "profile" if nodes else None
    return nodes, ops_of, partitions, source, final, final_ops


def _from_assignment(rec, unique):
    """``(nodes, op types, partitions)`` from the record's ``assignment`` groups (Memcpy left out)."""
    nodes, ops_of, partitions = {}, {}, []
    profile_name = _profile_names_for_unnamed(rec)
    for ep, members in rec.get("assignment") or []:
        names = []
        for m in members:
            name, op = unique(m[0] or profile_name(m[1], ep), m[1]), m[1]
            if op in MEMCPY_OPS:
                continue
            nodes[name] = ep
            ops_of[name] = op
            names.append(name)
        if names:
            partitions.append({"provider": ep, "nodes": names})
    return nodes, ops_of, partitions


def _memcpy_of(rec):
    """``(Memcpy counts, where they come from)``, best first: the MemcpyTransformer log (all graphs), the
    optimized model (main graph), the profile (each copy ran once), the assignment groups."""
    mem_ops = ([o[1] for o in rec.get("optimized_ops") or []] or [o[1] for o in rec.get("profile_nodes") or []]
               or [m[1] for _, ms in (rec.get("assignment") or []) for m in ms])
    memcpy, memcpy_source = _memcpy_counts(mem_ops), "optimized model (main graph only)"
    if not rec.get("optimized_ops"):
        memcpy_source = "profile" if rec.get("profile_nodes") else "assignment groups"
        if rec.get("profile_nodes") and rec.get("run_error"):  # a partial profile: the copies after it are missing
            memcpy, memcpy_source = {}, "none (the run failed part way, so its profile is partial)"
    from_log = _memcpy_from_log(rec.get("memcpy_log") or [])
    if from_log is not None:  # the VERBOSE log covers If/Loop bodies too
        memcpy, memcpy_source = from_log, "MemcpyTransformer log (all graphs)"
    return memcpy, memcpy_source


def _final_nodes(rec, partitioned):
    """The graph the session ran (after Level 2/3): ``({name: provider}, {name: op})``.

    Assignment info is recorded at partitioning, before Level 2/3 rewrite the graph: the session's final
    nodes are the ones that ran (profile), plus nodes of the saved optimized model that did not run (a
    branch not taken); a compiling EP runs its partitions as fused nodes, so its members stay as assigned.
    """
    ran = {x[0] for x in rec["profile_nodes"]}
    compiled = {ep for ep in set(partitioned.values()) if ep != "CPUExecutionProvider"
                and not any(n in ran for n, e in partitioned.items() if e == ep)}
    final = {n: e for n, e in partitioned.items() if e in compiled}
    ops = {}
    unique_ran = _UniqueNames()
    for name, op, ep in rec["profile_nodes"]:
        if op not in MEMCPY_OPS and ep and ep not in compiled:
            name = unique_ran(name, op)
            final[name] = ep
            ops[name] = op
    kept = {o[0]: o[1] for o in rec.get("optimized_ops") or [] if o and o[0]}
    for name, ep in partitioned.items():
        if name not in final and name in kept:
            final[name] = ep
            ops[name] = kept[name]
    return final, ops


def _profile_names_for_unnamed(rec):
    """``name(op, ep)``: a name for a node the assignment info reports without one.

    ``get_provider_graph_assignment_info`` gives such a node an empty name, while ORT's profiler
    calls it ``<op>_<node index>`` (``sequential_executor.cc``; the index a node got when the graph
    was loaded, Constant nodes not counted), the name partsim's IR gives it too.  When the model
    ran, each unnamed member takes the next profiled name of its op type and provider that no
    named member has; two nodes that could swap names have the same op and provider, so the
    placement read is the same either way.

    A member the profile cannot name (a compiling EP runs its partition as one fused node; a run
    that failed) takes the name of the model's unnamed node of its op (``unnamed_loaded``, what
    the caller read from the model: ``[[op, index], ...]``) when that is certain: the assignment
    reports as many unnamed nodes of that op as the model has, all on one provider (so which is
    which changes no placement).  Otherwise: ``""`` (unnamed).
    """
    assignment = rec.get("assignment") or []
    named = {m[0] for _, ms in assignment for m in ms if m and m[0]}
    pool = {}
    for entry in rec.get("profile_nodes") or []:
        name, op, ep = (list(entry) + [None, None, None])[:3]
        if name and name not in named and op and ep and name == f"{op}_{name[len(op) + 1:]}" \
                and name[len(op) + 1:].isdigit():
            names = pool.setdefault((op, ep), [])
            if name not in names:  # a node of a loop body runs (and is profiled) more than once
                names.append(name)
    for names in pool.values():
        names.reverse()  # pop() hands them out in the order they ran

    profiled = {(op, ep): len(names) for (op, ep), names in pool.items()}
    loaded = {}
    for entry in rec.get("unnamed_loaded") or []:
        op, index = (list(entry) + [None, None])[:2]
        if isinstance(op, str) and isinstance(index, int) and f"{op}_{index}" not in named:
            loaded.setdefault(op, []).append(f"{op}_{index}")
    unnamed_eps = {}
    for ep, ms in assignment:
        for m in ms:
            if m and not m[0] and len(m) > 1:
                unnamed_eps.setdefault(m[1], []).append(ep)
    for op, eps in unnamed_eps.items():
        names = loaded.get(op, [])
        if len(set(eps)) == 1 and len(names) == len(eps) and not profiled.get((op, eps[0])):
            pool[(op, eps[0])] = list(reversed(names))

    def name(op, ep):
        left = pool.get((op, ep))
        return left.pop() if left else ""
    return name


_ADDED = re.compile(r"^(\d+) Memcpy nodes are added to the graph (\S+)")


def _memcpy_from_log(lines):
    """Memcpy counts per direction from ORT's VERBOSE MemcpyTransformer lines, when complete.

    ``Add MemcpyFromHost after T for EP`` / ``Add MemcpyToHost before T …`` name each copy;
    ``N Memcpy nodes are added to the graph G`` gives the total per graph.  The per-copy
    lines are used only when they add up to those totals (a recorder may cut the log).
    """
    totals = [int(m.group(1)) for m in (_ADDED.match(line.strip()) for line in lines) if m]
    adds = [line for line in lines if line.startswith("Add Memcpy")]
    counts = {"fromHost": sum("MemcpyFromHost" in a for a in adds), "toHost": sum("MemcpyToHost" in a for a in adds)}
    if not totals or sum(totals) != counts["fromHost"] + counts["toHost"]:
        return None
    return counts


def _from_profile(events, path):
    nodes, ops = {}, {}
    fused = []
    for ev in events:
        if not isinstance(ev, dict) or ev.get("cat") != "Node":
            continue
        name = ev.get("name", "")
        if not isinstance(name, str) or not name.endswith("_kernel_time"):
            continue
        args = ev.get("args") or {}
        base, ep, op = name[: -len("_kernel_time")], args.get("provider"), args.get("op_name")
        if not ep:
            continue
        if op in ("MemcpyFromHost", "MemcpyToHost"):
            ops[base] = op
            continue
        if op and op.startswith(ep.replace("ExecutionProvider", "")) or base.startswith(ep.replace("ExecutionProvider", "") + "_"):
            fused.append({"provider": ep, "name": base})
        nodes[base] = ep
        ops[base] = op
    if not nodes:
        raise ObservationError("profiling JSON has no node events (was enable_profiling on and the model run?)", path)
    return {
        "schemaVersion": OBSERVATION_SCHEMA_VERSION, "source": "profile", "runtime": "", "device": "",
        "level": None, "requested": [], "granted": sorted(set(nodes.values())),
        "nodes": dict(sorted(nodes.items())), "opTypes": dict(sorted((k, v) for k, v in ops.items() if k in nodes)),
        "partitions": [], "fusedPartitions": fused,
        "memcpy": _memcpy_counts(list(ops.values())),
    }


def _check_own(obs, path):
    if not isinstance(obs.get("nodes"), dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in obs["nodes"].items()):
        raise ObservationError("'nodes' must map node names to provider names", path)
    mem = obs.get("memcpy", {})
    if not isinstance(mem, dict) or not all(isinstance(mem.get(k, 0), int) for k in ("fromHost", "toHost")):
        raise ObservationError("'memcpy' must hold integer fromHost/toHost counts", path)
    obs.setdefault("partitions", [])
    obs["level"] = normalize_level(obs.get("level"))
    return obs


def import_observation(path, level=None):
    """Read an observation file of any supported format.

    Parameters
    ----------
    path : str or Path
    level : str, optional
        For multi-level files (``observed.json``): which optimization level to take.

    Returns
    -------
    dict
        partsim observation (see :data:`OBSERVATION_SCHEMA_VERSION`).
    """
    from ..io.structured import read_structured

    data = read_structured(path, "json", "observation", MAX_OBSERVATION_BYTES, ObservationError, "the observation")
    want = normalize_level(level) if level else None
    if isinstance(data, list):
        obs = _from_profile(data, path)
        if want:
            obs["level"] = want
        return obs
    if not isinstance(data, dict):
        raise ObservationError("an observation must be a JSON object or a profiling event list", path)
    if "records" in data:
        recs = data["records"]
        if not isinstance(recs, list) or not recs:
            raise ObservationError("'records' must be a non-empty list", path)
        want = want or "disable"
        for rec in recs:
            if isinstance(rec, dict) and normalize_level(rec.get("level")) == want:
                return observation_from_records(rec, data.get("runtime", ""), data.get("device", ""), path)
        levels = ", ".join(str(r.get("level")) for r in recs if isinstance(r, dict))
        raise ObservationError(f"no record for optimization level {want} (has: {levels})", path)
    if "schemaVersion" in data and "nodes" in data:
        return _check_own(data, path)
    raise ObservationError("unrecognised observation format (expected partsim observation JSON, "
                           "observed.json records, or an ORT profiling JSON)", path)
