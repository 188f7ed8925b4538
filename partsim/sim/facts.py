"""What ORT's pipeline knew about a graph before partitioning, handed to the simulation as one record.

The prepare stage (:mod:`partsim.runtime.pipeline`) reads these facts off ORT's own rewrites; the
simulation (:func:`partsim.sim.assign.simulate`) reads them here, never through a side channel of the IR
(the IR is read-only once built).  Pure data.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

__all__ = ["SessionFacts", "NO_FACTS"]


def _frozen(mapping) -> Mapping:
    return MappingProxyType(dict(mapping or {}))


@dataclass(frozen=True)
class SessionFacts:
    """Facts of one session's graph that the graph itself does not carry.

    name_counter
        Where ``Graph``'s name counter stands when partitioning starts: ORT's rewrites before it
        (inlining, Level 1) named nodes ``<base>_token_<k>`` from one counter (``graph/graph.cc``
        ``GenerateNodeName``), which the NHWC layout transformation continues.
    partition_rounds
        Node index -> the partitioning round its node joins (a function body ORT inlines after a
        provider refused the function node is partitioned again, ``graph_partitioner.cc`` ``InlineNodes``).
    rewritten_after_partitioning
        Names of nodes a Level 2/3 pass on the CPU rewrote after partitioning: the providers validated
        their earlier form, so they register no tensors (QNN, :mod:`partsim.sim.qnn_tensors`).
    pinned
        Node name -> provider for nodes ORT assigned itself after partitioning.
    unnamed
        Indices of the nodes the file left without a name (the IR names them ``<op>_<index>``, ORT's graph
        holds ``""``): the NHWC layout transformation names their copies ``GenerateNodeName("")``.
    load_refusal
        ORT's refusal at load of a node of the model as written that the graph no longer holds (a function
        node inlined before partitioning: ORT checks it before it inlines), or ``""``.
    """

    name_counter: int = 0
    partition_rounds: Mapping[int, int] = field(default_factory=dict)
    rewritten_after_partitioning: frozenset = frozenset()
    pinned: Mapping[str, str] = field(default_factory=dict)
    unnamed: frozenset = frozenset()
    load_refusal: str = ""

    def __post_init__(self):
        object.__setattr__(self, "partition_rounds", _frozen(self.partition_rounds))
        object.__setattr__(self, "pinned", _frozen(self.pinned))
        object.__setattr__(self, "rewritten_after_partitioning", frozenset(self.rewritten_after_partitioning))
        object.__setattr__(self, "unnamed", frozenset(self.unnamed))


NO_FACTS = SessionFacts()  # a graph as written: nothing ORT did before partitioning to know about
