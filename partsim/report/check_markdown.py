"""``partsim check`` as Markdown for a pull-request comment: a verdict line, a table, then the
failures with the nodes behind them (collapsed)."""

from .check_table import expectation
from .escape import text_renderer

__all__ = ["render_check_markdown"]


def _cell(text):
    """A table cell or inline text: a ``|`` cannot end the cell, HTML and backticks are shown as text
    (control characters are already visible: :func:`partsim.report.escape.text_renderer`)."""
    return (str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace("|", "\\|").replace("`", "'").replace("\n", " "))


@text_renderer
def render_check_markdown(doc):
    s = doc["summary"]
    verdict = "passed" if doc["passed"] else "FAILED"
    icon = "✅" if doc["passed"] else "❌"
    out = [f"### {icon} partsim check {verdict}: {s['results'] - s['failed']} of {s['results']} passed", "",
           f"{s['checks']} check(s) over {s['models']} model(s); lock `{_cell(doc['lock']['path'])}` "
           f"{doc['lock']['state']}.", "",
           "| | check | model | on first provider | share | partitions | transfers | Memcpy |",
           "|---|---|---|---:|---:|---:|---:|---:|"]
    for r in doc["results"]:
        c = r["counts"]
        out.append(f"| {'✅' if r['passed'] else '❌'} | {_cell(r['check'])} | `{_cell(r['model'])}` | "
                   f"{c['firstProviderNodes']}/{c['nodeCount']} | {c['delegatedShare']:.3f} | "
                   f"{c['firstProviderPartitions']} | {c['transfers']} | {c['memcpyFromHost'] + c['memcpyToHost']} |")
    expected = [r for r in doc["results"] if r.get("expect")]
    if expected:
        out += ["", "#### Expectations", ""]
    for r in expected:
        out.append(f"- **{_cell(r['check'])}** `{_cell(r['model'])}` — {_cell(expectation(r))}"
                   + ("" if r["passed"] else " (not met)"))
    failed = [r for r in doc["results"] if not r["passed"]]
    if failed:
        out += ["", "#### Failures", ""]
    for r in failed:
        for b in r["budgets"]:
            if not b["passed"]:
                out.append(f"- **{_cell(r['check'])}** `{_cell(r['model'])}` — `{b['budget']}`: "
                           f"{_cell(b['message'])}")
        for f in r["lock"]["failures"]:
            out.append(f"- **{_cell(r['check'])}** `{_cell(r['model'])}` — lock `{f['rule']}`: {_cell(f['message'])}")
        nodes = {}
        for group in [b["nodes"] for b in r["budgets"] if not b["passed"]] + \
                [x["nodes"] for x in r["lock"]["rules"] if not x["passed"]]:
            for n in group:
                nodes.setdefault(n["node"], n)
        if nodes:
            out += ["", f"  <details><summary>{len(nodes)} node(s) off the first provider</summary>", "",
                    "  | node | op | now on | reason |", "  |---|---|---|---|"]
            for n in list(nodes.values())[:50]:
                out.append(f"  | `{_cell(n['node'])}` | {_cell(n['opType'])} | {_cell(n['provider'])} | "
                           f"{_cell(n['reason'] or '')}: {_cell(n.get('reasonDetail') or '')} |")
            out += ["", "  </details>", ""]
    return "\n".join(out).rstrip("\n") + "\n"
