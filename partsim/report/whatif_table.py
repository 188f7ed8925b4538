"""A whatif result as a text table: before, after and the change, overall and per provider."""

from ..analysis.cost import METRIC_KEYS
from .text import format_table, human_bytes, plural
from .escape import text_renderer

__all__ = ["render_whatif_table"]

_LABELS = {
    "partitions": "partitions (all providers)", "acceleratorPartitions": "partitions on accelerators",
    "fragments": "fragments", "transfers": "transfers", "memcpy": "Memcpy nodes", "memcpyFromHost": "  from host",
    "memcpyToHost": "  to host", "boundaryBytes": "boundary bytes", "copies": "copies per inference",
    "unsizedCopies": "  of unknown size", "feedTransfers": "feed transfers", "feedBytes": "feed bytes",
    "delegatedNodes": "nodes off the CPU", "copyTimeUs": "copy time (us/inference)",
}


def _signed(v):
    if isinstance(v, float):
        return f"{v:+.1f}" if v else "0"
    return f"{v:+d}" if v else "0"


@text_renderer
def render_whatif_table(r):
    """Text report of a whatif result (pure)."""
    b, a = r["before"], r["after"]
    out = [f"model    {r['model']['path']}  ({plural(r['model']['nodeCount'], 'node')})"]
    out.append("changes  " + "; ".join(f"{c['change']} {c['value']}" for c in r["changes"]))
    out.append(f"before   {' > '.join(b['providers'])}, optimize {b['optimize']}, {b['status']}"
               + ("" if b["accelerated"] else ", NOT accelerated"))
    out.append(f"after    {' > '.join(a['providers'])}, optimize {a['optimize']}, {a['status']}"
               + ("" if a["accelerated"] else ", NOT accelerated"))
    out.append("")
    keys = list(METRIC_KEYS) + (["copyTimeUs"] if "copyTimeUs" in b else [])
    rows = []
    for k in keys:
        bv, av, cv = b[k], a[k], r["change"][k]
        if k in ("boundaryBytes", "feedBytes"):
            rows.append([_LABELS[k], human_bytes(bv), human_bytes(av), _signed(cv)])
        elif k == "copyTimeUs":
            rows.append([_LABELS[k], f"{bv:.1f}", f"{av:.1f}", _signed(cv)])
        else:
            rows.append([_LABELS[k], bv, av, _signed(cv)])
    out.append(format_table(["", "before", "after", "change"], rows, ["<", ">", ">", ">"]))
    out.append("")
    rows = []
    for ep, v in r["perProvider"].items():
        rows.append([ep] + [f"{v['before'][k]} -> {v['after'][k]} ({_signed(v['change'][k])})"
                            for k in ("nodes", "partitions", "fragments")])
    out.append(format_table(["provider", "nodes", "partitions", "fragments"], rows))
    if r["link"]:
        out.append("")
        out.append(f"link {r['link']['name']}: {r['link']['bandwidthBytesPerSecond'] / 1e9:.2f} GB/s, "
                   f"{r['link']['latencyMicroseconds']:g} us per copy ({r['link']['source']})")
    return "\n".join(out) + "\n"

