"""``partsim check`` as JUnit XML: one testcase per (model, check); a failing one lists every
exceeded budget and lock regression, and the nodes behind them."""

from .check_table import expectation, failure_lines
from .junit_xml import junit_document
from .escape import text_renderer

__all__ = ["render_check_junit"]


def _body(result):
    lines = []
    for what, message in failure_lines(result):
        lines.append(f"{what}: {message}")
    seen = set()
    for group in [b["nodes"] for b in result["budgets"] if not b["passed"]] + \
            [r["nodes"] for r in result["lock"]["rules"] if not r["passed"]]:
        for n in group:
            if n["node"] in seen:
                continue
            seen.add(n["node"])
            lines.append(f"  {n['node']} ({n['opType']}) -> {n['provider']}: {n['reason'] or ''}"
                         + (f" ({n['reasonDetail']})" if n.get("reasonDetail") else ""))
    return "\n".join(lines)


@text_renderer
def render_check_junit(doc):
    cases = []
    for r in doc["results"]:
        fails = failure_lines(r)
        message = None if r["passed"] else "; ".join(f"{w}: {m}" for w, m in fails)
        cases.append((f"partsim.check.{r['check']}", r["model"], message, "" if r["passed"] else _body(r),
                      expectation(r)))
    return junit_document(f"partsim check {doc['config']}", cases)
