"""Does a provider's rule table accept a node?  ORT's kernel match, plus predicates.

The version rule is ORT's (``KernelRegistry::VerifyKernelDef`` in
``onnxruntime/core/framework/kernel_registry.cc``): a kernel registered for
``[start, end]`` matches a node whose schema ``since_version`` lies in that range,
except that an open-ended kernel (``end`` = INT_MAX, ``null`` here) matches only
``since_version == start``.  Type constraints are checked per formal parameter,
as ORT does, with the node's inferred dtypes (unknown dtypes do not veto).
"""

from ..schemas import lookup_schema

__all__ = ["match_node", "Rejection"]

# order in which a failing rule's reasons are reported (earliest check first)
_ORDER = ("op_not_in_table", "opset_version", "dtype", "dynamic_shape", "rank", "attribute",
          "non_constant_input")


class Rejection(tuple):
    """``(category, detail)``; category is one of SPEC section 3's reason names."""

    __slots__ = ()

    def __new__(cls, category, detail):
        return tuple.__new__(cls, (category, detail))

    @property
    def category(self):
        return self[0]

    @property
    def detail(self):
        return self[1]


def _version_ok(rule, since):
    if rule.versions is None or since is None:
        return True
    lo, hi = rule.versions
    if hi is None:
        return since == lo
    return lo <= since <= hi


def _dtype_of(model, name):
    return model.value(name).dtype if name else None


def _check_types(rule, node, model):
    if not rule.types:
        return None
    schema = None
    for key, allowed in sorted(rule.types.items()):
        if len(key) >= 2 and key[0] in "io" and key[1:].isdigit():
            ports = [(key[0], int(key[1:]))]
        else:
            if schema is None:
                schema = lookup_schema(node.domain, node.op_type, model.opsets.get(node.domain))
                if schema is None:
                    return None  # unknown schema: dtypes cannot be bound to constraints
            ports = list(schema.ports_of(key, len(node.inputs), len(node.outputs)))
        for kind, k in ports:
            name = (node.inputs if kind == "i" else node.outputs)[k]
            dt = _dtype_of(model, name)
            if dt is not None and dt not in allowed:
                port = f"input {k}" if kind == "i" else f"output {k}"
                return Rejection("dtype", f"{port} is {dt}; {key} allows {', '.join(sorted(allowed))}")
    return None


def _attr_ok(cond, node):
    c = dict(cond)
    name = c["name"]
    present = name in node.attrs
    value = node.attrs.get(name, c.get("default"))
    if c.get("absent") is True and present:
        return f"attribute {name} must be absent"
    if c.get("absent") is False and not present:
        return f"attribute {name} is required"
    if value is None:
        return None
    if "in" in c and value not in c["in"]:
        return f"{name}={value!r} not in {list(c['in'])}"
    if "not_in" in c and value in c["not_in"]:
        return f"{name}={value!r} is not supported"
    if "min" in c and isinstance(value, (int, float)) and value < c["min"]:
        return f"{name}={value!r} below {c['min']}"
    if "max" in c and isinstance(value, (int, float)) and value > c["max"]:
        return f"{name}={value!r} above {c['max']}"
    if c.get("symmetric_pads") and isinstance(value, tuple) and len(value) % 2 == 0:
        h = len(value) // 2
        if tuple(value[:h]) != tuple(value[h:]):
            return f"{name}={list(value)} is asymmetric"
    return None


def _check_rule(rule, node, model):
    if not _version_ok(rule, node.since_version):
        lo, hi = rule.versions
        rng = f"[{lo}, {hi}]" if hi is not None else f"{lo} (open-ended: exact match only)"
        return Rejection("opset_version", f"schema version {node.since_version}, table has {rng}")
    bad = _check_types(rule, node, model)
    if bad:
        return bad
    if rule.dtype_pairs is not None and node.inputs and node.outputs:
        pair = (_dtype_of(model, node.inputs[0]), _dtype_of(model, node.outputs[0]))
        if None not in pair and pair not in rule.dtype_pairs:
            return Rejection("dtype", f"{pair[0]} -> {pair[1]} is not a supported dtype pair")
    if rule.static_shape:
        for t in node.inputs:
            if t and not model.value(t).is_static:
                return Rejection("dynamic_shape", f"input {t!r} has no static shape")
    if rule.min_rank is not None or rule.max_rank is not None:
        idx = rule.rank_inputs if rule.rank_inputs is not None else range(len(node.inputs))
        for k in idx:
            if k >= len(node.inputs) or not node.inputs[k]:
                continue
            r = model.value(node.inputs[k]).rank
            if r is None:
                continue
            if rule.max_rank is not None and r > rule.max_rank:
                return Rejection("rank", f"input {k} has rank {r} > {rule.max_rank}")
            if rule.min_rank is not None and r < rule.min_rank:
                return Rejection("rank", f"input {k} has rank {r} < {rule.min_rank}")
    for cond in rule.attrs:
        why = _attr_ok(cond, node)
        if why:
            return Rejection("attribute", why)
    for k in rule.const_inputs:
        if k < len(node.inputs) and node.inputs[k] and not model.value(node.inputs[k]).is_constant:
            return Rejection("non_constant_input", f"input {k} ({node.inputs[k]!r}) must be a constant initializer")
    return None


def _dtype_only(rules):
    """True when every rule's verdict depends only on the schema version and port dtypes."""
    return all(not (r.static_shape or r.min_rank is not None or r.max_rank is not None or r.attrs
                    or r.const_inputs) for r in rules)


def match_node(table, node, model):
    """Check ``node`` against ``table``.

    Returns
    -------
    (OpRule, None) or (None, Rejection)
        The first rule that accepts the node, or the most telling rejection:
        the one that failed latest in the check order (it got furthest).

    Verdicts that depend only on the op, its schema version and its dtypes (no shape,
    attribute or constant-input predicates) are memoized per table: big models repeat
    the same few hundred signatures thousands of times.
    """
    rules = table.rules_for(node.domain, node.op_type)
    if not rules:
        return None, Rejection("op_not_in_table", f"{node.qualified_op} is not in the {table.provider} table")
    memo = table.__dict__.get("_match_memo")
    if memo is None:
        memo = {}
        object.__setattr__(table, "_match_memo", memo)  # a cache, not state: the table stays frozen
    simple = memo.get(rules)
    if simple is None:
        simple = memo[rules] = _dtype_only(rules)
    key = None
    if simple:
        value = model.value
        key = (node.domain, node.op_type, node.since_version,
               tuple(value(t).dtype if t else "" for t in node.inputs), "|",
               tuple(value(t).dtype if t else "" for t in node.outputs))
        hit = memo.get(key)
        if hit is not None:
            return hit
    best = None
    result = None
    for rule in rules:
        why = _check_rule(rule, node, model)
        if why is None:
            result = (rule, None)
            break
        if best is None or _ORDER.index(why.category) > _ORDER.index(best.category):
            best = why
    if result is None:
        result = (None, best)
    if key is not None:
        memo[key] = result
    return result
