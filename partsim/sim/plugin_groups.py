"""The node groups a plugin EP hands to ORT, and ORT's check of them.

onnxruntime-qnn 2.x runs QNN as a *plugin* EP (the EP API, ``OrtEp``).  Its GetCapability
forms partition groups with its own copy of ORT's partition wave
(onnxruntime/onnxruntime-qnn ``core/providers/qnn/qnn_ep_utils.cc``
``CreateSupportedPartitionNodeGroups``), walking the EP API's view of the graph, where

- a node unit's in-degree counts the *explicit* inputs that have a producer node
  (``core/providers/qnn/ort_api.cc`` ``OrtNodeUnit::GetInputEdgesCount``), but
- a value's consumers include the nodes that read it *implicitly*, from inside a subgraph
  (``core/graph/ep_api_types.cc`` ``EpValueInfo::GetConsumerInfos``: input index ``-1``).

An If/Loop/Scan node reading outer values so becomes ready as soon as as many decrements as it
has explicit inputs arrived (its count is unsigned and wraps below zero, so it is never ready
again), possibly before its condition is computed.  A group can then hold nodes on both sides of
such a node.  ORT re-partitions every group a plugin EP hands back
(``core/session/plugin_ep/ep_plugin_provider_interfaces.cc`` ``PluginExecutionProvider::
GetCapability``: ``CreateSupportedPartitions`` over the group's nodes) and, when one does not
come out as a single partition ("set nodes that cannot be fused together"), returns no
capability at all for that EP: every node goes to the next provider.

:func:`plugin_groups` is the EP's walk; :func:`is_one_partition` ORT's check (a group is one
partition exactly when no path leaves it and comes back through a node outside it).

>>> import onnx.helper as h
>>> from partsim.io.load import model_from_proto
>>> g = h.make_graph([h.make_node("Relu", ["x"], ["t"], name="a"), h.make_node("Relu", ["t"], ["u"], name="b"),
...                   h.make_node("Add", ["t", "u"], ["y"], name="c")], "g",
...                  [h.make_tensor_value_info("x", 1, [2])], [h.make_tensor_value_info("y", 1, [2])])
>>> m = model_from_proto(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), "m.onnx", "")
>>> is_one_partition(m, [0, 2], [0, 1, 2])      # a -> b -> c leaves the group and comes back
False
>>> is_one_partition(m, [0, 1, 2], [0, 1, 2])
True
>>> plugin_groups(m, [0, 1, 2], {}, lambda i: i != 1)
([[0], [2]], True)
"""

from ..ir.order import ort_default_order
from .wave import create_supported_groups

__all__ = ["plugin_groups", "is_one_partition", "rejected_group"]

_QDQ = ("QuantizeLinear", "DequantizeLinear")


def _explicit_producer_inputs(model, i, member_set):
    producer = model.producer
    return sum(1 for t in model.nodes[i].inputs if t and producer.get(t) in member_set)


def _consumers(model, i, member_set):
    """Consumers of ``i``'s outputs as the EP API lists them: per output, per consumer node, one
    entry per explicit input reading it and one per implicit (subgraph) read."""
    out = []
    by_tensor = {}
    for c, t in model.out_edges(i):
        if c in member_set:
            by_tensor.setdefault(t, []).append(c)
    for t in model.nodes[i].outputs:
        out.extend(by_tensor.get(t, ()))
    return out


def plugin_groups(model, members, units, is_supported):
    """The groups the plugin EP's own wave forms over one graph.

    Parameters
    ----------
    model : Model
    members : list of int
        The graph's nodes (walked in ORT's default topological order).
    units : dict
        QDQ node units, ``{target: members in topological order}`` (``{}`` without units).
    is_supported : callable
        ``is_supported(node index)`` for a unit's target: the whole unit is supported.

    Returns
    -------
    (list of list of int, bool)
        The groups (unit members expanded) and whether the walk visited every unit; when it did
        not, the EP's GetCapability throws.
    """
    member_set = set(members)
    # the EP API lists a graph's nodes in ORT's default topological order (ep_api_types.cc EpGraph)
    members = ort_default_order(members, lambda i: sorted({p for p, _ in model.in_edges(i)}))
    unit_of = {}
    for target, unit in units.items():
        for m in unit:
            unit_of[m] = target
    reps = [i for i in members if unit_of.get(i, i) == i]
    in_degree = {}
    for r in reps:
        unit = units.get(r)
        if unit is None:
            in_degree[r] = _explicit_producer_inputs(model, r, member_set)
        else:
            dqs = [m for m in unit if model.nodes[m].op_type == "DequantizeLinear" and m != r]
            in_degree[r] = (sum(_explicit_producer_inputs(model, d, member_set) for d in dqs)
                            + _explicit_producer_inputs(model, r, member_set) - len(dqs))

    def output_nodes(r):
        unit = units.get(r)
        if unit is None:
            return [unit_of.get(c, c) for c in _consumers(model, r, member_set)]
        qs = {m for m in unit if model.nodes[m].op_type == "QuantizeLinear" and m != r}
        tail = [m for m in unit if m not in qs]
        producer = tail[-1]  # the target, or the redundant Clip/Relu after it
        out = []
        for c in _consumers(model, producer, member_set):
            if c in qs:
                out.extend(unit_of.get(x, x) for x in _consumers(model, c, member_set))
            else:
                out.append(unit_of.get(c, c))
        return out

    # the EP's copy of ORT's wave, over these counts; its in-degrees are unsigned, and a Python int
    # below zero never reaches 0 again either, so the wave's own loop is the EP's
    try:
        groups = create_supported_groups(reps, in_degree, output_nodes, is_supported,
                                         unit_members=lambda r: units.get(r, (r,)))
    except ValueError:  # not every unit became ready: the EP's GetCapability throws
        return [], False
    return groups, True


def is_one_partition(model, group, members):
    """Whether ORT's partitioner keeps ``group`` (node indices of one graph) as one partition:
    no path from the group through nodes outside it back into it (edges include implicit
    subgraph reads)."""
    inside = set(group)
    member_set = set(members)
    stack = [c for g in group for c, _ in model.out_edges(g) if c in member_set and c not in inside]
    seen = set()
    while stack:
        x = stack.pop()
        if x in seen:
            continue
        seen.add(x)
        for c, _ in model.out_edges(x):
            if c in inside:
                return False
            if c in member_set and c not in seen:
                stack.append(c)
    return True


def rejected_group(model, members, units, is_supported):
    """The first group ORT would refuse from the plugin EP (``None`` when it takes them all),
    skipping the single-Q/DQ groups the QNN EP drops before handing them over
    (``qnn_execution_provider.cc`` ``GetCapabilityImpl``).  ``()`` when the EP's walk fails."""
    groups, complete = plugin_groups(model, members, units, is_supported)
    if not complete:
        return ()
    for g in groups:
        if len(g) == 1 and model.nodes[g[0]].op_type in _QDQ:
            continue
        if not is_one_partition(model, g, members):
            return g
    return None
