"""The partitionSummary as a text table for people (``simulate``, the default format)."""

import shlex

from .glossary import glossary_text
from .text import format_table, plural, short_list
from .escape import text_renderer

__all__ = ["render_summary_table"]

DETAIL_WIDTH = 110  # a reason detail longer than this is cut (the JSON has it whole)


def _detail(text):
    text = " ".join((text or "").split())
    return text if len(text) <= DETAIL_WIDTH else text[:DETAIL_WIDTH - 1] + "…"


def ort_lines(ort):
    """The header lines naming the ORT (and plugins) predicted and what may be stale (summary ``ort``);
    none when the installed ORT is predicted and every fact describes it (the JSON always says)."""
    if not ort or (ort.get("from") == "installed" and not ort.get("mayBeStale")):
        return []
    plugins = "".join(f" + {p} {v}" for p, v in sorted(ort.get("plugins", {}).items()))
    out = [f"ort        {ort.get('distribution') or 'onnxruntime'} {ort['predicted']}{plugins} ({ort['from']})"]
    out.extend(f"stale?     {w}" for w in ort.get("mayBeStale", ()))
    return out


def _node_counts(s):
    """The header's node count, saying which view it counts: the graph ORT partitions, and at levels with
    rewrites after partitioning, how many nodes ORT runs in the end (``finalNodes``)."""
    m = s["model"]
    text = plural(m["nodeCount"], "node") + (" as ORT partitions them" if s.get("view") == "partitioning" else "")
    if "finalNodeCount" in m and _rewritten(s):
        text += f"; {m['finalNodeCount']:,} after Level 2/3 (--format json: finalNodes)"
    return text


def _rewritten(s):
    """Did ORT change the graph after partitioning (a fused, inserted or removed node)?"""
    final = s.get("finalNodes") or ()
    return len(final) != len(s["nodes"]) or any(f["replaces"] != [f["name"]] for f in final)


def _final_view_lines(s):
    """A detail: what ORT makes of the partitioned graph after partitioning (Level 2/3), by origin."""
    final = s.get("finalNodes")
    if not final or not _rewritten(s):
        return []
    kept = sum(1 for f in final if f["replaces"] == [f["name"]])
    rewritten = [f for f in final if f["replaces"] and f["replaces"] != [f["name"]]]
    inserted = [f for f in final if not f["replaces"]]
    removed = sum(1 for n in s["nodes"] if not n.get("endsAs", [None]))
    by_origin = {}
    for f in rewritten + inserted:
        by_origin[f["origin"]] = by_origin.get(f["origin"], 0) + 1
    detail = ", ".join(f"{o} {k}" for o, k in sorted(by_origin.items(), key=lambda kv: (-kv[1], kv[0])))
    text = (f"after partitioning (Level 2/3, not counted above): {kept} node(s) kept, "
            f"{sum(len(f['replaces']) for f in rewritten)} rewritten into {len(rewritten)}, "
            f"{len(inserted)} inserted, {removed} removed")
    return ["", text + (f" ({detail})" if detail else "")]


@text_renderer(skip=("nodes", "partitions", "transferList", "conversions", "finalNodes"))
def render_summary_table(s, max_rows=40, steps=None):
    """Text report of a partitionSummary for people.

    ``steps``: records of :func:`partsim.analysis.advice.next_steps`, printed as the
    "next steps" footer (commands ready to paste); the glossary of the words used ends it.
    """
    out = _header(s)
    out += _counts(s, max_rows)
    out += _reasons(s, max_rows)
    out += _transfers_and_conversions(s, max_rows)
    out.extend(_final_view_lines(s))
    out += _caveats(s)
    if steps:
        out.append("")
        out.append("next steps:")
        for st in steps:
            out.append(f"  - {st['text']}")
            if st.get("command"):
                out.append(f"      partsim {shlex.join(st['command'])}")
    out.append("")
    out.append("words:")
    out.append(glossary_text())
    return "\n".join(out) + "\n"


def _header(s):
    """model, providers, ORT, notes, dropped providers, status."""
    out = []
    m = s["model"]
    out.append(f"model      {m['path']}  ({_node_counts(s)})")
    level = s.get("level")
    level_text = f"   level {level}" + (" (ORT's default)" if level == "all" else "") if level else ""
    out.append(f"providers  {' > '.join(s['effectiveProviders'])}   policy {s['policy']}{level_text}")
    out.extend(ort_lines(s.get("ort")))
    for w in s.get("warnings", ()):
        out.append(f"note       {w}")
    for d in s["droppedProviders"]:
        out.append(f"dropped    {d['name']}: {d['reason']}")
    verdict = "accelerated" if s["accelerated"] else "NOT accelerated: every node runs on the CPU"
    out.append(f"status     {s['status']}; {verdict}")
    if s.get("failure"):
        out.append(f"failure    {s['failure']}")
    return out


def _counts(s, max_rows):
    """The per-provider table, the boundary counts and the partitions."""
    out = [""]
    rows = [[ep, v["nodes"], v["partitions"], v["fragments"]] for ep, v in s["perProvider"].items()]
    out.append(format_table(["provider", "nodes", "partitions", "fragments"], rows, ["<", ">", ">", ">"]))
    out.append("")
    mc = s["memcpy"]
    out.append(f"fragments {s['fragments']}   transfers {s['transfers']}   feed transfers {s['feedTransfers']}   "
               f"Memcpy {mc['fromHost']} from host + {mc['toHost']} to host"
               + ("  (Memcpy: in the final graph)" if _rewritten(s) else ""))
    out.append("")
    parts = s["partitions"]
    rows = []
    for p in parts[:max_rows]:
        rows.append([p["id"], p["provider"], len(p["nodes"]), short_list(p["nodes"], 4)])
    out.append(format_table(["partition", "provider", "nodes", "members"], rows, [">", "<", ">", "<"]))
    if len(parts) > max_rows:
        out.append(f"… {plural(len(parts) - max_rows, 'more partition')} (use --format json for all)")
    return out


def _reasons(s, max_rows):
    """Nodes off the first-choice provider, grouped by (reason, op)."""
    by_reason = {}
    for n in s["nodes"]:
        if n["reason"]:
            by_reason.setdefault((n["reason"], n["opType"]), []).append(n)
    if not by_reason:
        return []
    out = ["", "not on the first-choice provider, by reason (detail: of the first node):"]
    rows = [[r, op, len(v), short_list([n["name"] for n in v], 3), _detail(v[0].get("reasonDetail"))]
            for (r, op), v in sorted(by_reason.items(), key=lambda kv: (-len(kv[1]), kv[0]))]
    out.append(format_table(["reason", "op", "nodes", "examples", "detail"], rows[:max_rows],
                            ["<", "<", ">", "<", "<"]))
    if len(rows) > max_rows:
        out.append(f"… {plural(len(rows) - max_rows, 'more reason')} (use --format json for all)")
    return out


def _transfers_and_conversions(s, max_rows):
    out = []
    if s["transferList"]:
        out.append("")
        rows = [[t["tensor"], t["from"], t["to"], "?" if t["bytes"] is None else t["bytes"]]
                for t in s["transferList"][:max_rows]]
        out.append(format_table(["transfer tensor", "from", "to", "bytes"], rows, ["<", "<", "<", ">"]))
        if len(s["transferList"]) > max_rows:
            out.append(f"… {plural(len(s['transferList']) - max_rows, 'more transfer')}")
    conv = s["conversions"]
    if conv:
        out.append("")
        rows = [[c["kind"], c["status"], c["tensor"], f"{c['from']} -> {c['to']}", c.get("detail", "")]
                for c in conv[:max_rows]]
        out.append(format_table(["conversion", "status", "tensor", "edge", "detail"], rows))
    return out


def _caveats(s):
    """Table notes not checked on claimed nodes: one line per (provider, op), eight at most."""
    if not s["uncheckedCaveats"]:
        return []
    out = ["", f"{plural(len(s['uncheckedCaveats']), 'unchecked caveat')} on claimed nodes, e.g.:"]
    seen = set()
    for c in s["uncheckedCaveats"]:
        key = (c["provider"], c["opType"])
        if key in seen:
            continue
        seen.add(key)
        out.append(f"  {c['opType']} on {c['provider']}: {c['note']}")
        if len(seen) >= 8:
            break
    return out
