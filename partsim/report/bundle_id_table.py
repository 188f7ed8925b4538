"""A modelBundleId (and inputDigest) as text: the id, then one line per part."""

from ..numerics.bundle import PARTS
from .escape import text_renderer

__all__ = ["render_bundle_id_table"]


@text_renderer
def render_bundle_id_table(res):
    """Text report of a bundle-id result: the modelBundleId, each part's digest and source, the inputDigest."""
    lines = [f"modelBundleId  {res['modelBundleId']}"]
    lines += [f"  {p:<15}{res['parts'][p]['sha256']}  {res['parts'][p]['source'] or '(absent)'}" for p in PARTS]
    if "inputDigest" in res:
        lines.append(f"inputDigest    {res['inputDigest']}")
    return "\n".join(lines) + "\n"
