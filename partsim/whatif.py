"""What-if analysis: lift one cause, re-simulate, count what disappears.

``partsim blame`` and ``partsim whatif`` are built from the pieces here:

* **lifting** -- a modified copy of the first provider's :class:`~partsim.ruletable.RuleTable`
  (``dataclasses.replace``; tables and rules are frozen) that no longer applies one cause:
  an op type accepted for any dtype and shape (:func:`lift_op_type`), or one rejection
  category switched off for every rule (:func:`lift_reason`);
* **re-simulation** -- :func:`partsim.sim.simulate` and :func:`partsim.sim.summarize` are
  pure, so the model is loaded and shape-inferred once (:func:`prepare`) and every lifted
  table is simulated on the same :class:`~partsim.model.Model`; only a change of the graph
  itself (a fixed symbolic dimension, another opset, another optimization level) loads a
  variant (:func:`load_variant`);
* **cost** -- bytes that cross a provider boundary per inference and, for a link
  (bandwidth, per-copy latency), the time those copies take (:func:`metrics`,
  :func:`parse_link`).

Every number is a count of the re-simulated summary, never an estimate from the
baseline: "partitions saved" by lifting a cause is ``before - after``.

Copies per inference (decision; SPEC section 1 counts transfers and Memcpy apart):
every pair of ``transferList`` is one copy of its tensor, and every predicted Memcpy
whose tensor is not already a transfer (a graph input copied by a node, a device
output read from host memory by a device kernel's host port) is one more.  A
tensor moved for one transfer and one Memcpy (the usual CUDA case) is counted once.
Graph inputs copied at feed time are reported apart (``feedBytes``), not as
boundary bytes.  Copies whose tensor has no static shape count towards ``copies``
and the latency but not towards bytes; ``unsizedCopies`` says how many.
"""

import re
from dataclasses import dataclass, replace

from .errors import ModelError, UsageError
from .model import topological_order
from .ruletable import OpRule
from .schemas import normalize_domain
from .sim import resolve_providers, simulate, summarize
from .sim.assign import CPU, _canonical

__all__ = [
    "Link", "LINK_PRESETS", "parse_link", "metrics", "copy_time_us",
    "lift_op_type", "lift_reason", "add_support", "parse_support_spec", "LIFTABLE_REASONS",
    "Context", "prepare", "load_variant", "fix_dims_in_proto", "dim_params",
    "blame", "whatif", "METRIC_KEYS",
]

SCHEMA_VERSION = "1.0"


# --------------------------------------------------------------------------------------------
# links and cost
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Link:
    """A host<->device link: bandwidth in bytes/s per direction, latency in seconds per copy."""

    name: str
    bandwidth: float
    latency: float
    source: str = "given on the command line"

    def to_json(self):
        return {"name": self.name, "bandwidthBytesPerSecond": self.bandwidth,
                "latencyMicroseconds": round(self.latency * 1e6, 6), "source": self.source}


# Named links.  Bandwidths are per direction, from the standards named; the per-copy
# latencies are NOT in those standards: they are stated assumptions (order of magnitude of
# one copy call plus its synchronisation), to be replaced by --link BW,LAT with measured values.
LINK_PRESETS = {
    # PCIe 3.0: 8 GT/s x 16 lanes, 128b/130b encoding -> 15.75 GB/s (PCI-SIG PCIe Base Spec 3.0)
    "pcie3-x16": Link("pcie3-x16", 8e9 * 16 * 128 / 130 / 8, 8e-6,
                      "PCI-SIG PCI Express Base Specification 3.0: 8 GT/s x16, 128b/130b = 15.75 GB/s per "
                      "direction; 8 us per copy is an assumption"),
    # PCIe 4.0: 16 GT/s x 16 lanes, 128b/130b -> 31.5 GB/s (PCI-SIG PCIe Base Spec 4.0)
    "pcie4-x16": Link("pcie4-x16", 16e9 * 16 * 128 / 130 / 8, 8e-6,
                      "PCI-SIG PCI Express Base Specification 4.0: 16 GT/s x16, 128b/130b = 31.5 GB/s per "
                      "direction; 8 us per copy is an assumption"),
    # PCIe 5.0: 32 GT/s x 16 lanes, 128b/130b -> 63.0 GB/s (PCI-SIG PCIe Base Spec 5.0)
    "pcie5-x16": Link("pcie5-x16", 32e9 * 16 * 128 / 130 / 8, 8e-6,
                      "PCI-SIG PCI Express Base Specification 5.0: 32 GT/s x16, 128b/130b = 63.0 GB/s per "
                      "direction; 8 us per copy is an assumption"),
    # Mobile SoC, CPU and accelerator share LPDDR5 DRAM: a copy is a DRAM-to-DRAM memcpy.
    # LPDDR5-6400 on a 64-bit bus peaks at 6400 MT/s x 8 B = 51.2 GB/s (JEDEC JESD209-5);
    # a copy reads and writes every byte, so half of that.
    "mobile-soc": Link("mobile-soc", 6400e6 * 8 / 2, 1e-6,
                       "JEDEC JESD209-5 LPDDR5-6400, 64-bit bus: 51.2 GB/s peak, halved because a copy in "
                       "shared memory reads and writes each byte = 25.6 GB/s; 1 us per copy is an assumption"),
}

_BW_UNITS = {"b/s": 1, "kb/s": 1e3, "mb/s": 1e6, "gb/s": 1e9, "tb/s": 1e12,
             "kib/s": 1024, "mib/s": 1024**2, "gib/s": 1024**3, "tib/s": 1024**4,
             "gbit/s": 1e9 / 8, "mbit/s": 1e6 / 8, "gbps": 1e9 / 8, "mbps": 1e6 / 8}
_LAT_UNITS = {"s": 1, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
_NUMBER = r"([0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)"


def parse_link(text):
    """A preset name or ``BANDWIDTH[,LATENCY]`` -> :class:`Link`.

    Examples
    --------
    >>> parse_link("12GB/s,8us").bandwidth, parse_link("12GB/s,8us").latency
    (12000000000.0, 8e-06)
    >>> round(parse_link("pcie4-x16").bandwidth / 1e9, 2)
    31.51
    """
    raw = str(text).strip()
    if raw.lower() in LINK_PRESETS:
        return LINK_PRESETS[raw.lower()]
    parts = [p.strip() for p in raw.split(",")]
    if not parts or len(parts) > 2 or not parts[0]:
        raise UsageError(f"--link {raw!r}: expected BANDWIDTH[,LATENCY] (e.g. 12GB/s,8us) or one of "
                         f"{', '.join(sorted(LINK_PRESETS))}")
    m = re.fullmatch(_NUMBER + r"\s*([A-Za-z/]+)", parts[0])
    if not m or m.group(2).lower() not in _BW_UNITS:
        raise UsageError(f"--link {raw!r}: bandwidth {parts[0]!r} is not a number with a unit "
                         f"({', '.join(sorted(_BW_UNITS))})")
    bandwidth = float(m.group(1)) * _BW_UNITS[m.group(2).lower()]
    latency = 0.0
    if len(parts) == 2:
        m = re.fullmatch(_NUMBER + r"\s*([a-zµ]+)", parts[1])
        if not m or m.group(2) not in _LAT_UNITS:
            raise UsageError(f"--link {raw!r}: latency {parts[1]!r} is not a number with a unit "
                             f"({', '.join(sorted(_LAT_UNITS))})")
        latency = float(m.group(1)) * _LAT_UNITS[m.group(2)]
    if bandwidth <= 0:
        raise UsageError(f"--link {raw!r}: bandwidth must be positive")
    return Link(raw, bandwidth, latency)


METRIC_KEYS = ("partitions", "acceleratorPartitions", "fragments", "transfers", "memcpy", "memcpyFromHost",
               "memcpyToHost", "boundaryBytes", "copies", "unsizedCopies", "feedTransfers", "feedBytes",
               "delegatedNodes")


def copy_time_us(m, link):
    """Estimated copy time per inference (microseconds) of a :func:`metrics` dict over ``link``."""
    if link is None:
        return None
    t = m["boundaryBytes"] / link.bandwidth + m["copies"] * link.latency
    return round(t * 1e6, 3)


def metrics(summary, model, link=None, device_providers=None):
    """The counts blame and whatif compare, from one partitionSummary.

    ``partitions`` counts every partition of the summary (CPU ones included: they are what
    splits the accelerator's work); ``acceleratorPartitions`` is ``partitionCount``.
    ``device_providers``: providers whose graph inputs are copied at feed time (those not
    CPU-based, as ``feedTransfers`` counts them); default every provider but the CPU.
    """
    transfer_tensors = set()
    sizes = []
    for t in summary["transferList"]:
        transfer_tensors.add(t["tensor"])
        sizes.append(t["bytes"])
    for c in summary["memcpy"]["tensors"]:
        if c["tensor"] not in transfer_tensors:
            sizes.append(model.value(c["tensor"]).nbytes)
    feed = 0
    accel = (set(device_providers) if device_providers is not None
             else {ep for ep in summary["perProvider"] if ep != CPU})
    seen = set()
    for n in model.graph_inputs:
        # graph inputs consumed on a non-CPU provider are copied at feed time (feedTransfers)
        for c in model.consumers.get(n, ()):
            ep = summary["nodes"][c]["provider"]
            if ep in accel and (n, ep) not in seen:
                seen.add((n, ep))
                feed += model.value(n).nbytes or 0
    mc = summary["memcpy"]
    m = {
        "partitions": len(summary["partitions"]),
        "acceleratorPartitions": summary["partitionCount"],
        "fragments": summary["fragments"],
        "transfers": summary["transfers"],
        "memcpy": mc["fromHost"] + mc["toHost"],
        "memcpyFromHost": mc["fromHost"],
        "memcpyToHost": mc["toHost"],
        "boundaryBytes": sum(s for s in sizes if s is not None),
        "copies": len(sizes),
        "unsizedCopies": sum(1 for s in sizes if s is None),
        "feedTransfers": summary["feedTransfers"],
        "feedBytes": feed,
        "delegatedNodes": summary["delegatedNodeCount"],
    }
    if link is not None:
        m["copyTimeUs"] = copy_time_us(m, link)
    return m


def _saved(before, after):
    out = {k: before[k] - after[k] for k in METRIC_KEYS}
    if "copyTimeUs" in before and "copyTimeUs" in after:
        out["copyTimeUs"] = round(before["copyTimeUs"] - after["copyTimeUs"], 3)
    return out


# --------------------------------------------------------------------------------------------
# lifting
# --------------------------------------------------------------------------------------------

def _plain_rule(domain, op, like=(), types=None):
    """A rule that accepts ``domain:op`` with no predicate; keeps the host-memory ports of
    the table's first rule for that op (lifting changes what is accepted, not where a
    kernel reads its inputs)."""
    first = like[0] if like else None
    return OpRule(op=op, domain=domain, types=dict(types or {}),
                  host_inputs=first.host_inputs if first else (),
                  host_outputs=first.host_outputs if first else (),
                  layout_sensitive=first.layout_sensitive if first else False)


def lift_op_type(table, domain, op):
    """``table`` accepting every ``domain:op`` node whatever its dtype, shape or attributes.

    The table's own rules for the op keep their version ranges and host-memory ports but
    lose every other predicate; a catch-all rule (host ports of the newest kernel) follows
    them for schema versions no rule covers.  The op is also taken off the table's
    ``stop_ops`` and ``reject_single_ops``.

    Examples
    --------
    >>> from partsim.ruletable import adhoc_table
    >>> t = adhoc_table(["MatMul"])
    >>> lift_op_type(t, "", "Relu").rules_for("", "Relu")[-1].op
    'Relu'
    """
    old = table.rules_for(domain, op)
    kept = tuple(replace(r, types={}, dtype_pairs=None, static_shape=False, min_rank=None, max_rank=None,
                         rank_inputs=None, attrs=(), const_inputs=(), notes="") for r in old)
    newest = sorted(old, key=lambda r: (r.versions or (0, None))[0], reverse=True)
    rules = dict(table.rules)
    rules[(domain, op)] = kept + (_plain_rule(domain, op, newest),)
    part = dict(table.partitioning)
    for key in ("stop_ops", "reject_single_ops"):
        if part.get(key):
            part[key] = [x for x in part[key] if x != op]
    return replace(table, rules=rules, partitioning=part)


def _replace_rules(table, **changes):
    return replace(table, rules={k: tuple(replace(r, **changes) for r in v) for k, v in table.rules.items()})


# category -> what lifting it means (shown in --help and the JSON)
LIFTABLE_REASONS = {
    "op_not_in_table": "every op type of the model that the table lacks is added (any dtype, any shape)",
    "opset_version": "version ranges dropped (versions: None)",
    "dtype": "dtype constraints dropped (types: {}, dtype_pairs: None)",
    "dynamic_shape": "static-shape requirement dropped (static_shape: False)",
    "rank": "rank bounds dropped (min_rank/max_rank: None)",
    "attribute": "attribute conditions dropped (attrs: ())",
    "non_constant_input": "constant-input requirement dropped (const_inputs: ())",
    "stop_op_downstream": "partitioning hook off (stop_ops: [])",
    "group_rejected": "group hooks off (min_nodes 1, reject_single_ops [], drop_all_constant_input_groups, "
                      "single_node_cluster_only_last, subgraphs: unsupported)",
    "cpu_preferred": "CPU-preferred shape pass off (cpu_preferred_shape_nodes: False)",
}


def lift_reason(table, category, model=None):
    """``table`` with one rejection category switched off, or ``None`` if it cannot be lifted
    on a table (``claimed_by_higher_priority``, ``policy``)."""
    if category == "op_not_in_table":
        rules = dict(table.rules)
        for n in (model.nodes if model is not None else ()):
            key = (n.domain, n.op_type)
            if key not in rules:
                rules[key] = (_plain_rule(n.domain, n.op_type),)
        return replace(table, rules=rules)
    if category == "opset_version":
        return _replace_rules(table, versions=None)
    if category == "dtype":
        return _replace_rules(table, types={}, dtype_pairs=None)
    if category == "dynamic_shape":
        return _replace_rules(table, static_shape=False)
    if category == "rank":
        return _replace_rules(table, min_rank=None, max_rank=None)
    if category == "attribute":
        return _replace_rules(table, attrs=())
    if category == "non_constant_input":
        return _replace_rules(table, const_inputs=())
    part = dict(table.partitioning)
    if category == "stop_op_downstream":
        part["stop_ops"] = []
    elif category == "group_rejected":
        part.update(min_nodes=1, reject_single_ops=[], drop_all_constant_input_groups=False,
                    single_node_cluster_only_last=False)
        if part.get("subgraphs") == "unsupported":
            del part["subgraphs"]
    elif category == "cpu_preferred":
        part["cpu_preferred_shape_nodes"] = False
    else:
        return None
    return replace(table, partitioning=part)


def parse_support_spec(spec):
    """``OP``, ``DOMAIN:OP``, ``OP:dtype`` or ``DOMAIN:OP:dtype`` -> (domain, op, dtype or None).

    Examples
    --------
    >>> parse_support_spec("com.microsoft:FusedMatMul:float16")
    ('com.microsoft', 'FusedMatMul', 'float16')
    >>> parse_support_spec("Erf")
    ('', 'Erf', None)
    """
    from .model import DTYPE_BYTES

    parts = [p.strip() for p in str(spec).split(":")]
    dtype = None
    if len(parts) > 1 and (parts[-1] in DTYPE_BYTES or parts[-1] in ("string",)):
        dtype = parts.pop()
    op = parts[-1] if parts else ""
    domain = ":".join(parts[:-1])
    if not op or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", op):
        raise UsageError(f"--add-support {spec!r}: expected OP, DOMAIN:OP or OP:dtype (dtype one of "
                         f"{', '.join(sorted(DTYPE_BYTES))})")
    return normalize_domain(domain), op, dtype


def add_support(table, domain, op, dtype=None, model=None):
    """``table`` accepting ``domain:op`` (any dtype, or only nodes whose first input -- first
    output for an op without inputs -- is ``dtype``), any shape.  Without ``dtype`` this is
    :func:`lift_op_type`; with one, a rule is appended after the table's own rules."""
    if dtype is None:
        return lift_op_type(table, domain, op)
    port = "i0"
    if model is not None and any(n.op_type == op and n.domain == domain and not n.inputs for n in model.nodes):
        port = "o0"
    old = table.rules_for(domain, op)
    rules = dict(table.rules)
    rules[(domain, op)] = tuple(old) + (_plain_rule(domain, op, old, {port: frozenset({dtype})}),)
    return replace(table, rules=rules)


# --------------------------------------------------------------------------------------------
# loading once, variants
# --------------------------------------------------------------------------------------------

@dataclass
class Context:
    """A model loaded once, the tables, and the requested providers: everything a re-simulation needs."""

    model: object
    path: str
    optimize: str
    tables: dict
    extra: tuple
    requested: tuple
    policy: str
    seed: int = 0

    def resolution(self, requested=None):
        return resolve_providers(list(self.requested if requested is None else requested), self.tables,
                                 self.extra)

    def run(self, resolution, model=None):
        a = simulate(model if model is not None else self.model, resolution, self.policy)
        return summarize(a), a

    def metrics(self, summary, resolution, model=None, link=None):
        device = {t.provider for t in resolution.tables if not t.cpu_based}
        return metrics(summary, model if model is not None else self.model, link, device)


def prepare(path, providers=None, rule_paths=(), support=None, support_name="EP", support_kind="kernel",
            policy="per-node", optimize="none", seed=0, model=None):
    """Load ``path`` once (or take ``model``) and the tables, resolve the request as
    :func:`partsim.api.predict` does."""
    from .api import build_request, load_for_prediction, load_tables

    tables = load_tables(rule_paths)
    requested, extra = build_request(providers, support, support_name, support_kind)
    if model is None:
        from .sim.assign import resolve_providers as _resolve

        model = load_for_prediction(path, optimize, seed=seed, resolution=_resolve(requested, tables, extra))
    m = model
    return Context(m, str(path), optimize, tables, tuple(extra), tuple(requested), policy, seed)


def dim_params(model):
    """Symbolic dimension names of the main graph's inputs -> sorted list of ``(input, axis)``."""
    out = {}
    for name in model.graph_inputs:
        v = model.value(name)
        if v.kind != "input" or v.shape is None:
            continue
        for axis, d in enumerate(v.shape):
            if isinstance(d, str) and d:
                out.setdefault(d, []).append((name, axis))
    return {k: sorted(v) for k, v in sorted(out.items())}


def fix_dims_in_proto(proto, fixed):
    """Replace every ``dim_param`` named in ``fixed`` by its value, in every graph's inputs,
    outputs and value_info (a symbolic name means the same size everywhere).  In place."""
    def fix_type(tp):
        which = tp.WhichOneof("value")
        if which in ("tensor_type", "sparse_tensor_type"):
            tt = getattr(tp, which)
            if tt.HasField("shape"):
                for d in tt.shape.dim:
                    if d.WhichOneof("value") == "dim_param" and d.dim_param in fixed:
                        d.dim_value = int(fixed[d.dim_param])
        elif which == "sequence_type":
            fix_type(tp.sequence_type.elem_type)
        elif which == "optional_type":
            fix_type(tp.optional_type.elem_type)

    def walk(g):
        for vi in list(g.input) + list(g.output) + list(g.value_info):
            fix_type(vi.type)
        for n in g.node:
            for a in n.attribute:
                if a.HasField("g"):
                    walk(a.g)
                for sub in a.graphs:
                    walk(sub)

    walk(proto.graph)
    return proto


def _convert_opset(proto, opset, path):
    import onnx
    from onnx import version_converter

    try:
        converted = version_converter.convert_version(proto, int(opset))
        onnx.checker.check_model(converted, full_check=False)
    except Exception as exc:  # the converter raises RuntimeError, ValidationError, IndexError ...
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        first = first.rsplit("failed: ", 1)[-1]  # drop the converter's C++ file and assertion text
        raise ModelError(f"onnx.version_converter cannot convert the model to opset {opset}: {first[:300]}",
                         path) from None
    return converted


def _modify(proto, fix_dims, opset, path):
    if fix_dims:
        fix_dims_in_proto(proto, fix_dims)
    if opset is not None:
        proto = _convert_opset(proto, opset, path)
    return proto


def load_variant(path, optimize="none", fix_dims=None, opset=None, seed=0, resolution=None):
    """Load ``path`` with symbolic dims fixed and/or converted to another opset, at ``optimize``.

    At ``none`` the change is made on the in-memory proto and the IR rebuilt
    (:func:`partsim.loader.model_from_proto`).  At ``basic`` the weights are materialized
    in a temporary folder first, the changed copy is written there and ORT's BASIC
    optimizer runs on it.  The user's file is never written.
    """
    from .api import load_for_prediction
    from .loader import load_model, model_from_proto, read_model_proto

    if not fix_dims and opset is None:
        return load_for_prediction(path, optimize, seed=seed, resolution=resolution)
    changes = ", ".join([f"{k}={v}" for k, v in sorted((fix_dims or {}).items())]
                        + ([f"opset {opset}"] if opset is not None else []))
    if optimize in ("none", "disable"):
        import hashlib

        proto, data = read_model_proto(path)
        proto = _modify(proto, fix_dims, opset, path)
        m = model_from_proto(proto, path=str(path), sha256=hashlib.sha256(data).hexdigest())
        m.warnings.append(f"what-if variant of the model ({changes})")
        return m
    import tempfile
    from pathlib import Path

    import onnx

    from .materialize import materialize_weights
    from .pipeline import prepare as prepare_pipeline
    from .sim.pipeline import normalize_level

    level = normalize_level(optimize) or "all"
    if resolution is None:
        from .api import DEFAULT_PROVIDERS, load_tables

        resolution = resolve_providers(list(DEFAULT_PROVIDERS), load_tables())
    original = load_model(path, infer_shapes=False)
    with tempfile.TemporaryDirectory(prefix="partsim-whatif-") as tmp:
        copy = materialize_weights(path, Path(tmp) / "src", seed=seed)
        proto, _ = read_model_proto(copy)
        proto = _modify(proto, fix_dims, opset, path)
        changed = copy.with_name(copy.stem + ".whatif.onnx")
        onnx.save(proto, str(changed))  # external-data references stay relative to the same folder
        m = prepare_pipeline(changed, level, resolution, seed=seed).model
    m.path, m.sha256 = original.path, original.sha256
    m.warnings.append(f"what-if variant of the model ({changes}), predicted at level {level}")
    return m


# --------------------------------------------------------------------------------------------
# blame
# --------------------------------------------------------------------------------------------

_MATCH_CATEGORIES = ("op_not_in_table", "opset_version", "dtype", "dynamic_shape", "rank", "attribute",
                     "non_constant_input")


def _head(ctx):
    return {"path": ctx.model.path, "sha256": ctx.model.sha256, "nodeCount": len(ctx.model.nodes)}


def _groups(model, members):
    """Weakly-connected groups of ``members`` (node indices), each in topological order."""
    member_set = set(members)
    parent = {i: i for i in members}

    def find(a):
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for i in members:
        for p, _ in model.in_edges(i):
            if p in member_set:
                ra, rb = find(p), find(i)
                if ra != rb:
                    parent[max(ra, rb)] = min(ra, rb)
    groups = {}
    for i in topological_order(model):
        if i in member_set:
            groups.setdefault(find(i), []).append(i)
    return list(groups.values())


def _row(kind, name, concerned_names, before_m, before_s, after_s, after_model, link, device, lifted=""):
    after_m = metrics(after_s, after_model, link, device)
    first = before_s["effectiveProviders"][0]
    before_on = {n["name"] for n in before_s["nodes"] if n["provider"] == first}
    moved = sorted(n["name"] for n in after_s["nodes"] if n["provider"] == first and n["name"] not in before_on)
    after_copies = {(c["tensor"], c["direction"]) for c in after_s["memcpy"]["tensors"]}
    gone = sorted(f"{c['tensor']} ({c['direction']})" for c in before_s["memcpy"]["tensors"]
                  if (c["tensor"], c["direction"]) not in after_copies)
    row = {"kind": kind, "cause": name, "nodes": concerned_names, "nodeCount": len(concerned_names),
           "after": after_m, "saved": _saved(before_m, after_m), "movedToFirstProvider": moved,
           "memcpyRemoved": gone, "status": after_s["status"]}
    if lifted:
        row["lifted"] = lifted
    return row


_INTEGER_DTYPES = frozenset({"int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "bool"})


def _shape_subgraphs(model, cpu_preferred):
    """The shape subgraphs the CPU-preferred nodes belong to.

    A shape subgraph is a weakly-connected set of nodes that compute integer/bool tensors
    only (shape and index arithmetic: Shape, Gather, Concat, Range, Where, Cast to int, ...)
    plus the CPU-preferred nodes themselves; kept when it holds at least one CPU-preferred
    node.  ORT's CPU-preferred pass moves part of such a subgraph to the CPU; the part it
    cannot move (an input lives on the device) stays on the device, and the copies between
    the two parts are Memcpy nodes.
    """
    def integer_only(node):
        outs = [t for t in node.outputs if t]
        return bool(outs) and all(model.value(t).dtype in _INTEGER_DTYPES for t in outs)

    seeds = set(cpu_preferred)
    members = seeds | {n.index for n in model.nodes if integer_only(n)}
    return [g for g in _groups(model, sorted(members)) if seeds.intersection(g)]


def _memcpy_at(model, summary, members):
    """Baseline Memcpy copies (``tensor (direction)``) whose tensor is produced or read by a node of ``members``."""
    members = set(members)
    out = []
    for c in summary["memcpy"]["tensors"]:
        t = c["tensor"]
        p = model.producer.get(t)
        if (p is not None and p in members) or any(k in members for k in model.consumers.get(t, ())):
            out.append(f"{t} ({c['direction']})")
    return sorted(out)


def _dim_nodes(row):
    """For a fixed dimension the nodes concerned are those it brings onto the first provider."""
    row["nodes"] = list(row["movedToFirstProvider"])
    row["nodeCount"] = len(row["nodes"])
    return row


def _rank_key(row):
    s = row["saved"]
    kind_order = {"opType": 0, "reason": 1, "dim": 2}
    return (-s["partitions"], -s["transfers"], -s["memcpy"], -s["boundaryBytes"], -s["fragments"],
            kind_order.get(row["kind"], 9), row["cause"])


def blame(ctx, link=None, dim_value=1, dims=None, analyse_dims=True):
    """Lift every cause that keeps nodes off the first provider, one at a time; re-simulate each.

    Parameters
    ----------
    ctx : Context
        From :func:`prepare` (the model is loaded once and reused for every re-simulation).
    link : Link, optional
        Adds ``copyTimeUs`` to every count.
    dim_value : int
        Size a symbolic input dimension is fixed to when its effect is measured.
    dims : dict, optional
        Per-name sizes overriding ``dim_value``.
    analyse_dims : bool
        Measure symbolic input dimensions (each one loads a variant of the model).

    Returns
    -------
    dict
        ``baseline`` counts, ``causes`` ranked (most partitions saved first, then transfers,
        Memcpy, bytes), ``notLiftable`` categories.
    """
    model = ctx.model
    res = ctx.resolution()
    if not res.tables or res.tables[0].provider == CPU:
        raise UsageError("blame needs an accelerator first in --providers (or --support): with the CPU "
                         "first nothing is kept off it")
    first = res.tables[0]
    before_s, _ = ctx.run(res)
    device = {t.provider for t in res.tables if not t.cpu_based}
    before_m = metrics(before_s, model, link, device)
    rest = res.tables[1:]
    off = [(k, n) for k, n in enumerate(before_s["nodes"]) if n["reason"] is not None]

    by_op = {}
    by_reason = {}
    for k, n in off:
        node = model.nodes[k]
        by_op.setdefault((node.domain, node.op_type), []).append(k)
        by_reason.setdefault(n["reason"], []).append(k)
    rows = []
    names = [n.name for n in model.nodes]
    for (domain, op), idx in sorted(by_op.items()):
        lifted = replace(res, tables=(lift_op_type(first, domain, op),) + rest)
        after_s, _ = ctx.run(lifted)
        label = f"{domain}:{op}" if domain else op
        row = _row("opType", label, [names[i] for i in idx], before_m, before_s, after_s, model, link, device,
                   f"{first.provider} accepts {label} for any dtype and shape")
        cats = {}
        for i in idx:
            c = before_s["nodes"][i]["reason"]
            cats[c] = cats.get(c, 0) + 1
        row["reasons"] = dict(sorted(cats.items()))
        row["memcpyAtNodes"] = _memcpy_at(model, before_s, idx)
        rows.append(row)
    not_liftable = {}
    for cat, idx in sorted(by_reason.items()):
        table = lift_reason(first, cat, model)
        if table is None:
            not_liftable[cat] = len(idx)
            continue
        after_s, _ = ctx.run(replace(res, tables=(table,) + rest))
        row = _row("reason", cat, [names[i] for i in idx], before_m, before_s, after_s, model, link, device,
                   LIFTABLE_REASONS[cat])
        if cat == "cpu_preferred":
            region = _shape_subgraphs(model, idx)
            row["groups"] = [[names[i] for i in g] for g in region]
            row["memcpyAtNodes"] = _memcpy_at(model, before_s, [i for g in region for i in g])
        else:
            row["groups"] = [[names[i] for i in g] for g in _groups(model, idx)]
            row["memcpyAtNodes"] = _memcpy_at(model, before_s, idx)
        rows.append(row)
    dim_rows = []
    if analyse_dims:
        params = dim_params(model)
        for name, where in params.items():
            value = int((dims or {}).get(name, dim_value))
            variant = load_variant(ctx.path, ctx.optimize, {name: value}, seed=ctx.seed,
                                   resolution=ctx.resolution())
            after_s, _ = ctx.run(res, model=variant)
            row = _row("dim", f"{name}={value}", [], before_m, before_s, after_s, variant, link, device,
                       f"symbolic dimension {name!r} of the graph inputs fixed to {value}")
            row["inputs"] = [f"{inp}[{axis}]" for inp, axis in where]
            dim_rows.append(_dim_nodes(row))
        if len(params) > 1:
            fixed = {k: int((dims or {}).get(k, dim_value)) for k in params}
            variant = load_variant(ctx.path, ctx.optimize, fixed, seed=ctx.seed, resolution=ctx.resolution())
            after_s, _ = ctx.run(res, model=variant)
            label = ",".join(f"{k}={v}" for k, v in fixed.items())
            row = _row("dim", label, [], before_m, before_s, after_s, variant, link, device,
                       "every symbolic dimension of the graph inputs fixed at once")
            row["inputs"] = sorted(f"{i}[{a}]" for w in params.values() for i, a in w)
            dim_rows.append(_dim_nodes(row))
    rows.extend(dim_rows)
    rows.sort(key=_rank_key)
    for k, r in enumerate(rows, 1):
        r["rank"] = k
    out = {
        "schemaVersion": SCHEMA_VERSION,
        "command": "blame",
        "model": _head(ctx),
        "optimize": ctx.optimize,
        "requestedProviders": list(res.requested),
        "effectiveProviders": list(res.effective),
        "firstProvider": first.provider,
        "policy": ctx.policy,
        "baseline": before_m,
        "undelegatedNodes": len(off),
        "reasons": {c: len(v) for c, v in sorted(by_reason.items())},
        "memcpyCauses": {r["cause"]: len(r["memcpyAtNodes"]) for r in sorted(rows, key=lambda r: r["cause"])
                         if r["kind"] == "reason"},
        "causes": rows,
        "notLiftable": not_liftable,
        "symbolicDims": {k: [f"{i}[{a}]" for i, a in v] for k, v in dim_params(model).items()},
        "link": link.to_json() if link else None,
    }
    return out


# --------------------------------------------------------------------------------------------
# whatif
# --------------------------------------------------------------------------------------------

def _apply_provider_changes(requested, drop=(), reorder=()):
    req = list(requested)
    canon = [_canonical(r.partition(":")[0]) for r in req]
    for d in drop:
        c = _canonical(d.partition(":")[0])
        if c not in canon:
            raise UsageError(f"--drop-provider {d}: not among the requested providers ({', '.join(canon)})")
        k = canon.index(c)
        del req[k], canon[k]
    if reorder:
        picked = []
        for r in reorder:
            c = _canonical(r.partition(":")[0])
            if c not in canon:
                raise UsageError(f"--reorder {r}: not among the requested providers ({', '.join(canon)})")
            k = canon.index(c)
            if k in picked:
                raise UsageError(f"--reorder names {r} twice")
            picked.append(k)
        req = [req[k] for k in picked] + [req[k] for k in range(len(req)) if k not in picked]
    return req


def _per_provider(before, after):
    out = {}
    for ep in sorted(set(before) | set(after)):
        b = before.get(ep, {"nodes": 0, "partitions": 0, "fragments": 0})
        a = after.get(ep, {"nodes": 0, "partitions": 0, "fragments": 0})
        out[ep] = {"before": b, "after": a, "change": {k: a[k] - b[k] for k in ("nodes", "partitions", "fragments")}}
    return out


def whatif(ctx, add=(), fix_dims=None, opset=None, drop=(), reorder=(), optimize=None, link=None):
    """Simulate the request as given and with the changes; both summaries' counts side by side.

    ``add`` (``OP``, ``DOMAIN:OP``, ``OP:dtype``) is applied to the first provider of the
    changed list.  ``optimize`` is the level of the changed run (default: the baseline's).
    """
    before_res = ctx.resolution()
    before_s, _ = ctx.run(before_res)
    before_m = ctx.metrics(before_s, before_res, link=link)
    after_opt = optimize or ctx.optimize
    changes = []
    model = ctx.model
    if fix_dims or opset is not None or after_opt != ctx.optimize:
        if fix_dims:
            known = dim_params(ctx.model)
            bad = sorted(set(fix_dims) - set(known))
            if bad:
                raise UsageError(f"--fix-dim {bad[0]}: no graph input has that symbolic dimension "
                                 f"(symbolic: {', '.join(known) or 'none'})")
            changes.append({"change": "fix-dim", "value": ",".join(f"{k}={v}" for k, v in sorted(fix_dims.items()))})
        if opset is not None:
            changes.append({"change": "opset", "value": int(opset)})
        if after_opt != ctx.optimize:
            changes.append({"change": "optimize", "value": f"{ctx.optimize} -> {after_opt}"})
        model = load_variant(ctx.path, after_opt, fix_dims, opset, seed=ctx.seed, resolution=ctx.resolution())
    requested = _apply_provider_changes(ctx.requested, drop, reorder)
    for d in drop:
        changes.append({"change": "drop-provider", "value": _canonical(d.partition(":")[0])})
    if reorder:
        changes.append({"change": "reorder", "value": ",".join(_canonical(r.partition(":")[0]) for r in reorder)})
    res = ctx.resolution(requested)
    if add:
        if not res.tables or res.tables[0].provider == CPU:
            raise UsageError("--add-support needs an accelerator first in the provider list")
        table = res.tables[0]
        for spec in add:
            domain, op, dtype = parse_support_spec(spec)
            table = add_support(table, domain, op, dtype, model)
            changes.append({"change": "add-support", "value": spec, "provider": table.provider})
        res = replace(res, tables=(table,) + res.tables[1:])
    after_s, _ = ctx.run(res, model=model)
    after_m = ctx.metrics(after_s, res, model=model, link=link)
    change = _saved(after_m, before_m)  # after - before
    return {
        "schemaVersion": SCHEMA_VERSION,
        "command": "whatif",
        "model": _head(ctx),
        "changes": changes,
        "before": {"optimize": ctx.optimize, "providers": before_s["effectiveProviders"],
                   "status": before_s["status"], "accelerated": before_s["accelerated"], **before_m},
        "after": {"optimize": after_opt, "providers": after_s["effectiveProviders"],
                  "status": after_s["status"], "accelerated": after_s["accelerated"], **after_m},
        "change": change,
        "perProvider": _per_provider(before_s["perProvider"], after_s["perProvider"]),
        "link": link.to_json() if link else None,
    }
