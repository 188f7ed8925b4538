"""``partsim diff`` as SARIF: one result per model whose placement changed."""

from .output import to_json

__all__ = ["render_diff_sarif"]


def render_diff_sarif(doc):
    from .. import __version__

    results = []
    for r in doc["models"]:
        if not r["placementChanged"]:
            continue
        rule = "upgrade/placement" if r["passed"] else "upgrade/loss"
        results.append({"ruleId": rule, "level": "warning" if r["passed"] else "error",
                        "message": {"text": f"{doc['from']} -> {doc['to']}: " + "; ".join(r["reasons"][:5])},
                        "locations": [{"physicalLocation": {"artifactLocation": {"uri": r["model"]}}}]})
    used = sorted({x["ruleId"] for x in results})
    for x in results:
        x["ruleIndex"] = used.index(x["ruleId"])
    text = {"upgrade/placement": "the upgrade places nodes differently",
            "upgrade/loss": "the upgrade costs accelerator nodes or breaks the session"}
    rules = [{"id": u, "shortDescription": {"text": text[u]}} for u in used]
    return to_json({"$schema": "https://json.schemastore.org/sarif-2.1.0.json", "version": "2.1.0",
                    "runs": [{"tool": {"driver": {"name": "partsim-diff", "version": __version__,
                                                  "informationUri": "https://partsim.invalid/", "rules": rules}},
                              "artifacts": [{"location": {"uri": m}} for m in sorted({r["model"]
                                                                                      for r in doc["models"]})],
                              "results": results}]})
