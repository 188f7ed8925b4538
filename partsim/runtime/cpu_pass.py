"""The CPU-only Level 2/3 pass: ORT's transformers on the nodes partitioning left on the CPU.

ORT runs Level 2/3 after partitioning, each transformer on the nodes of its providers
(``graph_utils::IsSupportedProvider``): TransposeOptimizer_CPU, ConvActivationFusion, the
NCHWc/NHWC layout transformers ... rewrite CPU nodes next to nodes on CUDA.  The CPU nodes
are cut out as a model of their own (boundary tensors become its inputs and outputs), a
CPU-only session rewrites it, and the result replaces them (:func:`cpu_pass`).
"""

__all__ = ["cpu_pass", "CPU_ONLY_TARGETS"]

# ops the CPU-only Level 2/3 transformers rewrite (graph_transformer_utils.cc: NchwcTransformer,
# NhwcTransformer, ConvActivationFusion, ConvAddActivationFusion, GemmActivationFusion,
# MatMulIntegerToFloatFusion, DynamicQuantizeMatMulFusion, QDQSelectorActionTransformer,
# TransposeOptimizer_CPU), and the float ops that start a pattern of the fusions a WebGPU node's provider
# switches off in the first session (sim/pipeline.py TRANSFORMER_EPS: SimplifiedLayerNormFusion at
# ReduceMean, AttentionFusion and BiasSoftmaxFusion at Softmax); CPU nodes that are only shape computations
# (Shape, Gather, Concat ... left on the CPU next to CUDA or WebGPU) give them nothing to do and are not cut
# out (not modelled: GatherSliceToSplitFusion on such Gathers, docs/providers.md)
CPU_ONLY_TARGETS = frozenset(("", op) for op in (
    "Conv", "ConvTranspose", "ConvInteger", "QLinearConv", "MaxPool", "AveragePool", "GlobalAveragePool",
    "GlobalMaxPool", "BatchNormalization", "Gemm", "MatMul", "MatMulInteger", "DynamicQuantizeLinear",
    "QuantizeLinear", "DequantizeLinear", "QLinearMatMul", "Transpose", "Resize", "Upsample",
    "ReduceMean", "Softmax"))


def cpu_pass(graph_model, cpu_names, tmp, optimize, known_types=None, index_of=None, any_op=False, float16=False,
             region=None):
    """The CPU-only Level 2/3 transformers on the nodes ``cpu_names`` partitioning left on the CPU.

    ``optimize(model path, target path)`` runs the CPU-only session (``None`` when it succeeded);
    ``known_types``: partsim's inferred ``{tensor: (dtype, shape)}``; ``index_of``: ORT's node indices
    (a dict, or a callable making one); ``region``: the CPU nodes as the layout transformation left them
    (:class:`partsim.runtime.layout_region.LayoutRegion`), which replace the rewired ones and go in with the
    others; when the graph this makes does not hold together (a tensor read that nothing makes, or made twice),
    the pass runs without them.  Returns the spliced model and the names of the nodes it made or took from the
    region (they stay on the CPU, as ORT assigns a transformer's new nodes to the EP of the nodes it replaced);
    ``(graph_model, ())`` when there is nothing to do or the pass cannot be made.
    """
    if region is not None:
        done = _pass(graph_model, cpu_names, tmp, optimize, known_types, index_of, any_op, float16, region)
        if done is not None:
            return done
    return _pass(graph_model, cpu_names, tmp, optimize, known_types, index_of, any_op, float16) or (graph_model, ())


def _pass(graph_model, cpu_names, tmp, optimize, known_types, index_of, any_op, float16, region=None):
    """:func:`cpu_pass` with or without the layout ``region``; ``None`` when the region's graph does not hold."""
    import onnx

    from .layout_region import region_nodes

    g = graph_model.graph
    cpu = [n for n in g.node if n.name and n.name in cpu_names]
    own = {(n.name, n.domain or "", n.op_type) for n in cpu}
    removed, typed, also_read = set(cpu_names), {}, ()
    if region is not None:
        extra = region_nodes(region, {n.name: n for n in g.node if n.name})
        if extra is None:
            return None
        cpu += extra
        removed |= region.replaced
        mine = {t for n in extra for t in list(n.input) + list(n.output) if t}
        typed = {t: v for t in sorted(mine) if t in region.types and region.types[t][0]
                 and (v := _typed(t, *region.types[t]))}
        also_read = region.read_elsewhere
    if float16 and any((known_types or {}).get(t, ("",))[0] == "float16" for n in cpu for t in n.input):
        any_op = True  # ORT's InsertCastTransformer casts the float16 nodes left on the CPU
    if not any_op and not any((n.domain or "", n.op_type) in CPU_ONLY_TARGETS or n.domain == "com.microsoft"
                              for n in cpu):
        return graph_model, ()  # shape computations only: no CPU-only transformer has work there
    if not cpu or any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
                      for n in cpu for a in n.attribute):
        return graph_model, ()
    boundary = _cut_out(g, cpu, removed, known_types, typed, also_read)
    if boundary is None:
        return None if region is not None else (graph_model, ())
    ins, outs, inits = boundary
    if region is not None and not _available(g, removed, {v.name for v in ins}):
        return None
    # ORT's node indices: the model's own order, nodes added by Level 1 after them
    index_of = (index_of() if callable(index_of) else index_of) or {}
    cpu = [n for _, n in sorted(enumerate(cpu), key=lambda kn: (index_of.get(kn[1].name, len(index_of) + kn[0])))]
    sub = onnx.helper.make_graph(_session_order(cpu), g.name + "_cpu", ins, outs, inits)
    sub_model = onnx.helper.make_model(sub, opset_imports=list(graph_model.opset_import),
                                       ir_version=graph_model.ir_version)
    sub_path = tmp / "cpu_part.onnx"
    onnx.save(sub_model, str(sub_path))
    target = tmp / "cpu_part_optimized.onnx"
    if optimize(sub_path, target) is not None:
        return None if region is not None else (graph_model, ())
    done = onnx.load(str(target), load_external_data=False)
    spliced, made = _splice(graph_model, own, removed, done, ins, outs, set(typed))
    if region is not None and not _holds_together(spliced.graph):
        return None
    return spliced, made


def _typed(t, dtype, shape):
    """A ValueInfoProto of tensor ``t`` (``None`` when the dtype has no ONNX name)."""
    import onnx

    try:
        elem = onnx.TensorProto.DataType.Value(dtype.upper())
    except ValueError:
        return None
    dims = None if shape is None else [d if isinstance(d, int) and d >= 0 else (d or None) for d in shape]
    return onnx.helper.make_tensor_value_info(t, elem, dims)


def _available(g, removed, names):
    """Whether every tensor of ``names`` is a graph input, an initializer or an output of a node of ``g`` that
    stays (not in ``removed``)."""
    have = {i.name for i in g.input} | {t.name for t in g.initializer}
    have |= {o for n in g.node if not (n.name and n.name in removed) for o in n.output if o}
    return all(t in have for t in names)


def _holds_together(g):
    """Every tensor a node reads is made by one node or is a graph input or initializer, and no two nodes
    make one tensor."""
    made = [o for n in g.node for o in n.output if o]
    have = set(made) | {i.name for i in g.input} | {t.name for t in g.initializer}
    reads = {t for n in g.node for t in n.input if t} | {o.name for o in g.output}
    return len(made) == len(set(made)) and reads <= have


def _cut_out(g, cpu, cpu_names, known_types, typed=None, also_read=()):
    """The cut-out model's ``(inputs, outputs, initializers)``: the tensors crossing the boundary of the
    ``cpu`` nodes, typed; ``None`` when a boundary tensor's element type is unknown or nothing leaves.
    ``cpu_names``: the nodes of ``g`` the cut-out replaces; ``typed``: value infos that take precedence (the
    types after the layout transformation); ``also_read``: tensors read outside it besides those ``g`` shows."""
    produced = {o for n in cpu for o in n.output if o}
    inits = {t.name: t for t in g.initializer}
    outside_reads = {t for n in g.node if not (n.name and n.name in cpu_names) for t in n.input}
    outside_reads |= {o.name for o in g.output} | set(also_read)
    base_info = _value_infos(g, known_types)

    def value_info(t):
        return (typed or {}).get(t) or base_info(t)
    ins, outs, used_inits = [], [], []
    for n in cpu:
        for t in n.input:
            if not t or t in produced:
                continue
            if t in inits:
                if t not in used_inits:
                    used_inits.append(t)
            elif t not in [i.name for i in ins]:
                vi = value_info(t)
                if vi is None:
                    return None
                ins.append(vi)
        for t in n.output:
            if t and t in outside_reads:
                vi = value_info(t)
                if vi is None:
                    return None
                outs.append(vi)
    if not outs:
        return None
    return ins, outs, [inits[t] for t in used_inits]


def _value_infos(g, known_types):
    """``value_info(tensor)``: the ValueInfoProto of a tensor of ``g`` (saved by ORT, or partsim's inferred
    type), or ``None`` when even its element type is unknown."""
    import onnx

    types = {vi.name: vi for vi in list(g.value_info) + list(g.input) + list(g.output)}
    for t, (dtype, shape) in (known_types or {}).items():  # partsim's inferred types (ORT saves few)
        if t not in types:
            try:
                elem = onnx.TensorProto.DataType.Value(dtype.upper())
            except ValueError:
                continue
            dims = None if shape is None else [d if isinstance(d, int) and d >= 0 else (d or None) for d in shape]
            types[t] = onnx.helper.make_tensor_value_info(t, elem, dims)
    producer = {o: n for n in g.node for o in n.output if o}
    elem_of = {t: vi.type.tensor_type.elem_type for t, vi in types.items() if vi.type.HasField("tensor_type")}
    elem_of.update((t.name, t.data_type) for t in g.initializer)

    def elem(t, depth=0):
        """An element type partsim could not infer (a contrib op's output): a quantized op's
        output has its output zero point's type; a data-movement op's its first input's."""
        if t in elem_of or depth > 50:
            return elem_of.get(t)
        n = producer.get(t)
        if n is None:
            return None
        if n.op_type.startswith("QLinear") or n.op_type in ("QGemm", "QuantizeLinear", "DynamicQuantizeLinear"):
            zps = [x for x in n.input if x and x.endswith("zero_point")]
            found = elem(zps[-1], depth + 1) if zps else None
        else:
            found = elem(n.input[0], depth + 1) if n.input and n.input[0] else None
        if found:
            elem_of[t] = found
        return found

    def value_info(t):
        if t in types:
            return types[t]
        e = elem(t)
        return onnx.helper.make_tensor_value_info(t, e, None) if e else None

    return value_info


def _splice(graph_model, cut, cpu_names, done, ins, outs, fresh=()):
    """``graph_model`` with the nodes ``cpu_names`` replaced by the optimized cut-out ``done``; returns it and the
    names of the nodes that are not one of ``cut`` (``(name, domain, op)`` of the nodes cut out as they were in
    ``graph_model``).  ``fresh``: tensors whose shapes ``done`` has after the layout transformation."""
    import onnx

    g = graph_model.graph
    spliced = onnx.ModelProto()
    spliced.CopyFrom(graph_model)
    kept = [n for n in graph_model.graph.node if not (n.name and n.name in cpu_names)]
    made = list(done.graph.node)
    del spliced.graph.node[:]
    spliced.graph.node.extend(kept)
    spliced.graph.node.extend(made)
    have = {t.name for t in spliced.graph.initializer}
    spliced.graph.initializer.extend(t for t in done.graph.initializer if t.name not in have)
    if fresh:  # the partitioned graph's shapes of these tensors are not those the cut-out had
        stale = [v for v in spliced.graph.value_info if v.name not in fresh]
        del spliced.graph.value_info[:]
        spliced.graph.value_info.extend(stale)
    have_vi = {v.name for v in spliced.graph.value_info}
    spliced.graph.value_info.extend(v for v in done.graph.value_info if v.name not in have_vi)
    # the boundary tensors keep the shapes partsim knew before the pass: a contrib op the pass made
    # (an NHWC QLinearConv) has no ONNX shape inference, and the partitioning that already
    # happened saw them static
    have_vi = {v.name for v in spliced.graph.value_info} | {v.name for v in g.input} | {v.name for v in g.output}
    for v in outs + ins:
        if v.name not in have_vi and v.type.tensor_type.HasField("shape"):
            spliced.graph.value_info.append(v)
            have_vi.add(v.name)
    known = {(o.domain or "") for o in spliced.opset_import}
    for o in done.opset_import:
        if (o.domain or "") not in known:
            spliced.opset_import.add().CopyFrom(o)
    # only the nodes a transformer made are pinned; the others are partitioned as before
    return spliced, tuple(n.name for n in made if (n.name, n.domain or "", n.op_type) not in cut)


def _session_order(nodes):
    """The CPU nodes listed so that the cut-out model's topological order (ORT's
    ``GraphViewer``: reverse DFS from the sink nodes, the sink with the highest index first,
    ``graph.cc`` ``ReverseDFSFrom``) visits its connected pieces in the order the whole graph
    did: pieces in reverse order of their first node, each piece in its own order.  The
    transformers walk that order, and the names they generate follow it."""
    from ..ir.graph import component_roots

    producer = {o: k for k, n in enumerate(nodes) for o in n.output if o}
    root = component_roots(range(len(nodes)), ((producer[t], k) for k, n in enumerate(nodes) for t in n.input
                                               if t in producer))
    pieces = {}
    for k in range(len(nodes)):
        pieces.setdefault(root[k], []).append(nodes[k])
    return [n for root in sorted(pieces, reverse=True) for n in pieces[root]]
