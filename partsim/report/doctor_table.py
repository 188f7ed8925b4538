"""``partsim doctor`` (which real execution providers this machine can observe) as a table for people."""

from .text import format_table

__all__ = ["render_doctor_table"]


def render_doctor_table(doc):
    """One row per provider: its state, the runtime that would observe it, the fix for a missing one."""
    rows = [[r["provider"], r.get("table", ""), r["state"], r["runtime"] or "-", r["fix"] or r["detail"] or "-"]
            for r in doc["providers"]]
    text = format_table(["provider", "table", "state", "runtime", "fix (or what happened)"], rows) + "\n"
    details = [f"{r['provider']} ({r.get('table', '')}): {r['detail']}" for r in doc["providers"]
               if r["state"] != "observable" and r["detail"]]
    return text + "".join(f"\n{d}" for d in details) + ("\n" if details else "")
