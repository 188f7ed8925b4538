"""Cluster forming of the OpenVINO EP (``partitioning.clusters: topological_runs``).

Sources (read for onnxruntime-openvino 1.24.1, OpenVINO 2025.4; the logic is unchanged
since ORT 1.20): ``onnxruntime/core/providers/openvino/ov_versions/capability.cc``
(``GetCapability::Execute``) and ``ov_versions/utils.cc`` (``GetPartitionedClusters``,
``GetConnectedClusters``, ``GetInputsOutputsOfCluster``,
``AddTrivialClusterToNextClusterIfConnected``); ``onnxruntime/core/graph/graph_viewer.cc``
and ``graph.cc`` (``ReverseDFSFrom`` with ``NodeCompare``) for the default topological
order.  Behaviour checked against real onnxruntime-openvino 1.24.1 sessions
(``tests/test_openvino.py``).

Unlike ORT's wave algorithm (:mod:`partsim.sim.wave`) the OpenVINO EP

1. takes ORT's default topological order (a reverse depth-first search from the leaf
   nodes, inputs visited in ascending node index) and cuts it at every unsupported
   node: each run of consecutive supported nodes is a cluster;
2. splits every cluster into weakly connected components;
3. walks the components in order: a one-node component that is not the last one is
   dropped, and when that node feeds the next component it is appended to it (which
   can make a partition whose contraction is cyclic: ORT then refuses the session,
   "the graph is not acyclic");
4. drops a component in which a ``Conv``/``Identity`` output leaves the component
   (or is a graph output) while that node also has consumers;
5. when every node is supported, claims the whole graph as one partition, except
   that a graph without inputs is left alone, and so is a graph of at most three
   nodes whose first node is one of the "supported only in models" ops.
"""

__all__ = ["ort_default_topological_order", "openvino_clusters"]


def ort_default_topological_order(model, members):
    """ORT's ``GraphViewer`` default order of ``members`` (one graph scope).

    A reverse DFS from the leaf nodes (no consumer inside the scope), the leaves pushed
    in node-index order (so the last one is explored first), each node's producers
    visited in ascending index order; a node is emitted when it is left (post-order).
    """
    member_set = set(members)

    def producers(i):
        return sorted({p for p, _ in model.in_edges(i) if p in member_set})

    has_consumer = {i: False for i in members}
    for i in members:
        for p in producers(i):
            has_consumer[p] = True
    leaves = [i for i in sorted(members) if not has_consumer[i]]
    stack = [(i, False) for i in leaves]
    visited = set()
    order = []
    while stack:
        i, leave = stack.pop()
        if leave:
            order.append(i)
            continue
        if i in visited:
            continue
        visited.add(i)
        stack.append((i, True))
        # NodeCompare sorts descending by index; pushing in that order leaves the
        # smallest index on top of the stack
        for p in sorted(producers(i), reverse=True):
            stack.append((p, False))
    return order


def _components(model, run):
    """``GetConnectedClusters``: weakly connected components of one run, in run order."""
    remaining = list(run)
    in_run = set(run)
    comps = []
    while remaining:
        start = remaining[0]
        comp, seen, stack = [], {start}, [start]
        while stack:
            i = stack.pop()
            comp.append(i)
            nbrs = [p for p, _ in model.in_edges(i)] + [c for c, _ in model.out_edges(i)]
            for j in nbrs:
                if j in in_run and j not in seen:
                    seen.add(j)
                    stack.append(j)
        comp_set = set(comp)
        remaining = [i for i in remaining if i not in comp_set]
        comps.append(comp)
    return comps


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


def openvino_clusters(model, members, supported, table, graph_inputs, graph_outputs):
    """Clusters of one graph scope claimed by an OpenVINO-style EP.

    Parameters
    ----------
    members : list of int
        Nodes of the scope.
    supported : callable
        ``supported(i)`` -> bool (matched by the table and still unassigned).
    table : RuleTable
        Options read: ``single_node_cluster_only_last``, ``escaping_output_ops``,
        ``small_graph_reject_ops``.
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
    if order and all(supported(i) for i in order):
        small = set(table.option("small_graph_reject_ops", ()) or ())
        if not graph_inputs:
            return [], [(i, "the graph has no inputs (ORT folds it)") for i in order], []
        if len(order) <= 3 and model.nodes[order[0]].op_type in small:
            why = f"a graph of {len(order)} node(s) starting with {model.nodes[order[0]].op_type} is left to the CPU"
            return [], [(i, why) for i in order], []
        return [list(order)], [], []
    runs, cur = [], []
    for i in order:
        if supported(i):
            cur.append(i)
        elif cur:
            runs.append(cur)
            cur = []
    if cur:
        runs.append(cur)
    comps = [c for run in runs for c in _components(model, run)]
    only_last = table.option("single_node_cluster_only_last", False)
    escaping_ops = set(table.option("escaping_output_ops", ()) or ())
    clusters = []
    for k, comp in enumerate(comps):
        if only_last and len(comp) == 1 and k < len(comps) - 1:
            i = comp[0]
            nxt = set(comps[k + 1])
            if any(c in nxt for c, _ in model.out_edges(i)):
                comps[k + 1] = comps[k + 1] + [i]
            else:
                dropped.append((i, "a one-node cluster that is not the last stays on the CPU"))
            continue
        why = _escaping_output(model, comp, escaping_ops, graph_outputs) if escaping_ops else None
        if why:
            dropped.extend((i, why) for i in comp)
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
