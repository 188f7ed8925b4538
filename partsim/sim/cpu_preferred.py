"""CUDA-style CPU-preferred nodes: small shape computations kept on the CPU.

Port of ``GetCpuPreferredNodes`` in ``onnxruntime/core/framework/fallback_cpu_capability.cc``
(checked line by line against the newest stored copy, onnxruntime @039e489; the algorithm is
unchanged since 1.1x apart from the list of low-precision dtypes, which that copy gives as
float16, bfloat16 and the four float8 types).  ``CUDAExecutionProvider::GetCapability``
calls it with its tentative nodes, once per graph (the main graph and every If/Loop/Scan
body separately, ``GraphPartitioner`` recursing into subgraphs).  A kernel EP whose table
sets ``partitioning.cpu_preferred_shape_nodes`` gets the same treatment here.

Per graph:

1. Seeds: for every tentative node, each output its kernel puts in host memory
   (``KernelDef::IsOutputOnCpu``, ``host_outputs`` here; ``Shape`` and ``Size`` on CUDA)
   becomes a *CPU tensor* and its consumers in the same graph become candidates.
2. Candidates are taken in topological order, each once.  A candidate the EP does not
   take (no kernel, vetoed) is assumed to fall back to the CPU: its outputs become CPU
   tensors and its consumers candidates.
3. A tentative candidate moves to the CPU when every entry of its input list (missing
   optional inputs included, as ORT iterates ``InputDefs()``):

   * is not float16/bfloat16/float8*, and
   * is a small initializer (at most 100 elements; outer-scope initializers count) or an
     input of this graph -- accepted as is -- or else a CPU tensor that the EP's kernel
     does *not* itself read from host memory at that index (``host_inputs``).

   Its outputs then become CPU tensors and its consumers candidates.

"Consumers" are the nodes of the same graph that read the tensor, explicitly or, for a
control-flow node, implicitly through a subgraph (``Graph::GetConsumerNodes`` and the
node's output edges).  Nodes inside a subgraph are never candidates of the outer graph:
their own graph's pass starts afresh, where an outer-scope value is neither a graph input
nor a CPU tensor.  Since candidates are only ever pushed from a node to its consumers and
are popped in topological order, the result does not depend on which topological order
is used.
"""

import heapq

from ..ir.graph import formal_inputs

__all__ = ["cpu_preferred_nodes", "SMALL_INITIALIZER_ELEMENTS", "NO_CPU_DTYPES"]

SMALL_INITIALIZER_ELEMENTS = 100  # kSmallInitializerThreshold
NO_CPU_DTYPES = frozenset({"float16", "bfloat16", "float8e4m3fn", "float8e4m3fnuz", "float8e5m2",
                           "float8e5m2fnuz"})
CPU = "CPUExecutionProvider"


def _is_small_initializer(v):
    """``IsSmallInitializer``: an initializer whose dims multiply to at most 100."""
    if not v.is_constant or v.shape is None or not all(isinstance(d, int) for d in v.shape):
        return False  # a Constant whose shape the loader could not tell: not known to be small
    n = 1
    for d in v.shape:
        n *= d
    return n <= SMALL_INITIALIZER_ELEMENTS


def _preferred_in_graph(model, scope, members, order_pos, tentative, rule_of, assigned):
    in_scope = set(members)
    provider_nodes = set(tentative)
    graph_inputs = formal_inputs(model, scope, members)
    cpu_args = set()
    heap = []

    def push_consumers(tensor):
        for c in model.consumers.get(tensor, ()):
            if c in in_scope:
                heapq.heappush(heap, (order_pos[c], c))

    def mark_outputs(node):
        # ORT inserts every entry of OutputDefs(), a missing optional output ("") included
        cpu_args.update(node.outputs)
        for t in node.outputs:
            if t:
                push_consumers(t)

    for i in tentative:
        node = model.nodes[i]
        for k in rule_of[i].host_outputs:
            if k < len(node.outputs) and node.outputs[k]:
                cpu_args.add(node.outputs[k])
                push_consumers(node.outputs[k])
    visited = set()
    cpu_nodes = set()
    while heap:
        _, cur = heapq.heappop(heap)
        if cur in visited:
            continue
        visited.add(cur)
        node = model.nodes[cur]
        if cur not in provider_nodes:
            if assigned[cur] is None or assigned[cur] == CPU:
                mark_outputs(node)
            continue
        place = True
        host_in = rule_of[cur].host_inputs
        for k, t in enumerate(node.inputs):
            v = model.value(t) if t else None
            if v is not None and v.dtype in NO_CPU_DTYPES:
                place = False
                break
            if v is not None and (_is_small_initializer(v) or t in graph_inputs):
                continue
            if t not in cpu_args:
                place = False
                break
            if k in host_in:
                place = False
                break
        if place:
            cpu_nodes.add(cur)
            mark_outputs(node)
    return cpu_nodes


def cpu_preferred_nodes(model, order_pos, tentative, rule_of, assigned):
    """Return the subset of ``tentative`` that ORT would move to the CPU.

    Parameters
    ----------
    model : Model
    order_pos : dict or list
        Node index -> position in topological order.
    tentative : list of int
        Nodes the EP has a kernel for and does not veto (its tentative claim).
    rule_of : dict
        Node -> matched OpRule (for host-memory ports).
    assigned : list
        Provider per node so far (``None`` if unassigned).
    """
    scopes = {}
    for n in model.nodes:
        scopes.setdefault(n.scope, []).append(n.index)
    by_scope = {}
    for i in tentative:
        by_scope.setdefault(model.nodes[i].scope, []).append(i)
    cpu_nodes = set()
    for scope in sorted(by_scope):
        cpu_nodes |= _preferred_in_graph(model, scope, scopes[scope], order_pos, by_scope[scope],
                                         rule_of, assigned)
    return cpu_nodes
