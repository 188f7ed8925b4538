"""JUnit XML for a verify --baseline run: one testcase per gate rule."""

from .junit_xml import junit_document
from .escape import text_renderer

__all__ = ["render_baseline_junit"]


def _node_lines(nodes):
    return "\n".join(f"{n['node']} ({n['opType']}) -> {n['provider']}: {n['reason'] or ''}"
                     + (f" ({n['reasonDetail']})" if n.get("reasonDetail") else "") for n in nodes)


@text_renderer
def render_baseline_junit(result, model_path):
    """One testcase per gate rule of :func:`partsim.analysis.verify.compare_baseline`; a failed
    rule's body lists the nodes that moved with their op and reason."""
    if result.get("updated"):
        return junit_document("partsim verify --baseline " + str(model_path),
                              [("partsim.baseline", f"updated {result['updated']}", None, "")])
    cases = [("partsim.baseline", r["rule"], None if r["passed"] else r["message"], _node_lines(r["nodes"]))
             for r in result["rules"]]
    return junit_document("partsim verify --baseline " + str(model_path), cases)
