"""The float16 casts a CPU-only optimizer session adds, taken back out for sessions with accelerators.

ORT's InsertCastTransformer runs after partitioning in every session (``inference_session.cc``
``TransformGraph``; ``optimizer/insert_cast_transformer.cc``): a node no provider took whose input is
float16 gets ``Cast`` nodes to and from float32 (``InsertedPrecisionFreeCast_<tensor>``) and runs on
the CPU in float32, its tensors renamed ``InsertedPrecisionFreeCast_<tensor>``; a later pass folds
the cast float16 initializers into float32 copies (``FusedBack_<name>``,
``fuse_initializers_transformer.cc``).  partsim's oracle is a CPU-only session, where that happens to
every float16 node the CPU has no float16 kernel for.  In a session with CUDA, OpenVINO, QNN ...
those nodes go to the accelerator in float16 and no cast is made, so :func:`undo_insert_cast` puts
the float16 graph back: the casts removed, the tensors and initializers under their own names and
types again (types are then inferred anew).  Casts a session with those providers does make (around
float16 nodes left on the CPU) come back from the CPU-only pass over those nodes
(:func:`partsim.runtime.cpu_pass.cpu_pass`).
"""

__all__ = ["has_float16", "undo_insert_cast"]

CAST_PREFIX = "InsertedPrecisionFreeCast_"
FUSED_PREFIX = "FusedBack_"
FLOAT16 = 10


def has_float16(proto):
    """Whether the main graph has a float16 input, output, declared value or initializer."""
    g = proto.graph
    if any(t.data_type == FLOAT16 for t in g.initializer):
        return True
    return any(v.type.tensor_type.elem_type == FLOAT16 for v in list(g.input) + list(g.output) + list(g.value_info)
               if v.type.HasField("tensor_type"))


def undo_insert_cast(optimized, original):
    """``optimized`` (ORT's saved graph, changed in place) without the float16 casts; returns the
    names of the Cast nodes removed."""
    g = optimized.graph
    names = set()
    for n in original.graph.node:
        names.update(t for t in list(n.input) + list(n.output) if t)
    names.update(v.name for v in original.graph.input)
    fp16_inits = {t.name: t for t in original.graph.initializer if t.data_type == FLOAT16}
    names.update(t.name for t in original.graph.initializer)

    rename = {}
    for n in g.node:
        for t in list(n.input) + list(n.output):
            if t.startswith(CAST_PREFIX) and t[len(CAST_PREFIX):] in names:
                rename[t] = t[len(CAST_PREFIX):]
    restored = []
    kept_inits = []
    for init in g.initializer:
        base = init.name[len(FUSED_PREFIX):] if init.name.startswith(FUSED_PREFIX) else None
        if base in fp16_inits and list(fp16_inits[base].dims) == list(init.dims):
            rename[init.name] = base
            restored.append(fp16_inits[base])
        else:
            kept_inits.append(init)
    if not rename:
        return ()
    removed = []
    nodes = []
    for n in g.node:
        ins = [rename.get(t, t) for t in n.input]
        outs = [rename.get(t, t) for t in n.output]
        if n.op_type == "Cast" and n.name.startswith(CAST_PREFIX) and len(ins) == 1 and ins == outs:
            removed.append(n.name)
            continue
        del n.input[:]
        n.input.extend(ins)
        del n.output[:]
        n.output.extend(outs)
        nodes.append(n)
    copies = []
    for n in nodes:
        c = type(n)()
        c.CopyFrom(n)
        copies.append(c)
    del g.node[:]
    g.node.extend(copies)
    have = {t.name for t in kept_inits}
    del g.initializer[:]
    g.initializer.extend(kept_inits)
    g.initializer.extend(t for t in restored if t.name not in have)
    stale = set(rename) | set(rename.values())
    keep_vi = [v for v in g.value_info if v.name not in stale]
    del g.value_info[:]
    g.value_info.extend(keep_vi)
    return tuple(removed)
