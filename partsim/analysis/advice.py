"""Next steps after a prediction: the largest cause that keeps nodes off the first provider, and the
``whatif`` change that shows what removing it gives (pure: a summary in, records out).

The cause is the (reason, op type) group with the most nodes among the causes a user can act on
(``cpu_preferred`` is ORT keeping shape computations on the CPU on purpose,
``claimed_by_higher_priority`` and ``policy`` follow from the request itself).  How much lifting
each cause saves is what ``partsim blame`` measures by re-simulating; this only picks the change
to try first, so a plain ``simulate`` stays one simulation.
"""

__all__ = ["largest_cause", "suggested_change", "NOT_ACTIONABLE"]

CPU = "CPUExecutionProvider"

NOT_ACTIONABLE = {
    "cpu_preferred": "ORT keeps small integer shape computations on the CPU on purpose",
    "claimed_by_higher_priority": "another requested provider took the node first",
    "policy": "the whole-graph policy refuses the CPU fallback",
}


def largest_cause(summary):
    """``{reason, opType, domain, nodes, detail, provider}`` of the largest actionable group of nodes
    off the first provider, or None (nothing off it, or only the CPU requested).

    >>> s = {"effectiveProviders": ["EP", CPU], "nodes": [
    ...     {"name": "a", "opType": "Erf", "domain": "", "reason": "op_not_in_table", "reasonDetail": "no rule"},
    ...     {"name": "b", "opType": "Shape", "domain": "", "reason": "cpu_preferred"},
    ...     {"name": "c", "opType": "Shape", "domain": "", "reason": "cpu_preferred"}]}
    >>> largest_cause(s)["opType"]
    'Erf'
    """
    providers = summary["effectiveProviders"]
    if not providers or providers[0] == CPU:
        return None
    groups = {}
    for n in summary["nodes"]:
        if n["reason"] and n["reason"] not in NOT_ACTIONABLE:
            groups.setdefault((n["reason"], n["domain"], n["opType"]), []).append(n)
    if not groups:
        return None
    (reason, domain, op), nodes = min(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    return {"reason": reason, "opType": op, "domain": domain, "nodes": len(nodes), "provider": providers[0],
            "detail": nodes[0].get("reasonDetail") or ""}


def suggested_change(cause, symbolic_dims=(), optimized=False):
    """``(whatif options, what they try)`` for a :func:`largest_cause` record.

    ``symbolic_dims``: the model's dim_param names still open; ``optimized``: the prediction was
    already made on ORT's BASIC rewrite (``--optimize basic``).

    >>> suggested_change({"reason": "dynamic_shape", "opType": "Conv", "domain": ""}, ["batch"])[0]
    ['--dim', 'batch=1']
    >>> suggested_change({"reason": "dtype", "opType": "Gemm", "domain": "com.microsoft", "provider": "EP"})[0]
    ['--add-support', 'com.microsoft:Gemm']
    """
    op = f"{cause['domain']}:{cause['opType']}" if cause["domain"] else cause["opType"]
    if cause["reason"] == "dynamic_shape" and symbolic_dims:
        return (["--dim", ",".join(f"{d}=1" for d in symbolic_dims)],
                "fix the symbolic input dimensions (1 here: put your real sizes)")
    if cause["reason"] == "non_constant_input" and not optimized:
        return (["--optimize", "basic"],
                "let ORT fold constant subgraphs first (its ORT_ENABLE_BASIC rewrites run before partitioning)")
    return (["--add-support", op], f"suppose {cause['provider']} accepted every {op} node")


def next_steps(summary, request, symbolic_dims=(), optimized=False, fixed_dims=None, level=None):
    """What to do after reading a summary: records ``{"text", "command"}`` (``command`` a list of
    words after ``partsim``, or None).

    ``request`` is the model and the provider options exactly as the user gave them
    (``["m.onnx", "-p", "nnapi"]``), so each command can be pasted as it is.  ``fixed_dims``: the
    dimensions the prediction fixed (``--dim``): the whatif change keeps them, while whatif's
    "before" and blame start from the model as written, which a last step says.  ``level``: the
    ORT optimization level predicted (the commands repeat it unless it is the default, ``all``);
    ``None`` keeps the older ``optimized`` flag (``--optimize basic``).

    >>> s = {"effectiveProviders": ["EP", CPU], "nodes": [
    ...     {"name": "a", "opType": "Erf", "domain": "", "reason": "op_not_in_table", "reasonDetail": "no rule"}]}
    >>> [st["command"] for st in next_steps(s, ["m.onnx", "--support", "Relu"])][1:]
    [['whatif', 'm.onnx', '--support', 'Relu', '--add-support', 'Erf'], ['blame', 'm.onnx', '--support', 'Relu']]
    """
    providers = summary["effectiveProviders"]
    if not providers or providers[0] == CPU:
        return [{"text": "only the CPU was asked for: name an accelerator, e.g. -p nnapi, -p cuda, -p openvino "
                         "(`partsim rules list` shows every shipped table)", "command": None}]
    cause = largest_cause(summary)
    if level is not None:
        same = ["--level", level] if level != "all" else []
        base, blame = list(request) + same, ["blame"] + list(request) + same
    else:
        base = list(request) + (["--base-optimize", "basic"] if optimized else [])
        blame = ["blame"] + list(request) + (["--optimize", "basic"] if optimized else [])
    if cause is None:
        off = {n["reason"] for n in summary["nodes"] if n["reason"]}
        if not off:
            return [{"text": f"every node is on {providers[0]}: nothing to change", "command": None}]
        why = "; ".join(NOT_ACTIONABLE[r] for r in sorted(off))
        return [{"text": f"the nodes off {providers[0]} stay there for reasons a model change does not "
                         f"remove ({why})", "command": None},
                {"text": "measure what each cause would save anyway:", "command": blame}]
    nodes = f"{cause['nodes']} {cause['opType']} node{'' if cause['nodes'] == 1 else 's'}"
    detail = f": {cause['detail']}" if cause["detail"] else ""
    change, what = suggested_change(cause, symbolic_dims, optimized)
    if fixed_dims:  # whatif's "after" keeps the user's --dim; its "before" is the model as written
        given = [f"{k}={v}" for k, v in sorted(fixed_dims.items())]
        if change[0] == "--dim":
            change = ["--dim", ",".join(given + change[1].split(","))]
        else:
            change = ["--dim", ",".join(given)] + change
    steps = [{"text": f"the largest cause: {cause['reason']} keeps {nodes} off {cause['provider']}{detail}",
              "command": None},
             {"text": f"{what}, and compare:", "command": ["whatif"] + base + change},
             {"text": "rank every cause by what lifting it alone saves (partitions, transfers, copies):",
              "command": blame}]
    if fixed_dims:
        steps.append({"text": "whatif's before and blame are the model as written, without your --dim",
                      "command": None})
    return steps
