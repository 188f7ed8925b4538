"""EnsureUniqueDQForNodeUnit: one DequantizeLinear per consumer input, at every level.

Ported from ``onnxruntime/core/optimizer/qdq_transformer/ensure_unique_dq_for_node_unit.cc``
(run by ``InferenceSession::TransformGraph`` before Level 1 at every optimization level,
also ``ORT_DISABLE_ALL``; skipped only with ``session.disable_quant_qdq=1``).  Nodes are
visited in ORT's default topological order; a DQ node (``QDQ::MatchDQNode``: ai.onnx or com.microsoft
DequantizeLinear) whose output has more than one consumer edge, or is a graph output, is
duplicated for each consumer edge, edges in ORT's order (consumer node index, then input
slot).  The original keeps the first edge unless it produces a graph output.  A copy gets
the output ``GenerateNodeArgName(<dq output>/duplicated)`` and then the name
``GenerateNodeName(<dq>/duplicated)`` (in that order: they share one counter), takes the same inputs and attributes, and
is left unassigned (partitioning assigns it).

Pure: works on an in-memory ``onnx.ModelProto`` (main graph).
"""

from .names import NameGenerator, is_constant_node

__all__ = ["ensure_unique_dq"]

_DQ_DOMAINS = ("", "ai.onnx", "com.microsoft")


def _topological(nodes):
    """ORT's default topological order of the node positions (``GraphViewer`` on a graph loaded in
    file order: :func:`partsim.ir.order.ort_default_order`, a reverse DFS from the sinks), the
    order ``GetNodesInTopologicalOrder()`` gives the transformer.  Constant nodes are no nodes in
    ORT (initializers): they produce nothing the walk follows."""
    from ..ir.order import ort_default_order

    producer = {}
    for k, n in enumerate(nodes):
        if is_constant_node(n):
            continue
        for o in n.output:
            if o:
                producer[o] = k
    prods = [sorted({producer[t] for t in n.input if t in producer and producer[t] != k})
             for k, n in enumerate(nodes)]
    order = ort_default_order(range(len(nodes)), prods.__getitem__)
    if len(order) != len(nodes):  # a cycle: leave the order as written
        return list(range(len(nodes)))
    return order


def ensure_unique_dq(model, names=None):
    """Duplicate shared DequantizeLinear nodes of ``model``'s main graph in place.

    Returns the names of the duplicates, in the order they were made.
    """
    import onnx

    graph = model.graph
    nodes = list(graph.node)
    if not any(n.op_type == "DequantizeLinear" and n.domain in _DQ_DOMAINS for n in nodes):
        return []
    if names is None:
        names = NameGenerator.for_graph(graph)
    graph_outputs = {o.name for o in graph.output}
    consumers = {}
    for k, n in enumerate(nodes):
        for slot, t in enumerate(n.input):
            if t:
                consumers.setdefault(t, []).append((k, slot))
    made = []
    added = []
    for k in _topological(nodes):
        dq = nodes[k]
        if dq.op_type != "DequantizeLinear" or dq.domain not in _DQ_DOMAINS or not dq.output:
            continue
        out = dq.output[0]
        edges = consumers.get(out, [])
        feeds_output = out in graph_outputs
        if not feeds_output and len(edges) <= 1:
            continue
        todo = edges if feeds_output else edges[1:]
        for consumer, slot in todo:
            copy = onnx.NodeProto()
            copy.CopyFrom(dq)
            new_out = names.arg_name(f"{out}/duplicated")  # ORT makes the output's name first
            copy.name = names.node_name(f"{dq.name}/duplicated")
            del copy.output[:]
            copy.output.append(new_out)
            nodes[consumer].input[slot] = new_out
            added.append((k, copy))
            made.append(copy.name)
    if added:
        # each copy goes right before its first consumer's position is irrelevant to ORT's
        # partitioning; keep them after their original so the graph stays topologically listed
        result = []
        by_original = {}
        for k, copy in added:
            by_original.setdefault(k, []).append(copy)
        for k, n in enumerate(nodes):
            result.append(n)
            result.extend(by_original.get(k, ()))
        del graph.node[:]
        graph.node.extend(result)
    return made
