"""Topological orders of a model's nodes: ORT's stable order, per graph.
"""


__all__ = ["topological_order", "stable_topological_order"]


def stable_topological_order(indeg, successors):
    """Kahn's algorithm that keeps index order where it can (ties go to the lower index).

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

    heap = [i for i, d in enumerate(indeg) if d == 0]
    heapq.heapify(heap)
    order = []
    while heap:
        i = heapq.heappop(heap)
        order.append(i)
        for c in successors(i):
            indeg[c] -= 1
            if indeg[c] == 0:
                heapq.heappush(heap, c)
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
