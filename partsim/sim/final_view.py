"""The second view: the graph ORT runs after partitioning, pointing back at the graph it partitioned.

ORT records ``get_provider_graph_assignment_info`` when partitioning ends (after inlining, unique DQs,
Level 1 and the NHWC layout transform); Level 2/3, InsertCast and Memcpy insertion rewrite the graph
afterwards (``../shared/ORT-PIPELINE.md`` §1, §8).  partsim's ``nodes`` are the first graph; this module
relates the second one to it.  Pure: no I/O, no ORT.

How a final node is related to the partitioned nodes it replaced (an independent, structural rule; it
needs no table of ORT's fusions):

1. **Same name.** A node keeps its name through every rewrite that keeps the node (an NCHWc ``Conv``, a
   ``FusedConv`` that took its activation: ORT's fusions keep the target node's name,
   ``selectors_actions/actions.cc`` ``ReplaceWithNew``; ``nchwc_transformer.cc``).
2. **Where its tensors went.** A final node holds the work of the partitioned node that produced a
   tensor it now produces (the same name, or the name a rewrite derived from it: ``<t>_nchwc``), and of
   the vanished nodes fused with it (:func:`_claims`).
3. A partitioned node reached by neither was removed (``endsAs: []``).  A final node that replaces no
   partitioned node was inserted after partitioning: the data converters (``ReorderInput``,
   ``ReorderOutput``, Memcpy) and ``inserted:*`` nodes (``Cast``) always are.

Names ORT generates after partitioning are not stable from process to process (the NCHWc transformer
names its ``ReorderOutput`` nodes, and ``reorder_token_<k>`` tensors, in an order that depends on pointer
hashing), nor is the order it saves nodes in: such a name (``<base>_token_<k>`` not in the partitioned
graph, or a base that repeats) is made canonical as ``<base>#<k>``, ``k`` counting the nodes of that base
in the order of their op and the stable names around them (:func:`_stable_key`), and the nodes are listed
in a topological order led by the partitioned nodes they replace.  Same input, same bytes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["FinalNode", "FinalView", "relate_views", "canonical_names"]

_TOKEN = re.compile(r"^(.*)_token_\d+$")


@dataclass(frozen=True)
class FinalNode:
    """One node of the graph ORT runs: its (canonical) name, op, provider, origin and the names of the
    partitioned nodes it replaced (empty: inserted after partitioning)."""

    name: str
    op_type: str
    domain: str
    provider: str
    origin: str
    replaces: tuple[str, ...]

    def to_record(self) -> dict:
        return {"name": self.name, "opType": self.op_type, "domain": self.domain, "provider": self.provider,
                "origin": self.origin, "replaces": list(self.replaces)}


@dataclass(frozen=True)
class FinalView:
    """The final graph's nodes (in the final graph's order) and, per partitioned node name, the final
    nodes it ended in (``()``: removed)."""

    nodes: tuple[FinalNode, ...]
    ends_as: dict

    def to_record(self) -> list:
        return [n.to_record() for n in self.nodes]


def canonical_names(names, partitioned_names, key_of):
    """``{old name: canonical name}`` for names ORT generated after partitioning.

    ``names``: the final graph's node names in its order; ``partitioned_names``: every name the
    partitioned graph has; ``key_of(i)``: a structural sort key for node ``i`` (its tensor names).

    >>> canonical_names(["conv", "ReorderOutput_token_3", "ReorderOutput"], {"conv"},
    ...                 lambda i: ["", "b", "a"][i])
    {'ReorderOutput': 'ReorderOutput#0', 'ReorderOutput_token_3': 'ReorderOutput#1'}
    """
    groups: dict = {}
    for i, name in enumerate(names):
        if name in partitioned_names:
            continue
        m = _TOKEN.match(name)
        base = m.group(1) if m else name
        groups.setdefault(base, []).append(i)
    renamed = {}
    for base, members in groups.items():
        generated = len(members) > 1 or any(_TOKEN.match(names[i]) for i in members)
        if not generated:
            continue
        for k, i in enumerate(sorted(members, key=lambda j: (key_of(j), j))):
            renamed[names[i]] = f"{base}#{k}"
    return renamed


# nodes ORT inserts after partitioning to convert or copy data; they take no partitioned node's work:
# NCHWc reorders (nchwc_transformer.cc), Memcpy (transformer_memcpy.cc)
_CONVERTERS = frozenset({"ReorderInput", "ReorderOutput", "MemcpyFromHost", "MemcpyToHost"})
# how a rewrite after partitioning renames a tensor it recreates: NCHWc outputs are
# ``GenerateNodeArgName(<name> + "_nchwc")`` (nchwc_transformer.cc), a generated name may carry ``_token_<k>``
_RENAMED = re.compile(r"^(.*?)(_nchwc)?(_token_\d+)?$")


def _tensor_map(final_model, part_model):
    """Final tensor name -> the partitioned graph's tensor it stands for (same name, or the name a
    rewrite after partitioning derived from it)."""
    known = part_model.values
    out = {}
    for n in final_model.nodes:
        for t in list(n.inputs) + list(n.outputs):
            if not t or t in out:
                continue
            if t in known:
                out[t] = t
                continue
            base = _RENAMED.match(t).group(1)
            if base in known:
                out[t] = base
    return out


def _anchors(final_model, part_model, inserted, kept):
    """``{partitioned node: final node}`` for the producers of the tensors each final node now makes."""
    tmap = _tensor_map(final_model, part_model)
    names = {n.name: n.index for n in part_model.nodes}
    owner = {}
    for f in final_model.nodes:
        if f.index in inserted:
            continue
        # fusions name their node "<target node>/<Transformer>/" (ORT-PIPELINE §3: QuickGeluFusion,
        # LayerNormFusion, MatmulTransposeFusion ...): the target is held by it
        for cut in range(len(f.name) - 1, 0, -1):
            p = names.get(f.name[:cut]) if f.name[cut] == "/" else None
            if p is not None and p not in kept:
                owner.setdefault(p, f.index)
                break
        made = [tmap.get(t, "") for t in f.outputs]
        if f.name.endswith("_nchwc"):  # NCHWc nodes are named after the output they replace + "_nchwc"
            made.append(f.name[: -len("_nchwc")])  # (nchwc_transformer.cc), their outputs "reorder_token_<k>"
        for t in made:
            p = part_model.producer.get(t)
            if p is not None and p not in kept:
                owner.setdefault(p, f.index)
    return owner


def _claims(final_model, part_model, inserted, kept):
    """Per partitioned node index: the final node index that holds its work.

    1. Anchors (:func:`_anchors`).
    2. From an anchor upstream, through vanished nodes and tensors with one consumer (a fusion only folds
       a tensor nobody else reads), up to and including the first node of the final node's own op type
       (the core a fused activation was folded into: Conv+Relu is one Conv named after the Relu's output).
    3. Every other vanished node, in topological order, joins the owner of a producer whose tensor it
       alone reads (an Add+Relu folded into the Conv before it), else of any producer, else of a consumer.
    """
    from ..ir.order import topological_order

    owner = _anchors(final_model, part_model, inserted, kept)
    consumers, producer, nodes = part_model.consumers, part_model.producer, part_model.nodes
    for anchor, f in list(owner.items()):
        core = final_model.nodes[f].op_type
        todo = [] if nodes[anchor].op_type == core else [anchor]
        while todo:
            i = todo.pop()
            for t in nodes[i].inputs:
                p = producer.get(t)
                if p is None or p in owner or p in kept or len(consumers.get(t, ())) != 1:
                    continue
                owner[p] = f
                if nodes[p].op_type != core:
                    todo.append(p)
    for i in topological_order(part_model):
        if i in owner or i in kept:
            continue
        ins = [(len(consumers.get(t, ())) != 1, producer[t]) for t in nodes[i].inputs if producer.get(t) in owner]
        if ins:
            owner[i] = owner[min(ins)[1]]
            continue
        outs = [c for t in nodes[i].outputs for c in consumers.get(t, ()) if c in owner]
        if outs:
            owner[i] = owner[outs[0]]
    return owner


def _stable_key(final_model, part_model):
    """``key(i)``: what identifies final node ``i`` whatever ORT called things in this process: its op, and
    each tensor it reads or makes by a name that does not change (one the partitioned graph has, else the
    name of the node that makes or reads it) — generated tensor names (``reorder_token_<k>``) do change."""
    known = part_model.values
    fnodes = final_model.nodes

    def tensor(t, side):
        if t in known or not t:
            return t
        if side == "in":
            p = final_model.producer.get(t)
            return f"<{fnodes[p].name}" if p is not None else t
        return ">" + ",".join(sorted(fnodes[c].name for c in final_model.consumers.get(t, ())))

    def key(i):
        n = fnodes[i]
        return (n.op_type, tuple(tensor(t, "in") for t in n.inputs), tuple(tensor(t, "out") for t in n.outputs))
    return key


def _stable_order(model, key):
    """The node indices of ``model`` in a topological order that does not depend on the order ORT saved
    them in (which changes from process to process): among the nodes ready, the smallest ``key`` first."""
    from ..ir.order import stable_topological_order

    indeg = [len(model.in_edges(i)) for i in range(len(model.nodes))]
    out = stable_topological_order(indeg, lambda i: [c for c, _ in model.out_edges(i)], key)
    seen = set(out)  # a cycle cannot happen in an ONNX graph; keep every node whatever comes
    return out + sorted((i for i in range(len(model.nodes)) if i not in seen), key=key)


def relate_views(part_model, final_model, final_provider, final_origins, folded=None):
    """Relate ``final_model`` (the graph after Level 2/3, with ``final_provider`` per node index and
    ``final_origins`` per node name) to ``part_model`` (the partitioned graph).  Both are partsim IR.
    ``folded``: ``{final node index: final node index}`` of nodes a fusion partsim applies after the
    session's graph folds into another (:mod:`partsim.sim.webgpu_conv_fusion`): they are not listed, their
    work is the other's.

    Returns a :class:`FinalView`; its nodes in a topological order that follows the partitioned nodes they
    replace (not ORT's saving order, which is not stable), with canonical names (:func:`canonical_names`).
    """
    part_names = [n.name for n in part_model.nodes]
    fnodes = final_model.nodes
    inserted = {n.index for n in fnodes if n.op_type in _CONVERTERS
                or final_origins.get(n.name, "").startswith("inserted:")}
    by_name: dict = {}
    for n in fnodes:
        if n.index not in inserted:
            by_name.setdefault(n.name, n.index)
    owner = {p.index: by_name[p.name] for p in part_model.nodes if p.name in by_name}  # rule 1: same name
    owner.update(_claims(final_model, part_model, inserted, owner))  # rule 2: where its tensors went
    folded = folded or {}
    for p, f in owner.items():
        while f in folded:
            f = folded[f]
        owner[p] = f
    replaces: dict = {n.index: [] for n in fnodes}
    for p in part_model.nodes:
        if p.index in owner:
            replaces[owner[p.index]].append(p.name)
    renamed = canonical_names([n.name for n in fnodes], set(part_names), _stable_key(final_model, part_model))
    shown = [renamed.get(n.name, n.name) for n in fnodes]
    first = {}
    for p in part_model.nodes:
        if p.index in owner:
            first.setdefault(owner[p.index], p.index)
    order = _stable_order(final_model, lambda i: (first.get(i, len(part_names)), shown[i]))
    nodes = tuple(FinalNode(shown[i], fnodes[i].op_type, fnodes[i].domain, final_provider[i],
                            final_origins.get(fnodes[i].name, "model"), tuple(replaces[i]))
                  for i in order if i not in folded)
    ends = {p.name: ((shown[owner[p.index]],) if p.index in owner else ()) for p in part_model.nodes}
    return FinalView(nodes, ends)
