"""ORT's partition-forming wave algorithm, ported.

Source: ``onnxruntime/core/providers/partitioning_utils.cc``,
``CreateSupportedPartitionNodeGroups`` (ORT main, 2026; the same logic is mirrored in
``tools/python/util/mobile_helpers/usability_checker.py:check_partitioning``).

Kahn's topological sort that forms groups as it goes.  One wave produces at most
one group: it takes every ready node, adds the supported ones to the current group,
and defers unsupported nodes that consume an output of the group (the group's
*border*) to the next wave.  A node already owned by another provider counts as
unsupported.  With node units (QDQ groups) the unit is processed as one node.
"""

from collections import deque

__all__ = ["create_supported_groups"]


def create_supported_groups(order, in_count, downstream, is_supported, on_group_closed=None,
                            unit_members=None):
    """Form partition node groups.

    Parameters
    ----------
    order : list of int
        The nodes (unit representatives when ``unit_members`` is given) of one
        graph, in topological order; roots are taken in this order.
    in_count : dict of int -> int
        Per node, the number of input edges from nodes of this graph (ORT counts
        one per edge, so a node reading a tensor twice counts twice).
    downstream : callable
        ``downstream(i)`` -> list of downstream nodes of ``i`` (one entry per edge).
    is_supported : callable
        ``is_supported(i)`` -> bool.
    on_group_closed : callable, optional
        ``on_group_closed(group)`` -> bool; False drops the group.
    unit_members : callable, optional
        ``unit_members(i)`` -> list of nodes that join the group with ``i``
        (its DQ inputs, itself, its Q outputs) in topological order.

    Returns
    -------
    list of list of int
        The groups kept, in the order they were closed.

    Examples
    --------
    A chain 0 -> 1 -> 2 with node 1 unsupported gives two groups:

    >>> nxt = {0: [1], 1: [2], 2: []}
    >>> create_supported_groups([0, 1, 2], {0: 0, 1: 1, 2: 1}, nxt.__getitem__, lambda i: i != 1)
    [[0], [2]]
    """
    in_degree = dict(in_count)
    to_process = deque(i for i in order if in_degree[i] == 0)
    with_next_group = deque()
    groups = []
    group = []
    border = set()

    def close_group():
        if group:
            if on_group_closed is None or on_group_closed(list(group)):
                groups.append(list(group))
            group.clear()
            border.clear()

    processed = 0
    while to_process or with_next_group:
        if not to_process:
            close_group()
            to_process, with_next_group = with_next_group, deque()
            continue
        node = to_process.popleft()
        supported = is_supported(node)
        if not supported and node in border:
            with_next_group.append(node)
            continue
        if supported:
            group.extend(unit_members(node) if unit_members else (node,))
            border.discard(node)
        for d in downstream(node):
            if supported:
                border.add(d)
            in_degree[d] -= 1
            if in_degree[d] == 0:
                to_process.append(d)
        processed += 1
    close_group()
    if processed != len(in_degree):
        raise ValueError(f"wave processed {processed} of {len(in_degree)} nodes: the graph has a cycle")
    return groups
