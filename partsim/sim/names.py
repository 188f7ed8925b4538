"""ORT's per-graph name generator (``onnxruntime/core/graph/graph.cc``).

``Graph::GenerateNodeName(base)`` and ``Graph::GenerateNodeArgName(base)`` return ``base``
when it is free, else ``base + "_token_" + N`` with N taken from one counter per graph that
both share and that only moves when a name collides.  A node name is free when no tensor
(NodeArg) has it and the generator has not handed it out; a tensor name is free when no
tensor has it and the generator has not handed it out.

A node without a name has none in ORT either; its profiler calls it ``<op>_<node index>``
(``sequential_executor.cc``), the index being the node's position among the nodes ORT made when it
loaded the graph, where Constant nodes are none (they become initializers): :func:`loaded_nodes`.
"""

__all__ = ["NameGenerator", "is_constant_node", "loaded_nodes"]


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


class NameGenerator:
    """One graph's generator, seeded with the tensor names it already holds.

    >>> g = NameGenerator({"x", "y"})
    >>> g.node_name("_inlfunc_HardSwish"), g.node_name("_inlfunc_HardSwish"), g.arg_name("x")
    ('_inlfunc_HardSwish', '_inlfunc_HardSwish_token_0', 'x_token_1')
    """

    def __init__(self, tensor_names=()):
        self.args = set(tensor_names)
        self.node_names = set()
        self.counter = 0

    def _fresh(self, base, taken):
        name = base
        while name in self.args or name in taken:
            name = f"{base}_token_{self.counter}"
            self.counter += 1
        return name

    def node_name(self, base):
        name = self._fresh(base, self.node_names)
        self.node_names.add(name)
        return name

    def arg_name(self, base):
        name = self._fresh(base, ())
        self.args.add(name)
        return name
