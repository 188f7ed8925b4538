"""JUnit XML for verify results: one testcase per node compared plus the counts, and one
per gate rule of a baseline run."""

from xml.sax.saxutils import escape, quoteattr

__all__ = ["render_verify_junit", "render_baseline_junit", "junit_document"]

_HEAD = '<?xml version="1.0" encoding="UTF-8"?>\n'


def junit_document(suite_name, cases):
    """``cases``: ``[(classname, name, failure message or None, failure body)]`` -> one <testsuite>."""
    lines, failures = [], 0
    for classname, name, message, body in cases:
        open_tag = f"  <testcase classname={quoteattr(classname)} name={quoteattr(name)}"
        if message is None:
            lines.append(open_tag + "/>")
            continue
        failures += 1
        lines.append(f"{open_tag}><failure message={quoteattr(message)}>{escape(body or '')}</failure></testcase>")
    head = f'<testsuite name={quoteattr(suite_name)} tests="{len(cases)}" failures="{failures}">'
    return _HEAD + head + "\n" + "".join(line + "\n" for line in lines) + "</testsuite>\n"


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


def _node_lines(nodes):
    return "\n".join(f"{n['node']} ({n['opType']}) -> {n['provider']}: {n['reason'] or ''}"
                     + (f" ({n['reasonDetail']})" if n.get("reasonDetail") else "") for n in nodes)


def render_baseline_junit(result, model_path):
    """One testcase per gate rule of :func:`partsim.analysis.verify.compare_baseline`; a failed
    rule's body lists the nodes that moved with their op and reason."""
    if result.get("updated"):
        return junit_document("partsim verify --baseline " + str(model_path),
                              [("partsim.baseline", f"updated {result['updated']}", None, "")])
    cases = [("partsim.baseline", r["rule"], None if r["passed"] else r["message"], _node_lines(r["nodes"]))
             for r in result["rules"]]
    return junit_document("partsim verify --baseline " + str(model_path), cases)
