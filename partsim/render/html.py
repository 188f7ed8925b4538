"""The one-file HTML report: summary tables and the SVG picture, inline.

No external resources (no CDN, no fonts, no images by URL): the page works from
a file on a machine without network.  A few lines of inline script mark, once
the browser has laid the picture out, every drawn node with ``data-rendered``
and its computed fill (``data-rendered-fill``), and let a click on a legend entry
highlight that provider's nodes.  The file itself is a pure function of its input.
"""

import html

from .dot import clean, format_bytes

__all__ = ["render_html"]

_CSS = """
body { font-family: Helvetica, Arial, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.4em; margin-bottom: 0.2em; }
h2 { font-size: 1.1em; margin-top: 1.6em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.4em 0; }
th, td { border: 1px solid #ccc; padding: 2px 8px; text-align: left; vertical-align: top; }
th { background: #f0f0f0; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.meta td:first-child { font-weight: bold; }
.swatch { display: inline-block; width: 1em; height: 1em; border: 1px solid #333; vertical-align: middle;
          margin-right: 0.4em; }
#legend-list { list-style: none; padding: 0; display: flex; flex-wrap: wrap; gap: 1.2em; }
#legend-list li { cursor: pointer; }
#legend-list li.active { font-weight: bold; text-decoration: underline; }
.svgwrap { overflow: auto; border: 1px solid #ccc; max-height: 85vh; }
.svgwrap svg { display: block; }
.svgwrap.fit svg { width: 100%; height: auto; }
button { font: inherit; font-size: 0.85em; }
svg.dim g.node:not(.hl) { opacity: 0.25; }
.missing { color: #D55E00; font-weight: bold; }
.note { color: #555; font-size: 0.85em; }
"""

_SCRIPT = """
(function () {
  var svg = document.querySelector('#graph svg');
  if (!svg) { return; }
  var drawn = 0;
  svg.querySelectorAll('g.node').forEach(function (g) {
    var shape = g.querySelector('polygon, path, ellipse');
    var box = g.getBBox();
    var counted = g.hasAttribute('data-node') || g.hasAttribute('data-partition');
    if (box.width > 0 && box.height > 0) {
      g.setAttribute('data-rendered', '1');
      if (counted) { drawn += 1; }
    }
    if (shape) { g.setAttribute('data-rendered-fill', getComputedStyle(shape).fill); }
  });
  document.querySelectorAll('#legend-list li').forEach(function (li) {
    var sw = li.querySelector('.swatch');
    if (sw) { li.setAttribute('data-rendered-fill', getComputedStyle(sw).backgroundColor); }
    li.addEventListener('click', function () {
      var on = !li.classList.contains('active');
      document.querySelectorAll('#legend-list li').forEach(function (x) { x.classList.remove('active'); });
      svg.querySelectorAll('g.node.hl').forEach(function (g) { g.classList.remove('hl'); });
      svg.classList.toggle('dim', on);
      if (on) {
        li.classList.add('active');
        svg.querySelectorAll('g.node.ep-' + li.getAttribute('data-slug')).forEach(function (g) {
          g.classList.add('hl');
        });
      }
    });
  });
  var fit = document.getElementById('fit');
  if (fit) {
    fit.addEventListener('click', function () {
      var wrap = document.getElementById('graph');
      wrap.classList.toggle('fit');
      fit.textContent = wrap.classList.contains('fit') ? 'actual size' : 'fit to width';
    });
  }
  document.body.setAttribute('data-rendered-nodes', String(drawn));
})();
"""


def _e(text):
    return html.escape(clean("" if text is None else text), quote=True)


def _table(headers, rows, num=(), cls=""):
    out = [f'<table class="{cls}">' if cls else "<table>", "<thead><tr>"]
    out += [f"<th>{_e(h)}</th>" for h in headers]
    out.append("</tr></thead><tbody>")
    for r in rows:
        cells = []
        for k, c in enumerate(r):
            raw = isinstance(c, _Raw)
            text = c.html if raw else _e(c)
            cells.append(f'<td class="num">{text}</td>' if k in num else f"<td>{text}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table>")
    return "\n".join(out)


class _Raw:
    def __init__(self, html_text):
        self.html = html_text


def _swatch(color):
    return f'<span class="swatch" style="background:{color}"></span>'


def _svg_body(svg):
    """The ``<svg>`` element alone (no XML prolog or DOCTYPE, which HTML does not allow inline)."""
    k = svg.find("<svg")
    return svg[k:] if k >= 0 else svg


def render_html(summary, plan, svg):
    """The report page as text.

    Parameters
    ----------
    summary : dict
        partitionSummary.
    plan : RenderPlan
        From :func:`partsim.render.plan_render` (colours, view).
    svg : str
        From :func:`partsim.render.render_svg` on ``plan.dot``.
    """
    s = summary
    m = s["model"]
    name = clean(m.get("path", "")).replace("\\", "/").rsplit("/", 1)[-1]
    out = ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
           '<meta name="generator" content="partsim render">',
           f"<title>partsim: {_e(name)}</title>", f"<style>{_CSS}</style>", "</head>",
           f'<body data-mode="{plan.mode}" data-node-count="{len(s["nodes"])}" '
           f'data-partition-count="{len(s["partitions"])}">',
           f"<h1>partsim prediction: {_e(name)}</h1>"]

    verdict = "yes" if s.get("accelerated") else "NO: every node runs on the CPU"
    meta = [["model", m.get("path", "")], ["sha256", m.get("sha256", "")],
            ["nodes", m.get("nodeCount", len(s["nodes"]))],
            ["requested providers", " > ".join(s.get("requestedProviders", []))],
            ["effective providers", " > ".join(s.get("effectiveProviders", []))],
            ["policy", s.get("policy", "")], ["status", s.get("status", "")], ["accelerated", verdict],
            ["partitions (accelerator / all)", f"{s.get('partitionCount', 0)} / {len(s['partitions'])}"],
            ["fragments", s.get("fragments", "")],
            ["transfers (feed transfers)", f"{s.get('transfers', 0)} ({s.get('feedTransfers', 0)})"],
            ["Memcpy", f"{s['memcpy']['fromHost']} from host, {s['memcpy']['toHost']} to host"]]
    for d in s.get("droppedProviders", []):
        meta.append(["dropped provider", f"{d['name']}: {d['reason']}"])
    if s.get("failure"):
        meta.append(["failure", s["failure"]])
    for w in s.get("warnings", []):
        meta.append(["warning", w])
    out.append(_table(["", ""], meta, cls="meta"))

    out.append('<h2 id="legend">Providers</h2>')
    out.append('<ul id="legend-list">')
    per = s.get("perProvider", {})
    for p in plan.providers:
        color = plan.colors[p]
        count = per.get(p, {}).get("nodes", sum(1 for n in s["nodes"] if n["provider"] == p))
        out.append(f'<li class="legend-item ep-{plan.slugs[p]}" data-provider="{_e(p)}" '
                   f'data-slug="{plan.slugs[p]}" data-color="{color}">{_swatch(color)}{_e(p)} '
                   f"({count} nodes)</li>")
    out.append("</ul>")

    out.append('<h2 id="graph-title">Graph</h2>')
    view = ("every node; partitions are the framed clusters" if plan.mode == "full"
            else f"one box per partition ({_e(plan.collapsed_reason)}); edges aggregate the tensors between them")
    out.append(f'<p class="note">View: {view}. Hover a node for its op, domain, provider and reason; click a '
               f'provider above to highlight its nodes. <button id="fit" type="button">fit to width</button></p>')
    out.append(f'<div id="graph" class="svgwrap">\n{_svg_body(svg)}</div>')

    out.append('<h2 id="per-provider">Per provider</h2>')
    rows = [[_Raw(_swatch(plan.colors.get(p, "#FFFFFF")) + _e(p)), v["nodes"], v["partitions"], v["fragments"]]
            for p, v in per.items()]
    out.append(_table(["provider", "nodes", "partitions", "fragments"], rows, num=(1, 2, 3)))

    out.append('<h2 id="unsupported">Not on the first-choice provider, by reason</h2>')
    groups = {}
    for n in s["nodes"]:
        if n.get("reason"):
            op = f"{n['domain']}:{n['opType']}" if n["domain"] else n["opType"]
            groups.setdefault((n["reason"], op, n["provider"]), []).append(n["name"])
    rows = []
    for (reason, op, prov), names in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        ex = ", ".join(names[:3]) + (f", ... (+{len(names) - 3})" if len(names) > 3 else "")
        rows.append([reason, op, prov, len(names), ex])
    out.append(_table(["reason", "op", "runs on", "nodes", "examples"], rows, num=(3,)) if rows
               else "<p>Every node is on the first-choice provider.</p>")
    if s.get("undelegatedReasons"):
        rows = [[k, v] for k, v in s["undelegatedReasons"].items()]
        out.append('<p class="note">Nodes left on the CPU, by reason:</p>')
        out.append(_table(["reason", "nodes"], rows, num=(1,)))

    out.append(f'<h2 id="transfers">Transfers ({s.get("transfers", 0)})</h2>')
    rows = [[t["tensor"], t["from"], t["to"], format_bytes(t["bytes"])] for t in s.get("transferList", [])]
    known = [t["bytes"] for t in s.get("transferList", []) if t["bytes"] is not None]
    out.append(f'<p class="note">{len(rows)} transfers, {format_bytes(sum(known))} where the shape is static '
               f"({len(rows) - len(known)} of unknown size).</p>")
    out.append(_table(["tensor", "from", "to", "bytes"], rows, num=(3,)) if rows else "<p>None.</p>")

    convs = s.get("conversions", [])
    out.append(f'<h2 id="conversions">Conversion findings ({len(convs)})</h2>')
    rows = [[c["kind"], c["tensor"], c["from"], c["to"],
             _Raw(f'<span class="missing">{_e(c["status"])}</span>' if c["status"] == "missing" else _e(c["status"])),
             c.get("detail", "")] for c in convs]
    out.append(_table(["kind", "tensor", "from", "to", "status", "detail"], rows) if rows else "<p>None.</p>")

    mc = s["memcpy"]
    out.append(f'<h2 id="memcpy">Memcpy ({mc["fromHost"]} from host, {mc["toHost"]} to host)</h2>')
    rows = [[x["direction"], x["tensor"]] for x in mc["tensors"]]
    out.append(_table(["direction", "tensor"], rows) if rows else "<p>None.</p>")

    out.append('<p class="note">Written by partsim render. Same input, same bytes.</p>')
    out.append(f"<script>{_SCRIPT}</script>")
    out.append("</body>")
    out.append("</html>")
    return "\n".join(out) + "\n"
