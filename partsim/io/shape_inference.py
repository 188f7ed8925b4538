"""ONNX shape inference (without its data propagation, then ORT's shape values) on a model, bounded in memory.
"""

from ..ir.order import stable_topological_order
from .shape_values import propagate_shape_values


# Memory ONNX shape inference may use beyond the model's own size.  (Its data propagation, not
# used here, built one shape entry per element of every 1-D tensor fed to Add/Sub/Mul/Concat, so
# a 1-D tensor of 2**31 elements asked for hundreds of GiB; shape_values.py keeps at most
# MAX_VALUES.)  Under a cap, an allocation beyond it fails as MemoryError.
SHAPE_INFERENCE_MEMORY = 2 * 1024**3


def _topological_permutation(graph):
    """Node positions of ``graph`` in a topological order (file order kept where it can be),
    or ``None`` when the graph has a cycle."""
    producer = {}
    for k, n in enumerate(graph.node):
        for o in n.output:
            if o:
                producer.setdefault(o, k)
    deps = [sorted({producer[t] for t in n.input if t in producer and producer[t] != k})
            for k, n in enumerate(graph.node)]
    users = [[] for _ in deps]
    for k, ds in enumerate(deps):
        for d in ds:
            users[d].append(k)
    order = stable_topological_order([len(ds) for ds in deps], users.__getitem__)
    return order if len(order) == len(deps) else None


def _infer_shapes_sorted(proto, warnings):
    """ONNX shape inference on the main graph in topological order, as ORT does it.

    ORT sorts the graph before it infers (seen with onnxruntime 1.31.1: a model listed as
    Tanh(b), Relu(a)->b, Sigmoid(x)->a gets its output shape, which ONNX's file-order
    inference leaves unknown), so the inference runs on a sorted copy.  Returns the
    inferred (sorted) proto and, per file position, the node's position in it.
    """
    import onnx

    order = _topological_permutation(proto.graph)
    if order is None:  # a cycle: the builder reports it
        return proto, None
    sorted_proto = onnx.ModelProto()
    sorted_proto.CopyFrom(proto)
    del sorted_proto.graph.node[:]
    sorted_proto.graph.node.extend(proto.graph.node[k] for k in order)
    del proto
    inferred = _infer_shapes_as_listed(sorted_proto, warnings)
    del sorted_proto
    file_order = [0] * len(order)
    for pos, k in enumerate(order):
        file_order[k] = pos
    return inferred, file_order


def _infer_shapes_as_listed(proto, warnings, listed=None, serialized=None):
    """ONNX shape inference, then the shape values ORT propagates; never fatal, memory-capped.  ``listed``: as
    :func:`~partsim.io.shape_values.propagate_shape_values` fills it (left empty when the propagation did not
    finish); ``serialized``: ``proto``'s bytes when the caller has them (the file's own, when nothing rewrote
    the proto), read by ONNX's inference instead of a new serialization.

    ONNX's own data propagation (``data_prop=True``) is not used: it resolves shapes ORT leaves
    symbolic (``ConstantOfShape(Slice(Shape(x), ...))``: its Slice/Concat/Add propagators read
    initializers, ORT's do not) and misses others ORT resolves (``Reshape``-13 of ``Shape(x)``);
    :func:`~partsim.io.shape_values.propagate_shape_values` does what ORT does instead.
    """
    # the caller's nodes as read (model_from_proto's ``rows``): left out of ``listed`` whatever happens below, so
    # that the builder never takes them for the propagation's reads
    written = listed.pop("written", None) if listed is not None else None
    try:
        # what infer_shapes would serialize itself; its length is ByteSize()
        data = serialized if serialized is not None else proto.SerializeToString()
        with _memory_cap(SHAPE_INFERENCE_MEMORY + 4 * len(data)):
            inferred, size = _onnx_inference(data)
        del data
    except MemoryError:
        warnings.append("shape inference failed: out of memory")
        return proto
    except Exception as exc:  # onnx raises many types; a failed inference is not fatal
        warnings.append(f"shape inference failed: {' '.join(str(exc).split())[:200]}")
        return proto
    if any(n.domain == "com.microsoft" for n in proto.graph.node) if written is None else any(
            r[2] == "com.microsoft" for r in written[0]):
        inferred = _through_contrib_ops(proto, inferred, False)
        size = inferred.ByteSize()
    try:
        with _memory_cap(SHAPE_INFERENCE_MEMORY + 4 * size):
            propagate_shape_values(inferred, listed, None if written is None else _inferred_rows(inferred, *written))
    except MemoryError:
        warnings.append("shape values not propagated (out of memory)")
        if listed is not None:
            listed.clear()
    return inferred


def _inferred_rows(inferred, rows, body_at):
    """The nodes of ``inferred`` as read from the proto it was inferred from (``rows``: per node ``(NodeProto,
    op, raw domain, inputs, name, outputs, attributes)``): ONNX's inference changes no main-graph node but
    those holding graphs (``body_at``: it adds value infos inside them), read from its answer."""
    if not body_at:
        return rows
    rows, nodes = list(rows), inferred.graph.node
    for k in body_at:
        rows[k] = (nodes[k],) + rows[k][1:6] + (None,)  # attributes None: the builder reads the inferred node's
    return rows


def _onnx_inference(data):
    """``(inferred ModelProto, its ByteSize())``: ``onnx.shape_inference.infer_shapes`` of the serialized model
    ``data`` without data propagation, which is this C++ call and then ``onnx.load_from_string`` of the bytes it
    returns (onnx 1.23.2, onnx/shape_inference.py); their length is the inferred proto's size."""
    import onnx
    from onnx.onnx_cpp2py_export import shape_inference as onnx_c

    out = onnx_c.infer_shapes(data, False, False, False)  # (model, check_type, strict_mode, data_prop)
    inferred = onnx.ModelProto()
    inferred.ParseFromString(out)
    return inferred, len(out)


def _through_contrib_ops(proto, inferred, data_prop, rounds=64):
    """Shapes past ORT's contrib ops (:mod:`partsim.io.contrib_shapes`): their outputs' value infos,
    then the ONNX ops between them node by node (``infer_node_outputs``, constants as data), then
    ONNX's whole inference again with all of that declared, until a round adds nothing."""
    import onnx

    from .contrib_shapes import contrib_value_infos, known_types

    added = {}
    consts = {t.name: t for t in proto.graph.initializer}
    opsets = list(proto.opset_import)
    onnx_version = next((o.version for o in opsets if (o.domain or "") in ("", "ai.onnx")), None)
    for _ in range(rounds):
        known = known_types(inferred.graph)
        new = []
        fresh = set()  # tensors typed in this round: only the ONNX nodes reading them are retried
        for node in inferred.graph.node:
            if node.domain == "com.microsoft":
                made = contrib_value_infos([node], known)
            elif (node.domain or "") in ("", "ai.onnx") and onnx_version is not None and any(
                    t in fresh for t in node.input) and any(
                    o and (o not in known or known[o][1] is None) for o in node.output):
                made = _node_outputs(node, known, consts, opsets, onnx_version)
            else:
                continue
            new.extend(made)
            fresh.update(v.name for v in made)
        new = [v for v in new if v.name not in added]
        if not new:
            break
        for v in new:
            added[v.name] = v
        base = onnx.ModelProto()
        base.CopyFrom(proto)
        declared = {v.name for v in base.graph.value_info}
        base.graph.value_info.extend(v for v in added.values() if v.name not in declared)
        try:
            with _memory_cap(SHAPE_INFERENCE_MEMORY + 4 * base.ByteSize()):
                inferred = onnx.shape_inference.infer_shapes(base, check_type=False, strict_mode=False,
                                                             data_prop=data_prop)
        except Exception:  # MemoryError or an onnx error: keep what the last round had
            break
    return inferred


def _node_outputs(node, known, consts, opsets, onnx_version):
    """ONNX's inference for one node from the types known so far (``[]`` when it cannot run)."""
    import onnx
    from onnx import helper

    from .contrib_shapes import tensor_dims

    try:
        schema = onnx.defs.get_schema(node.op_type, onnx_version, "")
    except Exception:  # SchemaError: not an ONNX op
        return []
    types = {}
    for t in node.input:
        if not t:
            continue
        k = known.get(t)
        if k is None or k[1] is None:
            return []
        types[t] = helper.make_tensor_type_proto(k[0], k[1])
    data = {t: consts[t] for t in node.input if t in consts}
    try:
        outs = onnx.shape_inference.infer_node_outputs(schema, node, types, data, opset_imports=opsets)
    except Exception:  # InferenceError and friends: leave the node to ONNX's whole-graph pass
        return []
    result = []
    for name, tp in outs.items():
        tt = tp.tensor_type
        dims = tensor_dims(tt)
        if not tt.elem_type or dims is None:
            continue
        known[name] = (tt.elem_type, dims)
        result.append(helper.make_tensor_value_info(name, tt.elem_type, dims))
    return result


class _memory_cap:
    """Lower the address-space limit to current use + ``extra`` bytes for a block (Linux only:
    :mod:`partsim.address_space`).

    A C++ allocation beyond it raises ``std::bad_alloc``, which the ONNX bindings turn
    into MemoryError, instead of the whole machine paging or the process being killed.
    Elsewhere (no ``resource`` module or no ``/proc``), it does nothing.
    """

    def __init__(self, extra):
        self.extra = extra
        self.saved = None

    def __enter__(self):
        from ..address_space import address_space_in_use, lower_address_space

        used = address_space_in_use()
        if used is not None:
            self.saved = lower_address_space(used + self.extra)
        return self

    def __exit__(self, *exc):
        from ..address_space import restore_address_space

        restore_address_space(self.saved)
        self.saved = None
        return False
