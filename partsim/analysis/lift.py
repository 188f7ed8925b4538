"""Lifting a cause: a copy of a rule table that no longer applies one rejection (op, category, dtype).
"""

import re
from dataclasses import replace

from ..errors import UsageError
from ..rules.table import OpRule
from ..ir.schemas import normalize_domain

__all__ = ["lift_op_type", "lift_reason", "add_support", "parse_support_spec", "LIFTABLE_REASONS"]


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
    >>> from partsim.rules.table import adhoc_table
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
    from ..ir.model import DTYPE_BYTES

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
