"""``partsim rules refresh`` (what a new ORT release regenerated) as lines for people."""

__all__ = ["render_refresh_table"]


def render_refresh_table(report):
    """The report as lines for people."""
    out = [f"partsim rules refresh: onnxruntime {report['onnxruntime']}", ""]
    for d in report["regenerated"]:
        out.append(f"  {d['state']:<9} {d['file']}: {d['what']}")
    m = report["measured"]
    out += ["", f"  measured  newest IR version {m['maxIrVersion']}, newest ai.onnx opset {m['maxOnnxOpset']} "
                f"({m['note']})", "", "not regenerated from the wheel:"]
    out += [f"  {d['file']}: {d['why']}" for d in report["notRegenerated"]]
    return "\n".join(out) + "\n"
