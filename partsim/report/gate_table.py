"""A gate result as text: the devices x samples x cells matrix, then what is not verified and the verdict."""

from ..numerics.gate import GATE_STATES
from .escape import text_renderer

__all__ = ["render_gate_table"]


@text_renderer
def render_gate_table(res):
    """Text report of a gate result."""
    cells = res["required"]["cells"]
    head = ["device", "sample"] + cells
    rows = [[r["device"], r["sample"]] + [r["cells"][c]["state"] for c in cells] for r in res["matrix"]]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)] if rows else [len(h) for h in head]
    lines = [f"candidate {res['candidate']}  runtime {res['runtime']}",
             "checks: " + " → ".join(res["checks"]), "",
             "  ".join(h.ljust(w) for h, w in zip(head, widths)),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(str(x).ljust(w) for x, w in zip(row, widths)) for row in rows]
    if not rows:
        lines.append("(no required device/sample: no receipt accepted and none required)")
    lines.append("")
    for nv in res["notVerified"]:
        if nv["state"] != "missing":
            lines.append(f"not verified: {nv['device']} / {nv['sample']} / {nv['cell']}: {nv['state']} "
                         f"({nv['reason']})")
    for g in res["gaps"]:
        lines.append(f"gap: {g['device']} / {g['sample']} / {g['cell']} missing ({g['reason']})")
    for rj in res["rejected"]:
        lines.append(f"rejected: {rj['receipt']}: {rj['detail']}")
    for x in res["notRequired"]:
        lines.append(f"not required (ignored): {x}")
    c = res["counts"]
    lines.append("gate: " + ("PASS" if res["passed"] else "FAIL") + "  ("
                 + (", ".join(f"{c[s]} {s}" for s in GATE_STATES if c[s]) or "no required cell") + ")")
    return "\n".join(lines) + "\n"
