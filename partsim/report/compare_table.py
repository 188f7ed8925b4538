"""A compare result (CPU vs delegate receipt) as a text table."""

from .text import format_table
from .escape import text_renderer

__all__ = ["render_compare_table"]


@text_renderer
def render_compare_table(res):
    """Text report of a compare result."""
    rows = []
    for c in res["cases"]:
        ff = c.get("firstFailure") or {}
        where = "" if not ff else (f"pos {ff['position']}: cpu {ff['cpu']} delegate {ff['delegate']} "
                                   f"limit {ff['limit']}")
        rows.append([c["index"], c["result"], c["rawResult"], c["businessResult"], c["minAbsTolerance"],
                     c["minRelTolerance"], where])
    head = (f"rawTensorResult {res['rawTensorResult']}  businessResult {res['businessResult']}  "
            f"(abs {res['projectAbsTolerance']}, rel {res['projectRelTolerance']}, {res['caseCount']} cases)")
    table = format_table(["case", "result", "raw", "business", "minAbs", "minRel", "first failure"], rows)
    return head + "\n" + table + "\n"
