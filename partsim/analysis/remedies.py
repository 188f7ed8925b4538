"""Who can act on a blamed cause, and what they would do: the user (model or session), or only
the provider's vendor (or a user table given with ``-r``).

A cause is *actionable* when the user can remove it without changing the execution provider:
a session option (ORT's optimization level), an export or conversion of the model (fixed
input dimensions, another opset, constant weights, another dtype, another rank or
attribute).  Lifting an op type, or a rejection the provider makes for every form of the
node (the op is not in its table, the kernel version is not registered, its partitioning
hooks, ORT's own CPU-preferred shape pass), needs a change to the provider itself: only its
vendor can make it -- or the user's own capability table, which only predicts it.
"""

__all__ = ["WHO", "actionability", "opset_candidates", "EFFORT"]


# who can act -> the words the table and JSON use
WHO = {
    "session": "you (a session option)",
    "model": "you (export or convert the model)",
    "provider": "the provider's vendor (or your own table, -r)",
    "ort": "ONNX Runtime (its own pass; no option)",
}

# how much work each kind of change is for the user: a tie in coverage and partitions goes
# to the cheaper one (a session option before a re-export before a graph edit; the named op type
# before the category it falls in)
EFFORT = {"level": 0, "dims": 1, "dim": 2, "opset": 3, "decompose": 3, "level+dims": 4, "opType": 5, "reason": 6}

_REASON_WHO = {
    "non_constant_input": ("model", "make those inputs constant initializers (ORT's basic level folds constant "
                                    "subgraphs into them: see the level row)"),
    "dynamic_shape": ("model", "give the inputs fixed sizes at export, or fix the symbolic dims "
                               "(see the dims rows; --dim NAME=VALUE)"),
    "dtype": ("model", "export or convert the model to a dtype the provider takes"),
    "rank": ("model", "reshape to a rank the provider takes"),
    "attribute": ("model", "export the op with attribute values the provider takes"),
    "opset_version": ("provider", "the provider registers no kernel at this schema version; converting the "
                                  "model's opset may reach one (see the opset rows)"),
    "op_not_in_table": ("provider", "the provider has no kernel for these op types at any version"),
    "stop_op_downstream": ("provider", "the provider's partitioning stops at these ops"),
    "group_rejected": ("provider", "the provider's partitioning drops these groups"),
    "cpu_preferred": ("ort", "ORT's CPU-preferred pass keeps shape arithmetic on the CPU; its basic level "
                             "folds most of it away (see the level row)"),
}


def actionability(kind, cause, table=None, op=None):
    """``(actionable, who, remedy)`` for a blame row of ``kind`` (``opType``, ``reason``,
    ``level``, ``dim``, ``dims``, ``opset``, ``level+dims``) and ``cause``."""
    if kind in ("level", "level+dims"):
        level = cause.split()[1]
        text = (f"keep ORT's {level} rewrites on (a session at ORT_ENABLE_{level.upper()} or above; Python's "
                f"default ORT_ENABLE_ALL includes them) and predict with --optimize {level}")
        if kind == "level":
            return True, "session", text
        dims = cause.split(" + ", 1)[1]
        return True, "model", text + f"; and export with fixed input sizes ({dims})"
    if kind in ("dim", "dims"):
        return True, "model", (f"export with fixed input sizes ({cause}) or set them as free dimension "
                               "overrides in the session options")
    if kind == "decompose":
        op = cause.split()[-1]
        return True, "model", f"replace each {op} by the ops that define it, at export or by editing the graph"
    if kind == "opset":
        return True, "model", f"convert the model: onnx.version_converter.convert_version(model, {cause.split()[-1]})"
    if kind == "reason":
        who, remedy = _REASON_WHO.get(cause, ("provider", "a rejection the user cannot change"))
        return who in ("session", "model"), who, remedy
    if table is not None and op is not None and not table.rules_for(*op):
        return False, "provider", f"{table.provider} has no kernel for {cause} at any version"
    return False, "provider", f"{table.provider if table else 'the provider'} would have to take every form of {cause}"


def opset_candidates(model, table, rejected, limit=3):
    """Opsets of the default domain at which some ``opset_version``-rejected node would find a
    kernel of ``table``: for each rejected op type the nearest opset above the model's (else
    below) where its schema version falls in a rule's version range.  Uses ONNX's own schema
    registry (``onnx.defs.get_schema``) to resolve the version a node would have."""
    import onnx.defs

    from ..sim.match import _version_ok

    current = model.opsets.get("", None)
    if current is None:
        return []
    newest = onnx.defs.onnx_opset_version()
    picks = set()
    for op in sorted({model.nodes[k].op_type for k in rejected if model.nodes[k].domain == ""}):
        rules = table.rules_for("", op)

        def works(n):
            try:
                since = onnx.defs.get_schema(op, n, "").since_version
            except Exception:  # onnx.defs raises SchemaError for an op not yet defined at n
                return False
            return any(_version_ok(r, since) for r in rules)

        up = next((n for n in range(current + 1, newest + 1) if works(n)), None)
        down = next((n for n in range(current - 1, 6, -1) if works(n)), None)
        pick = up if up is not None else down
        if pick is not None:
            picks.add(pick)
    return sorted(picks, key=lambda n: (abs(n - current), n))[:limit]
