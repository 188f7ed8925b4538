"""Provider colours: the Okabe-Ito colour-blind-safe palette, CPU always grey.

Okabe & Ito, "Color Universal Design" (2008): eight colours distinguishable with
the common forms of colour blindness.  Black is left out (it is the edge colour),
so seven remain for accelerators; the CPU provider is always :data:`CPU_COLOR`.
"""

import re

__all__ = ["OKABE_ITO", "CPU_COLOR", "provider_colors", "provider_slug", "font_color"]

CPU = "CPUExecutionProvider"

# Okabe-Ito, in the order accelerators are given them (first provider in the list first)
OKABE_ITO = ("#E69F00",  # orange
             "#56B4E9",  # sky blue
             "#009E73",  # bluish green
             "#F0E442",  # yellow
             "#0072B2",  # blue
             "#D55E00",  # vermillion
             "#CC79A7")  # reddish purple
CPU_COLOR = "#BBBBBB"

_DARK = frozenset({"#009E73", "#0072B2", "#D55E00"})


def provider_colors(providers):
    """Map each provider to a fill colour.

    ``providers`` in priority order; the CPU provider is always grey, the others take
    the palette in order (cycling past seven, which a real provider list never needs).

    Examples
    --------
    >>> provider_colors(["CUDAExecutionProvider", "CPUExecutionProvider"])
    {'CUDAExecutionProvider': '#E69F00', 'CPUExecutionProvider': '#BBBBBB'}
    """
    out = {}
    k = 0
    for p in providers:
        if p in out:
            continue
        if p == CPU:
            out[p] = CPU_COLOR
        else:
            out[p] = OKABE_ITO[k % len(OKABE_ITO)]
            k += 1
    return out


def font_color(fill):
    """Black text on light fills, white on the dark ones."""
    return "#FFFFFF" if fill in _DARK else "#000000"


def provider_slug(provider):
    """A CSS-class-safe short name: ``CUDAExecutionProvider`` -> ``cuda``.

    Examples
    --------
    >>> provider_slug("CPUExecutionProvider"), provider_slug("My EP:x")
    ('cpu', 'my-ep-x')
    """
    name = provider[:-len("ExecutionProvider")] if provider.endswith("ExecutionProvider") and \
        provider != "ExecutionProvider" else provider
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    return slug or "provider"
