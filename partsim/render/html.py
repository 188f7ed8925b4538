"""The one-file HTML report: the summary and the reasons first, then the picture, inline.

No external resources (no CDN, no fonts, no images by URL): the page works from
a file on a machine without network.  Order: verdict and counts, why nodes are not
on the first-choice provider (one detail sentence per reason), providers, then the
graph (pan: drag; zoom: wheel or the buttons), then transfers, conversions, Memcpy.

A big graph is drawn collapsed (one box per partition); a click on a box expands
that partition below the picture from an inline ``<template>`` (its SVG is laid
out by graphviz ahead, see :func:`partsim.render.dot.partition_detail_dots`).  The
URL fragment does the same for links and tests: ``#expand=3``, ``#zoom=2``, ``#fit``.

The inline script marks, once the browser has laid the picture out, every drawn
node with ``data-rendered``, its computed fill (``data-rendered-fill``) and its box
on the page (``data-box="x y w h"``), every section with ``data-top``; a click on a
legend entry highlights that provider's nodes.  The file itself is a pure function
of its input.
"""

import html
import shlex

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
.svgwrap { overflow: hidden; border: 1px solid #ccc; height: 75vh; cursor: grab; touch-action: none; }
.svgwrap.dragging { cursor: grabbing; }
.svgwrap svg { display: block; width: 100%; height: 100%; }
.detailwrap { height: 60vh; }
.toolbar { margin: 0.3em 0; }
.verdict { font-size: 1.05em; margin: 0.3em 0 0.8em 0; }
.verdict.bad { color: #D55E00; font-weight: bold; }
svg g.partition { cursor: pointer; }
svg g.partition.selected polygon, svg g.partition.selected path { stroke: #000; stroke-width: 3; }
#partition-detail[hidden] { display: none; }
button { font: inherit; font-size: 0.85em; }
svg.dim g.node:not(.hl) { opacity: 0.25; }
.missing { color: #D55E00; font-weight: bold; }
.note { color: #555; font-size: 0.85em; }
"""

_SCRIPT = """
(function () {
  function markRendered(svg) {
    var drawn = 0;
    svg.querySelectorAll('g.node').forEach(function (g) {
      var shape = g.querySelector('polygon, path, ellipse');
      var box = g.getBBox();
      var counted = g.hasAttribute('data-node') || g.hasAttribute('data-partition');
      if (box.width > 0 && box.height > 0) {
        g.setAttribute('data-rendered', '1');
        if (counted) { drawn += 1; }
      }
      var r = g.getBoundingClientRect();
      g.setAttribute('data-box', [r.left + window.scrollX, r.top + window.scrollY, r.width, r.height]
        .map(function (v) { return v.toFixed(1); }).join(' '));
      if (shape) { g.setAttribute('data-rendered-fill', getComputedStyle(shape).fill); }
    });
    return drawn;
  }

  function panzoom(wrap) {
    var svg = wrap.querySelector('svg');
    if (!svg) { return null; }
    var full = svg.getAttribute('viewBox').split(/[\\s,]+/).map(Number);
    svg.removeAttribute('width');
    svg.removeAttribute('height');
    svg.setAttribute('preserveAspectRatio', 'xMidYMin meet');
    var vb;
    function apply() {
      svg.setAttribute('viewBox', vb.join(' '));
      wrap.setAttribute('data-zoom', (0.75 * wrap.clientWidth / vb[2]).toFixed(3));
    }
    function home() {  /* graphviz units are points, 0.75 of a CSS pixel: k = 1 is actual size; a graph
                          up to twice as wide as the view is shrunk to its width, a wider one to half size */
      var k = Math.min(2, Math.max(1, full[2] / (0.75 * wrap.clientWidth)));
      if (wrap.id === 'graph') {  /* no blank area below a short graph: the view is as tall as it drawn */
        var drawn = Math.ceil(full[3] / (0.75 * k)) + 16;
        if (!wrap.hasAttribute('data-max-height')) { wrap.setAttribute('data-max-height', wrap.clientHeight); }
        var most = Number(wrap.getAttribute('data-max-height'));
        wrap.style.height = Math.max(160, Math.min(most, drawn)) + 'px';
      }
      var w = k * 0.75 * wrap.clientWidth, h = k * 0.75 * wrap.clientHeight;
      vb = [full[0] + Math.min(0, (full[2] - w) / 2), full[1], w, h];
      apply();
      var first = svg.querySelector('g.node[data-node], g.node[data-partition]');
      if (first && full[2] > w) {  /* wider than the view: start centred on the first node drawn */
        var r = first.getBoundingClientRect(), o = wrap.getBoundingClientRect();
        var cx = vb[0] + (r.left + r.width / 2 - o.left - wrap.clientLeft) * vb[2] / wrap.clientWidth;
        vb[0] = Math.max(full[0], Math.min(full[0] + full[2] - w, cx - w / 2));
        apply();
      }
    }
    function fit() {
      var k = Math.max(full[2] / wrap.clientWidth, full[3] / wrap.clientHeight);
      var w = k * wrap.clientWidth, h = k * wrap.clientHeight;
      vb = [full[0] - (w - full[2]) / 2, full[1], w, h];
      apply();
    }
    function zoom(f, cx, cy) {
      if (cx === undefined) { cx = vb[0] + vb[2] / 2; cy = vb[1] + vb[3] / 2; }
      vb = [cx - (cx - vb[0]) / f, cy - (cy - vb[1]) / f, vb[2] / f, vb[3] / f];
      apply();
    }
    function point(ev) {
      var r = wrap.getBoundingClientRect();
      return [vb[0] + (ev.clientX - r.left - wrap.clientLeft) * vb[2] / wrap.clientWidth,
              vb[1] + (ev.clientY - r.top - wrap.clientTop) * vb[3] / wrap.clientHeight];
    }
    wrap.addEventListener('wheel', function (ev) {
      ev.preventDefault();
      var p = point(ev);
      zoom(ev.deltaY < 0 ? 1.2 : 1 / 1.2, p[0], p[1]);
    }, { passive: false });
    var drag = null;
    wrap.addEventListener('pointerdown', function (ev) {
      drag = { x: ev.clientX, y: ev.clientY, vb: vb.slice(), moved: false };
      wrap.classList.add('dragging');
    });
    window.addEventListener('pointermove', function (ev) {
      if (!drag) { return; }
      var dx = ev.clientX - drag.x, dy = ev.clientY - drag.y;
      if (Math.abs(dx) + Math.abs(dy) > 3) { drag.moved = true; }
      var k = drag.vb[2] / wrap.clientWidth;
      vb = [drag.vb[0] - dx * k, drag.vb[1] - dy * k, drag.vb[2], drag.vb[3]];
      apply();
    });
    window.addEventListener('pointerup', function () {
      if (drag) { wrap.setAttribute('data-dragged', drag.moved ? '1' : '0'); }
      drag = null;
      wrap.classList.remove('dragging');
    });
    home();
    return { zoom: zoom, home: home, fit: fit, svg: svg,
             wasDrag: function () { return wrap.getAttribute('data-dragged') === '1'; } };
  }

  var wrap = document.getElementById('graph');
  var svg = wrap ? wrap.querySelector('svg') : null;
  if (!svg) { return; }
  var main = panzoom(wrap);
  var detail = null;
  document.querySelectorAll('[data-zoom-action]').forEach(function (b) {
    b.addEventListener('click', function () {
      var view = b.getAttribute('data-target') === 'detail' ? detail : main;
      if (!view) { return; }
      var a = b.getAttribute('data-zoom-action');
      if (a === 'in') { view.zoom(1.25); } else if (a === 'out') { view.zoom(0.8); }
      else if (a === 'fit') { view.fit(); } else { view.home(); }
    });
  });

  function expand(pid) {
    var panel = document.getElementById('partition-detail');
    var tpl = document.getElementById('detail-p' + pid);
    var box = svg.querySelector('g.partition[data-partition="' + pid + '"]');
    if (!panel || !box) { return; }
    svg.querySelectorAll('g.partition.selected').forEach(function (g) { g.classList.remove('selected'); });
    box.classList.add('selected');
    var view = document.getElementById('detail-view');
    var title = document.getElementById('detail-title');
    view.textContent = '';
    panel.hidden = false;
    if (tpl) {
      view.appendChild(tpl.content.cloneNode(true));
      title.textContent = tpl.getAttribute('data-title');
      view.style.display = '';
      detail = panzoom(view);
      document.body.setAttribute('data-detail-rendered-nodes', String(markRendered(detail.svg)));
    } else {
      var tip = box.querySelector('title');
      title.textContent = tip ? tip.textContent : 'partition ' + pid;
      view.style.display = 'none';
      detail = null;
      document.body.setAttribute('data-detail-rendered-nodes', '0');
    }
    document.body.setAttribute('data-expanded', String(pid));
  }
  svg.querySelectorAll('g.partition[data-partition]').forEach(function (g) {
    if (document.body.getAttribute('data-mode') !== 'collapsed') { return; }
    g.addEventListener('click', function () {
      if (!main.wasDrag()) { expand(g.getAttribute('data-partition')); }
    });
  });
  var close = document.getElementById('detail-close');
  if (close) {
    close.addEventListener('click', function () {
      document.getElementById('partition-detail').hidden = true;
      document.body.removeAttribute('data-expanded');
    });
  }

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

  (location.hash || '').replace(/^#/, '').split('&').forEach(function (kv) {
    var p = kv.split('=');
    if (p[0] === 'expand') { expand(p[1]); }
    else if (p[0] === 'zoom' && Number(p[1]) > 0) { main.zoom(Number(p[1])); }
    else if (p[0] === 'fit') { main.fit(); }
  });
  document.body.setAttribute('data-rendered-nodes', String(markRendered(svg)));
  document.querySelectorAll('[data-section]').forEach(function (el) {
    el.setAttribute('data-top', (el.getBoundingClientRect().top + window.scrollY).toFixed(1));
  });
})();
"""


def _e(text):
    return html.escape(clean("" if text is None else text), quote=True)


def _table(headers, rows, num=(), cls=""):
    """A table; ``headers`` None: no header row (a key/value table)."""
    out = [f'<table class="{cls}">' if cls else "<table>"]
    if headers:
        out += ["<thead><tr>"] + [f"<th>{_e(h)}</th>" for h in headers] + ["</tr></thead>"]
    out.append("<tbody>")
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


_REASON_ROWS = 12  # (reason, op) groups shown before the rest fold into a <details>


def _reasons(s):
    """Rows of the reasons table: (reason, op, runs on) groups, most nodes first, each with
    the detail sentence of its first node (all nodes of a group usually share it)."""
    groups = {}
    for n in s["nodes"]:
        if n.get("reason"):
            op = f"{n['domain']}:{n['opType']}" if n["domain"] else n["opType"]
            groups.setdefault((n["reason"], op, n["provider"]), []).append(n)
    rows = []
    for (reason, op, prov), members in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        names = [n["name"] for n in members]
        ex = ", ".join(names[:3]) + (f", ... (+{len(names) - 3})" if len(names) > 3 else "")
        detail = next((n.get("reasonDetail") for n in members if n.get("reasonDetail")), "")
        rows.append([reason, op, prov, len(names), detail, ex])
    return rows


def _blame_command(s):
    """``partsim blame`` for the summary's own model and request (the CLI passes the words as typed)."""
    words = ["partsim", "blame", s["model"].get("path", "MODEL")]
    if s.get("requestedProviders"):
        words += ["-p", ",".join(s["requestedProviders"])]
    if s.get("level") and s["level"] != "all":
        words += ["--level", s["level"]]
    return words


def render_html(summary, plan, svg, details=None, blame_command=None):
    """The report page as text.

    Parameters
    ----------
    summary : dict
        partitionSummary.
    plan : RenderPlan
        From :func:`partsim.render.plan_render` (colours, view).
    svg : str
        From :func:`partsim.render.render_svg` on ``plan.dot``.
    details : dict, optional
        Partition id -> SVG of that partition alone (collapsed view: what a click expands;
        :func:`partsim.render.dot.partition_detail_dots` rendered by
        :func:`partsim.render.svg.render_svgs`).
    blame_command : list of str, optional
        The ``partsim blame`` command line the reasons section shows (default: built from the
        summary's model path, requested providers and level).
    """
    s = summary
    m = s["model"]
    details = details or {}
    name = clean(m.get("path", "")).replace("\\", "/").rsplit("/", 1)[-1]
    out = ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
           '<meta name="generator" content="partsim render">',
           f"<title>partsim: {_e(name)}</title>", f"<style>{_CSS}</style>", "</head>",
           f'<body data-mode="{plan.mode}" data-node-count="{len(s["nodes"])}" '
           f'data-partition-count="{len(s["partitions"])}">',
           f"<h1>partsim prediction: {_e(name)}</h1>"]

    out += _verdict_and_summary(s)
    out += _reasons_section(s, blame_command)
    out += _providers_section(s, plan)
    out += _graph_section(s, plan, svg, details)
    out += _tables_section(s)
    out.append('<p class="note">Written by partsim render. Same input, same bytes.</p>')
    out.append(f"<script>{_SCRIPT}</script>")
    out.append("</body>")
    out.append("</html>")
    return "\n".join(out) + "\n"


def _verdict_and_summary(s):
    """The verdict line and the summary table."""
    eff = s.get("effectiveProviders") or []
    first = eff[0] if eff else ""
    per = s.get("perProvider", {})
    m = s["model"]
    out = []
    on_first = per.get(first, {}).get("nodes", 0)
    total = len(s["nodes"])
    if s.get("accelerated"):
        verdict = (f"{on_first} of {total} nodes on {first}, in {s.get('partitionCount', 0)} accelerator "
                   f"partition{'s' if s.get('partitionCount', 0) != 1 else ''}; {s.get('transfers', 0)} "
                   f"transfer{'s' if s.get('transfers', 0) != 1 else ''} between providers.")
        out.append(f'<p class="verdict" id="verdict" data-section="verdict">{_e(verdict)}</p>')
    else:
        out.append('<p class="verdict bad" id="verdict" data-section="verdict">NOT accelerated: every node runs '
                   'on the CPU.</p>')

    out.append('<h2 id="summary" data-section="summary">Summary</h2>')
    meta = [["model", m.get("path", "")], ["sha256", m.get("sha256", "")],
            ["nodes", m.get("nodeCount", total)],
            ["requested providers", " > ".join(s.get("requestedProviders", []))],
            ["effective providers", " > ".join(eff)],
            ["policy", s.get("policy", "")], ["status", s.get("status", "")],
            ["accelerated", "yes" if s.get("accelerated") else "NO: every node runs on the CPU"],
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
    out.append(_table(None, meta, cls="meta"))
    return out


def _reasons_section(s, blame_command):
    """Why nodes are not on the first-choice provider, and the blame command."""
    eff = s.get("effectiveProviders") or []
    first = eff[0] if eff else ""
    out = []
    out.append(f'<h2 id="unsupported" data-section="reasons">Why nodes are not on {_e(first) or "the first-choice provider"}'
               "</h2>")
    rows = _reasons(s)
    headers = ["reason", "op", "runs on", "nodes", "detail (first node)", "examples"]
    if not rows:
        out.append("<p>Every node is on the first-choice provider.</p>")
    else:
        out.append(_table(headers, rows[:_REASON_ROWS], num=(3,), cls="reasons"))
        if len(rows) > _REASON_ROWS:
            rest = rows[_REASON_ROWS:]
            out.append(f"<details><summary>{len(rest)} more (reason, op) groups, "
                       f"{sum(r[3] for r in rest)} nodes</summary>")
            out.append(_table(headers, rest, num=(3,), cls="reasons"))
            out.append("</details>")
    if rows:
        command = " ".join(shlex.quote(w) for w in (blame_command or _blame_command(s)))
        out.append(f'<p class="note">To see which change would help most: <code>{_e(command)}</code> '
                   "ranks every cause by the coverage it would win.</p>")
    return out


def _providers_section(s, plan):
    """The provider legend (click to highlight) and the per-provider table."""
    per = s.get("perProvider", {})
    out = []
    out.append('<h2 id="per-provider" data-section="per-provider">Per provider</h2>')
    out.append('<ul id="legend-list">')
    for p in plan.providers:
        color = plan.colors[p]
        count = per.get(p, {}).get("nodes", sum(1 for n in s["nodes"] if n["provider"] == p))
        out.append(f'<li class="legend-item ep-{plan.slugs[p]}" data-provider="{_e(p)}" '
                   f'data-slug="{plan.slugs[p]}" data-color="{color}">{_swatch(color)}{_e(p)} '
                   f"({count} nodes)</li>")
    out.append("</ul>")
    rows = [[_Raw(_swatch(plan.colors.get(p, "#FFFFFF")) + _e(p)), v["nodes"], v["partitions"], v["fragments"]]
            for p, v in per.items()]
    out.append(_table(["provider", "nodes", "partitions", "fragments"], rows, num=(1, 2, 3)))
    return out


def _graph_section(s, plan, svg, details):
    """The graph view (and, collapsed, the partitions a click expands)."""
    out = []
    out.append('<h2 id="graph-title" data-section="graph">Graph</h2>')
    if plan.mode == "full":
        view = "every node; partitions are the framed clusters; nodes off the first-choice provider show [reason]"
    else:
        view = (f"one box per partition ({_e(plan.collapsed_reason)}); edges aggregate the tensors between them. "
                f"Click a partition to expand it below ({len(details)} of {len(s['partitions'])} can be drawn "
                "node by node; render with --expand for every node at once)")
    out.append(f'<p class="note">View: {view}. Drag to pan, wheel to zoom; hover a node for its op, domain, '
               "provider and reason; click a provider in the list above to highlight its nodes.</p>")
    out.append(_toolbar("main"))
    out.append(f'<div id="graph" class="svgwrap" data-section="graph-view">\n{_svg_body(svg)}</div>')
    if plan.mode == "collapsed":
        out.append('<section id="partition-detail" hidden>')
        out.append('<h3 id="detail-title"></h3>')
        out.append(_toolbar("detail") + ' <button id="detail-close" type="button">close</button>')
        out.append('<div id="detail-view" class="svgwrap detailwrap"></div>')
        out.append("</section>")
        for pid in sorted(details):
            p = next(x for x in s["partitions"] if x["id"] == pid)
            title = f"partition {pid}: {p['provider']} ({len(p['nodes'])} nodes)"
            out.append(f'<template id="detail-p{pid}" data-title="{_e(title)}">{_svg_body(details[pid])}</template>')
    return out


def _tables_section(s):
    """Transfers, conversion findings and Memcpy tables."""
    out = []
    out.append(f'<h2 id="transfers" data-section="transfers">Transfers ({s.get("transfers", 0)})</h2>')
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
    return out


def _toolbar(target):
    buttons = [("in", "zoom in"), ("out", "zoom out"), ("home", "actual size"), ("fit", "whole graph")]
    return (f'<div class="toolbar" id="toolbar-{target}">'
            + " ".join(f'<button type="button" data-target="{target}" data-zoom-action="{a}">{label}</button>'
                       for a, label in buttons) + "</div>")
