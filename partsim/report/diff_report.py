"""``partsim diff`` (an ORT or plugin upgrade's impact) as a table, Markdown, JUnit XML or SARIF,
in the shapes ``partsim check`` uses: one row / testcase / result location per model."""

from .junit_xml import junit_document
from .output import to_json
from .text import format_table

__all__ = ["render_diff_table", "render_diff_markdown", "render_diff_junit", "render_diff_sarif", "render_diff"]


def _delta(v):
    return f"{v:+d}" if v else "0"


def _verdict(r):
    if not r["placementChanged"]:
        return "same"
    return "changed" if r["passed"] else "WORSE"


def _rows(doc):
    for r in doc["models"]:
        d = r["deltas"]
        yield [r["model"], " > ".join(p.replace("ExecutionProvider", "") for p in r["providers"]), _verdict(r),
               f"{r['from']['status']} -> {r['to']['status']}" if r["from"]["status"] != r["to"]["status"]
               else r["to"]["status"], len(r["changed"]), f"-{len(r['onlyFrom'])} +{len(r['onlyTo'])}",
               _delta(d["firstProviderNodes"]), _delta(d["partitionCount"]), _delta(d["transfers"]),
               _delta(d["memcpyFromHost"] + d["memcpyToHost"])]


def render_diff_table(doc):
    out = [f"diff {doc['from']} -> {doc['to']}", "",
           format_table(["model", "providers", "result", "status", "moved", "nodes", "on first", "partitions",
                         "transfers", "Memcpy"], list(_rows(doc)),
                        ["<", "<", "<", "<", ">", ">", ">", ">", ">", ">"])]
    changed = [r for r in doc["models"] if r["placementChanged"]]
    if changed:
        out.append("")
    for r in changed:
        for line in r["reasons"]:
            out.append(f"{'FAIL' if not r['passed'] else 'note'} {r['model']}: {line}")
    s = doc["summary"]
    out += ["", f"diff: {'PASS' if doc['passed'] else 'FAIL'}  ({s['placementChanged']} of {s['models']} model(s) "
                f"placed differently; {s['lostAcceleratorNodes']} accelerator node(s) lost)"]
    return "\n".join(out) + "\n"


def _cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def render_diff_markdown(doc):
    s = doc["summary"]
    icon = "✅" if doc["passed"] else "❌"
    out = [f"### {icon} partsim diff `{_cell(doc['from'])}` → `{_cell(doc['to'])}`: {s['placementChanged']} of "
           f"{s['models']} model(s) placed differently", "",
           "| | model | status | moved | nodes | on first | partitions | transfers | Memcpy |",
           "|---|---|---|---:|---:|---:|---:|---:|---:|"]
    for row, r in zip(_rows(doc), doc["models"]):
        mark = "✅" if not r["placementChanged"] else ("⚠️" if r["passed"] else "❌")
        out.append(f"| {mark} | `{_cell(row[0])}` | " + " | ".join(_cell(c) for c in row[3:]) + " |")
    for r in doc["models"]:
        if r["reasons"]:
            out += ["", f"<details><summary><code>{_cell(r['model'])}</code></summary>", ""]
            out += [f"- {_cell(line)}" for line in r["reasons"]]
            out += ["", "</details>"]
    return "\n".join(out) + "\n"


def render_diff_junit(doc):
    cases = []
    for r in doc["models"]:
        message = None if r["passed"] else "; ".join(r["reasons"][:3])
        cases.append(("partsim.diff", r["model"], message, "\n".join(r["reasons"])))
    return junit_document(f"partsim diff {doc['from']} -> {doc['to']}", cases)


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


def render_diff(doc, fmt):
    """``doc`` in ``fmt`` (table, json, junit, sarif, markdown)."""
    if fmt == "json":
        return to_json(doc)
    return {"junit": render_diff_junit, "sarif": render_diff_sarif,
            "markdown": render_diff_markdown}.get(fmt, render_diff_table)(doc)
