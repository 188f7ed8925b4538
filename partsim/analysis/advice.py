"""Next steps after a prediction: the largest cause that keeps nodes off the first provider, and the
``whatif`` change that shows what removing it gives (pure: a summary in, records out).

The cause is the (reason, op type) group with the most nodes among the causes a user can act on
(``cpu_preferred`` is ORT keeping shape computations on the CPU on purpose,
``claimed_by_higher_priority`` and ``policy`` follow from the request itself).  How much lifting
each cause saves is what ``partsim blame`` measures by re-simulating; this only picks the change
to try first, so a plain ``simulate`` stays one simulation.
"""

from ..io.variants import decompose_sources

__all__ = ["largest_cause", "suggested_change", "NOT_ACTIONABLE"]

CPU = "CPUExecutionProvider"

NOT_ACTIONABLE = {
    "cpu_preferred": "ORT keeps small integer shape computations on the CPU on purpose",
    "claimed_by_higher_priority": "another requested provider took the node first",
    "policy": "the whole-graph policy refuses the CPU fallback",
}


def largest_cause(summary):
    """``{reason, opType, domain, nodes, detail, provider, scopes}`` of the largest actionable group of
    nodes off the first provider, or None (nothing off it, or only the CPU requested).

    >>> s = {"effectiveProviders": ["EP", CPU], "nodes": [
    ...     {"name": "a", "opType": "Erf", "domain": "", "reason": "op_not_in_table", "reasonDetail": "no rule"},
    ...     {"name": "b", "opType": "Shape", "domain": "", "reason": "cpu_preferred"},
    ...     {"name": "c", "opType": "Shape", "domain": "", "reason": "cpu_preferred"}]}
    >>> largest_cause(s)["opType"]
    'Erf'
    """
    found = causes(summary)
    return found[0] if found else None


def causes(summary):
    """Every actionable group of nodes off the first provider (as :func:`largest_cause`), largest first.
    ``scopes``: the control-flow bodies (``"<If node>/then_branch"``) its nodes sit in, empty for the
    main graph."""
    providers = summary["effectiveProviders"]
    if not providers or providers[0] == CPU:
        return []
    groups = {}
    for n in summary["nodes"]:
        if n["reason"] and n["reason"] not in NOT_ACTIONABLE:
            groups.setdefault((n["reason"], n["domain"], n["opType"]), []).append(n)
    ranked = sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    return [{"reason": reason, "opType": op, "domain": domain, "nodes": len(nodes), "provider": providers[0],
             "detail": nodes[0].get("reasonDetail") or "",
             "scopes": sorted({n["scope"] for n in nodes if n.get("scope")}),
             "origins": sorted({n.get("origin") or "model" for n in nodes})}
            for (reason, domain, op), nodes in ranked]


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
    ops = cause.get("decompose") or ((op,) if cause.get("decomposable") else ())
    if ops and not cause.get("scopes"):
        inlined = [o for o in ops if o != op]
        return (["--decompose", ",".join(ops)], f"replace every {' and every '.join(ops)} by the ops that define "
                f"{'them' if len(ops) > 1 else 'it'}" + (f" (ORT expands {', '.join(inlined)} into these {op} nodes)"
                                                         if inlined else ""))
    if cause["reason"] == "dynamic_shape" and symbolic_dims:
        return (["--dim", ",".join(f"{d}=1" for d in symbolic_dims)],
                "fix the symbolic input dimensions (1 here: put your real sizes)")
    if cause["reason"] == "non_constant_input" and not optimized:
        return (["--optimize", "basic"],
                "let ORT fold constant subgraphs first (its ORT_ENABLE_BASIC rewrites run before partitioning)")
    return (["--add-support", op], f"suppose {cause['provider']} accepted every {op} node")


def next_steps(summary, request, symbolic_dims=(), optimized=False, fixed_dims=None, level=None,
               measure=None, decomposable=()):
    """What to do after reading a summary: records ``{"text", "command"}`` (``command`` a list of
    words after ``partsim``, or None).

    ``request`` is the model and the provider options exactly as the user gave them
    (``["m.onnx", "-p", "nnapi"]``), so each command can be pasted as it is.  ``fixed_dims``: the
    dimensions the prediction fixed (``--dim``): whatif (``--base-dim``, both runs) and blame keep them.  ``level``: the
    ORT optimization level predicted (the commands repeat it unless it is the default, ``all``);
    ``None`` keeps the older ``optimized`` flag (``--optimize basic``).  ``decomposable``: op types
    the model could replace by their definition (suggested as ``--decompose`` first).

    ``measure(whatif words) -> text or None`` simulates a suggested change: a change is shown only
    with its measured effect (``text``), and one that changes no count (``None``) is not shown;
    the next cause is tried instead (at most three).  Without ``measure`` every change is shown
    unmeasured (the doctest below).

    >>> s = {"effectiveProviders": ["EP", CPU], "nodes": [
    ...     {"name": "a", "opType": "Erf", "domain": "", "reason": "op_not_in_table", "reasonDetail": "no rule"}]}
    >>> [st["command"] for st in next_steps(s, ["m.onnx", "--support", "Relu"])][1:]
    [['whatif', 'm.onnx', '--support', 'Relu', '--add-support', 'Erf'], ['blame', 'm.onnx', '--support', 'Relu']]
    """
    providers = summary["effectiveProviders"]
    failing = _failure_step(summary)
    if failing is not None and not causes(summary):
        return [failing]
    if not providers or providers[0] == CPU:
        return [{"text": "only the CPU was asked for: name an accelerator, e.g. -p nnapi, -p cuda, -p openvino "
                         "(`partsim rules list` shows every shipped table)", "command": None}]
    kept = [w for k, v in sorted((fixed_dims or {}).items()) for w in ("--dim", f"{k}={v}")]
    if level is not None:
        same = ["--level", level] if level != "all" else []
        base, blame = list(request) + same, ["blame"] + list(request) + same + kept
    else:
        base = list(request) + (["--base-optimize", "basic"] if optimized else [])
        blame = ["blame"] + list(request) + (["--optimize", "basic"] if optimized else []) + kept
    found = causes(summary)
    if not found:
        off = {n["reason"] for n in summary["nodes"] if n["reason"]}
        if not off:
            return [{"text": f"every node is on {providers[0]}: nothing to change", "command": None}]
        why = "; ".join(NOT_ACTIONABLE[r] for r in sorted(off))
        return [{"text": f"the nodes off {providers[0]} stay there for reasons a model change does not "
                         f"remove ({why})", "command": None},
                {"text": "measure what each cause would save anyway:", "command": blame}]
    steps = [failing] if failing is not None else []
    for cause in found[:3]:
        cause["decompose"] = () if cause["domain"] else decompose_sources(cause["opType"], cause["origins"], 0,
                                                                           known=set(decomposable))
        command, what = _whatif_command(cause, base, symbolic_dims, optimized, fixed_dims)
        effect = measure(command[1:]) if measure is not None else ""
        steps.append(_cause_step(cause))
        if effect is None:
            steps[-1]["text"] += f"; {what} changes no count (measured), so it is not suggested"
            continue
        steps.append({"text": f"{what}{': ' + effect if effect else ''}; compare:", "command": command})
        break
    steps.append({"text": "rank every cause by what lifting it alone saves (partitions, transfers, copies):",
                  "command": blame})
    return steps


def _failure_step(summary):
    """The first step when ORT would not create the session at all (``status: session_would_fail``): what to do
    about its ``failure``, before anything about placement; ``None`` for a session that would run."""
    if summary.get("status") != "session_would_fail":
        return None
    failure = summary.get("failure") or ""
    if failure.startswith("ORT refuses the model at load"):
        if "Unrecognized attribute" in failure:
            todo = ("export the model at an opset whose schema this ORT knows, or without that attribute; "
                    "`--ort VERSION` predicts a newer onnxruntime")
        else:
            todo = ("export the model for the IR version and opset this ORT loads, or predict a newer one with "
                    "`--ort VERSION`")
        return {"text": f"ORT would refuse to load the model, so nothing below runs: {todo}", "command": None}
    return {"text": "ORT would not create this session (see `failure` above); the counts below describe a session "
                    "that fails: fix the failure first", "command": None}


def _cause_step(cause):
    nodes = f"{cause['nodes']} {cause['opType']} node{'' if cause['nodes'] == 1 else 's'}"
    detail = f": {cause['detail']}" if cause["detail"] else ""
    where = ""
    if cause["scopes"]:  # nodes in an If/Loop/Scan body: the control-flow node decides where they run
        bodies = ", ".join(cause["scopes"][:2]) + (", …" if len(cause["scopes"]) > 2 else "")
        where = f" inside control flow (the body {bodies})"
    return {"text": f"the largest cause: {cause['reason']} keeps {nodes}{where} off {cause['provider']}{detail}",
            "command": None}


def _whatif_command(cause, base, symbolic_dims, optimized, fixed_dims):
    change, what = suggested_change(cause, symbolic_dims, optimized)
    if fixed_dims:  # both of whatif's runs keep the user's --dim
        change = ["--base-dim", ",".join(f"{k}={v}" for k, v in sorted(fixed_dims.items()))] + change
    return ["whatif"] + base + change, what


def summary_counts(summary):
    """The counts :func:`effect_text` compares, read off a partitionSummary (the prediction the
    user is reading: with its own --dim and level, which whatif's "before" does not keep)."""
    return {"acceleratorPartitions": summary["partitionCount"], "transfers": summary["transfers"],
            "delegatedNodes": summary["delegatedNodeCount"],
            "memcpy": summary["memcpy"]["fromHost"] + summary["memcpy"]["toHost"]}


def effect_text(result, before=None):
    """The counts a whatif result changes (``None`` when none does): accelerator partitions,
    transfers, nodes off the CPU, Memcpy nodes; against ``before`` (:func:`summary_counts`) when
    given, else whatif's own "before"."""
    b, a = before or result["before"], result["after"]
    parts = []
    for key, words in (("acceleratorPartitions", "accelerator partitions"), ("transfers", "transfers"),
                       ("delegatedNodes", "nodes off the CPU"), ("memcpy", "Memcpy nodes")):
        if key in b and b[key] != a[key]:
            parts.append(f"{words} {b[key]} -> {a[key]}")
    return "measured: " + ", ".join(parts) if parts else None
