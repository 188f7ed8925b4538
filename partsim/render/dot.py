"""DOT text for a prediction: one picture of where every node runs.

Full view (the default up to :data:`DEFAULT_COLLAPSE_THRESHOLD` nodes): one box per
ONNX node, filled with its provider's colour (:mod:`partsim.render.palette`), the
partitions of the partitionSummary drawn as clusters, edges between providers
(transfers) drawn bold and labelled with tensor name and size, Memcpy and
conversion findings written on the edges they concern, a legend of providers.

Collapsed view (``collapse=True``, or automatically above the threshold): one box
per partition with its node count and most frequent ops, and one aggregated edge
per pair of connected partitions labelled with how many tensors cross and their
bytes.

Every drawn element gets a stable graphviz ``id`` (``n<node index>``,
``p<partition id>``, ``e<k>``, ``pe<a>_<b>``, ``legend<k>``) and a ``class``
(``ep-<provider slug>``, ``transfer``, ``memcpy``, ``conversion-missing`` …) so
that the SVG can be queried; :attr:`RenderPlan.annotations` holds the data
attributes and tooltip that :func:`partsim.render.svg.annotate_svg` writes onto
those elements.  Output is a pure function of the input (no clock, no hash order).
"""

import re
from dataclasses import dataclass, field

from .palette import CPU_COLOR, font_color, provider_colors, provider_slug

__all__ = ["DEFAULT_COLLAPSE_THRESHOLD", "HTML_COLLAPSE_THRESHOLD", "DEFAULT_LAYOUT_LIMIT", "partition_detail_dots", "layout_cost", "RenderPlan", "plan_render",
           "build_dot", "memcpy_device", "format_bytes", "dot_quote"]

CPU = "CPUExecutionProvider"
DEFAULT_COLLAPSE_THRESHOLD = 1500
# The HTML report collapses sooner: a picture of a few hundred nodes no longer fits a screen,
# and the report can expand any partition on a click (partition_detail_dots).
HTML_COLLAPSE_THRESHOLD = 200
# Above this many estimated long-edge bends (see layout_cost) graphviz's dot needs minutes on
# the full view: measured with graphviz 2.43 on 2 cores, fasterrcnn_mobilenet_v3 (estimate 3213)
# lays out in about 6 s, densenet121 (estimate 23016, dense-block Concat edges spanning dozens of
# ranks) does not finish in 120 s.  Such graphs are collapsed unless --expand is given.
DEFAULT_LAYOUT_LIMIT = 6000

EDGE_PLAIN = "#666666"
EDGE_TRANSFER = "#000000"
EDGE_CONVERSION = "#D55E00"  # Okabe-Ito vermillion, drawn dashed so it reads without colour too

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def clean(text):
    """User text (node and tensor names) without characters XML and DOT cannot carry."""
    return _CONTROL.sub("?", str(text)).replace("\r", "")


def dot_quote(text):
    """A DOT double-quoted string; backslashes doubled so graphviz escapes (``\\N``, ``\\l``) stay literal.

    Examples
    --------
    >>> print(dot_quote('say "hi"'))
    "say \\"hi\\""
    """
    s = clean(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{s}"'


def format_bytes(n):
    """``12544`` -> ``'12,544 B'``; ``None`` -> ``'? B'`` (shape not static).

    Examples
    --------
    >>> format_bytes(12544), format_bytes(None)
    ('12,544 B', '? B')
    """
    return "? B" if n is None else f"{n:,} B"


def _count(n, word):
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _short(name, limit=32):
    name = clean(name)
    return name if len(name) <= limit else "..." + name[-(limit - 3):]


def memcpy_device(assignment):
    """The provider that gets ORT's Memcpy nodes: the first non-CPU-based one holding a node."""
    used = set(assignment.provider)
    for t in assignment.resolution.tables:
        if not t.cpu_based and t.provider in used:
            return t.provider
    return None


@dataclass
class RenderPlan:
    """What is drawn and how; the input of :func:`build_dot`, the SVG annotator and the HTML report.

    Attributes
    ----------
    mode : str
        ``"full"`` or ``"collapsed"``.
    providers : list of str
        Legend order: effective providers, then any other provider holding nodes.
    colors, slugs : dict
        Provider -> fill colour / CSS-safe short name.
    annotations : dict
        Graphviz element id -> (data attributes dict, tooltip text).
    dot : str
        The DOT text.
    """

    mode: str
    summary: dict
    providers: list
    colors: dict
    slugs: dict
    collapsed_reason: str = ""
    annotations: dict = field(default_factory=dict)
    node_ids: dict = field(default_factory=dict)  # node name -> element id (full view)
    partition_ids: dict = field(default_factory=dict)  # partition id -> element id (collapsed view)
    dot: str = ""


def _attrs(**kw):
    parts = []
    for k, v in kw.items():
        if v is None:
            continue
        k = k.rstrip("_")
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            parts.append(f"{k}={v}")
        else:
            parts.append(f"{k}={dot_quote(v)}")
    return "[" + ", ".join(parts) + "]"


def _providers_in_order(summary):
    seen = list(summary.get("effectiveProviders") or [])
    extra = sorted({n["provider"] for n in summary["nodes"]} - set(seen))
    return seen + extra


def _slugs(providers):
    out, used = {}, set()
    for p in providers:
        s = provider_slug(p)
        base, k = s, 2
        while s in used:
            s = f"{base}-{k}"
            k += 1
        used.add(s)
        out[p] = s
    return out


def _edge_marks(summary, model, provider, device):
    """Per (producer, consumer, tensor) edge: Memcpy directions and conversion findings on it."""
    edges = []
    seen = set()
    from ..ir.order import topological_order
    for c in topological_order(model):
        for p, t in model.in_edges(c):
            if (p, c, t) not in seen:
                seen.add((p, c, t))
                edges.append((p, c, t))
    by_tensor = {}
    for e in edges:
        by_tensor.setdefault(e[2], []).append(e)

    memcpy = {e: [] for e in edges}
    for m in summary["memcpy"]["tensors"]:
        t, d = m["tensor"], m["direction"]
        cands = by_tensor.get(t, [])
        if d == "fromHost":
            hit = [e for e in cands if (provider[e[1]] == device if device else provider[e[1]] != CPU)]
        else:
            hit = [e for e in cands if (provider[e[1]] != device if device else provider[e[1]] == CPU)]
        for e in hit or cands:  # a host-memory port: the copy sits between two device nodes
            memcpy[e].append(d)

    conv = {e: [] for e in edges}
    for f in summary["conversions"]:
        for e in by_tensor.get(f["tensor"], []):
            if provider[e[0]] == f["from"] and provider[e[1]] == f["to"]:
                conv[e].append(f)
    return edges, memcpy, conv


def _node_tooltip(n, partition):
    reason = n.get("reason")
    if reason and n.get("reasonDetail"):
        reason = f"{reason}: {n['reasonDetail']}"
    lines = [clean(n["name"]),
             f"op: {clean(n['opType'])}",
             f"domain: {clean(n['domain']) or 'ai.onnx'}",
             f"provider: {n['provider']}",
             f"reason: {clean(reason) if reason else 'none (first-choice provider)'}"]
    if partition is not None:
        lines.append(f"partition: {partition}")
    if n.get("scope"):
        lines.append(f"scope: {clean(n['scope'])}")
    return "\n".join(lines)


def layout_cost(model):
    """Estimated virtual nodes dot adds for edges that span several ranks.

    dot ranks the graph, then replaces every edge spanning ``k`` ranks by a chain of
    ``k - 1`` virtual nodes; its coordinate pass (network simplex) grows faster than
    linearly in their number.  The estimate is the smaller of the totals under the
    as-soon-as-possible and the as-late-as-possible ranking (dot's own ranking
    minimizes the total span, so it is at most this); dot's edge labels and
    clusters multiply its real count by about four on the corpus models.
    """
    from ..ir.order import topological_order
    order = topological_order(model)
    edges = {(p, c) for c in order for p, _ in model.in_edges(c)}
    asap = {}
    for i in order:
        asap[i] = max((asap[p] + 1 for p, _ in model.in_edges(i)), default=0)
    top = max(asap.values(), default=0)
    alap = {}
    for i in reversed(order):
        alap[i] = min((alap[c] - 1 for c, _ in model.out_edges(i)), default=top)
    return min(sum(asap[c] - asap[p] - 1 for p, c in edges), sum(alap[c] - alap[p] - 1 for p, c in edges))


def plan_render(summary, model, collapse=None, threshold=DEFAULT_COLLAPSE_THRESHOLD, device=None,
                layout_limit=DEFAULT_LAYOUT_LIMIT):
    """Decide the view and build the DOT text and the element annotations.

    Parameters
    ----------
    summary : dict
        The partitionSummary (``partsim.api.predict(...)[0]``).
    model : partsim.ir.model.Model
        The model it was computed from (for the edges).
    collapse : bool or None
        True: one box per partition; False: every node; None: collapse above ``threshold`` nodes,
        or when :func:`layout_cost` exceeds ``layout_limit`` (graphviz would take minutes).
    device : str, optional
        The provider that gets Memcpy nodes (:func:`memcpy_device`); guessed as "not CPU" when absent.

    Returns
    -------
    RenderPlan
    """
    n_nodes = len(summary["nodes"])
    if len(model.nodes) != n_nodes:
        raise ValueError("summary and model disagree on the node count")
    if collapse is None:
        collapsed = n_nodes > threshold
        why = f"{n_nodes} nodes > threshold {threshold}" if collapsed else ""
        if not collapsed and layout_limit is not None:
            cost = layout_cost(model)
            if cost > layout_limit:
                collapsed = True
                why = f"about {cost} long-edge bends > {layout_limit}, too slow for graphviz"
    else:
        collapsed, why = bool(collapse), ("--collapse" if collapse else "")
    providers = _providers_in_order(summary)
    plan = RenderPlan(mode="collapsed" if collapsed else "full", summary=summary, providers=providers,
                      colors=provider_colors(providers), slugs=_slugs(providers), collapsed_reason=why)
    plan.dot = _build_collapsed(plan, model, device) if collapsed else _build_full(plan, model, device)
    return plan


def build_dot(summary, model, collapse=None, threshold=DEFAULT_COLLAPSE_THRESHOLD, device=None):
    """DOT text for ``summary`` (see :func:`plan_render`)."""
    return plan_render(summary, model, collapse, threshold, device).dot


def _header(plan, title, nslimit=None, mclimit=None):
    s = plan.summary
    out = ["digraph partsim {",
           "  " + "graph " + _attrs(newrank="true", nslimit=nslimit, mclimit=mclimit, rankdir="TB", fontname="Helvetica", fontsize=12, nodesep=0.25,
                                    ranksep=0.4, labelloc="t", label=title, id="graph_partsim",
                                    bgcolor="white") + ";",
           "  " + "node " + _attrs(shape="box", style="rounded,filled", fontname="Helvetica", fontsize=10,
                                   penwidth=1, color="#333333") + ";",
           "  " + "edge " + _attrs(fontname="Helvetica", fontsize=8, color=EDGE_PLAIN, arrowsize=0.6) + ";"]
    counts = {p: v["nodes"] for p, v in s.get("perProvider", {}).items()}
    for p in plan.providers:
        counts.setdefault(p, sum(1 for n in s["nodes"] if n["provider"] == p))
    out.append("  subgraph cluster_legend {")
    out.append("    " + "graph " + _attrs(label="providers (priority order)", style="rounded", color="#999999",
                                          id="legend", class_="legend-box") + ";")
    names = []
    for k, p in enumerate(plan.providers):
        eid = f"legend{k}"
        fill = plan.colors[p]
        names.append(eid)
        count = _count(counts[p], "node")
        out.append(f"    {eid} " + _attrs(id=eid, class_=f"legend ep-{plan.slugs[p]}", label=f"{p}\n{count}",
                                          fillcolor=fill, fontcolor=font_color(fill), tooltip=f"{p}: {count}") + ";")
        plan.annotations[eid] = ({"provider": p, "color": fill, "nodes": str(counts[p])}, f"{p}: {count}")
    key = ("bold black edge: transfer between providers (tensor, bytes)\n"
           "[Memcpy ...]: ORT inserts a device copy here\n"
           "dashed vermillion edge: layout/precision conversion missing")
    out.append("    legend_key " + _attrs(id="legend_key", shape="plaintext", style="", label=key, fontsize=9) + ";")
    out.append("    { rank=same; " + " ".join(names + ["legend_key"]) + " }")
    chain = names + ["legend_key"]
    if len(chain) > 1:  # invisible edges keep the legend in priority order, left to right
        out.append("    " + " -> ".join(chain) + " [style=invis];")
    out.append("  }")
    return out


def _title(plan, view):
    s = plan.summary
    m = s["model"]
    path = clean(m.get("path", "")).replace("\\", "/").rsplit("/", 1)[-1]
    acc = "accelerated" if s.get("accelerated") else "NOT accelerated"
    return (f"{path}: {m.get('nodeCount', len(s['nodes']))} nodes, {s.get('partitionCount', 0)} accelerator "
            f"partitions, {s.get('transfers', 0)} transfers ({acc}; {view})")


def _partition_of(summary):
    part = {}
    for p in summary["partitions"]:
        for name in p["nodes"]:
            part.setdefault(name, p["id"])
    return part


def _labelled_edge(out, indent, eid, src, dst, label, classes, tip, attrs):
    """An edge whose label is its own plain-text node between the two ends.

    dot never overlaps two nodes, but it does overlap the labels of edges that cross a
    cluster border (their label nodes are not kept out of the clusters), so a label is
    drawn as a node ``l<eid>`` carrying the edge's id, classes and tooltip: labels then
    overlap neither each other nor the nodes.  The two halves are ``<eid>_in`` (no
    arrowhead) and ``<eid>_out``.
    """
    out.append(indent + f"l{eid} " + _attrs(id=eid, class_=" ".join(["edge-label"] + classes), shape="plaintext",
                                            style="", label="\n".join(label), fontsize=8, margin="0.02,0.01",
                                            width=0, height=0, tooltip="\n".join(tip),
                                            fontcolor=attrs.get("color")) + ";")
    half = {k: v for k, v in attrs.items()}
    out.append(indent + f"{src} -> l{eid} " + _attrs(id=f"{eid}_in", class_="piece", arrowhead="none",
                                                     tooltip="\n".join(tip), **half) + ";")
    out.append(indent + f"l{eid} -> {dst} " + _attrs(id=f"{eid}_out", class_="piece", tooltip="\n".join(tip),
                                                     **half) + ";")


def _node_label(n, op):
    """Op and name; a node kept off the first-choice provider also shows its reason code, so
    the static picture says why without a tooltip."""
    lines = [_short(op, 28), _short(n["name"])]
    if n.get("reason"):
        lines.append(f"[{n['reason']}]")
    return "\n".join(lines)


def _build_full(plan, model, device, only=None, title=None, graph_id="graph_partsim"):
    """Every node (or the nodes of ``only``, a set of node indices, without clusters or
    legend: one partition's detail view)."""
    s = plan.summary
    nodes = s["nodes"]
    index = {n["name"]: k for k, n in enumerate(nodes)}
    provider = [n["provider"] for n in nodes]
    part = _partition_of(s)
    if only is None:
        out = _header(plan, _title(plan, "every node"))
    else:
        out = ["digraph partsim {",
               "  graph " + _attrs(newrank="true", rankdir="TB", fontname="Helvetica", fontsize=12, nodesep=0.25,
                                   ranksep=0.3, labelloc="t", label=title or "", id=graph_id, bgcolor="white") + ";",
               "  node " + _attrs(shape="box", style="rounded,filled", fontname="Helvetica", fontsize=10,
                                  penwidth=1, color="#333333") + ";",
               "  edge " + _attrs(fontname="Helvetica", fontsize=8, color=EDGE_PLAIN, arrowsize=0.6) + ";"]

    drawn = set()
    if only is None:
        for p in s["partitions"]:
            ep = p["provider"]
            color = plan.colors.get(ep, CPU_COLOR)
            cpu = ep == CPU
            out.append(f"  subgraph cluster_p{p['id']} {{")
            out.append("    graph " + _attrs(id=f"p{p['id']}", class_=f"partition ep-{plan.slugs[ep]}",
                                            label=f"partition {p['id']}: {ep} ({_count(len(p['nodes']), 'node')})",
                                            style="rounded,dashed" if cpu else "rounded,bold",
                                            color="#999999" if cpu else color, penwidth=1 if cpu else 2,
                                            fontsize=9, fontcolor="#333333",
                                            tooltip=f"partition {p['id']}: {ep}, "
                                                    f"{_count(len(p['nodes']), 'node')}") + ";")
            plan.annotations[f"p{p['id']}"] = ({"partition": str(p["id"]), "provider": ep,
                                                 "nodes": str(len(p["nodes"]))},
                                                f"partition {p['id']}: {ep}, {_count(len(p['nodes']), 'node')}")
            for name in p["nodes"]:
                k = index.get(name)
                if k is not None and k not in drawn:
                    drawn.add(k)
                    out.append(_node_line(plan, nodes, part, k, "    "))
            out.append("  }")
    for k in range(len(nodes)):
        if k not in drawn and (only is None or k in only):
            out.append(_node_line(plan, nodes, part, k, "  "))

    out.extend(_edge_lines(plan, model, device, provider, only))
    out.append("}")
    return "\n".join(out) + "\n"


def _node_line(plan, nodes, part, k, indent):
    """The DOT line of node ``k`` (its id, colour, label and tooltip; its annotation recorded in ``plan``)."""
    n = nodes[k]
    eid = f"n{k}"
    plan.node_ids[n["name"]] = eid
    fill = plan.colors[n["provider"]]
    op = f"{n['domain']}:{n['opType']}" if n["domain"] else n["opType"]
    tip = _node_tooltip(n, part.get(n["name"]))
    data = {"node": clean(n["name"]), "op": clean(n["opType"]), "domain": clean(n["domain"]) or "ai.onnx",
            "provider": n["provider"], "reason": n.get("reason") or ""}
    if n["name"] in part:
        data["partition"] = str(part[n["name"]])
    plan.annotations[eid] = (data, tip)
    return indent + f"{eid} " + _attrs(id=eid, class_=f"ep-{plan.slugs[n['provider']]}",
                                       label=_node_label(n, op), fillcolor=fill,
                                       fontcolor=font_color(fill), tooltip=tip) + ";"


def _edge_lines(plan, model, device, provider, only):
    """The DOT lines of the edges (of those inside ``only``, when given): transfers, Memcpy and conversions
    marked, each annotation recorded in ``plan``."""
    s = plan.summary
    out = []
    edges, memcpy, conv = _edge_marks(s, model, provider, device)
    for j, (a, b, t) in enumerate(edges):
        if only is not None and not (a in only and b in only):
            continue
        eid = f"e{j}"
        v = model.value(t)
        boundary = provider[a] != provider[b]
        classes, label, tip = [], [], [f"{clean(t)}", f"{provider[a]} -> {provider[b]}",
                                       f"dtype {v.dtype}, shape {list(v.shape) if v.shape is not None else '?'}",
                                       format_bytes(v.nbytes)]
        attrs = {}
        if boundary:
            classes.append("transfer")
            label += [_short(t, 40), format_bytes(v.nbytes)]
            attrs.update(color=EDGE_TRANSFER, penwidth=2.5, style="bold")
        for d in memcpy[(a, b, t)]:
            classes.append("memcpy")
            if not boundary and not label:
                label.append(_short(t, 40))
            label.append(f"[Memcpy {d}]")
            tip.append(f"Memcpy {d}")
            attrs.setdefault("color", EDGE_TRANSFER)
            attrs.setdefault("style", "bold")
        for f in conv[(a, b, t)]:
            classes.append("conversion")
            text = f"[{f['kind']} conversion {f['status']}: {clean(f.get('detail', ''))}]"
            label.append(text)
            tip.append(text)
            if f["status"] == "missing":
                classes.append("conversion-missing")
                attrs.update(color=EDGE_CONVERSION, style="bold,dashed", penwidth=3)
        data = {"tensor": clean(t), "from": provider[a], "to": provider[b],
                "bytes": "" if v.nbytes is None else str(v.nbytes)}
        plan.annotations[eid] = (data, "\n".join(tip))
        if label:
            _labelled_edge(out, "  ", eid, f"n{a}", f"n{b}", label, list(dict.fromkeys(classes)), tip, attrs)
        else:
            out.append(f"  n{a} -> n{b} " + _attrs(id=eid, class_=" ".join(dict.fromkeys(classes)) or None,
                                                  tooltip="\n".join(tip), **attrs) + ";")
    return out


def partition_detail_dots(plan, model, device=None, max_nodes=400, layout_limit=DEFAULT_LAYOUT_LIMIT):
    """Partition id -> DOT text of that partition's nodes and inner edges (the HTML report's
    click-to-expand view of a collapsed picture), for partitions of 2 to ``max_nodes`` nodes
    that graphviz lays out quickly (:func:`layout_cost` of the partition under ``layout_limit``).
    Ids are those of the full view (``n<k>``, ``e<k>``), so they never clash with the
    collapsed picture's (``p<k>``, ``pe<a>_<b>``)."""
    s = plan.summary
    index = {n["name"]: k for k, n in enumerate(s["nodes"])}
    out = {}
    for p in s["partitions"]:
        members = {index[n] for n in p["nodes"] if n in index}
        if not 1 < len(members) <= max_nodes:
            continue
        if layout_limit is not None and _subset_layout_cost(model, members) > layout_limit:
            continue
        title = f"partition {p['id']}: {p['provider']} ({_count(len(members), 'node')})"
        out[p["id"]] = _build_full(plan, model, device, only=members, title=title, graph_id=f"graph_p{p['id']}")
    return out


def _subset_layout_cost(model, members):
    from ..ir.order import topological_order
    order = [i for i in topological_order(model) if i in members]
    rank = {}
    for i in order:
        rank[i] = max((rank[p] + 1 for p, _ in model.in_edges(i) if p in members), default=0)
    return sum(rank[c] - rank[p] - 1 for c in order for p, _ in model.in_edges(c) if p in members)


def _top_ops(names, op_of, k):
    counts = {}
    for n in names:
        counts[op_of[n]] = counts.get(op_of[n], 0) + 1
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:k]


def _build_collapsed(plan, model, device):
    s = plan.summary
    nodes = s["nodes"]
    provider = [n["provider"] for n in nodes]
    op_of = {n["name"]: (f"{n['domain']}:{n['opType']}" if n["domain"] else n["opType"]) for n in nodes}
    part_of_name = _partition_of(s)
    part = [part_of_name.get(n["name"]) for n in nodes]
    out = []
    for p in s["partitions"]:
        eid = f"p{p['id']}"
        plan.partition_ids[p["id"]] = eid
        ep = p["provider"]
        fill = plan.colors.get(ep, CPU_COLOR)
        top = _top_ops(p["nodes"], op_of, 3)
        top10 = _top_ops(p["nodes"], op_of, 10)
        label = [f"partition {p['id']}", ep, f"{_count(len(p['nodes']), 'node')}",
                 ", ".join(f"{_short(op, 24)} x{c}" for op, c in top)]
        tip = [f"partition {p['id']}: {ep}", f"{_count(len(p['nodes']), 'node')}",
               f"{len(p['inputs'])} inputs, {len(p['outputs'])} outputs",
               "ops: " + ", ".join(f"{clean(op)} x{c}" for op, c in top10),
               ("first node: " + clean(p["nodes"][0])) if p["nodes"] else "empty"]
        plan.annotations[eid] = ({"partition": str(p["id"]), "provider": ep, "nodes": str(len(p["nodes"]))},
                                 "\n".join(tip))
        out.append(f"  {eid} " + _attrs(id=eid, class_=f"partition ep-{plan.slugs[ep]}", label="\n".join(label),
                                        fillcolor=fill, fontcolor=font_color(fill), tooltip="\n".join(tip)) + ";")

    edges, memcpy, conv = _edge_marks(s, model, provider, device)
    agg = {}
    for a, b, t in edges:
        pa, pb = part[a], part[b]
        if pa is None or pb is None or pa == pb:
            continue
        e = agg.setdefault((pa, pb), {"tensors": {}, "memcpy": set(), "missing": set(), "cross": False})
        e["tensors"][t] = model.value(t).nbytes
        e["cross"] = e["cross"] or provider[a] != provider[b]
        for d in memcpy[(a, b, t)]:
            e["memcpy"].add((t, d))
        for f in conv[(a, b, t)]:
            if f["status"] == "missing":
                e["missing"].add((t, f["kind"]))
    # nslimit bounds dot's x-coordinate pass (network simplex, iterations = nslimit x nodes),
    # mclimit its crossing minimization.  Measured with graphviz 2.43 on 2 cores: a collapsed
    # CNN whose weight-feeding partition fans out to dozens of single-Conv partitions
    # (efficientnet_b0 on NNAPI, 196 edges) ran past 120 s without a limit and takes 0.7 s
    # with nslimit 4; densenet121 on NNAPI (772 edges between 119 partitions, dense-block
    # Concats) took 25 s with nslimit 4 and 7 s with nslimit 1, mclimit 0.2.
    many = len(agg) > 400
    out = _header(plan, _title(plan, f"one box per partition: {plan.collapsed_reason}"), nslimit=1 if many else 4,
                  mclimit=0.2 if many else None) + out
    for (pa, pb), e in sorted(agg.items()):
        eid = f"pe{pa}_{pb}"
        n = len(e["tensors"])
        known = [x for x in e["tensors"].values() if x is not None]
        total = sum(known)
        size = format_bytes(total) if len(known) == n else f">= {format_bytes(total)}"
        word = "transfer" if e["cross"] else "tensor"
        label = [f"{n} {word}{'s' if n != 1 else ''}", size]
        classes = ["transfer"] if e["cross"] else []
        attrs = {"color": EDGE_TRANSFER, "penwidth": 2.5, "style": "bold"} if e["cross"] else {}
        if e["memcpy"]:
            classes.append("memcpy")
            label.append(f"[Memcpy {len(e['memcpy'])}]")
        if e["missing"]:
            classes.append("conversion-missing")
            label.append(f"[conversions missing {len(e['missing'])}]")
            attrs.update(color=EDGE_CONVERSION, style="bold,dashed", penwidth=3)
        names = sorted(e["tensors"])
        tip = [f"partition {pa} -> partition {pb}", f"{n} tensors, {size}"] + \
              [clean(x) for x in names[:20]] + ([f"... (+{len(names) - 20})"] if len(names) > 20 else [])
        plan.annotations[eid] = ({"from-partition": str(pa), "to-partition": str(pb), "tensors": str(n),
                                  "bytes": str(total)}, "\n".join(tip))
        _labelled_edge(out, "  ", eid, f"p{pa}", f"p{pb}", label, ["partition-edge"] + classes, tip, attrs)
    out.append("}")
    return "\n".join(out) + "\n"
