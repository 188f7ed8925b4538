"""A verify result as text: prediction vs observation, and vs a committed baseline."""

from .text import format_table, plural
from .escape import text_renderer

__all__ = ["render_verify_table"]


@text_renderer
def render_verify_table(result):
    """Text report of a verify result: agreement, counts side by side, disagreements, baseline."""
    out = []
    v = result.get("verify")
    if v and v.get("refusal"):  # the real session was not created (a QNN graph the EP refused)
        r = v["refusal"]
        out.append(f"observation  the real session was not created: {r['observed']}")
        out.append("prediction   " + (f"session_would_fail: {r['predicted']}" if r["predicted"] else "a session (ok)"))
    elif v:
        o = v["observation"]
        out.append(f"observation  {o.get('source')} {o.get('runtime') or ''} {o.get('device') or ''} "
                   f"level={o.get('level')}")
        out.append(f"agreement    {v['agreeing']}/{v['compared']} nodes = {v['agreement']:.4f} "
                   f"(need {v['minAgreement']})  graph ORT partitions (assignment info)")
        f = v.get("final")
        if f:
            out.append(f"final graph  {f['agreeing']}/{f['compared']} nodes that ran = {f['agreement']:.4f}  "
                       f"after Level 2/3 ({f.get('source') or 'profile'})")
            wrong = [d["node"] for d in f["disagreements"]] + f["unpredicted"]
            if wrong:
                out.append(f"             not predicted as they ran: {', '.join(wrong[:6])}"
                           + (f" (+{len(wrong) - 6})" if len(wrong) > 6 else ""))
        rows = [[k, c["predicted"], "?" if c["observed"] is None else c["observed"]]
                for k, c in sorted(v["counts"].items())]
        out.append(format_table(["count", "predicted", "observed"], rows, ["<", ">", ">"]))
        if v["disagreements"]:
            out.append("")
            rows = [[d["node"], d["opType"], d["predicted"], d["observed"], d["predictedReason"] or ""]
                    for d in v["disagreements"][:60]]
            out.append(format_table(["node", "op", "predicted", "observed", "predicted reason"], rows))
        if v["unobserved"]:
            out.append(f"{plural(len(v['unobserved']), 'predicted node')} absent from the observation "
                       f"(removed or fused by ORT), e.g. {', '.join(v['unobserved'][:5])}")
    b = result.get("baseline")
    if b:
        if b.get("updated"):
            out.append(f"baseline     updated {b['updated']}")
        elif b["failures"]:
            for f in b["failures"]:
                out.append(f"baseline     FAIL {f['rule']}: {f['message']}")
        else:
            out.append("baseline     no node left the first provider, no count grew, status and "
                       "acceleration unchanged")
    out.append("PASSED" if result["passed"] else "FAILED")
    return "\n".join(out) + "\n"
