"""The shipped tables (``partsim rules list``) as a text table."""

from .text import format_table
from .escape import text_renderer

__all__ = ["render_rules_list_table"]


@text_renderer
def render_rules_list_table(records):
    """One row per shipped table, then how to copy one."""
    rows = []
    for r in records:
        name = r["aliases"][0] if r["aliases"] else r["provider"]
        if r["variant"]:
            name += f":{r['variant']}" + (" (default)" if r["defaultVariant"] else "")
        rows.append([name, r["provider"], r["kind"], r["ops"], r["source"], r["file"]])
    out = [format_table(["name", "provider", "kind", "ops", "source", "file"], rows,
                        ["<", "<", "<", ">", "<", "<"]), "",
           "copy one to edit: partsim rules show NAME > my.yaml; use it with -r my.yaml (it replaces the "
           "shipped table of its provider); check it with partsim lint my.yaml"]
    return "\n".join(out) + "\n"
