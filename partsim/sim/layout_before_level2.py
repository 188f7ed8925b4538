"""The final view where ORT's layout transformation ran before Level 2: what it removed, what it unmade.

ORT transforms the layout for an NHWC provider (WebGPU) while it partitions, before Level 2
(``inference_session.cc`` ``TransformGraph``, ORT-PIPELINE §1, §5); its transpose optimizer removes model
Transposes and moves others through the nodes after them, rewriting their axes.  partsim's final view
comes from a CPU-only session that runs Level 2 first and lays the graph out afterwards, so two things
are taken from the layout transformation of the *partitioned* graph (the assignment's layout results):

- a model node the layout transformation removed is gone before Level 2 runs: it is not in the graph ORT
  runs, whatever partsim's later layout pass left;
- ``LayerNormFusion`` (``core/optimizer/layer_norm_fusion.cc``, ``CheckAxesOnReduceMean``) fuses a
  pattern only when its ReduceMean reduces the last axis; a ReduceMean the transpose optimizer rewired
  (a Transpose moved into its input changes its axes) is one ORT no longer fuses there: the pattern's
  nodes stay as partitioned.  Seen on real onnxruntime-ep-webgpu sessions: PP-OCRv4/v6 rec (the model's
  Transposes before the LayerNorm move in, the patterns stay unfused; untouched ones fuse).

Pure: no I/O, no ORT.
"""

from .final_view import FinalNode, FinalView

__all__ = ["after_partition_layout"]

_UNMADE = ("fused:LayerNormFusion", "fused:SkipLayerNormFusion")


def _pattern(f, model, index):
    """The partitioned nodes of fused node ``f``: those it replaces, and the ReduceMean that feeds one of
    its Subs (the pattern's first node, which reads the input the Sub reads too: the final view may hand it
    to the input's producer)."""
    parts = [index[p] for p in f.replaces if p in index]
    for i in list(parts):
        if model.nodes[i].op_type != "Sub":
            continue
        for t in model.nodes[i].inputs:
            j = model.producer.get(t)
            if j is not None and j not in parts and model.nodes[j].op_type == "ReduceMean":
                parts.append(j)
    if f.origin == "fused:SkipLayerNormFusion":  # skip_layer_norm_fusion.cc: the Add before it, and the bias
        for i in [k for k in parts if model.nodes[k].op_type == "ReduceMean"]:  # Add before that one
            j = model.producer.get(model.nodes[i].inputs[0])
            if j is None or model.nodes[j].op_type != "Add":
                continue
            if j not in parts:
                parts.append(j)
            for t in model.nodes[j].inputs:
                b = model.producer.get(t)
                if b is not None and b not in parts and model.nodes[b].op_type == "Add" and any(
                        model.value(u).kind in ("initializer", "constant") for u in model.nodes[b].inputs):
                    parts.append(b)
    return parts


def after_partition_layout(view, assignment):
    """``view`` (a :class:`FinalView`) as ORT leaves it given the layout transformation the partitioned
    graph (``assignment``) went through; ``view`` itself when that changes nothing."""
    layouts = [r for r in assignment.layout or () if not r.scope]
    if not layouts:
        return view
    model = assignment.model
    nodes = model.nodes
    index = {n.name: n.index for n in nodes}
    removed = {nodes[i].name: nodes[i].op_type for r in layouts for i in r.removed}
    rewired = {r.provider: {i for i in r.touched if nodes[i].op_type == "ReduceMean"} for r in layouts}
    out, ends, alone = [], dict(view.ends_as), set()
    for f in view.nodes:
        if removed.get(f.name) == f.op_type:
            ends[f.name] = ()
            alone.add(f.name)
            continue
        parts = _pattern(f, model, index) if f.origin in _UNMADE else []
        if not any(i in rewired.get(f.provider, ()) for i in parts):
            out.append(f)
            continue
        for i in sorted(parts):
            n = nodes[i]
            out.append(FinalNode(n.name, n.op_type, n.domain, assignment.provider[i], "model", (n.name,)))
            ends[n.name] = (n.name,)
            alone.add(n.name)
    if not alone:
        return view
    out = [f if f.replaces == (f.name,) or not alone & set(f.replaces) else
           FinalNode(f.name, f.op_type, f.domain, f.provider, f.origin, tuple(p for p in f.replaces if p not in alone))
           for f in out]
    return FinalView(tuple(out), ends)
