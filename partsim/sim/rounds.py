"""ORT's partitioning rounds: nodes that appear after a round are partitioned apart.

``GraphPartitioner::PartitionOnnxFormatModel`` (``onnxruntime/core/framework/graph_partitioner.cc``)
runs every provider's GetCapability over the graph, then ``InlineNodes`` replaces each function
node left without a provider (no EP claimed it, no kernel) by its body, and runs the providers
again while the graph changed.  In the next round every node of the earlier rounds already has its
provider (a compiling EP's groups are fused into one node each), so the new body nodes can only
form groups among themselves: a provider never extends an earlier partition with them.  Seen on
real onnxruntime-qnn 2.7.0 sessions (verbose log): the attention ``_expanded`` node tests' two
CastLike nodes QNN refuses (dynamic shape) are inlined into Casts of constants, which QNN then
claims as a partition of their own, with no graph input.

The pipeline (``partsim/runtime/pipeline.py``) inlines every body up front and records each
body node's round (``partition_rounds``: node index -> round >= 1, see
:func:`partsim.sim.inline.inline_functions`); this module turns that into one membership test
per round.  Pure.
"""

__all__ = ["partition_rounds"]


def partition_rounds(round_of, members, units=None):
    """The rounds in which the nodes ``members`` (one graph) are partitioned.

    Parameters
    ----------
    round_of : mapping
        Node index -> its round, for the nodes a later round partitions
        (:attr:`partsim.sim.facts.SessionFacts.partition_rounds`).
    members : list of int
    units : dict, optional
        ``{representative: unit members}`` when the wave walks QDQ node units.

    Returns
    -------
    list
        ``[None]`` when every member is partitioned in the first round (nothing to split), else one
        predicate per round, in round order: ``in_round(x)`` for a node or unit representative
        ``x`` is true when it (every member of its unit) is partitioned in that round.

    >>> later = {2: 1}  # node 2 came from a body inlined after the first round
    >>> [f(2) for f in partition_rounds(later, [0, 1, 2])], [f(0) for f in partition_rounds(later, [0, 1, 2])]
    ([False, True], [True, False])
    >>> partition_rounds(later, [0, 1])
    [None]
    """
    present = sorted({round_of[i] for i in members if i in round_of})
    if not present:
        return [None]

    def test(k):
        def in_round(x):
            group = units.get(x, (x,)) if units else (x,)
            return all(round_of.get(m, 0) == k for m in group)
        return in_round

    return [test(k) for k in [0] + present]
