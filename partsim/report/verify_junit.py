"""JUnit XML for verify results: one testcase per node compared, plus the counts."""

from .junit_xml import junit_document
from .escape import text_renderer

__all__ = ["render_verify_junit"]


@text_renderer
def render_verify_junit(result, model_path):
    """``result`` from :func:`partsim.analysis.verify.compare`.  Memcpy counts that differ are
    failures only when the comparison checked them (not with ``--ignore-counts``): the
    document then fails exactly when the command does."""
    cases = []
    for d in result["disagreements"]:
        msg = f"predicted {d['predicted']} ({d['predictedReason']}), observed {d['observed']}"
        cases.append(("partsim.verify.node", d["node"], msg, d.get("predictedDetail") or ""))
    cases.append(("partsim.verify.node", f"{result['agreeing']} agreeing nodes", None, ""))
    check_counts = result.get("checkCounts", True)
    for k, v in sorted(result["counts"].items()):
        ok = v["observed"] is None or v["predicted"] == v["observed"] or not k.startswith("memcpy")
        name = k if check_counts or not k.startswith("memcpy") else f"{k} (not checked: --ignore-counts)"
        msg = None if ok or not check_counts else f"predicted {v['predicted']}, observed {v['observed']}"
        cases.append(("partsim.verify.counts", name, msg, ""))
    if result["compared"] == 0:
        cases.append(("partsim.verify.node", "nodes compared", "no predicted node was observed", ""))
    return junit_document("partsim verify " + str(model_path), cases)
