"""Compare a prediction with an observation (docs/contract.md §5), and baselines for CI."""

import hashlib
import re

from ..errors import UsageError
from ..sim.summary import fragments_of

_TOKEN = re.compile(r"^(.*)_token_\d+$")
_INSERTED_TRANSPOSE = re.compile(r"^Transpose(_token_\d+)?(#\d+)?$")  # #k: the same name in another graph

__all__ = ["observed_status", "compare", "compare_final", "pair_unnamed", "baseline_record", "compare_baseline", "check_baseline_context",
           "table_digests", "REASON_CATEGORIES", "BASELINE_VERSION", "GROWING_COUNTS", "node_gist"]


def compare(summary, assignment, observation, min_agreement=1.0, check_counts=True, min_final_agreement=None):
    """Node-level agreement and side-by-side counts.

    Returns
    -------
    dict
        ``{passed, agreement, compared, agreeing, disagreements[], unobserved[], unpredicted[], counts{}}``,
        and ``final`` (:func:`compare_final`) where both sides have the final view.  ``passed`` is True
        when agreement (the graph ORT partitions, docs/contract.md §5) >= ``min_agreement``, (with ``check_counts``)
        the Memcpy counts are equal and, when ``min_final_agreement`` is given, the final view's
        agreement reaches it.
    """
    if observation.get("state") not in (None, "ok"):
        return _compare_refusal(summary, observation, min_agreement)
    predicted = {n["name"]: n for n in summary["nodes"]}
    observed, layout = _match_layout_names(predicted, summary, observation)
    predicted.update(_inserted_layout_nodes(summary, observed, predicted, observation.get("opTypes") or {}))
    observed = pair_unnamed(observed, observation.get("opTypes") or {}, predicted)
    agreeing, disagreements, unobserved = _node_agreement(predicted, observed)
    unpredicted = sorted(k for k in observed if k not in predicted)
    compared = agreeing + len(disagreements)
    agreement = agreeing / compared if compared else 0.0
    counts = _side_by_side_counts(summary, assignment, observation, observed)
    counts.update(layout)
    counts_ok = all(v["observed"] is None or v["predicted"] == v["observed"]
                    for k, v in counts.items() if k.startswith(("memcpy", "layoutTransposes")))
    passed = compared > 0 and agreement >= min_agreement and (counts_ok or not check_counts)
    # a session predicted to fail that ran (or the other way round) is a failed prediction
    obs_status = observed_status(observation)
    status = {"predicted": summary.get("status"), "observed": obs_status}
    if obs_status is not None:
        if obs_status != summary.get("status"):
            passed = False
        elif obs_status == "session_would_fail":
            passed = True
    final = compare_final(summary, observation)
    if final is not None and min_final_agreement is not None and final["agreement"] < min_final_agreement:
        passed = False
    result = {
        "passed": passed,
        "checkCounts": bool(check_counts),
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
        "views": ["partitioning"] + (["final"] if final is not None else []),
    }
    if final is not None:
        result["final"] = final
    return result


def _node_agreement(predicted, observed):
    """``(agreeing, disagreements, unobserved)``: each predicted node against the provider observed for it."""
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
    return agreeing, disagreements, unobserved


def _side_by_side_counts(summary, assignment, observation, observed):
    """Fragments, Memcpy and compiled partitions, predicted and observed."""
    model = assignment.model
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
    # a compiling provider's partitions, one-node ones included (each is a compiled subgraph)
    compiling = {t.provider for t in getattr(assignment.resolution, "tables", ()) if t.is_compiling}
    obs_parts = [p for p in observation.get("partitions", []) if p.get("provider") in compiling and p.get("nodes")]
    if obs_parts:
        counts["compiledPartitions"] = {
            "predicted": sum(1 for p in summary["partitions"] if p["provider"] in compiling),
            "observed": len(obs_parts)}
    return counts


def pair_unnamed(observed, observed_ops, predicted):
    """``observed`` with the nodes ORT reported without a name (``<unnamed OP>#k``: a node an inlined
    function body made, whose name the profile cannot give when Level 2/3 fused it away) keyed by the
    predicted nodes they are: each takes a predicted node of its op type and provider that nothing
    observed names, in order.  Two such nodes could swap names only with the same op and provider, so
    the placement compared is the same either way; one with nothing to pair stays as it was.

    >>> pair_unnamed({"<unnamed Relu>#1": "CPU", "a": "CPU"}, {"<unnamed Relu>#1": "Relu"},
    ...              {"a": {"opType": "Add", "provider": "CPU"}, "Relu_7": {"opType": "Relu", "provider": "CPU"}})
    {'Relu_7': 'CPU', 'a': 'CPU'}
    """
    from ..runtime.observation import is_unnamed

    left = {}
    for name, n in predicted.items():
        if name not in observed:
            left.setdefault((n.get("opType"), n.get("provider")), []).append(name)
    out = {}
    for name, ep in observed.items():
        free = left.get((observed_ops.get(name), ep)) if is_unnamed(name) else None
        out[free.pop(0) if free else name] = ep
    return out


_CANONICAL = re.compile(r"^(.*)#\d+$")


def compare_final(summary, observation):
    """The second view: the prediction's ``finalNodes`` against the nodes the session ran (its profile),
    or ``None`` when either side lacks it.

    A final node is matched by name; names ORT generates after partitioning, which partsim makes
    canonical (``ReorderOutput#0``, :mod:`partsim.sim.final_view`), are matched by their base name and
    provider, as counts (``ReorderOutput``, ``ReorderOutput_token_4`` …: which is which is not stable).
    """
    observed = observation.get("finalNodes")
    predicted = summary.get("finalNodes")
    if not observed or predicted is None:
        return None
    want = {}
    exact = {n["name"]: n for n in predicted if not _CANONICAL.match(n["name"])}
    for n in predicted:
        m = _CANONICAL.match(n["name"])
        if m:
            key = (m.group(1), n["provider"])
            want[key] = want.get(key, 0) + 1
    # a compiling provider's partitions stay as partitioned: the layout transformation's names hold there
    # (a converted node is <orig>_token_<k>, inserted Transposes are counted by provider)
    renamed = {n["ortName"]: n["name"] for n in summary["nodes"] if n.get("ortName")}
    for n in summary.get("insertedNodes", ()):
        key = (n["opType"], n["provider"])
        want[key] = want.get(key, 0) + 1
    agreeing, disagreements, unpredicted, seen = 0, [], [], set()
    got = {}
    for name, ep in observed.items():
        name = renamed.get(name, name)
        m = _TOKEN.match(name)
        if name not in exact and m and m.group(1) in exact and m.group(1) not in observed:
            name = m.group(1)
        if name in exact:
            seen.add(name)
            if exact[name]["provider"] == ep:
                agreeing += 1
            else:
                disagreements.append({"node": name, "opType": exact[name]["opType"],
                                      "predicted": exact[name]["provider"], "observed": ep})
            continue
        m = _TOKEN.match(name)
        base = m.group(1) if m else name
        got.setdefault(base, []).append((name, ep))
    for base, members in sorted(got.items()):
        for name, ep in members:
            if want.get((base, ep), 0) > 0:
                want[(base, ep)] -= 1
                agreeing += 1
            else:
                unpredicted.append(name)
    unobserved = sorted([n for n in exact if n not in seen]
                        + [f"{b}#*" for (b, _), k in sorted(want.items()) for _ in range(k)])
    compared = len(observed)  # every node the session ran: one ORT ran that partsim lacks counts against
    return {"agreement": round(agreeing / compared, 6) if compared else 0.0, "compared": compared,
            "agreeing": agreeing, "disagreements": disagreements, "unobserved": unobserved,
            "unpredicted": sorted(unpredicted), "source": observation.get("finalSource")}


_REPEAT = re.compile(r"^(.+)#(\d+)$")


def repeated_names(observed, predicted):
    """Observed names ``<name>#k`` matched to the model's nodes they are.

    ORT names nodes per graph, so two If branches may each hold a ``0_Split``; an observation
    keeps the repeats apart as ``0_Split#2`` … (:mod:`partsim.runtime.observation`), while the
    IR gives a body node whose name another graph already took the name ``<scope>/<name>``.
    A repeat is matched, in order, to the not yet matched model nodes ``…/<name>``.

    >>> repeated_names(["a/0_Split", "a/0_Split#2"], ["a/0_Split", "a/then_branch/a/0_Split"])
    {'a/0_Split#2': 'a/then_branch/a/0_Split'}
    """
    predicted = list(predicted)
    taken = set(observed) & set(predicted)
    out = {}
    for name in observed:
        m = _REPEAT.match(name)
        if name in taken or not m:
            continue
        base = m.group(1)
        for p in predicted:
            if p not in taken and p.endswith("/" + base):
                out[name] = p
                taken.add(p)
                break
    return out


def _match_layout_names(predicted, summary, observation):
    """Observed placement keyed by the names of the graph as written, plus the inserted-Transpose counts.

    ORT's NHWC layout transformation recreates each node it converts as ``<orig>_token_<k>``
    (``Graph::GenerateNodeName``) and inserts Transposes named ``Transpose``/``Transpose_token_<k>``
    (ORT-PIPELINE section 5).  A renamed node is compared as its original; the inserted Transposes
    are counted per provider (``layoutTransposes.<EP>``) against the summary's ``insertedNodes``.
    """
    ops = observation.get("opTypes") or {}
    renamed = {n["ortName"]: n["name"] for n in predicted.values() if n.get("ortName")}
    # nodes the layout transformation's transpose optimizer took out: an observed <name>_token_<k> is new
    removed = {n["name"] for n in predicted.values() if n.get("ortRemoved")}
    out, inserted = {}, {}
    repeats = repeated_names(observation["nodes"], predicted)
    for name, ep in observation["nodes"].items():
        if name in predicted:
            out[name] = ep
            continue
        if name in repeats:
            out[repeats[name]] = ep
            continue
        if name in renamed:
            out[renamed[name]] = ep
            continue
        m = _TOKEN.match(name)
        if m and m.group(1) in predicted and m.group(1) not in observation["nodes"] and m.group(1) not in removed:
            out[m.group(1)] = ep
        elif _INSERTED_TRANSPOSE.match(name) and ops.get(name, "Transpose") == "Transpose":
            inserted[ep] = inserted.get(ep, 0) + 1
        else:
            out[name] = ep
    want = {}
    for n in summary.get("insertedNodes", ()):
        if n.get("origin") == "inserted:layout" and n.get("opType", "Transpose") == "Transpose":
            want[n["provider"]] = want.get(n["provider"], 0) + 1
    counts = {}
    for ep in sorted(set(want) | set(inserted)):
        counts[f"layoutTransposes.{ep}"] = {"predicted": want.get(ep, 0), "observed": inserted.get(ep, 0)}
    return out, counts


def _inserted_layout_nodes(summary, observed, predicted, observed_ops):
    """The nodes other than Transposes that the layout transformation's optimizer inserted (the ``Gather``
    after a ``Shape``, ``Unsqueeze``, Q/DQ …) as predicted nodes keyed by the observed names: ORT reports
    them like any node.  Matched by name (a name repeated in another graph as ``<name>#k``, in order), then
    the rest by op type, in order, among the observed ``<Op>[_token_<k>][#k]`` nodes no prediction names:
    like the layout Transposes, which generated name is which is not stable (the optimizer's name counter)."""
    seen, want = {}, []
    for n in summary.get("insertedNodes", ()):
        if n.get("origin") != "inserted:layout" or n.get("opType") == "Transpose":
            continue
        k = seen[n["name"]] = seen.get(n["name"], 0) + 1
        want.append((n["name"] if k == 1 else f"{n['name']}#{k}", n))
    out, left = {}, []
    for key, n in want:
        if key in observed and key not in predicted:
            out[key] = n
        else:
            left.append(n)
    for n in left:
        op = n.get("opType") or ""
        free = [o for o in observed if o not in predicted and o not in out and observed_ops.get(o) == op
                and re.match(rf"^{re.escape(op)}(_token_\d+)?(#\d+)?$", o)]
        if free:
            out[free[0]] = n
    return {key: {"name": key, "opType": n.get("opType"), "provider": n["provider"], "reason": "inserted:layout"}
            for key, n in out.items()}


def _compare_refusal(summary, observation, min_agreement):
    """The real session was not created: the prediction agrees when it says the session would fail."""
    predicted_fail = summary.get("status") == "session_would_fail"
    return {
        "passed": predicted_fail, "minAgreement": min_agreement, "agreement": 1.0 if predicted_fail else 0.0,
        "compared": 0, "agreeing": 0, "disagreements": [], "unobserved": [], "unpredicted": [],
        "counts": {}, "refusal": {"observed": observation.get("error", observation.get("state")),
                                  "predicted": summary.get("failure") if predicted_fail else None},
        "observation": {k: observation.get(k) for k in ("source", "runtime", "device", "level", "granted",
                                                          "state")},
    }


# docs/contract.md §3's reason categories (the summary schema's enum)
REASON_CATEGORIES = ("op_not_in_table", "opset_version", "dtype", "dynamic_shape", "rank", "attribute",
                     "non_constant_input", "stop_op_downstream", "group_rejected", "cpu_preferred",
                     "claimed_by_higher_priority", "policy")

BASELINE_VERSION = "2"

# counts that must not grow, with the words a failure message uses
GROWING_COUNTS = (("partitionCount", "accelerator partitions"), ("fragments", "fragments"),
                  ("transfers", "transfers"), ("memcpyFromHost", "Memcpy nodes from host"),
                  ("memcpyToHost", "Memcpy nodes to host"))

# what a baseline was measured with: any difference makes the comparison meaningless (exit 2)
_CONTEXT_KEYS = (("providers", "providers"), ("level", "optimization level"), ("policy", "policy"),
                 ("tables", "capability tables"), ("partsimVersion", "partsim version"))


def table_digests(resolution):
    """Provider (and variant) -> sha256 of the capability table each effective provider used.

    A shipped or user table is hashed from its file's bytes; the ad-hoc ``--support``
    table from its sorted op list.
    """
    out = {}
    for t in resolution.tables:
        key = t.provider + (f":{t.variant}" if t.variant else "")
        path = getattr(t, "path", "") or ""
        data = None
        if path and not path.startswith("<"):
            from ..errors import PartsimError
            from ..io.files import read_bytes
            from ..rules.load import MAX_RULE_FILE_BYTES

            try:
                data = read_bytes(path, MAX_RULE_FILE_BYTES)
            except PartsimError:
                data = None
        if data is None:
            data = ("adhoc:" + t.kind + ":" + ",".join(sorted(f"{d}:{o}" for d, o in t.rules))).encode()
        out[key] = hashlib.sha256(data).hexdigest()
    return dict(sorted(out.items()))


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


def baseline_record(summary, resolution=None, level="disable", version=None):
    """What a CI baseline (or a lock-file entry) pins, and what it was measured with.

    Parameters
    ----------
    summary : dict
        The partitionSummary.
    resolution : Resolution, optional
        The provider resolution behind it (for the table digests).
    level : str
        The optimization level the prediction was made at (``disable`` = as written, ``basic``).

    Returns
    -------
    dict
        ``counts`` (must not grow / shrink), ``accelerated``, ``status``, the nodes on the
        first provider, every node's provider (to name what moved), and the context:
        providers, level, policy, table digests, partsim version, model sha256.
    """
    if version is None:
        from .. import __version__ as version
    first = summary["effectiveProviders"][0]
    on_first = sorted(n["name"] for n in summary["nodes"] if n["provider"] == first)
    by_provider = {}
    for n in summary["nodes"]:
        by_provider.setdefault(n["provider"], []).append(n["name"])
    return {
        "baselineVersion": BASELINE_VERSION,
        "partsimVersion": version,
        "model": {"path": summary["model"]["path"], "sha256": summary["model"]["sha256"],
                  "nodeCount": summary["model"]["nodeCount"]},
        "providers": list(summary["effectiveProviders"]),
        "level": level,
        "policy": summary.get("policy", "per-node"),
        "tables": table_digests(resolution) if resolution is not None else {},
        "firstProvider": first,
        "counts": {"firstProviderNodes": len(on_first), "delegatedNodeCount": summary["delegatedNodeCount"],
                   "partitionCount": summary["partitionCount"], "fragments": summary["fragments"],
                   "transfers": summary["transfers"], "memcpyFromHost": summary["memcpy"]["fromHost"],
                   "memcpyToHost": summary["memcpy"]["toHost"]},
        "accelerated": summary["accelerated"],
        "status": summary["status"],
        "nodes": {ep: sorted(names) for ep, names in sorted(by_provider.items())},
        "ort": _ort_predicted(),
    }


def _ort_predicted():
    """``{"onnxruntime": version, plugin: version}``: the ORT release a baseline was predicted for."""
    from ..versions import predicted

    ort = predicted()
    return {"onnxruntime": ort["onnxruntime"], **ort["plugins"]}


def check_baseline_context(now, baseline, where=None):
    """Raise :class:`UsageError` (exit 2, one line) when ``baseline`` was measured with other
    providers, level, policy, tables or partsim version than ``now`` (both from
    :func:`baseline_record`): comparing them would gate on nothing."""
    if not isinstance(baseline, dict) or baseline.get("baselineVersion") != BASELINE_VERSION:
        got = baseline.get("baselineVersion", "1") if isinstance(baseline, dict) else "?"
        raise UsageError(f"baseline format {got} does not record what it measured (providers, level, tables); "
                         f"re-record it with the current partsim (--update-baseline / check --update)", where)
    _check_same_ort(now, baseline, where)
    for key, words in _CONTEXT_KEYS:
        a, b = baseline.get(key), now.get(key)
        if a == b:
            continue
        if key == "tables" and isinstance(a, dict) and isinstance(b, dict):
            diff = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
            detail = f"{', '.join(diff)} differ"
        elif key == "providers":
            detail = f"baseline {' > '.join(map(str, a or []))}, now {' > '.join(b)}"
        else:
            detail = f"baseline {a!r}, now {b!r}"
        raise UsageError(f"baseline was measured with other {words} ({detail}); compare like with like or "
                         f"re-record it (--update-baseline / check --update)", where)


def _check_same_ort(now, baseline, where):
    """A baseline predicted for another ORT release (recorded since issue #30; older ones say none)."""
    a, b = baseline.get("ort"), now.get("ort")
    if not isinstance(a, dict) or not isinstance(b, dict) or a.get("onnxruntime") == b.get("onnxruntime"):
        return
    raise UsageError(f"baseline was predicted for onnxruntime {a.get('onnxruntime')}, now for {b.get('onnxruntime')}: "
                     f"`partsim diff --from ort=={a.get('onnxruntime')} --to ort=={b.get('onnxruntime')}` (or check "
                     f"--upgrade-to) shows what the upgrade changes; then re-record it (--update-baseline / "
                     f"check --update)", where)


def _describe(summary, names, limit=8):
    """``[{node, opType, provider, reason, reasonDetail}]`` for ``names`` found in ``summary``."""
    by_name = {n["name"]: n for n in summary["nodes"]}
    out = []
    for name in names:
        n = by_name.get(name)
        if n is not None:
            out.append({"node": name, "opType": n["opType"], "provider": n["provider"], "reason": n["reason"],
                        "reasonDetail": n.get("reasonDetail")})
    return out


def node_gist(moved, limit=5):
    """``"29 nodes (Conv 12, Relu 10, …) because dynamic_shape 29; e.g. conv1 (Conv): <detail>"``."""
    if not moved:
        return ""
    ops, reasons = {}, {}
    for m in moved:
        ops[m["opType"]] = ops.get(m["opType"], 0) + 1
        r = m["reason"] or "none"
        reasons[r] = reasons.get(r, 0) + 1
    top = sorted(ops.items(), key=lambda kv: (-kv[1], kv[0]))
    op_text = ", ".join(f"{k} {v}" for k, v in top[:limit]) + (", …" if len(top) > limit else "")
    why = ", ".join(f"{k} {v}" for k, v in sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0])))
    names = ", ".join(f"{m['node']} ({m['opType']}{': ' + m['reasonDetail'] if m.get('reasonDetail') else ''})"
                      for m in moved[:3])
    return f"{len(moved)} node(s): {op_text}; reasons: {why}; e.g. {names}"


def compare_baseline(summary, baseline, now=None):
    """Gate ``summary`` on ``baseline`` (a :func:`baseline_record`).

    Fails when the first provider loses nodes (a node it had, still in the model, went
    elsewhere; or its node count dropped), ``accelerated`` turns false, ``status``
    changes, or accelerator partitions, fragments, transfers or Memcpy nodes grow.
    Every failure names the nodes and ops that moved and their reasons.  The caller
    checks the context first (:func:`check_baseline_context`).

    Returns
    -------
    dict
        ``{passed, failures[{rule, baseline, now, message}], rules[{rule, passed, …}],
        moved[], added[], removed, now, baseline}``.
    """
    now = now or baseline_record(summary)
    first = baseline["firstProvider"]
    base_nodes = baseline.get("nodes", {})
    base_first = set(base_nodes.get(first, ()))
    base_all = {name for names in base_nodes.values() for name in names}
    cur = {n["name"]: n for n in summary["nodes"]}
    moved_names = sorted(name for name in base_first if name in cur and cur[name]["provider"] != first)
    moved = _describe(summary, moved_names)
    added = _describe(summary, sorted(name for name, n in cur.items()
                                      if name not in base_all and n["provider"] != first))
    removed = sum(1 for name in base_all if name not in cur)
    off_first = moved + added  # what explains a growing count: nodes now off the first provider
    rules = []

    def rule(name, ok, base, value, message, nodes=()):
        rules.append({"rule": name, "passed": ok, "baseline": base, "now": value,
                      "message": "" if ok else message, "nodes": [] if ok else list(nodes)[:100]})

    bc, nc = baseline["counts"], now["counts"]
    lost = bc["firstProviderNodes"] - nc["firstProviderNodes"]
    ok = not moved and lost <= 0
    msg = (f"{first} lost nodes ({bc['firstProviderNodes']} -> {nc['firstProviderNodes']}): "
           + (node_gist(moved) if moved else "nodes renamed or removed"))
    rule("firstProviderNodes", ok, bc["firstProviderNodes"], nc["firstProviderNodes"], msg, moved)
    ok = not (baseline["accelerated"] and not now["accelerated"])
    rule("accelerated", ok, baseline["accelerated"], now["accelerated"],
         f"NOT accelerated any more (baseline: {bc['firstProviderNodes']} nodes on {first}): {node_gist(off_first)}",
         off_first)
    ok = baseline["status"] == now["status"]
    rule("status", ok, baseline["status"], now["status"],
         f"status changed {baseline['status']} -> {now['status']}"
         + (f": {summary['failure']}" if summary.get("failure") else ""))
    for key, words in GROWING_COUNTS:
        ok = nc[key] <= bc[key]
        rule(key, ok, bc[key], nc[key], f"{words} grew {bc[key]} -> {nc[key]}"
             + (f"; nodes off {first}: {node_gist(off_first)}" if off_first else ""), off_first)
    failures = [{k: r[k] for k in ("rule", "baseline", "now", "message")} for r in rules if not r["passed"]]
    return {"passed": not failures, "failures": failures, "rules": rules, "moved": moved, "added": added,
            "removed": removed, "modelChanged": baseline["model"]["sha256"] != now["model"]["sha256"],
            "now": {k: v for k, v in now.items() if k != "nodes"},
            "baseline": {k: v for k, v in baseline.items() if k != "nodes"}}
