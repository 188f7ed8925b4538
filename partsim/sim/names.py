"""ORT's per-graph name generator (``onnxruntime/core/graph/graph.cc``).

``Graph::GenerateNodeName(base)`` and ``Graph::GenerateNodeArgName(base)`` return ``base``
when it is free, else ``base + "_token_" + N`` with N taken from one counter per graph that
both share and that only moves when a name collides.  A node name is free when no node of the
graph has it and the generator has not handed it out as a node name; a tensor name is free when
no tensor (NodeArg) has it and the generator has not handed it out as a tensor name
(microsoft/onnxruntime ``onnxruntime/core/graph/graph.cc``: ``GenerateNodeName``'s ``name_is_ok``
walks ``nodes_`` and ``generated_node_names_``; ``GenerateNodeArgName`` checks ``node_args_`` and
``generated_node_arg_names_``).  The one port of both: :class:`NameGenerator` (the transpose
optimizer's graph names through it too).

A node without a name has none in ORT either; its profiler calls it ``<op>_<node index>``
(``sequential_executor.cc``), the index being the node's position among the nodes ORT made when it
loaded the graph, where Constant nodes are none (they become initializers): :func:`loaded_nodes`.
"""

__all__ = ["NameGenerator", "is_constant_node", "loaded_nodes", "graph_tensor_names"]


def is_constant_node(node):
    """An ai.onnx Constant NodeProto: ORT turns it into an initializer when it loads the graph."""
    return node.op_type == "Constant" and (node.domain or "") in ("", "ai.onnx")


def loaded_nodes(nodes):
    """The NodeProtos of ``nodes`` that become nodes of ORT's graph, in order: position = ORT node index.

    >>> from onnx import helper as h
    >>> [n.op_type for n in loaded_nodes([h.make_node("Constant", [], ["c"]), h.make_node("Relu", ["x"], ["y"])])]
    ['Relu']
    """
    return [n for n in nodes if not is_constant_node(n)]


def graph_tensor_names(graph):
    """Every tensor name a GraphProto holds: inputs, outputs, value_info, initializers, node inputs and outputs."""
    out = set()
    for vi in list(graph.input) + list(graph.output) + list(graph.value_info):
        out.add(vi.name)
    for t in graph.initializer:
        out.add(t.name)
    for n in graph.node:
        out.update(x for x in n.input if x)
        out.update(x for x in n.output if x)
    return out


class NameGenerator:
    """One graph's generator, seeded with the tensor and node names it already holds.

    >>> g = NameGenerator({"x", "y"}, {"relu"})
    >>> g.node_name("_inlfunc_HardSwish"), g.node_name("_inlfunc_HardSwish"), g.arg_name("x")
    ('_inlfunc_HardSwish', '_inlfunc_HardSwish_token_0', 'x_token_1')
    >>> g.node_name("relu"), g.node_name("x"), g.arg_name("relu")
    ('relu_token_2', 'x', 'relu')
    """

    def __init__(self, tensor_names=(), node_names=()):
        self.tensors = set(tensor_names)
        self.nodes = {n for n in node_names if n}
        self.generated_args = set()
        self.generated_nodes = set()
        self.counter = 0

    @classmethod
    def for_graph(cls, graph):
        """The generator of a GraphProto: its tensor names and its nodes' names."""
        return cls(graph_tensor_names(graph), (n.name for n in graph.node))

    def _fresh(self, base, existing, generated):
        name = base
        while name in existing or name in generated:
            name = f"{base}_token_{self.counter}"
            self.counter += 1
        generated.add(name)
        return name

    def node_name(self, base):
        return self._fresh(base, self.nodes, self.generated_nodes)

    def arg_name(self, base):
        return self._fresh(base, self.tensors, self.generated_args)
