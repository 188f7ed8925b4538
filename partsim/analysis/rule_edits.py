"""The rule algebra of calibration: widen, narrow or split one rule of a table so that it explains what a
session did (see :func:`partsim.analysis.calibrate.calibrate`).
"""

from dataclasses import dataclass

from .cases import Case


# --------------------------------------------------------------------------------------------
# Calibration: the smallest rule change that explains each disagreement
# --------------------------------------------------------------------------------------------
# Rejections a rule change can lift.  cpu_preferred, claimed_by_higher_priority, group and
# policy outcomes come from ORT's algorithms, not from table facts: they are reported apart.
TABLE_FACTS = ("op_not_in_table", "opset_version", "dtype", "dynamic_shape", "rank", "attribute",
               "non_constant_input")


def _next_since(domain, op, since):
    """The schema version after ``since`` of ``domain:op`` (None when ``since`` is the newest)."""
    from ..ir.schemas import _contrib, onnx_schema_history

    contrib = _contrib().get(f"{domain}:{op}")
    if contrib is not None:
        later = sorted(int(v) for v in contrib if int(v) > since)
        return later[0] if later else None
    versions = sorted({s.since_version for s in onnx_schema_history(op, domain)})
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


