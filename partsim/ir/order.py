"""Topological orders of a model's nodes: ORT's stable order, per graph.
"""


__all__ = ["topological_order", "stable_topological_order", "ort_default_order"]


def stable_topological_order(indeg, successors, key=None):
    """Kahn's algorithm that keeps index order where it can (ties go to the lower index, or to the
    smaller ``key(i)`` when a key is given).

    Parameters
    ----------
    indeg : list of int
        Per item, the number of its predecessors (one per edge); consumed.
    successors : callable
        ``successors(i)`` -> iterable of the items ``i`` feeds (one per edge).

    Returns
    -------
    list of int
        Shorter than ``indeg`` when there is a cycle.

    Examples
    --------
    >>> stable_topological_order([1, 0, 1], {0: [2], 1: [0], 2: []}.__getitem__)
    [1, 0, 2]
    """
    import heapq

    rank = (lambda i: (key(i), i)) if key is not None else (lambda i: i)
    heap = [rank(i) for i, d in enumerate(indeg) if d == 0]
    heapq.heapify(heap)
    order = []
    while heap:
        i = heapq.heappop(heap)
        i = i[1] if key is not None else i
        order.append(i)
        for c in successors(i):
            indeg[c] -= 1
            if indeg[c] == 0:
                heapq.heappush(heap, rank(c))
    return order


def topological_order(model):
    """Node indices in a topological order that keeps file order where it can.

    :func:`stable_topological_order` over :meth:`Model.in_edges`, so a model that is
    already sorted keeps its order.  Derived once per model (the builder hands over
    the file order when it found the file already sorted).
    """
    return model.derived("topological_order", lambda: _kahn(model))


def _kahn(model):
    indeg = [len(model.in_edges(i)) for i in range(len(model.nodes))]
    return stable_topological_order(indeg, lambda i: [c for c, _ in model.out_edges(i)])


def ort_default_order(members, producers):
    """ORT's ``GraphViewer`` default topological order over node ids ``members``.

    ``graph_viewer.cc`` / ``graph.cc`` (``ReverseDFSFrom`` with ``NodeCompare``): a reverse DFS
    from the nodes nothing in ``members`` consumes, those leaves pushed in id order (so the last
    is explored first), each node's ``producers(i)`` pushed in the order given (ascending ids
    for ORT's compare), a node emitted when it is left (post-order).

    >>> ort_default_order([0, 1, 2], {0: [], 1: [0], 2: [0]}.__getitem__)
    [0, 2, 1]
    """
    member_set = set(members)
    prods = {i: [p for p in producers(i) if p in member_set] for i in members}
    has_consumer = dict.fromkeys(members, False)
    for i in members:
        for p in prods[i]:
            has_consumer[p] = True
    stack = [(i, False) for i in sorted(members) if not has_consumer[i]]
    visited, order = set(), []
    while stack:
        i, leave = stack.pop()
        if leave:
            order.append(i)
            continue
        if i in visited:
            continue
        visited.add(i)
        stack.append((i, True))
        for p in prods[i]:
            stack.append((p, False))
    return order
