"""JUnit XML for verify results (one testcase per node compared, plus the counts)."""

from xml.sax.saxutils import escape, quoteattr

__all__ = ["render_verify_junit"]


def render_verify_junit(result, model_path):
    cases = []
    failures = 0
    for d in result["disagreements"]:
        failures += 1
        msg = f"predicted {d['predicted']} ({d['predictedReason']}), observed {d['observed']}"
        cases.append(f'  <testcase classname={quoteattr("partsim.verify.node")} name={quoteattr(d["node"])}>'
                     f'<failure message={quoteattr(msg)}>{escape(d.get("predictedDetail") or "")}</failure></testcase>')
    agreeing = result["agreeing"]
    cases.append(f'  <testcase classname="partsim.verify.node" name="{agreeing} agreeing nodes"/>')
    for k, v in sorted(result["counts"].items()):
        ok = v["observed"] is None or v["predicted"] == v["observed"]
        body = ""
        if not ok and k.startswith("memcpy"):
            msg = f"predicted {v['predicted']}, observed {v['observed']}"
            body = f"<failure message={quoteattr(msg)}/>"
        if body:
            failures += 1
        cases.append(f'  <testcase classname="partsim.verify.counts" name={quoteattr(k)}>{body}</testcase>')
    head = (f'<testsuite name={quoteattr("partsim verify " + str(model_path))} tests="{len(cases)}" '
            f'failures="{failures}">')
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + head + "\n" + "\n".join(cases) + "\n</testsuite>\n"
