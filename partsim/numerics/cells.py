"""The pieces every lifecycle cell is judged with: numeric checks, delegate state, stage records.
"""

from .describe import digest_array
from .receipt_schema import STAGES


def numeric_result(cpu, other, abs_tol, rel_tol, top_k=None, thresholds=None):
    """compare_receipt over two output dicts (every output one case); the numbers only."""
    from .compare import compare_receipt

    cases = []
    for name, c in cpu.items():
        o = other.get(name)
        if o is None:
            return {"rawTensorResult": "fail", "businessResult": "blocked" if (top_k or thresholds) else
                    "not_checked", "outputs": [{"output": name, "result": "missing_output"}]}
        side = {"modelBundleId": "-", "inputDigest": "-"}
        cases.append({"cpu": dict(side, shape=list(c.shape), dtype=str(c.dtype), values=c.ravel().tolist()),
                      "delegate": dict(side, shape=list(o.shape), dtype=str(o.dtype), values=o.ravel().tolist(),
                                       delegateState="invoked")})
    rec = {"projectAbsTolerance": abs_tol, "projectRelTolerance": rel_tol, "cases": cases}
    if top_k:
        rec["topK"] = top_k
    if thresholds:
        rec["decisionThresholds"] = list(thresholds)
    res = compare_receipt(rec)
    outs = []
    for name, r in zip(cpu, res["cases"]):
        item = {"output": name, "result": r["result"], "minAbsTolerance": r["minAbsTolerance"],
                "minRelTolerance": r["minRelTolerance"], "bitwiseEqual": digest_array(cpu[name]) ==
                digest_array(other[name])}
        if r.get("firstFailure"):
            item["firstFailure"] = {k: r["firstFailure"][k] for k in ("position", "cpu", "delegate", "limit",
                                                                        "reason")}
        outs.append(item)
    return {"rawTensorResult": res["rawTensorResult"], "businessResult": res["businessResult"], "outputs": outs}


def baseline_check(cpu, expected, source, abs_tol, rel_tol):
    if expected is None:
        return {"done": False, "source": None, "result": "not_done", "outputs": []}
    missing = [n for n in cpu if n not in expected]
    if missing:
        return {"done": True, "source": source, "result": "fail",
                "outputs": [{"output": n, "result": "missing_expected"} for n in missing]}
    import numpy as np

    exp = {n: np.asarray(expected[n]) for n in cpu}
    bad_shape = [n for n in cpu if tuple(exp[n].shape) != tuple(cpu[n].shape)]
    if bad_shape:
        return {"done": True, "source": source, "result": "fail",
                "outputs": [{"output": n, "result": "shape_mismatch", "expectedShape": list(exp[n].shape),
                             "cpuShape": list(cpu[n].shape)} for n in bad_shape]}
    # the expected outputs are the reference here: "cpu" side = expected, "delegate" side = our CPU
    exp = {n: exp[n].astype(cpu[n].dtype, copy=False) for n in cpu}
    r = numeric_result(exp, cpu, abs_tol, rel_tol)
    return {"done": True, "source": source, "result": "pass" if r["rawTensorResult"] == "pass" else "fail",
            "outputs": r["outputs"]}


def worst(results):
    order = ("fail", "blocked", "not_checked", "pass")
    return min(results, key=order.index) if results else "not_checked"


def run_record(rec, tag):
    for r in rec.get("runs") or ():
        if r.get("tag") == tag:
            return r
    return {}


def delegate_state(run, child_state, target):
    from ..rules.providers import KNOWN_PROVIDERS
    from ..runtime.sessions import fallback_reason

    reason = fallback_reason(run, child_state, known_provider=target in KNOWN_PROVIDERS)
    st = run.get("stages") or {}
    if reason == "none":
        state = "invoked"
    elif st.get("invocationCompleted") == "ok":
        state = "fallback_cpu"
    else:
        state = "failed"
    stages = {k: st.get(k, "skipped") for k in STAGES}
    return stages, state, reason


def partition_summary(model, run, target):
    """Observed counts (from the session) plus the predicted undelegated reason categories."""
    nodes = run.get("nodesPerProvider") or {}
    total = sum(nodes.values())
    out = {"delegatedNodeCount": int(nodes.get(target, 0)),
           "partitionCount": int((run.get("groupsPerProvider") or {}).get(target, 0)),
           "nodesPerProvider": dict(sorted((k, int(v)) for k, v in nodes.items())),
           "undelegatedNodeCount": int(total - nodes.get(target, 0)),
           "observed": bool(nodes)}
    try:
        from ..api import predict

        summary, _ = predict(str(model), [target])
        out["undelegatedReasons"] = dict(sorted(summary.get("undelegatedReasons", {}).items()))
        out["undelegatedReasonsSource"] = "partsim prediction on the graph as written"
    except Exception as exc:  # noqa: BLE001 - a provider without a table, an unreadable graph: no categories
        out["undelegatedReasons"] = {}
        out["undelegatedReasonsSource"] = f"unavailable ({type(exc).__name__})"
    return out


def accel_cell_state(delegate_state, outputs_present, raw, business, drift_ok=True):
    if not outputs_present:
        return "error"
    if delegate_state != "invoked":
        return "fallback_cpu"
    if raw != "pass" or business == "fail" or not drift_ok:
        return "failed"
    return "passed"


def lifecycle_cells(rec, arrays, num, sample_set, repeat, acc_provider, fail_provider, method, fallback_policy):
    """Judge the five lifecycle cells of one child run.

    ``num(a, b, business=True)`` compares two output dicts under the project tolerance.
    Returns ``(cells, stages, delegate state, fallback reason)`` of the accelerator session.
    """
    from .inputs import input_digest

    state = rec.get("state", "crashed")
    cpu = arrays["cpu~main"]
    digest = input_digest(sample_set.feeds)
    acc = run_record(rec, "accel")
    stages, dstate, reason = delegate_state(acc, state, acc_provider)

    def common(run, dstate_, reason_, inv="main"):
        invs = {i["name"]: i for i in run.get("invocations") or ()}
        return {"stages": {k: (run.get("stages") or {}).get(k, "skipped") for k in STAGES},
                "delegateState": dstate_, "fallbackReason": reason_,
                "grantedProviders": list(run.get("granted") or []),
                "inputDigest": (invs.get(inv) or {}).get("inputDigest")}

    cells = {}
    first = arrays.get("accel~r0")
    cells["first"] = _first_cell(common(acc, dstate, reason, "r0"), digest, cpu, first, dstate, num)
    cells["repeat"] = _repeat_cell(common(acc, dstate, reason, "r0"), digest, cpu, first, dstate, num, repeat,
                                   [arrays.get(f"accel~r{i}") for i in range(1, repeat)])
    if not sample_set.dynamic:
        cells["shape_change"] = {"state": "not_applicable", "reason": "no_dynamic_dimension"}
    else:
        c = common(acc, dstate, reason, "shape")
        c.update(cpuInputDigest=input_digest(sample_set.extra["shape"]), dims=sample_set.shape_dims)
        cells["shape_change"] = _shape_change_cell(c, first, arrays, dstate, num)
    rb = run_record(rec, "rebuild")
    _, rb_state, rb_reason = delegate_state(rb, state, acc_provider)
    cells["rebuild"] = _rebuild_cell(common(rb, rb_state, rb_reason), digest, cpu, first,
                                     arrays.get("rebuild~main"), rb_state, num)
    cells["fallback"] = _fallback_cell(rec, arrays, state, fail_provider, method, fallback_policy, digest, cpu, num)
    return cells, stages, dstate, reason


def _blocked():
    """The results of a cell whose outputs never came."""
    return {"rawTensorResult": "blocked", "businessResult": "blocked", "outputs": []}


def _first_cell(c, digest, cpu, first, dstate, num):
    c["cpuInputDigest"] = digest
    c.update(num(cpu, first) if first is not None else _blocked())
    c["state"] = accel_cell_state(dstate, first is not None, c["rawTensorResult"], c["businessResult"])
    return c


def _repeat_cell(c, digest, cpu, first, dstate, num, repeat, reps):
    c.update(cpuInputDigest=digest, invocations=repeat)
    if first is None or any(x is None for x in reps):
        c.update(_blocked(), state="error")
        return c
    vs_cpu = [num(cpu, x) for x in reps]
    drift = [num(first, x, business=False) for x in reps]
    c.update(rawTensorResult=worst([v["rawTensorResult"] for v in vs_cpu]),
             businessResult=worst([v["businessResult"] for v in vs_cpu]),
             outputs=vs_cpu[-1]["outputs"],
             drift={"result": worst([d["rawTensorResult"] for d in drift]),
                    "bitwiseEqual": all(o["bitwiseEqual"] for d in drift for o in d["outputs"]),
                    "maxAbs": max((o["minAbsTolerance"] or 0.0) for d in drift for o in d["outputs"])})
    c["state"] = accel_cell_state(dstate, True, c["rawTensorResult"], c["businessResult"],
                                  c["drift"]["result"] == "pass")
    return c


def _shape_change_cell(c, first, arrays, dstate, num):
    sh, cpu_sh, back = arrays.get("accel~shape"), arrays.get("cpu~shape"), arrays.get("accel~back")
    if cpu_sh is None:
        c.update(state="error", reason="cpu_rejected_shape", **_blocked())
    elif sh is None or back is None or first is None:
        c.update(state="error", reason="no_output", **_blocked())
    else:
        r = num(cpu_sh, sh)
        b = num(first, back, business=False)
        c.update(r, backToOriginal={"result": b["rawTensorResult"],
                                    "bitwiseEqual": all(o["bitwiseEqual"] for o in b["outputs"])})
        c["state"] = accel_cell_state(dstate, True, r["rawTensorResult"], r["businessResult"],
                                      b["rawTensorResult"] == "pass")
    return c


def _rebuild_cell(c, digest, cpu, first, x, rb_state, num):
    c["cpuInputDigest"] = digest
    if x is not None:
        c.update(num(cpu, x))
        if first is not None:
            c["vsFirst"] = {"bitwiseEqual": all(o["bitwiseEqual"] for o in num(first, x, False)["outputs"])}
    else:
        c.update(_blocked())
    c["state"] = accel_cell_state(rb_state, x is not None, c["rawTensorResult"], c["businessResult"])
    return c


def _fallback_cell(rec, arrays, state, fail_provider, method, fallback_policy, digest, cpu, num):
    """The induced failure, then (policy ``cpu``) a fresh CPU session that must equal the baseline bitwise."""
    ind = run_record(rec, "induced")
    ind_stages, _, ind_reason = delegate_state(ind, state, fail_provider)
    induced = ind_reason != "none" and (ind.get("stages") or {}).get("delegateCreated") != "ok"
    c = {"failureMethod": method, "failureTarget": fail_provider,
         "failedStages": ind_stages, "fallbackReason": ind_reason if induced else "none",
         "failureInduced": induced, "fallbackPolicy": fallback_policy, "failedSessionReused": False,
         "freshSession": fallback_policy == "cpu", "cpuInputDigest": digest}
    if fallback_policy != "cpu":
        c["cpuInvocationResult"] = "not_run"
        c["outputsReturned"] = False
        c.update(rawTensorResult="not_checked", businessResult="not_checked", outputs=[])
        c["state"] = "passed" if induced else "error"
        return c
    fresh = arrays.get("fresh_cpu~main")
    fr = run_record(rec, "fresh_cpu")
    c["cpuInvocationResult"] = "ok" if fresh is not None else "failed"
    c["inputDigest"] = ((fr.get("invocations") or [{}])[0]).get("inputDigest")
    if fresh is not None:
        r = num(cpu, fresh)
        c.update(r)
        c["bitwiseEqual"] = all(o["bitwiseEqual"] for o in r["outputs"])
    else:
        c.update(_blocked(), bitwiseEqual=False)
    c["state"] = "error" if not induced else ("passed" if c["bitwiseEqual"] else "failed")
    return c
