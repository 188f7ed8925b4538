"""ORT's node indices and names of the optimized graph: each node of the model as written keeps the index ORT loaded
it with (``graph.cc``), and an unnamed one is named by the profiler from that index (``sequential_executor.cc``).
Split from :mod:`partsim.runtime.pipeline`, which reads the indices from the model as written."""

__all__ = ["node_key", "fields_key", "orts_index_order", "name_unnamed"]


def node_key(n):
    """A node's key: its name, or its first output when it has none (kept through ORT's rewrites), with its op."""
    outputs = n.output
    return fields_key(n.name, outputs[0] if outputs else "", n.domain or "", n.op_type)


def fields_key(name, first_output, domain, op):
    """A node's key (:func:`node_key`) from its fields: its name, or its first output when it has none."""
    return ("name", name, domain, op) if name else ("output", first_output, domain, op)


def orts_index_order(optimized, where):
    """``optimized``'s main-graph node positions in ORT's node-index order (``None``: as listed); ``where``:
    ``{node key: ORT node index}`` of the model as written.

    ORT saves the optimized graph in topological order, but inside the session a node keeps
    the index it was loaded with and nodes a transformer adds come after all of them
    (``graph.cc`` ``AddNode``).  Orders that follow node indices (ORT's default topological
    order, which the OpenVINO EP's clustering walks) need the session's order back: nodes of
    the model as written (same name and op; an unnamed one by its first output) first, by
    their index, then the new ones in the order ORT saved them.  The IR is built in that order
    from the listed (sorted) proto, so its shapes are inferred once.
    """
    nodes = optimized.graph.node
    key = [where.get(node_key(n), len(where) + k) for k, n in enumerate(nodes)]
    if key == sorted(key):
        return None
    return sorted(range(len(nodes)), key=key.__getitem__)


def name_unnamed(optimized, keys, at=None):
    """Name the optimized graph's unnamed nodes of the model as written as ORT's profiler does,
    ``<op>_<node index>`` (``sequential_executor.cc``) with the index they were loaded with: the
    name partsim's IR gives them at level ``disable``, whatever ORT's rewrites did to the list.
    ``at``: the positions of the unnamed nodes, when the caller knows them.  Returns how many were named."""
    nodes = optimized.graph.node
    named = 0
    for n in (nodes if at is None else [nodes[k] for k in at]):
        if not n.name:
            index = keys.get(node_key(n))
            if index is not None:
                n.name = f"{n.op_type}_{index}"
                named += 1
    return named
