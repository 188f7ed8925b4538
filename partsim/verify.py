"""Compare a prediction with an observation (SPEC section 5), and baselines for CI."""

from .sim.summary import fragments_of

__all__ = ["compare", "baseline_record", "compare_baseline", "observed_status"]


def compare(summary, assignment, observation, min_agreement=1.0, check_counts=True):
    """Node-level agreement and side-by-side counts.

    Returns
    -------
    dict
        ``{passed, agreement, compared, agreeing, disagreements[], unobserved[], unpredicted[], counts{}}``.
        ``passed`` is True when agreement >= ``min_agreement`` and (with
        ``check_counts``) the Memcpy counts are equal.
    """
    model = assignment.model
    observed = observation["nodes"]
    predicted = {n["name"]: n for n in summary["nodes"]}
    disagreements, unobserved = [], []
    agreeing = 0
    for name, n in predicted.items():
        if name not in observed:
            unobserved.append(name)
            continue
        if observed[name] == n["provider"]:
            agreeing += 1
        else:
            disagreements.append({"node": name, "opType": n["opType"], "predicted": n["provider"],
                                  "observed": observed[name], "predictedReason": n["reason"],
                                  "predictedDetail": n.get("reasonDetail")})
    unpredicted = sorted(k for k in observed if k not in predicted)
    compared = agreeing + len(disagreements)
    agreement = agreeing / compared if compared else 0.0
    # observed fragments: the same counting rule on the observed providers (unobserved nodes keep the prediction)
    index = {n.name: n.index for n in model.nodes}
    obs_provider = list(assignment.provider)
    for name, ep in observed.items():
        if name in index:
            obs_provider[index[name]] = ep
    obs_frags = fragments_of(model, obs_provider)
    pred_mem = summary["memcpy"]
    obs_mem = observation.get("memcpy") or {}
    counts = {
        "fragments": {"predicted": summary["fragments"], "observed": len(obs_frags)},
        "memcpyFromHost": {"predicted": pred_mem["fromHost"], "observed": obs_mem.get("fromHost")},
        "memcpyToHost": {"predicted": pred_mem["toHost"], "observed": obs_mem.get("toHost")},
    }
    obs_parts = [p for p in observation.get("partitions", []) if len(p.get("nodes", ())) > 1]
    if obs_parts:
        counts["compiledPartitions"] = {
            "predicted": sum(1 for p in summary["partitions"] if p["provider"] in {q["provider"] for q in obs_parts}),
            "observed": len(obs_parts)}
    counts_ok = all(v["observed"] is None or v["predicted"] == v["observed"]
                    for k, v in counts.items() if k.startswith("memcpy"))
    passed = compared > 0 and agreement >= min_agreement and (counts_ok or not check_counts)
    # a session predicted to fail that ran (or the other way round) is a failed prediction
    obs_status = observed_status(observation)
    status = {"predicted": summary.get("status"), "observed": obs_status}
    if obs_status is not None:
        if obs_status != summary.get("status"):
            passed = False
        elif obs_status == "session_would_fail":
            passed = True
    return {
        "passed": passed,
        "minAgreement": min_agreement,
        "agreement": round(agreement, 6),
        "compared": compared,
        "agreeing": agreeing,
        "disagreements": disagreements,
        "unobserved": sorted(unobserved),
        "unpredicted": unpredicted,
        "counts": counts,
        "status": status,
        "observation": {k: observation.get(k) for k in ("source", "runtime", "device", "level", "granted")},
    }


def observed_status(observation):
    """``ok`` / ``session_would_fail`` for an observation that says whether its session was
    built (``state`` of a run here, ``status`` or ``create_error`` of a record), else ``None``."""
    if observation.get("status") in ("ok", "session_would_fail"):
        return observation["status"]
    state = observation.get("state")
    if state == "ok":
        return "ok"
    if state == "create_failed":
        return "session_would_fail"
    return None


BASELINE_KEYS = ("fragments", "transfers", "memcpyFromHost", "memcpyToHost", "partitionCount")


def baseline_record(summary):
    """The numbers a CI baseline pins (all must not grow)."""
    return {"fragments": summary["fragments"], "transfers": summary["transfers"],
            "memcpyFromHost": summary["memcpy"]["fromHost"], "memcpyToHost": summary["memcpy"]["toHost"],
            "partitionCount": summary["partitionCount"], "delegatedNodeCount": summary["delegatedNodeCount"],
            "providers": summary["effectiveProviders"]}


def compare_baseline(summary, baseline):
    """List the counts that grew against ``baseline`` (a model change that fragments the graph fails CI)."""
    now = baseline_record(summary)
    grew = []
    for k in BASELINE_KEYS:
        if k in baseline and now[k] > baseline[k]:
            grew.append({"count": k, "baseline": baseline[k], "now": now[k]})
    return {"passed": not grew, "grew": grew, "now": now, "baseline": baseline}
