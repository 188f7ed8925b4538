"""``partsim diff`` as SARIF: one result per model whose placement changed (the writer:
:mod:`partsim.report.sarif`)."""

from ..rules.lint import Finding
from .sarif import render_sarif

__all__ = ["render_diff_sarif"]

_RULES = {"upgrade/placement": "the upgrade places nodes differently",
          "upgrade/loss": "the upgrade costs accelerator nodes or breaks the session"}
_LEVELS = {"upgrade/placement": "warning", "upgrade/loss": "error"}


def render_diff_sarif(doc):
    findings = []
    for r in doc["models"]:
        if not r["placementChanged"]:
            continue
        rule = "upgrade/placement" if r["passed"] else "upgrade/loss"
        findings.append(Finding(r["model"], None, rule, _LEVELS[rule],
                                f"{doc['from']} -> {doc['to']}: " + "; ".join(r["reasons"][:5])))
    return render_sarif("diff", findings, sorted({r["model"] for r in doc["models"]}), _RULES, _LEVELS)
