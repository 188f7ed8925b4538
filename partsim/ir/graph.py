"""Graph questions asked of a model's nodes: connected groups, a graph's formal inputs.

>>> from partsim.ir.model import Model, Node
>>> nodes = [Node(0, "a", "Relu", "", ["x"], ["y"]), Node(1, "b", "Relu", "", ["y"], ["z"]),
...          Node(2, "c", "Relu", "", ["x"], ["w"])]
>>> m = Model("<m>", "", {"": 17}, nodes, {}, {"y": 0, "z": 1, "w": 2}, {"x": [0, 2], "y": [1]}, ["x"], ["z", "w"])
>>> weakly_connected_groups(m, [0, 1, 2])
[[0, 1], [2]]
>>> formal_inputs(m, "", [0, 1, 2])
{'x'}
"""

__all__ = ["weakly_connected_groups", "formal_inputs"]


def weakly_connected_groups(model, members, order=None, same=None):
    """Weakly connected groups of ``members`` over tensor edges (union-find).

    ``order`` (default: the model's topological order) gives the order of the groups
    (by their first member) and of the members inside each group.  ``same(p, c)``,
    when given, keeps only the edges between members it accepts (e.g. nodes on one
    provider: the fragments of docs/contract.md §1).
    """
    from .order import topological_order

    member_set = members if isinstance(members, (set, frozenset, dict)) else set(members)
    parent = {i: i for i in member_set}

    def find(a):
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for i in member_set:
        for p, _ in model.in_edges(i):
            if p in member_set and (same is None or same(p, i)):
                ra, rb = find(p), find(i)
                if ra != rb:
                    parent[max(ra, rb)] = min(ra, rb)
    groups = {}
    for i in (topological_order(model) if order is None else order):
        if i in member_set:
            groups.setdefault(find(i), []).append(i)
    return list(groups.values())


def formal_inputs(model, scope, members):
    """A graph's inputs (``GraphViewer::GetInputs``): the main graph's, or a body's formal inputs.

    ``members`` are the nodes of the graph ``scope`` (``""`` for the main graph).  The
    outer-scope tensors a body reads are not among its formal inputs: they are the
    owning node's ``implicit_inputs``.
    """
    if not scope:
        return set(model.graph_inputs)
    parent = model.nodes[members[0]].parent
    outer = set(model.nodes[parent].implicit_inputs) if parent is not None else set()
    out = set()
    for i in members:
        for t in model.nodes[i].inputs:
            if t and t not in outer and model.producer.get(t) is None and model.value(t).kind == "input":
                out.add(t)
    return out
