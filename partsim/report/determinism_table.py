"""A determinism grid as a text table: one row per (providers, level, threads) cell."""

from .text import format_table
from .escape import text_renderer

__all__ = ["render_determinism_table"]


@text_renderer
def render_determinism_table(res):
    f = lambda v: "-" if v is None else f"{v:.3g}"  # noqa: E731
    rows = [[",".join(c["providers"]), c["optLevel"], c["threads"], c["state"], f(c["maxAbs"]), f(c["maxRel"]),
             "" if c["bitwiseEqual"] is None else ("yes" if c["bitwiseEqual"] else "no")] for c in res["cells"]]
    return (f"{res['model']}  seed {res['seed']}  {res['runtime']}\n"
            + format_table(["providers", "level", "threads", "state", "maxAbs", "maxRel", "bitwise"], rows) + "\n")
