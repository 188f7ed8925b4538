"""What moving from one ORT (or plugin) release to another changes for a model: ``partsim diff``.

Each side is predicted under its own ORT (:mod:`partsim.versions`: the installed one, a venv partsim
makes with ``--ort``, or an interpreter the user names); the two partitionSummaries are compared node
for node: nodes that change provider, nodes only one side has (ORT's optimizer or a new kernel keeps
a function whole, fuses differently), and the deltas of the counts ``check`` gates on.
"""

import re

from ..errors import UsageError

__all__ = ["parse_side", "predict_side", "diff_summaries", "diff_document", "gate_upgrade", "check_dims", "COUNTS"]

COUNTS = ("firstProviderNodes", "delegatedNodeCount", "partitionCount", "fragments", "transfers",
          "memcpyFromHost", "memcpyToHost")
_PLUGINS = {"qnn": "onnxruntime-qnn", "onnxruntime-qnn": "onnxruntime-qnn"}
_ORT = ("ort", "onnxruntime")


def parse_side(spec):
    """``"ort==1.32.0"``, ``"python=PATH"``, ``"installed"``, optionally with ``,qnn==2.7.0`` ->
    ``{"ort": version or None, "python": path or None, "plugins": {package: version}, "label": spec}``.

    >>> parse_side("ort==1.32.0")["ort"]
    '1.32.0'
    >>> parse_side("installed,qnn==2.7.0")["plugins"]
    {'onnxruntime-qnn': '2.7.0'}
    """
    side = {"ort": None, "python": None, "plugins": {}, "label": spec}
    for part in [p.strip() for p in str(spec).split(",") if p.strip()]:
        m = re.fullmatch(r"([A-Za-z0-9_.-]+)\s*==\s*([0-9][0-9A-Za-z.]*)", part)
        if part == "installed":
            continue
        if part.startswith("python="):
            side["python"] = part[len("python="):]
        elif m and m.group(1).lower() in _ORT:
            side["ort"] = m.group(2)
        elif m and m.group(1).lower() in _PLUGINS:
            side["plugins"][_PLUGINS[m.group(1).lower()]] = m.group(2)
        else:
            raise UsageError(f"--from/--to take ort==VERSION, python=PATH or installed, optionally "
                             f"with ,qnn==VERSION; not {part!r}")
    return side


def _check_plugins(side, summary):
    """A plugin version asked for must be the one its table (and the interpreter) describe: partsim
    holds one table per plugin, so another plugin release cannot be predicted yet."""
    have = {}
    for t in summary.get("ort", {}).get("tables", []):
        have.update({k: v for k, v in t["describes"].items() if k in side["plugins"]})
    for package, version in side["plugins"].items():
        if package in have and have[package] != version:
            raise UsageError(f"no table describes {package} {version} (the shipped one describes {have[package]}); "
                             f"`partsim rules import qnn` under that plugin makes one (docs/versions.md)")


def predict_side(model, side, providers=None, rule_paths=(), level="all", dims=None):
    """The partitionSummary of ``model`` under ``side`` (:func:`parse_side`); ``dims`` as ``--dim``."""
    from ..api import predict
    from ..versions import selected

    from ..api import load_tables

    with selected(side["ort"], side["python"]):
        summary, _ = predict(model, providers, rule_paths, level=level, dims=dims)
        cpu = load_tables(rule_paths)["CPUExecutionProvider"][0]
    _check_plugins(side, summary)
    summary["cpuKernels"] = {f"{d}:{o}" if d else o: [_ranges(v) for v in sorted(
        {r.versions for r in rules}, key=lambda v: v[0] if v else 0)]
        for (d, o), rules in cpu.rules.items()}  # for diff_summaries, not written out
    return summary


def _ranges(versions):
    if versions is None:
        return "any"
    since, end = versions
    return f"{since}+" if end is None else (str(since) if since == end else f"{since}-{end}")


def _counts(summary):
    first = summary["effectiveProviders"][0]
    return {"firstProviderNodes": sum(1 for n in summary["nodes"] if n["provider"] == first),
            "delegatedNodeCount": summary["delegatedNodeCount"], "partitionCount": summary["partitionCount"],
            "fragments": summary["fragments"], "transfers": summary["transfers"],
            "memcpyFromHost": summary["memcpy"]["fromHost"], "memcpyToHost": summary["memcpy"]["toHost"]}


def _side_record(summary):
    loads = summary.get("ort", {}).get("loads", {})
    rec = {"ort": summary.get("ort", {}).get("predicted", ""), "status": summary["status"],
           "maxOnnxOpset": loads.get("maxOnnxOpset"), "maxIrVersion": loads.get("maxIrVersion"),
           "accelerated": summary["accelerated"], "nodeCount": summary["model"]["nodeCount"],
           "counts": _counts(summary)}
    if summary.get("ort", {}).get("plugins"):
        rec["plugins"] = dict(summary["ort"]["plugins"])
    if summary.get("failure"):
        rec["failure"] = summary["failure"]
    return rec


def _node(n):
    return {"node": n["name"], "opType": n["opType"], "provider": n["provider"], "reason": n.get("reason")}


def diff_summaries(before, after):
    """The record of one model: ``from``/``to`` (ORT, status, counts), ``changed`` (nodes on another
    provider, with both reasons), ``onlyFrom``/``onlyTo`` (nodes one graph has), ``deltas``,
    ``lostAcceleratorNodes``, ``placementChanged`` and ``reasons`` (sentences saying why)."""
    a = {n["name"]: n for n in before["nodes"]}
    b = {n["name"]: n for n in after["nodes"]}
    changed = [{"node": k, "opType": a[k]["opType"], "from": a[k]["provider"], "to": b[k]["provider"],
                "reasonFrom": a[k].get("reason"), "reasonTo": b[k].get("reason")}
               for k in a if k in b and a[k]["provider"] != b[k]["provider"]]
    only_from = [_node(a[k]) for k in a if k not in b]
    only_to = [_node(b[k]) for k in b if k not in a]
    rf, rt = _side_record(before), _side_record(after)
    deltas = {k: rt["counts"][k] - rf["counts"][k] for k in COUNTS}
    lost = max(0, -deltas["firstProviderNodes"]) if before["effectiveProviders"][0] != "CPUExecutionProvider" else 0
    reasons = _load_reasons(before, rf, rt)
    if rf["status"] != rt["status"]:
        why = " ".join((rt.get("failure") or rf.get("failure") or "").split())
        reasons.append(f"status {rf['status']} -> {rt['status']}" + (f": {why[:240]}" if why else ""))
    elif rf.get("failure") != rt.get("failure") and (rf.get("failure") or rt.get("failure")):
        reasons.append(f"ORT's failure changes: {rf.get('failure', '')!r} -> {rt.get('failure', '')!r}")
    reasons += _kernel_reasons(before, after, changed + only_from + only_to)
    if only_from or only_to:
        reasons.append(f"the graph ORT partitions differs: {len(only_from)} node(s) only under {rf['ort']} "
                       f"({_ops(only_from)}), {len(only_to)} only under {rt['ort']} ({_ops(only_to)})")
    for c in changed[:20]:
        reasons.append(f"{c['node']} ({c['opType']}): {c['from']} -> {c['to']}"
                       + (f" ({c['reasonTo']})" if c["reasonTo"] else ""))
    return {"model": before["model"]["path"], "providers": list(before["effectiveProviders"]),
            "level": before.get("level"), "from": rf, "to": rt, "changed": changed, "onlyFrom": only_from,
            "onlyTo": only_to, "deltas": deltas, "lostAcceleratorNodes": lost,
            "placementChanged": bool(changed or only_from or only_to or rf["status"] != rt["status"]),
            "reasons": reasons}


def _kernel_reasons(before, after, nodes):
    """For each op type of ``nodes`` whose CPU kernel ranges differ between the releases: both lists."""
    a, b = before.get("cpuKernels"), after.get("cpuKernels")
    if a is None or b is None:
        return []
    out = []
    for op in sorted({n["opType"] for n in nodes}):
        keys = [k for k in set(a) | set(b) if k == op or k.endswith(":" + op)]
        for k in sorted(keys):
            if a.get(k) != b.get(k):
                ra, rb = before["ort"]["predicted"], after["ort"]["predicted"]
                out.append(f"{k}: CPU kernels of onnxruntime {ra}: {', '.join(a.get(k, [])) or 'none'}; "
                           f"of {rb}: {', '.join(b.get(k, [])) or 'none'}")
    return out


def _load_reasons(summary, rf, rt):
    """What the two releases load differently: the model's ai.onnx opset or IR version beyond one
    side's newest (partsim.versions.load_limits, measured on real sessions)."""
    model = summary["model"]
    out = []
    for what, have, key in (("ai.onnx opset", model.get("opsets", {}).get("", model.get("opsets", {}).get("ai.onnx")),
                             "maxOnnxOpset"), ("IR version", model.get("irVersion"), "maxIrVersion")):
        if have is None or rf.get(key) == rt.get(key):
            continue
        sides = [(r["ort"], r.get(key)) for r in (rf, rt)]
        refused = [v for v, limit in sides if limit is not None and have > limit]
        if refused:
            out.append(f"{what} {have}: onnxruntime {' and '.join(refused)} refuses it at load (newest "
                       + ", ".join(f"{v}: {limit}" for v, limit in sides) + ")")
    return out


def _ops(nodes, limit=4):
    counts = {}
    for n in nodes:
        counts[n["opType"]] = counts.get(n["opType"], 0) + 1
    top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return ", ".join(f"{k} {v}" for k, v in top[:limit]) + (", …" if len(top) > limit else "") or "none"


def diff_document(records, before, after):
    """The ``partsim diff`` document over ``records`` (:func:`diff_summaries`); it fails where the
    upgrade costs accelerator nodes or a session that built no longer does."""
    failed = [r for r in records if r["lostAcceleratorNodes"] or
              (r["from"]["status"] == "ok" and r["to"]["status"] != "ok")]
    for r in records:
        r["passed"] = r not in failed
    return {"schemaVersion": "1.0", "from": before["label"], "to": after["label"], "passed": not failed,
            "summary": {"models": len(records), "placementChanged": sum(r["placementChanged"] for r in records),
                        "failed": len(failed),
                        "lostAcceleratorNodes": sum(r["lostAcceleratorNodes"] for r in records)},
            "models": records}


def check_dims(check, path, root):
    """The dims ``partsim check`` fixes on model ``path`` of ``check`` (its ``dims`` settings)."""
    from .check import _dims_for, _relative, _symbolic_dims

    rel = _relative(path, root)
    settings = check.settings_for(rel)
    return _dims_for(check, rel, settings, _symbolic_dims(path) if settings["dims"] else {}) or None


def gate_upgrade(doc, config, before, after):
    """``partsim check --upgrade-to``: add an ``upgrade`` budget to every result of a check document:
    it fails where ``after`` (:func:`parse_side`) costs the first provider nodes, or breaks a session
    ``before`` builds, compared with ``before``."""
    checks = {c.name: c for c in config.checks}
    for r in doc["results"]:
        check = checks[r["check"]]
        path = config.root / r["model"]
        dims = check_dims(check, path, config.root)
        a = predict_side(path, before, list(check.providers), check.rules, check.level, dims)
        b = predict_side(path, after, list(check.providers), check.rules, check.level, dims)
        d = diff_summaries(a, b)
        broke = a["status"] == "ok" and b["status"] != "ok"
        lost = d["lostAcceleratorNodes"]
        ok = not lost and not broke
        moved = [{"node": c["node"], "opType": c["opType"], "provider": c["to"], "reason": c["reasonTo"],
                  "reasonDetail": None} for c in d["changed"]]
        r["budgets"].append({"budget": "upgrade", "limit": 0, "actual": lost, "passed": ok,
                             "message": "" if ok else f"{before['label']} -> {after['label']}: "
                                                      + "; ".join(d["reasons"][:3]),
                             "nodes": [] if ok else moved[:100]})
        r["passed"] = r["passed"] and ok
    doc["summary"]["failed"] = sum(1 for r in doc["results"] if not r["passed"])
    doc["passed"] = doc["summary"]["failed"] == 0
    doc["upgrade"] = {"from": before["label"], "to": after["label"]}
    return doc
