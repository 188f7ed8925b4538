"""``partsim diff`` as JUnit XML: one testcase per model."""

from .junit_xml import junit_document

__all__ = ["render_diff_junit"]


def render_diff_junit(doc):
    cases = []
    for r in doc["models"]:
        message = None if r["passed"] else "; ".join(r["reasons"][:3])
        cases.append(("partsim.diff", r["model"], message, "\n".join(r["reasons"])))
    return junit_document(f"partsim diff {doc['from']} -> {doc['to']}", cases)
