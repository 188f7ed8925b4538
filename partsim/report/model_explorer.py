"""Node data for Google's AI Edge Model Explorer: the prediction as an overlay on the viewer's own graph.

Model Explorer (``ai-edge-model-explorer``) reads "node data" files shaped like its
``model_explorer.node_data_builder.ModelNodeData``: ``{graph id: GraphNodeData}``, where
``GraphNodeData.results`` maps a node key to a ``NodeDataResult`` (``value``,
``bgColor``, ``textColor``).  For an ONNX model the viewer's ONNX adapter
(``model-explorer-onnx``) names the main graph by the ONNX graph name and each node by its
ONNX node name; a key may also be one of the node's output tensor names (the viewer
matches it against the node's outputs), which is what is used for nodes without a name
(or with a name another node shares).

One entry per node of the main graph: ``bgColor`` is the provider's colour (the same
palette as ``render``), ``value`` says provider, partition and -- for nodes off the
first-choice provider -- the reason with its detail.  With ``--optimize basic`` the
prediction is made on ORT's rewrite: nodes ORT folded away or fused have no entry, the
others keep the keys of the user's file.  Nodes inside If/Loop/Scan bodies are not
written (the viewer draws those graphs apart).
"""

import json
from collections import Counter

from ..render.palette import font_color, provider_colors

__all__ = ["model_explorer_node_data", "render_model_explorer"]


def _value(node, partition):
    text = node["provider"] + (f" · partition {partition}" if partition is not None else "")
    if node.get("reason"):
        text += f" · {node['reason']}"
        if node.get("reasonDetail"):
            text += f": {node['reasonDetail']}"
    return text


def model_explorer_node_data(summary, model, graph):
    """``{graph id: GraphNodeData as a dict}`` for ``summary`` of ``model`` over the ONNX
    ``graph`` (the user's GraphProto, whose node names the viewer shows).

    Nodes are found by their output tensors (``model.producer``), so a summary of ORT's
    rewritten graph maps back onto the nodes of the file it came from.
    """
    eff = list(summary.get("effectiveProviders") or [])
    providers = eff + sorted({n["provider"] for n in summary["nodes"]} - set(eff))
    colors = provider_colors(providers)
    part = {}
    for p in summary["partitions"]:
        for name in p["nodes"]:
            part.setdefault(name, p["id"])
    names = Counter(n.name for n in graph.node if n.name)
    results = {}
    for n in graph.node:
        if n.op_type == "Constant" and n.domain in ("", "ai.onnx"):
            continue  # ORT makes these initializers: no provider runs them
        outs = [o for o in n.output if o]
        k = next((model.producer[o] for o in outs if o in model.producer), None)
        if k is None:
            continue
        node = summary["nodes"][k]
        key = n.name if n.name and names[n.name] == 1 else (outs[0] if outs else None)
        if key is None or key in results:
            continue
        fill = colors[node["provider"]]
        results[key] = {"value": _value(node, part.get(node["name"])), "bgColor": fill, "textColor": font_color(fill)}
    label = "partsim: " + " > ".join(eff)
    # field order and defaults as node_data_builder.GraphNodeData writes them
    return {graph.name: {"results": results, "name": label, "thresholds": [], "gradient": [],
                         "hideInAggregatedStatsTable": False, "hideInChildrenStatsTable": False,
                         "showExpandedSummaryOnGroupNode": False, "showLabelCountColumnsInChildrenStatsTable": False}}


def render_model_explorer(summary, model, graph):
    """The node data file's text (indented JSON, keys in the viewer's order; same input, same bytes)."""
    return json.dumps(model_explorer_node_data(summary, model, graph), indent=2, ensure_ascii=False) + "\n"
