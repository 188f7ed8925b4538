"""The QNN probe models: one-node models of every op, dtype and rank, and QDQ node units (see
:mod:`partsim.gen.qnn`).
"""

from types import SimpleNamespace

DTYPES = ("float", "float16", "double", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "bool")
RANKS = (0, 1, 2, 3, 4, 5, 6)
OPSET = 21
QNN_LAYOUT_CHECKS = ("pool_ceil_output",)  # checks of the NHWC form the table states (sim/layout_checks.py)
_SHAPE = (2, 3, 4, 5, 3, 2)

UNARY = ("Abs Acos Acosh Asin Asinh Atan Atanh Ceil Celu Cos Cosh Elu Erf Exp Floor Gelu HardSigmoid HardSwish "
         "Identity IsInf IsNaN LeakyRelu Log LogSoftmax Mish Neg Not Reciprocal Relu Round Selu Sigmoid Sign Sin "
         "Sinh Softmax Softplus Softsign Sqrt Tan Tanh ThresholdedRelu Flatten Shape Size Hardmax").split()
BINARY = ("Add Sub Mul Div Pow Max Min Mean Sum Equal Greater GreaterOrEqual Less LessOrEqual And Or Xor PRelu "
          "BitwiseAnd BitwiseOr BitwiseXor").split()
REDUCE = "ReduceMean ReduceSum ReduceMax ReduceMin ReduceProd ReduceL1 ReduceL2 ReduceLogSumExp ReduceSumSquare".split()
OTHER = ("Transpose", "Cast", "CastLike", "Gather", "Where", "DynamicQuantizeLinear", "MatMulInteger", "MatMul",
         "LayerNormalization", "Clip", "ArgMax", "ArgMin", "CumSum", "Expand", "Tile", "Squeeze",
         "Unsqueeze", "Reshape", "Concat", "Split", "Slice", "Pad", "GatherElements", "GatherND", "ScatterElements",
         "ScatterND")
#: QOperator ops: every quantized tensor comes with its scale and zero point as inputs (uint8/int8 probes)
QLINEAR = ("QLinearMatMul", "QLinearConv")
SIDE_INPUT_OPS = QLINEAR + ("CumSum", "GatherElements", "GatherND", "ScatterElements", "ScatterND", "Expand", "Tile",
                            "Squeeze", "Unsqueeze", "Reshape", "Slice", "Pad", "Gather", "LayerNormalization", "MatMul",
                            "Resize", "PRelu", "BatchNormalization", "InstanceNormalization", "GroupNormalization",
                            "Conv", "ConvTranspose") + tuple(REDUCE)
POOLS = ("MaxPool", "AveragePool", "LpPool", "GlobalAveragePool", "GlobalMaxPool")
NORMS = ("BatchNormalization", "InstanceNormalization", "GroupNormalization", "Conv", "ConvTranspose", "LRN", "DepthToSpace", "SpaceToDepth")
PROBE_OPS = tuple(UNARY + BINARY + REDUCE + list(OTHER) + list(POOLS) + ["Resize", "GridSample"] + list(NORMS)
                  + list(QLINEAR))
#: ORT's error when no provider takes a node (session_state.cc): QNN refused it and the CPU has no kernel
NO_KERNEL = "Could not find an implementation for"
#: the error ORT raises when an EP does not take a node it had converted to NHWC (layout_transformation.cc)
LAYOUT_REFUSAL = "was inserted using the NHWC format"


def _tp(dtype):
    from onnx import TensorProto

    return {"float": TensorProto.FLOAT, "float16": TensorProto.FLOAT16, "double": TensorProto.DOUBLE,
            "int8": TensorProto.INT8, "uint8": TensorProto.UINT8, "int16": TensorProto.INT16,
            "uint16": TensorProto.UINT16, "int32": TensorProto.INT32, "uint32": TensorProto.UINT32,
            "int64": TensorProto.INT64, "bool": TensorProto.BOOL}[dtype]


def _allowed(op, k=0):
    """dtypes of :data:`DTYPES` the ONNX schema (newest version up to :data:`OPSET`, else the newest)
    allows for input ``k``."""
    import onnx

    try:
        schema = onnx.defs.get_schema(op, OPSET)
    except Exception:
        try:
            schema = onnx.defs.get_schema(op)
        except Exception:
            return ()
    return allowed_at(schema, k)[1]


def allowed_at(schema, k):
    """dtypes of :data:`DTYPES` the schema allows for input ``k`` and the constraint name bound to it
    (``(None, ())`` when there is no such input)."""
    if schema is None or len(schema.inputs) <= k:
        return None, ()
    tc = schema.inputs[k].type_str
    allowed = None
    for c in schema.type_constraints:
        if c.type_param_str == tc:
            allowed = {t[len("tensor("):-1] for t in c.allowed_type_strs if t.startswith("tensor(")}
    if allowed is None:
        allowed = {tc[len("tensor("):-1]} if tc.startswith("tensor(") else set()
    return tc, tuple(d for d in DTYPES if d in allowed)


# attribute variants probed besides the defaults (on float inputs of rank 4)
VARIANTS: dict[str, tuple[dict, ...]] = {op: ({"keepdims": 0},) for op in REDUCE}
VARIANTS.update({"ArgMax": ({"keepdims": 0}, {"select_last_index": 1}),
                 "ArgMin": ({"keepdims": 0}, {"select_last_index": 1}),
                 "Softmax": ({"axis": 0},), "LogSoftmax": ({"axis": 0},), "Concat": ({"axis": -1},),
                 "Gather": ({"axis": 1},), "CumSum": ({"exclusive": 1}, {"reverse": 1}),
                 "LeakyRelu": ({"alpha": 0.2},), "Pad": ({"mode": "reflect"}, {"mode": "edge"}),
                 "Resize": ({"mode": "linear"}, {"mode": "cubic"}, {"coordinate_transformation_mode": "asymmetric"},
                            {"mode": "linear", "coordinate_transformation_mode": "align_corners"}),
                 "MaxPool": ({"ceil_mode": 1},), "BatchNormalization": ({"epsilon": 0.001},), "AveragePool": ({"ceil_mode": 1}, {"count_include_pad": 1})})


#: a variant whose constant side inputs (shape, axes, starts, pads, indices, ...) become graph inputs
DYNAMIC_SIDE = "__dynamic_side_inputs__"
#: a ``--models`` case: the positions of its side inputs fed at run time (e.g. ``"2,3"``)
DYNAMIC_POSITIONS = "__dynamic_side_positions__"
#: prefix of a ``--models`` case's pseudo attribute naming the dtype of side input k (``__dtype_i3``)
SIDE_DTYPE = "__dtype_i"
#: the fate of a refusal that only speaks about attributes (see :func:`partsim.gen.qnn_derive.usable_evidence`)
ATTR_ONLY = "refused:attributes"


def probe_specs(ops=PROBE_OPS, ranks=RANKS):
    """Every (op, dtype, rank, attribute variant) probe, sorted; variant ``()`` = defaults."""
    specs = []
    for op in sorted(set(ops)):
        for dtype in _allowed(op):
            for rank in ranks:
                if rank < _min_rank(op):
                    continue
                specs.append((op, dtype, rank, ()))
        if "float" in _allowed(op):
            for v in VARIANTS.get(op, ()):
                specs.append((op, "float", 4, tuple(sorted(v.items()))))
            if op in SIDE_INPUT_OPS:
                specs.append((op, "float", 4, ((DYNAMIC_SIDE, 1),)))
        elif op in QLINEAR and op in SIDE_INPUT_OPS:  # scales and zero points fed at run time
            specs.append((op, "uint8", 4, ((DYNAMIC_SIDE, 1),)))
    return specs


def _min_rank(op):
    if op in ("Flatten", "Softmax", "LogSoftmax", "Hardmax", "Transpose", "Concat", "Split", "Slice", "Squeeze",
              "CumSum", "Pad", "ArgMax", "ArgMin", "Gather", "MatMulInteger", "MatMul", "LayerNormalization",
              "GatherElements", "GatherND", "ScatterElements", "ScatterND", "QLinearMatMul") or op in REDUCE:
        return 1
    if op in POOLS or op in NORMS or op in ("Resize", "GridSample", "QLinearConv"):
        return 3
    return 0


def build_probe(op, dtype, rank, variant=()):
    """A one-node ModelProto for ``op`` on a static ``rank``-D tensor of ``dtype`` (attributes at their
    defaults but those of ``variant``, constant side inputs as initializers)."""
    import numpy as np
    from onnx import helper, numpy_helper

    shape = list(_SHAPE[:rank])
    x = helper.make_tensor_value_info("x", _tp(dtype), shape)
    variant = dict(variant)
    dynamic_side = variant.pop(DYNAMIC_SIDE, False)
    side = []

    p = SimpleNamespace(shape=shape, x=x, inputs=["x"], inits=[], attrs={}, out_dtype=dtype, out_shape=None,
                        graph_inputs=[x])

    def const(name, arr):
        arr = np.asarray(arr)
        if dynamic_side:  # the same tensor, fed at run time
            side.append(helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(arr.dtype),
                                                      list(arr.shape)))
        else:
            p.inits.append(numpy_helper.from_array(arr, name))
        p.inputs.append(name)

    p.const = const
    if not _elementwise_inputs(p, op, dtype, rank) and not _indexed_inputs(p, op, dtype, rank):
        _layout_and_shape_inputs(p, op, dtype, rank)
    shape, graph_inputs, inputs, inits, attrs = p.shape, p.graph_inputs, p.inputs, p.inits, p.attrs
    out_dtype, out_shape = p.out_dtype, p.out_shape
    attrs.update(variant)
    if op == "Squeeze" and dynamic_side:
        graph_inputs[0] = helper.make_tensor_value_info("x", _tp(dtype), shape)
    graph_inputs += side
    outputs = {"Split": ["y", "y2"], "DynamicQuantizeLinear": ["y", "y_scale", "y_zp"]}.get(op, ["y"])
    node = helper.make_node(op, inputs, outputs, name=f"n0_{op}", **attrs)
    out_types = {"y_scale": "float", "y_zp": "uint8"}
    if dynamic_side:  # the outputs keep the shapes of the constant variant: only the inputs' constness differs
        import onnx

        ref = onnx.shape_inference.infer_shapes(build_probe(op, dtype, rank, tuple(sorted(variant.items()))))
        known = {o.name: [d.dim_value for d in o.type.tensor_type.shape.dim] for o in ref.graph.output
                 if o.type.tensor_type.HasField("shape")}
        out_shape = None
        outs = [helper.make_tensor_value_info(o, _tp(out_types.get(o, out_dtype)), known.get(o)) for o in outputs]
    else:
        outs = [helper.make_tensor_value_info(o, _tp(out_types.get(o, out_dtype)), out_shape) for o in outputs]
    g = helper.make_graph([node], f"probe_{op}", graph_inputs, outs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)])
    m.ir_version = 10
    return m


#: ops whose QNN builder mishandles an int64 input 0 that is a graph input of the compiled graph (the EP casts it to
#: int32 on the way in) when the output is a graph output too (partsim/sim/graph_inputs.py int64_io_nodes): their
#: int64 probes read a tensor an Add makes, so that the dtypes and ranks the op takes are measured apart from that
#: graph-I/O rule, which comes from the source (onnxruntime/onnxruntime-qnn transpose_op_builder.cc)
INT64_IO_PASSTHROUGH_OPS = ("Transpose",)


def build_qnn_probe(op, dtype, rank, variant=()):
    """:func:`build_probe`, but an int64 probe of :data:`INT64_IO_PASSTHROUGH_OPS` reads ``Add(x, x)``
    (node ``pre_Add``) instead of the graph input ``x``."""
    m = build_probe(op, dtype, rank, variant)
    if dtype != "int64" or op not in INT64_IO_PASSTHROUGH_OPS:
        return m
    from onnx import helper

    node = m.graph.node[0]
    node.input[0] = "x_made"
    m.graph.node.insert(0, helper.make_node("Add", ["x", "x"], ["x_made"], name="pre_Add"))
    return m


def _elementwise_inputs(p, op, dtype, rank):
    """Binary, comparison, reduction, MatMul, LayerNormalization and CastLike probes' inputs (False: not one of them)."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper  # noqa: F401

    if op in BINARY:
        p.graph_inputs.append(helper.make_tensor_value_info("x2", _tp(dtype), p.shape))
        p.inputs.append("x2")
        if op in ("Equal", "Greater", "GreaterOrEqual", "Less", "LessOrEqual"):
            p.out_dtype = "bool"
    elif op in ("IsInf", "IsNaN"):
        p.out_dtype = "bool"
    elif op in ("Shape", "Size"):
        p.out_dtype = "int64"
    elif op in ("ArgMax", "ArgMin"):
        p.out_dtype = "int64"
    elif op in REDUCE:
        p.const("axes", np.array([rank - 1], dtype=np.int64))
    elif op == "DynamicQuantizeLinear":
        p.out_dtype = "uint8"
    elif op in ("MatMulInteger", "MatMul"):
        k = p.shape[-1] if p.shape else 1
        p.const("B", np.ones((k, 3), dtype=_np(dtype)))
        p.out_dtype = "int32" if op == "MatMulInteger" else dtype
    elif op == "LayerNormalization":
        c = p.shape[-1] if p.shape else 1
        p.const("scale", np.ones((c,), dtype=_np(dtype)))
        p.const("bias", np.zeros((c,), dtype=_np(dtype)))
    elif op == "CastLike":
        like = "float" if dtype != "float" else "float16"
        p.graph_inputs.append(helper.make_tensor_value_info("like", _tp(like), [1]))
        p.inputs.append("like")
        p.out_dtype = like
    else:
        return False
    return True


def _indexed_inputs(p, op, dtype, rank):
    """Gather/Scatter, QOperator and GridSample probes' inputs (False: not one of them)."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper  # noqa: F401

    if op == "Gather":
        p.const("indices", np.array([0], dtype=np.int64))
    elif op in ("GatherElements", "ScatterElements"):  # indices of the data's rank, one row along axis 0
        p.const("indices", np.zeros([1] + p.shape[1:], dtype=np.int64))
        if op == "ScatterElements":
            p.const("updates", np.ones([1] + p.shape[1:], dtype=_np(dtype)))
        else:
            p.out_shape = [1] + p.shape[1:]
    elif op in ("GatherND", "ScatterND"):  # one index tuple of length 1
        p.const("indices", np.zeros((1, 1), dtype=np.int64))
        if op == "ScatterND":
            p.const("updates", np.ones([1] + p.shape[1:], dtype=_np(dtype)))
        else:
            p.out_shape = [1] + p.shape[1:]
    elif op in QLINEAR:  # per-tensor scales and zero points (fed at run time by the dynamic variant), weight constant
        zp = _np(dtype)
        p.const("x_scale", np.array(0.1, np.float32))
        p.const("x_zero_point", np.array(0, zp))
        if op == "QLinearMatMul":
            w = np.ones((p.shape[-1] if p.shape else 1, 3), dtype=zp)
        else:
            w = np.ones((p.shape[1], p.shape[1]) + (1,) * (rank - 2), dtype=zp)
        p.inits.append(numpy_helper.from_array(w, "w"))
        p.inputs.append("w")
        p.const("w_scale", np.array(0.05, np.float32))
        p.const("w_zero_point", np.array(0, zp))
        p.const("y_scale", np.array(0.2, np.float32))
        p.const("y_zero_point", np.array(0, zp))
    elif op == "GridSample" and rank >= 3:  # grid [N, *output spatial, rank - 2]: the output keeps p.x's p.shape
        p.graph_inputs.append(helper.make_tensor_value_info("grid", _tp(dtype), [p.shape[0]] + p.shape[2:] + [rank - 2]))
        p.inputs.append("grid")
        p.out_shape = p.shape
    else:
        return False
    return True


def _layout_and_shape_inputs(p, op, dtype, rank):
    """Normalization, convolution, pooling, Resize, Cast, Where and shape-op probes' inputs (False: not one of them)."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper  # noqa: F401

    if op == "GroupNormalization":  # opset 21: scale and bias per channel
        c = p.shape[1]
        p.const("scale", np.ones((c,), dtype=_np(dtype)))
        p.const("bias", np.zeros((c,), dtype=_np(dtype)))
        p.attrs["num_groups"] = 1
        # ORT infers no output p.shape for GroupNormalization-21 (a function op), and QNN refuses the NHWC node
        # of an unknown p.shape; models declare it (the node tests do), so the probe declares it too
        p.out_shape = p.shape
    elif op in ("BatchNormalization", "InstanceNormalization"):
        c = p.shape[1]
        p.const("scale", np.ones((c,), dtype=_np(dtype)))
        p.const("B", np.zeros((c,), dtype=_np(dtype)))
        if op == "BatchNormalization":
            p.const("mean", np.zeros((c,), dtype=_np(dtype)))
            p.const("var", np.ones((c,), dtype=_np(dtype)))
    elif op in ("Conv", "ConvTranspose"):
        c = p.shape[1]
        w = (c, c) + (1,) * (rank - 2)
        p.const("W", np.ones(w, dtype=_np(dtype)))
    elif op == "LRN":
        p.attrs["size"] = 3
    elif op in ("DepthToSpace", "SpaceToDepth"):
        p.attrs["blocksize"] = 1
    elif op == "Resize":
        p.inputs.append("")
        p.const("scales", np.array([1.0, 1.0] + [2.0] * (rank - 2), dtype=np.float32))
    elif op in ("MaxPool", "AveragePool", "LpPool"):
        p.attrs["kernel_shape"] = [2] * (rank - 2)
    elif op == "Cast":
        p.attrs["to"] = TensorProto.FLOAT if dtype != "float" else TensorProto.FLOAT16
        p.out_dtype = "float" if dtype != "float" else "float16"
    elif op == "Where":
        p.graph_inputs = [helper.make_tensor_value_info("c", TensorProto.BOOL, p.shape), p.x,
                        helper.make_tensor_value_info("x2", _tp(dtype), p.shape)]
        p.inputs = ["c", "x", "x2"]
    elif op == "CumSum":
        p.const("axis", np.array(0, dtype=np.int64))
    elif op in ("Expand", "Tile"):
        p.const("reps" if op == "Tile" else "shape", np.ones(rank, dtype=np.int64))
    elif op in ("Squeeze", "Unsqueeze"):
        if op == "Unsqueeze":
            p.const("axes", np.array([0], dtype=np.int64))
        else:
            p.shape = [1] + p.shape[1:]
            p.graph_inputs[0] = helper.make_tensor_value_info("x", _tp(dtype), p.shape)
            p.const("axes", np.array([0], dtype=np.int64))
    elif op == "Reshape":
        p.const("shape", np.array([-1], dtype=np.int64))
    elif op == "Concat":
        p.graph_inputs.append(helper.make_tensor_value_info("x2", _tp(dtype), p.shape))
        p.inputs.append("x2")
        p.attrs["axis"] = 0
    elif op == "Split":
        p.attrs["axis"] = 0
        p.attrs["num_outputs"] = 2
    elif op == "Slice":
        p.const("starts", np.array([0], dtype=np.int64))
        p.const("ends", np.array([1], dtype=np.int64))
    elif op == "Pad":
        p.const("pads", np.array([0] * rank + [1] * rank, dtype=np.int64))
    else:
        return False
    return True


def _np(dtype):
    import numpy as np

    return {"float": np.float32, "float16": np.float16, "double": np.float64, "bool": np.bool_}.get(
        dtype, getattr(np, dtype, np.float32))


#: quantized dtypes a QDQ node unit's ports are probed with (activations, weights; biases also int32)
QTYPES = ("uint8", "int8", "uint16", "int16")
#: QDQ node-unit probes: op -> (input shapes, index of the weight input or None, index of the bias input or None,
#: attributes); inputs other than weight and bias are activations of their own dtype
QDQ_OPS = {
    "Conv": ([(1, 4, 5, 5), (4, 4, 1, 1), (4,)], 1, 2, {}),
    "Gemm": ([(2, 4), (4, 3), (3,)], 1, 2, {}),
    "MatMul": ([(1, 3, 4), (4, 3)], 1, None, {}),
    "LayerNormalization": ([(1, 3, 4), (4,), (4,)], 1, 2, {}),
    "InstanceNormalization": ([(1, 4, 5, 5), (4,), (4,)], 1, 2, {}),
    "Add": ([(1, 3, 4), (1, 3, 4)], None, None, {}),
    "Mul": ([(1, 3, 4), (1, 3, 4)], None, None, {}),
    "Relu": ([(1, 3, 4)], None, None, {}),
    "Sigmoid": ([(1, 3, 4)], None, None, {}),
    "Tanh": ([(1, 3, 4)], None, None, {}),
    "Softmax": ([(1, 3, 4)], None, None, {}),
    "AveragePool": ([(1, 4, 5, 5)], None, None, {"kernel_shape": [2, 2]}),
    "MaxPool": ([(1, 4, 5, 5)], None, None, {"kernel_shape": [2, 2]}),
    "GlobalAveragePool": ([(1, 4, 5, 5)], None, None, {}),
    "Concat": ([(1, 3, 4), (1, 3, 4)], None, None, {"axis": 1}),
    "PRelu": ([(1, 3, 4), (4,)], 1, None, {}),
    "ConvTranspose": ([(1, 4, 5, 5), (4, 4, 1, 1), (4,)], 1, 2, {}),
    "GlobalMaxPool": ([(1, 4, 5, 5)], None, None, {}),
    "LRN": ([(1, 4, 5, 5)], None, None, {"size": 3}),
    "DepthToSpace": ([(1, 4, 4, 4)], None, None, {"blocksize": 2}),
    "SpaceToDepth": ([(1, 4, 4, 4)], None, None, {"blocksize": 2}),
}
# the other ops ORT's QDQ selectors make node units of (``qdq_transformer/selectors_actions/shared/utils.cc``:
# the unary, Clip, Reciprocal, binary and variadic op lists) that QNN has a builder for, on one activation (or
# two) of each dtype, like Relu above (no axes input: a Reduce reduces every axis).  The HTP takes some only
# unsigned: a HardSigmoid or LeakyRelu unit of int8 or int16 is refused whole (measured; MobileNetV3's int8
# QDQ HardSwish blocks).  Not probed: the ops whose unit needs the same scale on its DQ and Q (Gather,
# Reshape, Transpose, ...) and those with non-quantized side inputs (Slice, Split, Pad, Resize)
for _op in ("Abs Asin Atan Ceil Clip Cos Elu Exp Floor Gelu HardSigmoid HardSwish LeakyRelu Log LogSoftmax "
            "LpNormalization Neg Reciprocal ReduceMax ReduceMean ReduceMin ReduceProd ReduceSum Round Sign Sin "
            "Sqrt").split():
    QDQ_OPS[_op] = ([(1, 3, 4)], None, None, {})
for _op in ("Sub", "Div", "Pow", "Max", "Min"):
    QDQ_OPS[_op] = ([(1, 3, 4), (1, 3, 4)], None, None, {})


def qdq_specs():
    """Every (op, port dtypes) QDQ node-unit probe, sorted: activations and the output of one dtype of
    :data:`QTYPES` (a second activation input of any), weights of any, biases int32 or the weight's."""
    specs = []
    for op in sorted(QDQ_OPS):
        shapes, w, b, _ = QDQ_OPS[op]
        acts = [k for k in range(len(shapes)) if k not in (w, b)]
        for a in QTYPES:
            for a2 in (QTYPES if len(acts) > 1 else (a,)):
                for wt in (QTYPES if w is not None else (None,)):
                    for bt in (("int32", wt) if b is not None else (None,)):
                        combo = {"o0": a}
                        for n, k in enumerate(acts):
                            combo[f"i{k}"] = a if n == 0 else a2
                        if w is not None:
                            combo[f"i{w}"] = wt
                        if b is not None:
                            combo[f"i{b}"] = bt
                        specs.append((op, tuple(sorted(combo.items()))))
    return sorted(set(specs))


def build_qdq_probe(op, combo):
    """A QDQ node unit: DequantizeLinear on each input (activations from graph inputs, weights and biases
    from initializers) -> ``op`` -> QuantizeLinear to the graph output, port dtypes from ``combo``."""
    import numpy as np
    from onnx import helper, numpy_helper

    shapes, w, b, attrs = QDQ_OPS[op]
    combo = dict(combo)
    graph_inputs, inits, nodes, op_inputs = [], [], [], []
    for k, shape in enumerate(shapes):
        dt = combo[f"i{k}"]
        q = f"q{k}"
        if k in (w, b):
            inits.append(numpy_helper.from_array(np.ones(shape, dtype=_np(dt)), q))
        else:
            graph_inputs.append(helper.make_tensor_value_info(q, _tp(dt), list(shape)))
        scale = 0.01 * (k + 1)
        inits += [numpy_helper.from_array(np.array(scale, np.float32), f"s{k}"),
                  numpy_helper.from_array(np.array(0, dtype=_np(dt)), f"z{k}")]
        nodes.append(helper.make_node("DequantizeLinear", [q, f"s{k}", f"z{k}"], [f"f{k}"], name=f"dq{k}"))
        op_inputs.append(f"f{k}")
    nodes.append(helper.make_node(op, op_inputs, ["fy"], name=f"n0_{op}", **attrs))
    out = combo["o0"]
    inits += [numpy_helper.from_array(np.array(0.05, np.float32), "sy"),
              numpy_helper.from_array(np.array(0, dtype=_np(out)), "zy")]
    nodes.append(helper.make_node("QuantizeLinear", ["fy", "sy", "zy"], ["y"], name="qy"))
    g = helper.make_graph(nodes, f"qdq_{op}", graph_inputs, [helper.make_tensor_value_info("y", _tp(out), None)],
                          inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)])
    m.ir_version = 10
    return m

