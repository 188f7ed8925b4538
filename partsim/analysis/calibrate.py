"""Learn a rule-table overlay from what real sessions did (``partsim rules calibrate``).

Observations come in three shapes, all read here into *cases* (a model file and
the node -> provider map one session produced):

- partsim's own observation JSON and the per-level ``observed.json`` records of
  ``shared/observed/<model>/`` (the model is ``model.onnx`` beside it), and ORT profiling
  JSON (``--model`` names the model), via :func:`partsim.runtime.observation.import_observation`;
- the single-op node records of ``shared/observed/nodes/*.jsonl`` (one JSON object a
  line: ``case``, ``assignment`` from ``get_provider_graph_assignment_info``,
  ``create_error`` when ORT refused the session); the model of case
  ``node__<test>`` is ``models/<test>.onnx`` beside the file.

:func:`agreement` predicts every case with a table set and counts agreeing nodes;
:func:`calibrate` finds the nodes where the table and the device disagree and
explains each as the smallest change of one rule (see :func:`calibrate`).
"""

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ModelError, ObservationError, PartsimError
from ..runtime.observation import import_observation, is_unnamed, observation_from_records
from .verify import repeated_names

__all__ = ["Case", "read_cases", "read_node_records", "agreement", "predict_case", "calibrate", "split_cases"]

MAX_JSONL_BYTES = 256 * 1024 * 1024
_VERSION_IN_NAME = re.compile(r"ort(\d+(?:\.\d+)+)")


@dataclass
class Case:
    """One observed session: ``nodes`` maps node name -> provider ORT gave it.

    ``refused`` holds ORT's error when the session could not be created (then
    ``nodes`` is empty).  ``source`` names the observation file (and the line).
    """

    name: str
    model: Path
    nodes: dict
    source: str
    runtime: str = ""
    device: str = ""
    requested: list = field(default_factory=list)
    refused: str = ""
    op_types: dict = field(default_factory=dict)


def _runtime_from_name(path):
    m = _VERSION_IN_NAME.search(Path(path).name)
    return f"onnxruntime {m.group(1)}" if m else ""


def read_node_records(path):
    """Cases of a ``shared/observed/nodes/*.jsonl`` file, in file order.

    A record whose session was refused (``create_error``) becomes a case with
    ``refused`` set; one that was created but failed to run keeps its placement.
    """
    p = Path(path)
    try:
        if p.stat().st_size > MAX_JSONL_BYTES:
            raise ObservationError("file is too large for an observation", path)
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ObservationError("no such file", path) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ObservationError(f"cannot read: {exc}", path) from None
    runtime = _runtime_from_name(p)
    cases = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ObservationError(f"line {n}: not valid JSON: {exc.msg}", path) from None
        if not isinstance(rec, dict) or not isinstance(rec.get("case"), str):
            raise ObservationError(f"line {n}: a node record must be an object with a 'case'", path)
        test = rec["case"][len("node__"):] if rec["case"].startswith("node__") else rec["case"]
        model = p.parent / "models" / f"{test}.onnx"
        obs = observation_from_records(rec, runtime=runtime, path=path, strict=False)
        refused = "" if obs["nodes"] or rec.get("assignment") else str(rec.get("create_error") or rec.get("run_error") or "no placement")
        # a node ORT made without a name (function inlining, inserted casts) cannot be told apart
        nodes = {k: v for k, v in obs["nodes"].items() if not is_unnamed(k)}
        cases.append(Case(name=rec["case"], model=model, nodes=nodes, source=f"{p}:{n}",
                          runtime=runtime, device=str(rec.get("device", "")),
                          requested=list(rec.get("requested") or []), refused=refused,
                          op_types=dict(obs.get("opTypes") or {})))
    return cases


def read_cases(paths, model=None, level=None):
    """Cases from observation files of any supported format (see the module doc).

    ``model`` is the model of observations that do not say (a profile, partsim's
    observation JSON of one model); ``observed.json`` records use ``model.onnx``
    beside them.
    """
    cases = []
    for path in paths:
        p = Path(path)
        if p.suffix == ".jsonl":
            cases.extend(read_node_records(p))
            continue
        obs = import_observation(p, level=level)
        m = Path(model) if model else p.parent / "model.onnx"
        if not m.exists():
            raise ObservationError(f"no model for this observation (looked for {m}; give --model)", path)
        named = {k: v for k, v in obs["nodes"].items() if not is_unnamed(k)}
        cases.append(Case(name=p.parent.name if not model else m.stem, model=m, nodes=named,
                          source=str(p), runtime=str(obs.get("runtime") or ""),
                          device=str(obs.get("device") or ""), requested=list(obs.get("requested") or []),
                          op_types=dict(obs.get("opTypes") or {})))
    return cases


def split_cases(cases, part):
    """Half ``part`` (0 or 1) of ``cases``, split by the parity of the sha256 of each case's
    name: deterministic, and independent of file order."""
    import hashlib

    return [c for c in cases if hashlib.sha256(c.name.encode("utf-8")).digest()[0] % 2 == part]


def predict_case(case, providers, tables, models=None):
    """``(summary, assignment)`` for ``case`` with ``tables``, or ``(None, error)`` when
    partsim cannot load the model.  ``models`` caches loaded models by path."""
    from ..io.load import load_model
    from ..rules.resolve import resolve_providers
    from ..sim import simulate, summarize

    key = str(case.model)
    if models is not None and key in models:
        m = models[key]
    else:
        try:
            m = load_model(case.model)
        except (ModelError, PartsimError) as exc:
            m = exc
        if models is not None:
            models[key] = m
    if isinstance(m, Exception):
        return None, str(m)
    resolution = resolve_providers(list(providers), tables)
    assignment = simulate(m, resolution, "per-node")
    return summarize(assignment), assignment


def agreement(cases, providers, tables, models=None):
    """Node agreement of ``tables`` on ``cases``.

    Returns
    -------
    dict
        ``nodes`` (observed nodes), ``agreeing``, ``cases`` (per case: name, nodes,
        agreeing, misses [(node, op, predicted, observed)], loadError), and
        ``refused`` (sessions ORT refused: name, predicted status).
    """
    total = agree = 0
    per_case, refused = [], []
    for case in cases:
        summary, extra = predict_case(case, providers, tables, models)
        if case.refused:
            refused.append({"case": case.name, "observed": case.refused[:200],
                            "predicted": summary["status"] if summary else f"load error: {extra}"[:200]})
            continue
        misses = []
        if summary is None:
            misses = [(name, case.op_types.get(name, ""), "load error", ep) for name, ep in sorted(case.nodes.items())]
        else:
            predicted = {n["name"]: n["provider"] for n in summary["nodes"]}
            repeats = repeated_names(case.nodes, predicted)
            for name, ep in sorted(case.nodes.items()):
                got = predicted.get(repeats.get(name, name), "absent")
                if got != ep:
                    misses.append((name, case.op_types.get(name, ""), got, ep))
        n = len(case.nodes)
        total += n
        agree += n - len(misses)
        per_case.append({"case": case.name, "nodes": n, "agreeing": n - len(misses), "misses": misses,
                         "loadError": None if summary is not None else extra})
    return {"nodes": total, "agreeing": agree, "share": agree / total if total else 0.0, "cases": per_case,
            "refused": refused}


# --------------------------------------------------------------------------------------------
# Calibration: the smallest rule change that explains each disagreement
# --------------------------------------------------------------------------------------------
# Rejections a rule change can lift.  cpu_preferred, claimed_by_higher_priority, group and
# policy outcomes come from ORT's algorithms, not from table facts: they are reported apart.
TABLE_FACTS = ("op_not_in_table", "opset_version", "dtype", "dynamic_shape", "rank", "attribute",
               "non_constant_input")


def _next_since(domain, op, since):
    """The schema version after ``since`` of ``domain:op`` (None when ``since`` is the newest)."""
    from ..ir.schemas import _contrib

    contrib = _contrib().get(f"{domain}:{op}")
    if contrib is not None:
        later = sorted(int(v) for v in contrib if int(v) > since)
        return later[0] if later else None
    import onnx.defs

    try:
        versions = sorted({s.since_version for s in onnx.defs.get_all_schemas_with_history()
                           if s.name == op and (s.domain or "") == domain})
    except Exception:  # noqa: BLE001 - onnx raises several types for odd names
        return None
    later = [v for v in versions if v > since]
    return later[0] if later else None


def _constraint_dtypes(node, model):
    """``{constraint or port: dtype}`` of ``node``: the type constraint of each formal
    parameter that has one (first bound port wins), ``i<k>``/``o<k>`` for the others."""
    from ..ir.schemas import lookup_schema

    schema = lookup_schema(node.domain, node.op_type, model.opsets.get(node.domain))
    out = {}
    if schema is not None:
        for name in sorted(schema.constraints):
            for kind, k in schema.ports_of(name, len(node.inputs), len(node.outputs)):
                t = (node.inputs if kind == "i" else node.outputs)[k]
                dt = model.value(t).dtype if t else None
                if dt is not None:
                    out[name] = dt
                    break
        return out
    for kind, names in (("i", node.inputs), ("o", node.outputs)):
        for k, t in enumerate(names):
            dt = model.value(t).dtype if t else None
            if dt is not None:
                out[f"{kind}{k}"] = dt
    return out


@dataclass
class _Seen:
    """One observed node with what a rule could read of it."""

    case: Case
    name: str
    node: object
    model: object
    observed: str
    predicted: str
    reason: str
    dtypes: dict

    @property
    def key(self):
        return (self.node.domain, self.node.op_type, self.node.since_version)

    def where(self):
        return f"{self.case.source} {self.name}"

    def attr(self, name):
        v = self.node.attrs.get(name, "<absent>")
        return tuple(v) if isinstance(v, list) else v


def _rule_dict(rule):
    """An OpRule as the YAML mapping a table would hold."""
    d = {"op": rule.op}
    if rule.domain:
        d["domain"] = rule.domain
    if rule.versions is not None:
        d["versions"] = [rule.versions[0], rule.versions[1]]
    if rule.types:
        d["types"] = {k: sorted(v) for k, v in sorted(rule.types.items())}
    if rule.static_shape:
        d["static_shape"] = True
    for k in ("min_rank", "max_rank"):
        if getattr(rule, k) is not None:
            d[k] = getattr(rule, k)
    if rule.rank_inputs is not None:
        d["rank_inputs"] = list(rule.rank_inputs)
    if rule.const_inputs:
        d["const_inputs"] = list(rule.const_inputs)
    if rule.attrs:
        d["attrs"] = [{k: (list(v) if isinstance(v, tuple) else v) for k, v in a} for a in rule.attrs]
    if rule.dtype_pairs:
        d["dtype_pairs"] = sorted([list(p) for p in rule.dtype_pairs])
    if rule.host_inputs:
        d["host_inputs"] = list(rule.host_inputs)
    if rule.host_outputs:
        d["host_outputs"] = list(rule.host_outputs)
    if rule.layout_sensitive:
        d["layout_sensitive"] = True
    if rule.kernel_requires:
        d["kernel_requires"] = [{k: (list(v) if isinstance(v, tuple) else v) for k, v in a}
                                for a in rule.kernel_requires]
    if rule.min_inputs is not None:
        d["min_inputs"] = rule.min_inputs
    if rule.max_inputs is not None:
        d["max_inputs"] = rule.max_inputs
    if rule.compile_failure:
        d["compile_failure"] = rule.compile_failure
    if rule.notes:
        d["notes"] = rule.notes
    return d


def _covering(rules, since):
    from ..sim.match import _version_ok

    return [r for r in rules if _version_ok(r, since)]


def _nearest_below(rules, since):
    below = [r for r in rules if r.versions is not None and r.versions[0] <= since]
    return max(below, key=lambda r: r.versions[0]) if below else None


def _widen(group, rules):
    """The rule dict that takes every node of ``group`` (all of one (domain, op, since),
    observed on the provider), and a sentence saying what changed."""
    first = group[0]
    domain, op, since = first.key
    types = {}
    for s in group:
        for k, dt in s.dtypes.items():
            types.setdefault(k, set()).add(dt)
    covering = _covering(rules, since)
    if covering:  # the version is there: a dtype or a predicate keeps the nodes off
        rule = _rule_dict(covering[0])
        changes = []
        for k, dts in sorted(types.items()):
            have = set(rule.get("types", {}).get(k, dts)) if "types" in rule and k in rule["types"] else None
            if have is not None and not dts <= have:
                rule["types"][k] = sorted(have | dts)
                changes.append(f"{k} += {', '.join(sorted(dts - have))}")
        reasons = {s.reason for s in group}
        if "rank" in reasons:
            for key in ("min_rank", "max_rank", "rank_inputs"):
                rule.pop(key, None)
            changes.append("no rank limit")
        if "dynamic_shape" in reasons:
            rule.pop("static_shape", None)
            changes.append("dynamic shapes allowed")
        if "attribute" in reasons:
            kept = []
            for a in rule.get("attrs", []):
                if all(_attr_accepts(a, s.node) for s in group):
                    kept.append(a)
                else:
                    changes.append(f"attribute condition on {a['name']} dropped")
            if kept:
                rule["attrs"] = kept
            else:
                rule.pop("attrs", None)
        if "non_constant_input" in reasons:
            rule.pop("const_inputs", None)
            changes.append("constant inputs not required")
        return rule, "; ".join(changes) or "rule kept"
    hi = _next_since(domain, op, since)
    versions = [since, hi - 1 if hi else None]
    near = _nearest_below(rules, since)
    if near is not None:  # a kernel for the next schema version: the older kernel's facts carried over
        rule = _rule_dict(near)
        rule["versions"] = versions
        for k, dts in types.items():
            if k in rule.get("types", {}):
                rule["types"][k] = sorted(set(rule["types"][k]) | dts)
        return rule, f"kernel for schema version {since} added (facts of [{near.versions[0]}, " \
                     f"{near.versions[1]}] carried over)"
    rule = {"op": op}
    if domain:
        rule["domain"] = domain
    rule["versions"] = versions
    if types:
        rule["types"] = {k: sorted(v) for k, v in sorted(types.items())}
    return rule, f"{op} added for schema version {since} with the dtypes observed"


def _attr_accepts(cond, node):
    from ..sim.match import _attr_ok

    return _attr_ok(tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in cond.items())),
                    node) is None


def _narrow(bad, good, rules):
    """A rule change that keeps the ``bad`` nodes (observed off the provider, predicted on it)
    off while the ``good`` ones (same op and version, observed on it) stay: a dtype removed,
    an attribute value vetoed, a rank limit, a constant input.  ``(rules, sentence)`` or
    ``(None, contradiction)``."""
    first = bad[0]
    covering = _covering(rules, first.node.since_version)
    if not covering:
        return None, "no rule covers these nodes"
    target = covering[0]
    rule = _rule_dict(target)
    # a dtype no node on the provider has
    for k in sorted({k for s in bad for k in s.dtypes}):
        bad_t = {s.dtypes.get(k) for s in bad}
        good_t = {s.dtypes.get(k) for s in good}
        if None not in bad_t and not bad_t & good_t and k in rule.get("types", {}):
            rule["types"][k] = sorted(set(rule["types"][k]) - bad_t)
            if not rule["types"][k]:
                return _without(rules, target, None), f"{first.node.op_type} {k} {', '.join(sorted(bad_t))}: " \
                                                      "no kernel (rule removed)"
            return _without(rules, target, rule), f"{k} -= {', '.join(sorted(bad_t))}"
    # an attribute value no node on the provider has
    names = sorted({n for s in bad for n in s.node.attrs} | {n for s in good for n in s.node.attrs})
    for n in names:
        bad_v, good_v = {s.attr(n) for s in bad}, {s.attr(n) for s in good}
        if bad_v & good_v or any(not isinstance(v, (int, float, str)) for v in bad_v):
            continue
        cond = {"name": n, "absent": True} if bad_v == {"<absent>"} else None
        if "<absent>" in bad_v and cond is None:
            continue
        if cond is None:
            cond = {"name": n, "not_in": sorted(bad_v, key=str)}
        rule.setdefault("attrs", []).append(cond)
        return _without(rules, target, rule), f"attribute {n} {'absent' if 'absent' in cond else 'not in ' + str(cond['not_in'])}"
    # an input that must be a constant initializer
    for k in range(min(len(s.node.inputs) for s in bad + good) if bad + good else 0):
        def const(s):
            t = s.node.inputs[k]
            return bool(t) and s.model.value(t).is_constant
        if all(s.node.inputs[k] and not const(s) for s in bad) and good and all(const(s) for s in good):
            rule["const_inputs"] = sorted(set(rule.get("const_inputs", [])) | {k})
            return _without(rules, target, rule), f"input {k} must be a constant initializer"
    # a rank limit
    ranks_bad = {_rank(s) for s in bad}
    ranks_good = {_rank(s) for s in good}
    if None not in ranks_bad and None not in ranks_good and ranks_good and min(ranks_bad) > max(ranks_good):
        rule["max_rank"] = max(ranks_good)
        rule["rank_inputs"] = [0]
        return _without(rules, target, rule), f"max_rank {max(ranks_good)} on input 0"
    if not good:  # nothing of this op and version ran on the provider: no kernel for it
        return _without(rules, target, None) if target.versions[0] == first.node.since_version and \
            target.versions[1] in (None, first.node.since_version) else \
            _split_out(rules, target, first.node.since_version), \
            f"no kernel for schema version {first.node.since_version}"
    same = next((g for g in good if g.dtypes == bad[0].dtypes), good[0])
    return None, f"{bad[0].where()} ran on CPU but {same.where()} (same op, version and dtypes) on the provider"


def _rank(s):
    t = s.node.inputs[0] if s.node.inputs else None
    return s.model.value(t).rank if t else None


def _without(rules, target, replacement):
    out = []
    for r in rules:
        if r is target:
            if replacement is not None:
                out.append(replacement)
        else:
            out.append(_rule_dict(r))
    return out


def _split_out(rules, target, since):
    """``target``'s range without ``since`` (kept as the parts before and after it)."""
    lo, hi = target.versions
    nxt = _next_since(target.domain, target.op, since)
    parts = []
    if lo < since:
        d = _rule_dict(target)
        d["versions"] = [lo, since - 1]
        parts.append(d)
    if nxt is not None and (hi is None or nxt <= hi):
        d = _rule_dict(target)
        d["versions"] = [nxt, hi]
        parts.append(d)
    out = []
    for r in rules:
        out.extend(parts if r is target else [_rule_dict(r)])
    return out


def _observe_all(cases, providers, tables, models):
    """Every observed node as a :class:`_Seen`, and the conflicting observations (one node,
    two providers, in different observation files)."""
    seen, by_node = [], {}
    for case in cases:
        if case.refused:
            continue
        summary, assignment = predict_case(case, providers, tables, models)
        if summary is None:
            continue
        model = assignment.model
        index = {n.name: n for n in model.nodes}
        for n in summary["nodes"]:
            ep = case.nodes.get(n["name"])
            if ep is None:
                continue
            node = index[n["name"]]
            s = _Seen(case, n["name"], node, model, ep, n["provider"], n["reason"], _constraint_dtypes(node, model))
            seen.append(s)
            by_node.setdefault((str(case.model), n["name"]), []).append(s)
    conflicts = []
    for (model, name), ss in sorted(by_node.items()):
        if len({s.observed for s in ss}) > 1:
            conflicts.append({"model": model, "node": name,
                              "observed": sorted({f"{s.observed} ({s.case.source})" for s in ss})})
    bad = {(c["model"], c["node"]) for c in conflicts}
    return [s for s in seen if (str(s.case.model), s.name) not in bad], conflicts


def _overlay_table(base, overlay_ops, meta):
    """The overlay as a table dict (YAML-ready) and as a RuleTable layered over ``base``."""
    from ..gen.yamlout import dump_table
    from ..rules.load import layer_table, parse_table

    ops, remove = [], []
    for (domain, op), rules in sorted(overlay_ops.items()):
        if not rules:
            remove.append({"op": op, **({"domain": domain} if domain else {})})
        ops.extend(sorted(rules, key=lambda r: (r.get("versions") or [0])[0]))
    doc = {"provider": base.provider, "kind": base.kind}
    if base.variant:
        doc["variant"] = base.variant
    doc["source"] = meta
    doc["overlay"] = {"layers_over": Path(base.path).name}
    if remove:
        doc["overlay"]["remove"] = remove
    doc["ops"] = ops
    text = dump_table(doc, header="Overlay written by partsim rules calibrate: use it with -r over the shipped table.")
    table = parse_table(text, "<overlay>")
    return doc, text, layer_table(base, table)


def calibrate(cases, provider, tables, models=None, command="", device=""):
    """Explain every disagreement between ``tables`` and ``cases`` on ``provider`` as the
    smallest change of one op's rules, and return the overlay and a report.

    Per (domain, op, schema version): nodes observed on the provider that the table
    refuses get the rule widened (a kernel for that version, carrying the facts of the
    one before it; a dtype added; a rank, attribute, static-shape or constant-input
    predicate dropped); nodes observed off it that the table takes get it narrowed (a
    dtype removed, an attribute value vetoed, an input required constant, a rank limit,
    the version removed), on the widened table.  The changes are then checked together
    against every observation: one without which fewer agreeing nodes break is withdrawn
    and reported as a contradiction, as are nodes observed on different providers in
    different files.  Disagreements that no table fact
    explains (CPU-preferred placement, higher-priority claims) are listed apart.

    Returns
    -------
    dict
        ``overlay`` (table dict), ``text`` (its YAML), ``report``.
    """
    from ..rules.providers import canonical_name

    provider = canonical_name(provider)
    providers = [provider, "CPUExecutionProvider"]
    if provider not in tables:
        raise PartsimError(f"no table for {provider}")
    base = tables[provider][0]
    models = {} if models is None else models
    seen, conflicts = _observe_all(cases, providers, tables, models)
    runtimes = sorted({c.runtime for c in cases if c.runtime})
    files = sorted({_file_of(c) for c in cases})
    meta = {"description": f"calibrated on {len(files)} observation file(s) ({len(cases)} sessions) by partsim "
                           f"rules calibrate; layered over {Path(base.path).name}",
            "version": ", ".join(runtimes) or "observations of unknown runtime version",
            "generated_by": command or "partsim rules calibrate"}
    overlay_ops, changes, contradictions = {}, [], []
    cases_of_op = {}
    for s in seen:
        cases_of_op.setdefault(s.key[:2], set()).add(id(s.case))
    accepted = _verdicts(seen, providers, tables, models)  # node -> agrees, under the changes kept so far

    def current(dk):
        if dk in overlay_ops:
            _, _, t = _overlay_table(base, {dk: overlay_ops[dk]}, meta)
            return list(t.rules_for(*dk))
        return list(base.rules_for(*dk))

    def attempt(dk, new_rules, why, group, kind, since):
        before = {_key_of(_rule_dict(r)) for r in base.rules_for(*dk)}
        prov = {"observations": sorted({_file_of(g.case) for g in group}),
                "runtime": ", ".join(sorted({g.case.runtime for g in group if g.case.runtime})) or "unknown",
                "device": ", ".join(sorted({g.case.device for g in group if g.case.device})) or device or "unknown",
                "change": why,
                "evidence": sorted({g.where() for g in group})[:3]}
        for r in new_rules:
            if "provenance" not in r and _key_of(r) not in before:
                r["provenance"] = prov
        overlay_ops[dk] = new_rules
        changes.append({"domain": dk[0], "op": dk[1], "since": since, "kind": kind, "change": why,
                        "nodes": len(group), "evidence": prov["evidence"]})

    def verify():
        """Withdraw, one op at a time, the changes without which fewer agreeing nodes break."""
        while overlay_ops:
            lay = _overlay_table(base, overlay_ops, meta)[2]
            now = _verdicts(seen, providers, _with(tables, base, lay), models)
            broken = sorted(k for k, ok in now.items() if accepted[k] and not ok)
            if not broken:
                break
            hit = {k[0] for k in broken}
            best = None
            for dk in sorted(overlay_ops):
                ids = cases_of_op.get(dk, set())
                if not any(id(x.case) in ids for x in seen if x.case.source in hit):
                    continue
                rest = {k: v for k, v in overlay_ops.items() if k != dk}
                lay2 = _overlay_table(base, rest, meta)[2] if rest else None
                affected = [x for x in seen if id(x.case) in ids]
                v = _verdicts(affected, providers, _with(tables, base, lay2), models)
                still = sum(1 for k in broken if k in v and accepted[k] and not v[k]) + \
                    sum(1 for k in broken if k not in v)
                lost = sum(1 for k, ok in v.items() if now[k] and not ok)  # what the change had fixed
                score = (still, lost)
                if best is None or score < best[0]:
                    best = (score, dk)
            if best is None or best[0][0] >= len(broken):
                for k in broken:
                    contradictions.append({"domain": "", "op": "", "since": None, "nodes": 1,
                                           "why": f"{k[1]} ({k[0]}) agreed before the changes and does not "
                                                  "after; no single change is to blame"})
                break
            dk = best[1]
            overlay_ops.pop(dk)
            for c in changes:
                if (c["domain"], c["op"]) == dk and not c.get("withdrawn"):
                    c["withdrawn"] = True
                    contradictions.append({"domain": dk[0], "op": dk[1], "since": c["since"], "nodes": c["nodes"],
                                           "why": f"{c['change']}: withdrawn, it moves nodes that agree "
                                                  f"without it (e.g. {broken[0][1]}, {broken[0][0]})"})

    # 1. nodes the device ran that the table refuses: widen, one (domain, op, version) at a time
    widen = {}
    for s in seen:
        if s.observed != s.predicted and s.observed == provider and s.reason in TABLE_FACTS:
            widen.setdefault(s.key, []).append(s)
    for key in sorted(widen, key=lambda k: (k[0], k[1], k[2] or 0)):
        group, dk = widen[key], key[:2]
        rules = current(dk)
        rule, why = _widen(group, rules)
        cov = _covering(rules, key[2])
        new = _keep_provenance([_rule_dict(r) for r in rules if not (cov and r is cov[0])],
                               overlay_ops.get(dk, []))
        attempt(dk, new + [rule], why, group, "widen", key[2])
    verify()
    # 2. on the widened table (CPU-preferred placements follow the kernels): nodes the table
    #    takes that ran elsewhere: narrow
    layered = _overlay_table(base, overlay_ops, meta)[2] if overlay_ops else None
    seen1, _ = _observe_all(cases, providers, _with(tables, base, layered), models)
    by_key, narrow = {}, {}
    for s in seen1:
        by_key.setdefault(s.key, []).append(s)
        if s.observed != s.predicted and s.predicted == provider:
            narrow.setdefault(s.key, []).append(s)
    for key in sorted(narrow, key=lambda k: (k[0], k[1], k[2] or 0)):
        bad, dk = narrow[key], key[:2]
        good = [s for s in by_key[key] if s.observed == provider]
        new, why = _narrow(bad, good, current(dk))
        if new is None:
            contradictions.append({"domain": dk[0], "op": dk[1], "since": key[2], "nodes": len(bad), "why": why})
            continue
        attempt(dk, _keep_provenance(new, overlay_ops.get(dk, [])), why, bad, "narrow", key[2])
    verify()
    changes[:] = [c for c in changes if not c.get("withdrawn")]
    doc, text, layered = _overlay_table(base, overlay_ops, meta) if overlay_ops else (None, "", None)
    per_file = _per_file(cases, providers, tables, base, layered, models)
    final, _ = _observe_all(cases, providers, _with(tables, base, layered), models)
    unexplained = {}
    for s in final:
        if s.observed != s.predicted:
            unexplained.setdefault(s.reason or "claimed by the provider", []).append(s.where())
    report = {"provider": provider, "base": base.path, "observations": per_file, "changes": changes,
              "contradictions": contradictions, "conflictingObservations": conflicts,
              "unexplained": {k: {"nodes": len(v), "examples": v[:3]} for k, v in sorted(unexplained.items())}}
    return {"overlay": doc, "text": text, "report": report}


def _file_of(case):
    return case.source.split(".jsonl:")[0] + ".jsonl" if ".jsonl:" in case.source else case.source


def _key_of(rule):
    return json.dumps({k: v for k, v in rule.items() if k != "provenance"}, sort_keys=True, default=str)


def _verdicts(seen, providers, tables, models):
    """``{(case source, node): predicted == observed}`` for the nodes of ``seen``."""
    out, of_case = {}, {}
    for s in seen:
        of_case.setdefault(id(s.case), (s.case, []))[1].append(s)
    for case, group in of_case.values():
        summary, _ = predict_case(case, providers, tables, models)
        pred = {n["name"]: n["provider"] for n in summary["nodes"]}
        for s in group:
            out[(case.source, s.name)] = pred.get(s.name) == s.observed
    return out


def _keep_provenance(new, old):
    """Rules carried over from an earlier change of this run keep their provenance."""
    olds = {_key_of(r): r for r in old}
    return [olds.get(_key_of(r), r) if "provenance" not in r else r for r in new]


def _with(tables, base, layered):
    """``tables`` with ``base`` replaced by ``layered`` (itself when ``layered`` is None)."""
    from ..rules.load import TableSet

    if layered is None:
        return tables
    out = TableSet()
    for name in tables:
        for t in tables[name]:
            out.add_table(layered if t is base else t, front=False)
    return out


def _per_file(cases, providers, tables, base, layered, models):
    """Agreement before and after the overlay, per observation file."""
    files = {}
    for c in cases:
        files.setdefault(_file_of(c), []).append(c)
    out = []
    for f, cs in sorted(files.items()):
        b = agreement(cs, providers, tables, models)
        a = agreement(cs, providers, _with(tables, base, layered), models) if layered is not None else b
        out.append({"file": f, "sessions": len(cs), "nodes": b["nodes"], "agreeingBefore": b["agreeing"],
                    "agreeingAfter": a["agreeing"]})
    return out
