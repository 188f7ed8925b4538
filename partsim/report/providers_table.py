"""The `providers` result as text: requested, available, granted, used, dropped, ORT's warnings."""

from .escape import text_renderer

__all__ = ["render_providers_table"]


@text_renderer
def render_providers_table(result):
    """Text report of a ``partsim providers`` result (requested vs available vs granted vs used)."""
    lines = [f"requested  {', '.join(result['requested'])}", f"available  {', '.join(result['available'])}",
             f"granted    {', '.join(result['granted'])}",
             "used       " + ", ".join(f"{k}: {v} nodes" for k, v in sorted(result['used'].items()))]
    lines += [f"dropped    {d['name']}: {d['reason']}" for d in result['dropped']]
    lines += [f"warning    {w}" for w in result['warnings']]
    return "\n".join(lines) + "\n"
