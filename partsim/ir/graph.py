"""Graph questions asked of a model's nodes: connected groups (the one union-find), a graph's formal inputs.

>>> from partsim.ir.model import Model, Node
>>> nodes = [Node(0, "a", "Relu", "", ["x"], ["y"]), Node(1, "b", "Relu", "", ["y"], ["z"]),
...          Node(2, "c", "Relu", "", ["x"], ["w"])]
>>> m = Model("<m>", "", {"": 17}, nodes, {}, {"y": 0, "z": 1, "w": 2}, {"x": [0, 2], "y": [1]}, ["x"], ["z", "w"])
>>> weakly_connected_groups(m, [0, 1, 2])
[[0, 1], [2]]
>>> formal_inputs(m, "", [0, 1, 2])
{'x'}
>>> list(holders(m, m.nodes[1]))  # a main-graph node: no If/Loop/Scan holds it
[]
"""

__all__ = ["weakly_connected_groups", "component_roots", "formal_inputs", "holders"]


def component_roots(items, edges):
    """``{item: root}``: each item's weakly connected piece over ``edges`` (pairs of items), named by
    its smallest item (union-find with path halving; items must be orderable).

    >>> component_roots(range(5), [(3, 1), (4, 3)])
    {0: 0, 1: 1, 2: 2, 3: 1, 4: 1}
    """
    parent = {i: i for i in items}

    def find(a):
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for a, b in edges:
        ra = a if parent[a] == a else find(a)  # a root is its own parent: no call
        rb = b if parent[b] == b else find(b)
        if ra < rb:
            parent[rb] = ra
        elif rb < ra:
            parent[ra] = rb
    # a root is the smallest item of its piece and halving only moves an item closer to it, so every
    # parent is below its item: in ascending order, an item's parent has its root already
    root = {}
    for i in sorted(parent):
        p = parent[i]
        root[i] = i if p == i else root[p]
    return root


def weakly_connected_groups(model, members, order=None, same=None):
    """Weakly connected groups of ``members`` over tensor edges (union-find).

    ``order`` (default: the model's topological order) gives the order of the groups
    (by their first member) and of the members inside each group.  ``same(p, c)``,
    when given, keeps only the edges between members it accepts (e.g. nodes on one
    provider: the fragments of docs/contract.md §1).
    """
    from .order import topological_order

    member_set = members if isinstance(members, (set, frozenset, dict)) else set(members)
    root = component_roots(member_set, ((p, i) for i in member_set for p, _ in model.in_edges(i)
                                        if p in member_set and (same is None or same(p, i))))
    groups = {}
    for i in (topological_order(model) if order is None else order):
        if i in member_set:
            groups.setdefault(root[i], []).append(i)
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


def holders(model, node):
    """The indices of the nodes whose subgraphs hold ``node``, innermost first (an If inside a Loop's body: the
    If, then the Loop); none for a node of the main graph."""
    up = node.parent
    while up is not None:
        yield up
        up = model.nodes[up].parent
