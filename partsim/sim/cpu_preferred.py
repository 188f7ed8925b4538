"""CUDA-style CPU-preferred nodes: small shape computations kept on the CPU.

Port of ``GetCpuPreferredNodes`` in ``onnxruntime/core/framework/fallback_cpu_capability.cc``
(ORT 1.2x-1.31).  A kernel EP whose table sets ``partitioning.cpu_preferred_shape_nodes``
gives up nodes that only compute on CPU tensors: starting from the consumers of
host-memory outputs (``Shape`` on CUDA) and from nodes that will run on the CPU,
a node is moved to the CPU when every input is a CPU tensor, a small initializer
(at most 100 elements) or a graph input, none of them is fp16/bf16/fp8, and the
EP's kernel does not itself want that input in host memory.
"""

import heapq

__all__ = ["cpu_preferred_nodes", "SMALL_INITIALIZER_ELEMENTS"]

SMALL_INITIALIZER_ELEMENTS = 100
_NO_CPU_DTYPES = frozenset({"float16", "bfloat16", "float8e4m3fn", "float8e4m3fnuz", "float8e5m2",
                            "float8e5m2fnuz"})


def _is_small_initializer(v):
    if not v.is_constant or not v.is_static:
        return False
    n = 1
    for d in v.shape:
        n *= d
    return n <= SMALL_INITIALIZER_ELEMENTS


def cpu_preferred_nodes(model, order_pos, tentative, rule_of, assigned):
    """Return the subset of ``tentative`` that ORT would move to the CPU.

    Parameters
    ----------
    model : Model
    order_pos : dict or list
        Node index -> position in topological order.
    tentative : list of int
        Nodes the EP has a kernel for (its tentative claim).
    rule_of : dict
        Node -> matched OpRule (for host-memory ports).
    assigned : list
        Provider per node so far (``None`` if unassigned).
    """
    provider_nodes = set(tentative)
    graph_inputs = set(model.graph_inputs)
    cpu_args = set()
    heap = []
    for i in tentative:
        rule = rule_of[i]
        node = model.nodes[i]
        for k in rule.host_outputs:
            if k < len(node.outputs) and node.outputs[k]:
                cpu_args.add(node.outputs[k])
                for c in model.consumers.get(node.outputs[k], ()):
                    heapq.heappush(heap, (order_pos[c], c))
    visited = set()
    cpu_nodes = set()
    while heap:
        _, cur = heapq.heappop(heap)
        if cur in visited:
            continue
        visited.add(cur)
        node = model.nodes[cur]
        if cur not in provider_nodes:
            if assigned[cur] is None or assigned[cur] == "CPUExecutionProvider":
                cpu_args.update(o for o in node.outputs if o)
                for c, _ in model.out_edges(cur):
                    heapq.heappush(heap, (order_pos[c], c))
            continue
        place = True
        host_in = rule_of[cur].host_inputs
        for k, t in enumerate(node.inputs):
            if not t:
                continue
            v = model.value(t)
            if v.dtype in _NO_CPU_DTYPES:
                place = False
                break
            if _is_small_initializer(v) or t in graph_inputs:
                continue
            if t not in cpu_args:
                place = False
                break
            if k in host_in:
                place = False
                break
        if place:
            cpu_nodes.add(cur)
            cpu_args.update(o for o in node.outputs if o)
            for c, _ in model.out_edges(cur):
                heapq.heappush(heap, (order_pos[c], c))
    return cpu_nodes
