"""``partsim diff`` (an ORT or plugin upgrade's impact) as a table for people, in the shape ``partsim check``
uses: one row per model."""

from .text import format_table

__all__ = ["render_diff_table", "diff_rows"]


def _delta(v):
    return f"{v:+d}" if v else "0"


def _verdict(r):
    if not r["placementChanged"]:
        return "same"
    return "changed" if r["passed"] else "WORSE"


def diff_rows(doc):
    """One table row per model of a diff document (shared with the Markdown renderer)."""
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
                         "transfers", "Memcpy"], list(diff_rows(doc)),
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
