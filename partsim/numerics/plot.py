"""A small dependency-free SVG line plot of the layer-error table (relError per boundary)."""

from xml.sax.saxutils import escape

__all__ = ["layer_error_svg"]

_W, _H, _L, _R, _T, _B = 720, 360, 70, 20, 40, 50


def _fmt(v):
    return f"{v:.3g}"


def layer_error_svg(result):
    """SVG text: relError (linear y axis) per boundary index; jumps marked in red.

    Boundaries without a relError (undefined) are left out of the line.
    Output is byte-stable for a given result.

    Examples
    --------
    >>> svg = layer_error_svg({"fp32Model": "a", "quantModel": "b", "boundaries": [
    ...     {"index": 0, "relError": 0.1, "jump": False}, {"index": 1, "relError": 0.4, "jump": True}]})
    >>> svg.startswith("<svg") and "<polyline" in svg
    True
    """
    rows = result.get("boundaries", [])
    pts = [(r["index"], r["relError"], r.get("jump", False)) for r in rows if r.get("relError") is not None]
    n = max(len(rows) - 1, 1)
    top = max([p[1] for p in pts] + [1e-12]) * 1.1
    pw, ph = _W - _L - _R, _H - _T - _B

    def xy(i, v):
        return _L + pw * i / n, _T + ph * (1 - v / top)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{_H}" viewBox="0 0 {_W} {_H}" '
           'font-family="sans-serif" font-size="11">',
           f'<rect width="{_W}" height="{_H}" fill="white"/>',
           f'<text x="{_W / 2:.1f}" y="18" text-anchor="middle" font-size="13">relError per boundary: '
           f'{escape(str(result.get("quantModel", "")))} vs {escape(str(result.get("fp32Model", "")))}</text>']
    for k in range(5):
        v = top * k / 4
        _, y = xy(0, v)
        out.append(f'<line x1="{_L}" y1="{y:.1f}" x2="{_W - _R}" y2="{y:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{_L - 6}" y="{y + 4:.1f}" text-anchor="end">{_fmt(v)}</text>')
    for r in rows:
        x, _ = xy(r["index"], 0)
        out.append(f'<text x="{x:.1f}" y="{_H - _B + 16}" text-anchor="middle">{r["index"]}</text>')
    out.append(f'<line x1="{_L}" y1="{_T + ph}" x2="{_W - _R}" y2="{_T + ph}" stroke="#333"/>')
    out.append(f'<line x1="{_L}" y1="{_T}" x2="{_L}" y2="{_T + ph}" stroke="#333"/>')
    out.append(f'<text x="{_W / 2:.1f}" y="{_H - 10}" text-anchor="middle">boundary (topological order)</text>')
    if pts:
        line = " ".join(f"{xy(i, v)[0]:.1f},{xy(i, v)[1]:.1f}" for i, v, _ in pts)
        out.append(f'<polyline points="{line}" fill="none" stroke="#1f77b4" stroke-width="2"/>')
        for i, v, jump in pts:
            x, y = xy(i, v)
            color = "#d62728" if jump else "#1f77b4"
            out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{5 if jump else 3}" fill="{color}">'
                       f'<title>boundary {i}: relError {_fmt(v)}{" (jump)" if jump else ""}</title></circle>')
    out.append("</svg>")
    return "\n".join(out) + "\n"
