"""A gate result as JUnit XML: one testsuite per device, one testcase per (sample, cell)."""

from xml.sax.saxutils import quoteattr
from .escape import text_renderer

__all__ = ["render_gate_junit"]


@text_renderer
def render_gate_junit(res):
    """JUnit XML: one testsuite per device, one testcase per (sample, cell); rejected receipts as errors."""
    out = ['<?xml version="1.0" encoding="UTF-8"?>']
    total = sum(len(r["cells"]) for r in res["matrix"]) + len(res["rejected"])
    fails = sum(1 for r in res["matrix"] for v in r["cells"].values() if v["state"] not in
                ("verified", "not_applicable", "missing"))
    errors = sum(1 for r in res["matrix"] for v in r["cells"].values() if v["state"] == "missing") + \
        len(res["rejected"])
    skipped = sum(1 for r in res["matrix"] for v in r["cells"].values() if v["state"] == "not_applicable")
    out.append(f'<testsuites name="partsim gate" tests="{total}" failures="{fails}" errors="{errors}" '
               f'skipped="{skipped}">')
    for dev in res["required"]["devices"]:
        rows = [r for r in res["matrix"] if r["device"] == dev]
        out.append(f"  <testsuite name={quoteattr(dev)} tests=\"{sum(len(r['cells']) for r in rows)}\">")
        for r in rows:
            for cell, v in r["cells"].items():
                name = quoteattr(f"{r['sample']}/{cell}")
                cls = quoteattr(f"{dev}.{r['sample']}")
                body = {"verified": "", "not_applicable": f"<skipped message={quoteattr(v['reason'])}/>",
                        "missing": f"<error type=\"missing\" message={quoteattr(v['reason'])}/>"}.get(
                    v["state"], f"<failure type={quoteattr(v['state'])} message={quoteattr(v['reason'])}/>")
                out.append(f"    <testcase classname={cls} name={name}>{body}</testcase>" if body else
                           f"    <testcase classname={cls} name={name}/>")
        out.append("  </testsuite>")
    if res["rejected"]:
        out.append(f'  <testsuite name="rejected receipts" tests="{len(res["rejected"])}">')
        for rj in res["rejected"]:
            out.append(f"    <testcase classname=\"rejected\" name={quoteattr(rj['receipt'])}>"
                       f"<error type={quoteattr(rj['reason'])} message={quoteattr(rj['detail'])}/></testcase>")
        out.append("  </testsuite>")
    out.append("</testsuites>")
    return "\n".join(out) + "\n"
