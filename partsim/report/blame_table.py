"""A blame result as a text table: the baseline, then the causes ranked by what lifting each gains."""

from .text import format_table, human_bytes, plural, short_list
from .escape import text_renderer

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


@text_renderer
def render_blame_table(r, top=20):
    """Text report of a blame result (pure)."""
    out = []
    m = r["model"]
    out.append(f"model      {m['path']}  ({plural(m['nodeCount'], 'node')}, optimize {r['optimize']})")
    out.append(f"providers  {' > '.join(r['effectiveProviders'])}")
    out.append(f"baseline   {baseline_line(r['baseline'], r['link'])}")
    cov = r["coverage"]
    out.append(f"coverage   {cov['firstProviderNodes']} of {plural(cov['nodes'], 'node')} on {r['firstProvider']} "
               f"({cov['percent']:.1f}%)")
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
    headers = ["rank", "cause", "kind", "who", "nodes", "coverage", "accel parts", "partitions", "transfers",
               "Memcpy", "bytes"]
    if link:
        headers.append("copy us")
    headers.append("Memcpy at nodes")
    kinds = {"opType": "op type", "reason": "reason", "dim": "dim", "dims": "all dims", "level": "level",
             "level+dims": "level+dims", "opset": "opset"}
    who = {"session": "you", "model": "you", "provider": "vendor", "ort": "ORT"}
    rows = []
    for row in rows_in[:top]:
        s = row["saved"]
        c = row["coverage"]
        cells = [row["rank"], row["cause"], kinds.get(row["kind"], row["kind"]), who.get(row["actionBy"], "?"),
                 row["nodeCount"], f"{c['after']['percent']:.1f}% ({c['gainPoints']:+.1f})",
                 s["acceleratorPartitions"], s["partitions"], s["transfers"], s["memcpy"], s["boundaryBytes"]]
        if link:
            cells.append(f"{s['copyTimeUs']:.1f}")
        cells.append(len(row["memcpyAtNodes"]) if "memcpyAtNodes" in row else "")
        rows.append(cells)
    out.append("ranked by accelerator coverage gained (share of nodes on the first provider), then accelerator")
    out.append("partitions saved; each cause lifted alone (saved = before - after; negative = more):")
    out.append(format_table(headers, rows, [">", "<", "<", "<"] + [">"] * (len(headers) - 4)))
    out.append("who: you = a session option or a change to the model; vendor = only the provider's vendor (or "
               "your own table, -r); ORT = ONNX Runtime's own pass")
    if len(rows_in) > top:
        out.append(f"… {plural(len(rows_in) - top, 'more cause')} (--top, or --format json for all)")
    for nm in r.get("notMeasured", ()):
        out.append(f"not measured: {nm['cause']}: {nm['why']}")
    if r["notLiftable"]:
        out.append("not liftable on a table: " + ", ".join(f"{k} ({plural(v, 'node')})" for k, v in r["notLiftable"].items()))
    out.append("")
    out.append("nodes concerned:")
    out.extend(_concerned(row) for row in rows_in[:top])
    out.append("")
    out.extend(_next_step(r))
    return "\n".join(out) + "\n"


def _concerned(row):
    """The "nodes concerned" line of one cause."""
    if row["kind"] == "reason" and row.get("groups"):
        k = len(row["groups"])
        what = ("shape subgraph" if row["cause"] == "cpu_preferred" else "group") + ("" if k == 1 else "s")
        return (f"  {row['cause']}: {plural(row['nodeCount'], 'node')} in {k} {what}, e.g. "
                f"[{short_list(row['groups'][0], 6)}]")
    if row["kind"] == "decompose":
        return f"  {row['cause']}: {short_list(row['nodes'], 4)} replaced by the ops that define them"
    if row["kind"] in ("dim", "dims", "level", "level+dims", "opset"):
        where = f" ({', '.join(row['inputs'])})" if row.get("inputs") else ""
        gone = (f", {row['goneNodes']} of its nodes gone (folded, fused or renamed by the change)"
                if row.get("goneNodes") else "")
        moves = "moves" if row["nodeCount"] == 1 else "move"
        return (f"  {row['cause']}{where}: {plural(row['nodeCount'], 'node')} {moves} to the first provider{gone}"
                + (f": {short_list(row['nodes'], 4)}" if row["nodes"] else ""))
    line = f"  {row['cause']}: {short_list(row['nodes'], 4)}"
    if row.get("reasons"):
        line += "  (" + ", ".join(f"{k} {v}" for k, v in row["reasons"].items()) + ")"
    return line


def _next_step(r):
    """The best change the user can make, with the whatif command that measures it (the blamed model's
    --dim kept in both runs: --base-dim)."""
    best = next((row for row in r["causes"] if row["actionable"] and row["coverage"]["gainPoints"] > 0), None)
    if best is None:
        return ["next step: nothing you can change in the model or session raises coverage; the remaining "
                "causes need the provider itself (try another provider, or check with whatif)"]
    out = [f"next step: {best['cause']} (rank {best['rank']}, coverage "
           f"{best['coverage']['after']['percent']:.1f}%): {best['remedy']}"]
    change = _whatif_change(best)
    if change:
        level = f" --level {r['optimize']}" if r["optimize"] != "all" else ""
        fixed = r.get("fixedDims") or {}
        base = f" --base-dim {','.join(f'{k}={v}' for k, v in fixed.items())}" if fixed else ""
        out.append(f"  partsim whatif {r['model']['path']} -p {','.join(r['requestedProviders'])}{level}{base} "
                   f"{change}")
    return out


def _whatif_change(row):
    """The whatif options that make the change of a model-side cause (``None`` for a table lift)."""
    kind, cause = row["kind"], row["cause"]
    if kind == "decompose":
        return f"--decompose {cause.split()[-1]}"
    if kind in ("dim", "dims"):
        return f"--dim {cause}"
    if kind == "opset":
        return f"--opset {cause.split()[-1]}"
    if kind == "level":
        return f"--optimize {cause.split()[-1]}"
    return None
