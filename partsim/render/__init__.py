"""Pictures of a prediction: DOT text, SVG (via graphviz ``dot``) and a one-file HTML report.

:func:`build_dot` turns a partitionSummary plus the model it was computed from
into DOT text (nodes coloured by provider, partitions as clusters, boundary
edges labelled); :func:`render_svg` runs graphviz on it; :func:`render_html`
wraps the SVG and the summary tables into one self-contained page.
Every step is pure and deterministic: the same input gives the same bytes.
"""

from .dot import (DEFAULT_COLLAPSE_THRESHOLD, HTML_COLLAPSE_THRESHOLD, RenderPlan, build_dot,
                  partition_detail_dots, plan_render)
from .html import render_html
from .palette import CPU_COLOR, OKABE_ITO, provider_colors, provider_slug
from .svg import GraphvizMissing, RenderError, find_dot, render_svg, render_svgs

__all__ = [
    "build_dot", "plan_render", "RenderPlan", "DEFAULT_COLLAPSE_THRESHOLD", "HTML_COLLAPSE_THRESHOLD",
    "partition_detail_dots", "render_svg", "render_svgs", "render_html", "find_dot", "GraphvizMissing", "RenderError",
    "provider_colors", "provider_slug", "OKABE_ITO", "CPU_COLOR",
]
