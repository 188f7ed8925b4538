"""The CPU nodes as ORT's layout transformation leaves them, for the CPU-only Level 2/3 pass.

ORT runs Level 2/3 after partitioning, and partitioning includes the NHWC layout transformation of a compiling
provider (QNN, NNAPI, XNNPACK, ...; ``../shared/ORT-PIPELINE.md`` §1): its transpose optimizer has pushed
Transposes through the unassigned nodes (the CPU nodes in the end), rewiring them, and added Transposes the CPU
takes.  Level 2 sees that form.  Seen on real onnxruntime-qnn 2.7.0 sessions: in ppocrv6_rec_small the optimizer
pushes a Transpose through four CPU LayerNormalization chains and adds a CPU Transpose in front of each attention
MatMul, which MatmulTransposeFusion then folds into the MatMul (``MatMul.<k>/MatmulTransposeFusion/``); the graph
as partitioned (Level 1's) has no Transpose there.

:func:`layout_region` gives the CPU pass (:func:`partsim.runtime.cpu_pass.cpu_pass`) that form of the CPU nodes
the optimizer changed: the rewired ones with their new inputs and outputs, the Transposes it added that a CPU node
reads, and the tensors' types after the transformation.  Pure.
"""

from dataclasses import dataclass

__all__ = ["LayoutRegion", "layout_region", "region_nodes"]

CPU = "CPUExecutionProvider"


@dataclass(frozen=True)
class LayoutRegion:
    """The CPU nodes the layout transformation changed, in its graph's order.

    ``nodes``: ``(name, inputs, outputs, attributes, added)``: a node of the partitioned graph (rewired) with the
    attributes the optimizer changed, or (``added``) a Transpose it added with its ``perm``; ``replaced``: the names of the CPU nodes of the
    partitioned graph the optimizer rewired or removed; ``types``: ``{tensor: (dtype, shape)}`` after the
    transformation; ``read_elsewhere``: tensors of ``nodes`` that a node outside the CPU nodes, or the graph's
    outputs, read after the transformation."""

    nodes: tuple
    replaced: frozenset
    types: dict
    read_elsewhere: frozenset


def layout_region(model, layouts, cpu_names):
    """The :class:`LayoutRegion` of the main graph's layout transformations (``layouts``:
    :class:`partsim.sim.layout.LayoutResult` per NHWC provider), or ``None`` when they changed no CPU node.

    ``cpu_names``: the names of the main-graph nodes partitioning leaves on the CPU (those the optimizer rewired
    included)."""
    nodes, replaced, types, elsewhere = [], set(), {}, set()
    for r in layouts:
        if r.scope:
            continue
        rewired = {model.nodes[i].name for i in r.removed + r.touched if model.nodes[i].name in cpu_names}
        if not rewired and not r.cpu_transposes:
            continue
        cpu_reads = {t for orig, _, ins, _, _ in r.graph if orig is not None and model.nodes[orig].name in cpu_names
                     for t in ins}
        added = {out: (name, perm) for name, out, perm in r.cpu_transposes if out in cpu_reads}
        mine, attrs = [], dict(r.changed_attrs)
        for orig, op, ins, outs, ep in r.graph:
            if orig is not None and model.nodes[orig].name in rewired:
                mine.append((model.nodes[orig].name, ins, outs, attrs.get(orig, ()), False))
            elif orig is None and ep == CPU and op == "Transpose" and outs and outs[0] in added:
                mine.append((added[outs[0]][0], ins, outs, (("perm", added[outs[0]][1]),), True))
        made = {t for _, _, outs, _, _ in mine for t in outs if t}
        names = {name for name, *_ in mine}
        for orig, _, ins, outs, ep in r.graph:
            if orig is not None:
                inside = model.nodes[orig].name in names or model.nodes[orig].name in cpu_names
            else:
                inside = bool(outs) and outs[0] in added
            if not inside:  # another provider's node, or one the optimizer added for it
                elsewhere.update(t for t in ins if t in made)
        elsewhere.update(t for t in model.graph_outputs if t in made)
        nodes += mine
        replaced |= rewired
        types.update((t, (dtype, shape)) for t, dtype, shape in r.tensor_types)
    if not nodes and not replaced:
        return None
    return LayoutRegion(tuple(nodes), frozenset(replaced), types, frozenset(elsewhere))


def region_nodes(region, protos_by_name):
    """The NodeProtos of ``region.nodes``: a rewired node is its proto in the partitioned graph
    (``protos_by_name``) with the new inputs, outputs and changed attributes; an added Transpose is made.  ``None``
    when a rewired node's proto is missing."""
    import onnx

    out = []
    for name, ins, outs, attrs, added in region.nodes:
        if added:  # a Transpose the optimizer added
            out.append(onnx.helper.make_node("Transpose", list(ins), list(outs), name=name, perm=list(dict(attrs)["perm"])))
            continue
        src = protos_by_name.get(name)
        if src is None:
            return None
        node = onnx.NodeProto()
        node.CopyFrom(src)
        del node.input[:]
        node.input.extend(ins)
        del node.output[:]
        node.output.extend(outs)
        for key, value in attrs:  # the attributes the optimizer changed
            kept = [a for a in node.attribute if a.name != key]
            del node.attribute[:]
            node.attribute.extend(kept)
            if value is not None:
                node.attribute.append(onnx.helper.make_attribute(key, list(value) if isinstance(value, tuple) else value))
        out.append(node)
    return out
