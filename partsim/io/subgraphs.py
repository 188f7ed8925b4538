"""The one walk into an ONNX graph's bodies (If/Loop/Scan ``GraphProto`` attributes).

A node holds graphs in its attributes, one in ``g`` (type GRAPH) or several in ``graphs`` (GRAPHS);
:func:`node_graphs` lists them in attribute order, :func:`all_graphs` and :func:`all_nodes` walk a
graph and every body inside it depth first, each body right after the node that holds it (the order
ORT's ``Graph`` constructor builds its subgraphs in, ``onnxruntime/core/graph/graph.cc``).  Works on
protobuf messages only; ``onnx`` is not imported.

>>> from onnx import helper
>>> body = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="inner")], "body", [], [])
>>> main = helper.make_graph([helper.make_node("If", ["c"], ["z"], name="if", then_branch=body, else_branch=body),
...                           helper.make_node("Relu", ["z"], ["w"], name="after")], "main", [], [])
>>> [n.name for n in all_nodes(main)]
['if', 'inner', 'inner', 'after']
>>> [g.name for g in all_graphs(main)]
['main', 'body', 'body']
"""

__all__ = ["node_graphs", "attribute_graphs", "node_bodies", "all_graphs", "all_nodes", "body_outputs"]


def node_graphs(node):
    """The graphs ``node``'s attributes hold, in attribute order (``g``, then each of ``graphs``)."""
    return attribute_graphs(node.attribute[:])  # a list: iterating the field itself ends in a formatted IndexError


def attribute_graphs(attributes):
    """:func:`node_graphs` of a node whose attributes (a list of AttributeProto) were read already."""
    out = []
    for a in attributes:
        if a.HasField("g"):
            out.append(a.g)
        if a.graphs:
            out.extend(a.graphs)
    return out


def node_bodies(node):
    """``[(attribute name, graph)]`` of ``node``, in :func:`node_graphs`' order."""
    out = []
    for a in node.attribute[:]:
        if a.HasField("g"):
            out.append((a.name, a.g))
        out.extend((a.name, g) for g in a.graphs)
    return out


def body_outputs(scope, outputs):
    """A body node's output names as written, from the unique names partsim's IR gave them in body ``scope``
    (``<scope>/<name>`` or ``<scope>/<name>#<k>`` where the name was taken already, ``partsim/io/build.py``).

    >>> body_outputs("if/then_branch", ("if/then_branch/t#1", "u"))
    ('t', 'u')
    """
    prefix = scope + "/"
    out = []
    for o in outputs:
        if o.startswith(prefix):
            o = o[len(prefix):]
            head, sep, k = o.rpartition("#")
            o = head if sep and k.isdigit() else o
        out.append(o)
    return tuple(out)


def all_graphs(graph):
    """``graph`` and every graph inside it, depth first (a body right after its node's graph)."""
    stack = [graph]
    while stack:
        g = stack.pop()
        yield g
        for n in reversed(g.node):
            stack.extend(reversed(node_graphs(n)))


def all_nodes(graph):
    """Every node of ``graph`` and of the graphs inside it: each node, then the nodes of its bodies."""
    stack = [iter(graph.node)]
    while stack:
        for n in stack[-1]:
            yield n
            bodies = node_graphs(n)
            if bodies:
                stack.append(iter(n for g in bodies for n in g.node))
                break
        else:
            stack.pop()
