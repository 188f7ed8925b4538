"""A blame result as a text table: the baseline, then the causes ranked by what lifting each saves."""

from .text import format_table, human_bytes, plural, short_list

__all__ = ["render_blame_table", "baseline_line"]


def baseline_line(m, link):
    text = (f"partitions {m['partitions']} ({m['acceleratorPartitions']} on accelerators)   "
            f"transfers {m['transfers']}   Memcpy {m['memcpyFromHost']} from host + {m['memcpyToHost']} to host   "
            f"boundary {human_bytes(m['boundaryBytes'])} in {plural(m['copies'], 'copy', 'copies')}")
    if m["unsizedCopies"]:
        text += f" ({m['unsizedCopies']} of unknown size)"
    if link is not None:
        text += f"   copy time {m['copyTimeUs']:.1f} us/inference over {link['name']}"
    return text


def render_blame_table(r, top=20):
    """Text report of a blame result (pure)."""
    out = []
    m = r["model"]
    out.append(f"model      {m['path']}  ({plural(m['nodeCount'], 'node')}, optimize {r['optimize']})")
    out.append(f"providers  {' > '.join(r['effectiveProviders'])}")
    out.append(f"baseline   {baseline_line(r['baseline'], r['link'])}")
    reasons = ", ".join(f"{k} {v}" for k, v in r["reasons"].items()) or "none"
    out.append(f"off {r['firstProvider']}: {plural(r['undelegatedNodes'], 'node')} ({reasons})")
    if r["baseline"]["memcpy"]:
        at = ", ".join(f"{k} {v}" for k, v in r["memcpyCauses"].items() if v) or "none"
        out.append(f"Memcpy at the nodes of: {at} (of {r['baseline']['memcpy']})")
    out.append("")
    rows_in = r["causes"]
    if not rows_in:
        out.append("nothing keeps nodes off the first provider: nothing to blame")
        return "\n".join(out) + "\n"
    link = r["link"] is not None
    headers = ["rank", "cause", "kind", "nodes", "partitions", "transfers", "Memcpy", "bytes"]
    if link:
        headers.append("copy us")
    headers.append("Memcpy at nodes")
    kinds = {"opType": "op type", "reason": "reason", "dim": "dim"}
    rows = []
    for row in rows_in[:top]:
        s = row["saved"]
        cells = [row["rank"], row["cause"], kinds.get(row["kind"], row["kind"]), row["nodeCount"], s["partitions"],
                 s["transfers"], s["memcpy"], s["boundaryBytes"]]
        if link:
            cells.append(f"{s['copyTimeUs']:.1f}")
        cells.append(len(row["memcpyAtNodes"]) if "memcpyAtNodes" in row else "")
        rows.append(cells)
    out.append("saved by lifting each cause alone (before - after; negative = more):")
    out.append(format_table(headers, rows, [">", "<", "<"] + [">"] * (len(headers) - 3)))
    if len(rows_in) > top:
        out.append(f"… {len(rows_in) - top} more causes (--top, or --format json for all)")
    if r["notLiftable"]:
        out.append("not liftable on a table: " + ", ".join(f"{k} ({plural(v, 'node')})" for k, v in r["notLiftable"].items()))
    out.append("")
    out.append("nodes concerned:")
    for row in rows_in[:top]:
        if row["kind"] == "reason" and row.get("groups"):
            k = len(row["groups"])
            what = ("shape subgraph" if row["cause"] == "cpu_preferred" else "group") + ("" if k == 1 else "s")
            line = (f"  {row['cause']}: {plural(row['nodeCount'], 'node')} in {len(row['groups'])} {what}, e.g. "
                    f"[{short_list(row['groups'][0], 6)}]")
        elif row["kind"] == "dim":
            line = (f"  {row['cause']} ({', '.join(row['inputs'])}): {plural(row['nodeCount'], 'node')} move{'s' if row['nodeCount'] == 1 else ''} to the first "
                    f"provider" + (f": {short_list(row['nodes'], 4)}" if row["nodes"] else ""))
        else:
            line = f"  {row['cause']}: {short_list(row['nodes'], 4)}"
            if row.get("reasons"):
                line += "  (" + ", ".join(f"{k} {v}" for k, v in row["reasons"].items()) + ")"
        out.append(line)
    return "\n".join(out) + "\n"
