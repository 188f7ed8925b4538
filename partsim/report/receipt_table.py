"""An execution receipt as text: device, sample, candidate, the delegate's stages, one line per lifecycle cell."""

from ..numerics.receipt_schema import CELLS, STAGES
from .text import plural
from .escape import text_renderer

__all__ = ["render_receipt_table"]


@text_renderer
def render_receipt_table(receipt):
    """One line per cell: ``cell state (observed) raw/business``."""
    lines = [f"device {receipt['environment']['device']}  sample {receipt['sample']['id']}  "
             f"modelBundleId {receipt['candidate']['modelBundleId'][:16]}…  runtime "
             f"{receipt['candidate']['runtime']['name']} {receipt['candidate']['runtime']['version']}",
             f"baseline check: {receipt['cpuBaseline']['baselineCheck']['result']}"
             f"  delegate {receipt['delegateState']}  fallbackReason {receipt['fallbackReason']}  stages "
             + " ".join(f"{k}={receipt['stages'][k]}" for k in STAGES),
             f"partitionSummary delegated {plural(receipt['partitionSummary']['delegatedNodeCount'], 'node')} in "
             f"{plural(receipt['partitionSummary']['partitionCount'], 'partition')}, undelegated "
             f"{receipt['partitionSummary']['undelegatedNodeCount']}"]
    for name in CELLS:
        c = receipt["lifecycle"].get(name)
        if c is None:
            continue
        extra = f" (observed {c['observedState']})" if "observedState" in c else ""
        lines.append(f"  {name:<13} {c['state']}{extra}  raw={c.get('rawTensorResult', '-')} "
                     f"business={c.get('businessResult', '-')}")
    return "\n".join(lines) + "\n"
