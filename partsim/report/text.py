"""Building blocks of the text renderers: a fixed-width table, short name lists, byte sizes, plurals."""

from .escape import visible

__all__ = ["format_table", "short_list", "human_bytes", "plural"]


def format_table(headers, rows, align=None):
    """A fixed-width text table (pure function).

    Examples
    --------
    >>> print(format_table(["a", "bb"], [[1, "x"]]))
    a  bb
    -  --
    1  x
    """
    cells = [[str(h) for h in headers]] + [["" if c is None else visible(c) for c in r] for r in rows]
    widths = [max(len(r[k]) for r in cells) for k in range(len(headers))]
    align = align or ["<"] * len(headers)
    out = []
    for n, r in enumerate(cells):
        out.append("  ".join(f"{c:{a}{w}}" for c, a, w in zip(r, align, widths)).rstrip())
        if n == 0:
            out.append("  ".join("-" * w for w in widths).rstrip())
    return "\n".join(out)


def short_list(names, limit):
    """The first ``limit`` names, then how many more.

    >>> short_list(["a", "b", "c"], 2)
    'a, b, … (+1)'
    """
    if len(names) <= limit:
        return ", ".join(names)
    return ", ".join(names[:limit]) + f", … (+{len(names) - limit})"


def human_bytes(n):
    """``14676`` -> ``14.3 KiB`` (exact bytes are in the JSON).

    >>> human_bytes(14676), human_bytes(-512), human_bytes(None)
    ('14.3 KiB', '-512 B', '?')
    """
    if n is None:
        return "?"
    sign = "-" if n < 0 else ""
    n = abs(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{sign}{n} {unit}" if unit == "B" else f"{sign}{n:.1f} {unit}"
        n /= 1024
    return f"{sign}{n}"


def plural(count, word, many=None):
    """``1 partition``, ``2 partitions``, ``0 partitions`` (``many`` for irregular plurals).

    >>> plural(1, "partition"), plural(2, "partition"), plural(0, "copy", "copies")
    ('1 partition', '2 partitions', '0 copies')
    """
    return f"{count} {word if count == 1 else (many or word + 's')}"
