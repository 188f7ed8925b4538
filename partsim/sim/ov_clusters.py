"""Cluster forming of the OpenVINO EP (``partitioning.clusters: topological_runs``).

Sources (read for onnxruntime-openvino 1.24.1, OpenVINO 2025.4; the search of *all* later
clusters for a one-node cluster dates from ORT 1.23):
``onnxruntime/core/providers/openvino/ov_versions/capability.cc`` (``GetCapability::Execute``) and ``ov_versions/utils.cc`` (``GetPartitionedClusters``,
``GetConnectedClusters``, ``GetInputsOutputsOfCluster``,
``AddTrivialClusterToNextClusterIfConnected``), ``ov_versions/data_ops.cc``
(``node_is_supported``); ``onnxruntime/core/graph/graph_viewer.cc``
and ``graph.cc`` (``ReverseDFSFrom`` with ``NodeCompare``) for the default topological
order.  Behaviour checked against real onnxruntime-openvino 1.24.1 sessions
(``tests/gen/test_openvino.py``).

Unlike ORT's wave algorithm (:mod:`partsim.sim.wave`) the OpenVINO EP

0. refuses, beyond the op table, a node with a rank-0 non-constant input or a rank-0
   output unless its op is one of ``no_dimension_supported_`` (table option
   ``no_dimension_ops``; a ``Pad`` fed by a ``DequantizeLinear`` is let through), and a
   node with a zero-sized dimension in such a tensor unless it is one of
   ``Expand, Equal, Slice, Concat, Shape, Cast, Resize`` (data_ops.cc
   ``node_is_supported``, check 2; the dtype check 1 is the table's ``types``);
1. takes ORT's default topological order (a reverse depth-first search from the leaf
   nodes; ``NodeCompare`` sorts producers by ascending index, so the largest index is
   explored first) and cuts it at every unsupported node: each run of consecutive
   supported nodes is a cluster;
2. splits every cluster into weakly connected components;
3. walks the components in order: a one-node component that is not the last one is
   dropped, and appended to the first later component it is connected to (either
   direction: ``AddTrivialClusterToNextClusterIfConnected``) when there is one.  That
   can make a partition whose contraction is cyclic: ORT then refuses the session,
   "the graph is not acyclic";
4. drops a component in which a ``Conv``/``Identity`` output leaves the component
   (or is a graph output) while that node also has consumers, and a component with
   no inputs at all;
5. when every node is supported, claims the whole graph as one partition, except
   that a graph without inputs is left alone, and so is a graph of at most three
   nodes whose first node is one of the "supported only in models" ops.

The onnxruntime-openvino 1.24.1 reading is from intel/onnxruntime commit b912b18f73
("OpenVINO EP Features and bug-fixes for ORT-1.24 - Follow up", 2026-01-16).

The plugin EP ``onnxruntime-ep-openvino`` 1.8.1 (the default ``openvino`` table) forms clusters the same
way (runs in ORT's default order, split into connected pieces: its partitions on the node tests and the
corpus agree), but its table switches the 1.24.1 extras off, each by a graph probe run on real plugin
sessions (``partsim/gen/openvino_plugin.py``; the plugin's source was not found in the stored public
repositories): a one-node cluster that is not the last is a partition of its own
(``single_node_cluster_only_last: false``), rank-0 tensors are taken (no ``no_dimension_ops``), a
Conv output leaving its cluster is fine (no ``escaping_output_ops``), and no small-graph or one-node-graph
rule applies.  What makes its sessions fail after the claim is in ``partsim/sim/refusals.py``
(``compiled_graph_failures``) and in the table's ``compile_failure`` rules.
"""

from ..ir.graph import weakly_connected_groups
from ..ir.order import ort_default_order
from .match import Rejection
from .rounds import partition_rounds

__all__ = ["ort_default_topological_order", "openvino_clusters", "claim_ov_clusters", "tensor_refusal", "op_mode_refusal",
           "single_node_refusal", "OP_MODE_CHECKS"]

#: data_ops.cc node_is_supported: ops that may see a zero-sized dimension on the CPU device
ZERO_DIM_OPS = frozenset({"Expand", "Equal", "Slice", "Concat", "Shape", "Cast", "Resize"})


def ort_default_topological_order(model, members):
    """ORT's ``GraphViewer`` default order of ``members`` (one graph scope), each node's
    producers visited in ascending index order (:func:`partsim.ir.order.ort_default_order`)."""
    return ort_default_order(members, lambda i: sorted({p for p, _ in model.in_edges(i)}))


def _escaping_output(model, cluster, ops, graph_outputs):
    """Why a cluster is dropped by the ``Conv``/``Identity`` output rule, or ``None``."""
    members = set(cluster)
    for i in cluster:
        node = model.nodes[i]
        if node.op_type not in ops or not node.outputs:
            continue
        out = node.outputs[0]
        consumers = [c for c, t in model.out_edges(i)]
        if not consumers:
            continue
        leaves = any(c not in members for c, t in model.out_edges(i) if t == out) or out in graph_outputs
        if leaves:
            return f"the output of {node.op_type} {node.name} leaves the cluster"
    return None


def tensor_refusal(model, i, no_dimension_ops):
    """Why data_ops.cc ``node_is_supported`` refuses node ``i`` for its tensors, or ``None``.

    Every non-constant input and every output with a known shape is checked: rank 0 is
    allowed only for ``no_dimension_ops`` (and for a ``Pad`` fed by a
    ``DequantizeLinear``), a dimension of size 0 only for :data:`ZERO_DIM_OPS`.
    Constant initializers are not checked (``IsConstantInitializer``).
    """
    node = model.nodes[i]
    op = node.op_type
    ports = [("input", k, t) for k, t in enumerate(node.inputs) if t and not model.value(t).is_constant]
    ports += [("output", k, t) for k, t in enumerate(node.outputs) if t]
    for kind, k, t in ports:
        shape = model.value(t).shape
        if shape is None:
            continue
        if len(shape) == 0:
            if op in no_dimension_ops:
                continue
            if op == "Pad" and any(model.nodes[p].op_type == "DequantizeLinear" for p, _ in model.in_edges(i)):
                continue
            return (f"{kind} {k} ({t!r}) is a rank-0 tensor; OpenVINO takes those only for "
                    f"the ops of data_ops.cc no_dimension_supported_")
        if any(d == 0 for d in shape if isinstance(d, int)) and op not in ZERO_DIM_OPS:
            return f"{kind} {k} ({t!r}) has a zero-sized dimension"
    return None


# data_ops.cc op_list_ (UnsupportedOpMode): per-op refusals the op list cannot express.  Their
# version lists in the stored source end before 2025.4, but real onnxruntime-openvino 1.24.1
# sessions (OpenVINO 2025.4.1) apply these two: an Unsqueeze with an input *named* "axes" (the
# check compares the name, so an initializer called "axes" counts too) and a ReduceMax reading
# int8/uint8 stay on the CPU.
def _unsqueeze_axes_named(model, node):
    if any(t == "axes" for t in node.inputs):
        return "an input is named 'axes' (data_ops.cc op_list_ Unsqueeze compares the input's name)"
    return None


def _reducemax_8bit(model, node):
    for t in node.inputs:
        v = model.value(t) if t else None
        if v is not None and v.dtype in ("int8", "uint8"):
            return f"input {t!r} is {v.dtype} (data_ops.cc op_list_ ReduceMax: int8/uint8 refused)"
    return None


OP_MODE_CHECKS = {"Unsqueeze": _unsqueeze_axes_named, "ReduceMax": _reducemax_8bit}


def op_mode_refusal(model, i, ops):
    """Why data_ops.cc's ``unsupported_op_mode`` refuses node ``i`` (its op among ``ops``, the
    table's ``unsupported_op_modes``), or ``None``."""
    node = model.nodes[i]
    check = OP_MODE_CHECKS.get(node.op_type) if node.op_type in ops else None
    return check(model, node) if check else None


def single_node_refusal(model, i):
    """capability.cc: a graph that is one supported node goes through
    ``SpecialConditionForClusterSizeOne`` (data_ops.cc, device CPU): a Reshape whose shape is not
    an initializer, an Expand whose output is not float16, a RoiAlign not typed (float16, float16,
    float) -> float16 stay on the CPU.  Checked on real 1.24.1 sessions for Reshape and Expand."""
    node = model.nodes[i]
    op = node.op_type

    def dtype(t):
        v = model.value(t) if t else None
        return v.dtype if v is not None else None
    shape_value = model.value(node.inputs[1]) if len(node.inputs) > 1 and node.inputs[1] else None
    if op == "Reshape" and not (shape_value is not None and shape_value.kind in ("initializer", "constant")):
        return "a one-node graph: a Reshape whose shape is not an initializer is left to the CPU"
    if op == "Expand" and node.outputs and dtype(node.outputs[0]) != "float16":
        return "a one-node graph: an Expand whose output is not float16 is left to the CPU"
    if op == "RoiAlign" and len(node.inputs) > 2 and node.outputs and (
            [dtype(t) for t in node.inputs[:3]] + [dtype(node.outputs[0])]) != ["float16", "float16", "float", "float16"]:
        return "a one-node graph: a RoiAlign not typed float16/float16/float -> float16 is left to the CPU"
    return None


def _adjacent(model, i, comp):
    """``AddTrivialClusterToNextClusterIfConnected``: is node ``i`` a producer or consumer of ``comp``?"""
    inside = set(comp)
    return any(c in inside for c, _ in model.out_edges(i)) or any(p in inside for p, _ in model.in_edges(i))


def _has_inputs(model, comp):
    """``GetInputsOutputsOfCluster`` gives ``comp`` at least one input (initializers count)."""
    made = {t for i in comp for t in model.nodes[i].outputs if t}
    return any(t and t not in made for i in comp for t in model.node_inputs(model.nodes[i]))


def _with_node_checks(model, order, supported, table, dropped):
    """``supported`` narrowed by data_ops.cc node_is_supported's checks beyond the op list: tensors (rank 0,
    zero-size; table option ``no_dimension_ops``) and op modes (``unsupported_op_modes``); each node they refuse
    is appended to ``dropped`` with the reason."""
    no_dim = table.option("no_dimension_ops")
    no_dim = set(no_dim) if no_dim is not None else None
    modes = set(table.option("unsupported_op_modes", ()) or ())
    if no_dim is None and not modes:
        return supported
    refusals = {}
    for i in order:
        if supported(i):
            why = (tensor_refusal(model, i, no_dim) if no_dim is not None else None) or (
                op_mode_refusal(model, i, modes) if modes else None)
            if why:
                refusals[i] = why
                dropped.append((i, why))
    return lambda i: i not in refusals and supported(i)


def _whole_graph(model, order, table, graph_inputs):
    """capability.cc's path for a graph whose every node is supported: one partition, except a one-node graph
    ``SpecialConditionForClusterSizeOne`` refuses, a graph without inputs, and a graph of at most three nodes
    starting with one of the "supported only in models" ops (``small_graph_reject_ops``)."""
    small = set(table.option("small_graph_reject_ops", ()) or ())
    if len(order) == 1 and table.option("single_node_graph_checks", False):
        why = single_node_refusal(model, order[0])
        if why:
            return [], [(order[0], why)], []
    if not graph_inputs:
        return [], [(i, "the graph has no inputs (ORT folds it)") for i in order], []
    if len(order) <= 3 and model.nodes[order[0]].op_type in small:
        why = f"a graph of {len(order)} node(s) starting with {model.nodes[order[0]].op_type} is left to the CPU"
        return [], [(i, why) for i in order], []
    return [list(order)], [], []


def openvino_clusters(model, members, supported, table, graph_inputs, graph_outputs):
    """Clusters of one graph scope claimed by an OpenVINO-style EP.

    Parameters
    ----------
    members : list of int
        Nodes of the scope.
    supported : callable
        ``supported(i)`` -> bool (matched by the table and still unassigned).
    table : RuleTable
        Options read: ``no_dimension_ops``, ``single_node_cluster_only_last``,
        ``escaping_output_ops``, ``small_graph_reject_ops``, ``unsupported_op_modes``,
        ``single_node_graph_checks``.
    graph_inputs, graph_outputs : set of str
        Non-constant inputs and the outputs of the scope.

    Returns
    -------
    (clusters, dropped, cyclic)
        ``clusters``: list of node lists; ``dropped``: list of (node, reason) for
        supported nodes that were left out; ``cyclic``: the clusters whose contraction
        makes the graph cyclic.
    """
    order = ort_default_topological_order(model, members)
    dropped = []
    supported = _with_node_checks(model, order, supported, table, dropped)
    if order and all(supported(i) for i in order):
        return _whole_graph(model, order, table, graph_inputs)
    runs, cur = [], []
    for i in order:
        if supported(i):
            cur.append(i)
        elif cur:
            runs.append(cur)
            cur = []
    if cur:
        runs.append(cur)
    # GetConnectedClusters: the weakly connected components of each run, in run order
    comps = [c for run in runs for c in weakly_connected_groups(model, run, order=run)]
    only_last = table.option("single_node_cluster_only_last", False)
    escaping_ops = set(table.option("escaping_output_ops", ()) or ())
    clusters = []
    for k, comp in enumerate(comps):
        if only_last and len(comp) == 1 and k < len(comps) - 1:
            i = comp[0]
            # capability.cc (ORT >= 1.23): the first later component it touches takes it
            for j in range(k + 1, len(comps)):
                if _adjacent(model, i, comps[j]):
                    comps[j] = comps[j] + [i]
                    break
            else:
                dropped.append((i, "a one-node cluster that is not the last stays on the CPU"))
            continue
        why = _escaping_output(model, comp, escaping_ops, graph_outputs) if escaping_ops else None
        if why:
            dropped.extend((i, why) for i in comp)
            continue
        if not _has_inputs(model, comp):
            dropped.extend((i, "the cluster has no inputs (ORT folds it)") for i in comp)
            continue
        clusters.append(comp)
    return clusters, dropped, [c for c in clusters if _is_cyclic_contraction(model, c, members)]


def _is_cyclic_contraction(model, cluster, members):
    """Does a path leave ``cluster`` and come back into it (through nodes outside)?"""
    inside = set(cluster)
    scope = set(members)
    start = {c for i in cluster for c, _ in model.out_edges(i) if c not in inside and c in scope}
    seen, stack = set(start), list(start)
    while stack:
        i = stack.pop()
        for c, _ in model.out_edges(i):
            if c in inside:
                return True
            if c in scope and c not in seen:
                seen.add(c)
                stack.append(c)
    return False


def claim_ov_clusters(model, table, scope, members, supported, matched, assigned, rules, partitions, note_reason,
                      round_of=None):
    """OpenVINO-style clusters (:func:`openvino_clusters`), one partitioning round after the other
    (``round_of``: :func:`partsim.sim.rounds.partition_rounds`); returns session refusals.

    Each round's GetCapability sees the whole graph (``graph_partitioner.cc`` PartitionOnnxFormatModel): in the
    first, the function nodes inlined later are still there, an op the EP did not take; in a later one, the
    earlier rounds' partitions are fused nodes of an op it does not know.  So a round's nodes are claimed with
    the other rounds' nodes as unsupported ones, which cut its runs, and never through capability.cc's
    every-node-supported path.  Seen on a real onnxruntime-openvino 1.24.1 session (relu_expanded_ver18: the Max
    alone, then the Cast inlined from the CastLike, each a partition of its own)."""
    rounds = partition_rounds(round_of or {}, members)
    refused = []
    for in_round in rounds:
        round_supported = supported if in_round is None else (lambda i, f=in_round: f(i) and supported(i))
        refused.extend(_ov_round(model, table, scope, members, round_supported, matched, assigned, rules, partitions,
                                 note_reason))
    return refused


def _ov_round(model, table, scope, members, supported, matched, assigned, rules, partitions, note_reason):
    """One round of :func:`_claim_ov_clusters`."""
    ep = table.provider
    if scope:
        outs = set(model.scope_outputs.get(scope, ()))
        ins = {t for i in members for t in model.node_inputs(model.nodes[i])
               if model.producer.get(t) not in set(members) and not model.value(t).is_constant}
    else:
        outs = set(model.graph_outputs)
        ins = {t for t in model.graph_inputs if not model.value(t).is_constant}
    clusters, dropped, cyclic = openvino_clusters(model, members, supported, table, ins, outs)
    for i, why in dropped:
        note_reason(i, ep, Rejection("group_rejected", why))
    for g in clusters:
        for i in g:
            assigned[i] = ep
            rules[i] = matched[i]
        partitions.append((ep, tuple(g)))
    refused = []
    for g in cyclic:
        names = ", ".join(model.nodes[i].name for i in g[:5]) + (" …" if len(g) > 5 else "")
        refused.append((f"{ep} claims a partition ({names}) whose fusion makes the graph cyclic; ORT refuses "
                        f"the session (\"the graph is not acyclic\")", tuple(g)))
    return refused
