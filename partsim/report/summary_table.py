"""The partitionSummary as a text table for people (``simulate``, the default format)."""

from .text import format_table, short_list

__all__ = ["render_summary_table"]


def render_summary_table(s, max_rows=40):
    """Text report of a partitionSummary for people."""
    out = []
    m = s["model"]
    out.append(f"model      {m['path']}  ({m['nodeCount']} nodes)")
    out.append(f"providers  {' > '.join(s['effectiveProviders'])}   policy {s['policy']}")
    for d in s["droppedProviders"]:
        out.append(f"dropped    {d['name']}: {d['reason']}")
    verdict = "accelerated" if s["accelerated"] else "NOT accelerated: every node runs on the CPU"
    out.append(f"status     {s['status']}; {verdict}")
    if s.get("failure"):
        out.append(f"failure    {s['failure']}")
    out.append("")
    rows = [[ep, v["nodes"], v["partitions"], v["fragments"]] for ep, v in s["perProvider"].items()]
    out.append(format_table(["provider", "nodes", "partitions", "fragments"], rows, ["<", ">", ">", ">"]))
    out.append("")
    mc = s["memcpy"]
    out.append(f"fragments {s['fragments']}   transfers {s['transfers']}   feed transfers {s['feedTransfers']}   "
               f"Memcpy {mc['fromHost']} from host + {mc['toHost']} to host")
    out.append("")
    parts = s["partitions"]
    rows = []
    for p in parts[:max_rows]:
        rows.append([p["id"], p["provider"], len(p["nodes"]), short_list(p["nodes"], 4)])
    out.append(format_table(["partition", "provider", "nodes", "members"], rows, [">", "<", ">", "<"]))
    if len(parts) > max_rows:
        out.append(f"… {len(parts) - max_rows} more partitions (use --format json for all)")
    by_reason = {}
    for n in s["nodes"]:
        if n["reason"]:
            by_reason.setdefault((n["reason"], n["opType"]), []).append(n["name"])
    if by_reason:
        out.append("")
        out.append("not on the first-choice provider, by reason:")
        rows = [[r, op, len(v), short_list(v, 3)] for (r, op), v in sorted(by_reason.items(),
                                                                         key=lambda kv: (-len(kv[1]), kv[0]))]
        out.append(format_table(["reason", "op", "nodes", "examples"], rows[:max_rows], ["<", "<", ">", "<"]))
    if s["transferList"]:
        out.append("")
        rows = [[t["tensor"], t["from"], t["to"], "?" if t["bytes"] is None else t["bytes"]]
                for t in s["transferList"][:max_rows]]
        out.append(format_table(["transfer tensor", "from", "to", "bytes"], rows, ["<", "<", "<", ">"]))
        if len(s["transferList"]) > max_rows:
            out.append(f"… {len(s['transferList']) - max_rows} more transfers")
    conv = s["conversions"]
    if conv:
        out.append("")
        rows = [[c["kind"], c["status"], c["tensor"], f"{c['from']} -> {c['to']}", c.get("detail", "")]
                for c in conv[:max_rows]]
        out.append(format_table(["conversion", "status", "tensor", "edge", "detail"], rows))
    if s["uncheckedCaveats"]:
        out.append("")
        out.append(f"{len(s['uncheckedCaveats'])} unchecked caveat(s) on claimed nodes, e.g.:")
        seen = set()
        for c in s["uncheckedCaveats"]:
            key = (c["provider"], c["opType"])
            if key in seen:
                continue
            seen.add(key)
            out.append(f"  {c['opType']} on {c['provider']}: {c['note']}")
            if len(seen) >= 8:
                break
    return "\n".join(out) + "\n"
