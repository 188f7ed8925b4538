"""A run-compare result as text: the delegate's stages, then the compare table, baseline and lifecycle."""

from .compare_table import render_compare_table
from .escape import text_renderer

__all__ = ["render_run_compare_table"]


@text_renderer
def render_run_compare_table(res):
    """Text report of a run-compare result (its ``delegate`` record is the delegate side of the first case)."""
    d = res["delegate"]
    st = d.get("stages", {})
    text = (f"delegate {d.get('delegateState')}  fallbackReason {d.get('fallbackReason')}  stages "
            + " ".join(f"{k}={st.get(k)}" for k in ("availabilityChecked", "delegateCreated",
                                                    "prepareCompleted", "invocationCompleted"))
            + f"\npartitionSummary {d.get('partitionSummary')}\n" + render_compare_table(res))
    if "baselineCheck" in res:
        text += f"CPU baseline vs expected outputs: {res['baselineCheck']['result']}\n"
    if "lifecycle" in res:
        text += "lifecycle: " + "  ".join(f"{k}={v}" for k, v in res["lifecycle"].items()) + "\n"
    return text
