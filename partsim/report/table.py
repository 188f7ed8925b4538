"""Human-readable tables for a partitionSummary."""

__all__ = ["render_summary_table", "format_table"]


def format_table(headers, rows, align=None):
    """A fixed-width text table (pure function).

    Examples
    --------
    >>> print(format_table(["a", "bb"], [[1, "x"]]))
    a  bb
    -  --
    1  x
    """
    cells = [[str(h) for h in headers]] + [["" if c is None else str(c) for c in r] for r in rows]
    widths = [max(len(r[k]) for r in cells) for k in range(len(headers))]
    align = align or ["<"] * len(headers)
    out = []
    for n, r in enumerate(cells):
        out.append("  ".join(f"{c:{a}{w}}" for c, a, w in zip(r, align, widths)).rstrip())
        if n == 0:
            out.append("  ".join("-" * w for w in widths).rstrip())
    return "\n".join(out)


def _short(names, limit=6):
    if len(names) <= limit:
        return ", ".join(names)
    return ", ".join(names[:limit]) + f", … (+{len(names) - limit})"


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
        rows.append([p["id"], p["provider"], len(p["nodes"]), _short(p["nodes"], 4)])
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
        rows = [[r, op, len(v), _short(v, 3)] for (r, op), v in sorted(by_reason.items(),
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
