"""The QNN (HTP) table, measured: probe the real QNN EP with single-op models and write what it claims.

``partsim rules import qnn -o rules/qnn.yaml`` (needs ``onnxruntime-qnn`` in the interpreter, see
``partsim/runtime/qnn_session.py``):

1. *Probes.*  For each op of :data:`PROBE_OPS` (element-wise, broadcasting, reductions, Cast,
   Transpose, Where, ...), every input dtype its ONNX schema allows out of :data:`DTYPES` and every
   rank of :data:`RANKS`, a one-node model with static shapes (``probe_specs``; QOperator ops of
   :data:`QLINEAR` with their scales and zero points).  QDQ node units of :data:`QDQ_OPS` with every
   combination of quantized port dtypes (``qdq_specs``) give the table's ``qdq_unit_types``.  Extra
   evidence: ``--models DIR`` (one-node ONNX models, e.g. ONNX's backend node tests) are run as well.
2. *Sessions.*  All models go through one child process (``partsim/runtime/qnn_probe_child.py``) that
   creates a QNN session per model and prints its assignment line by line; a model that crashes
   or hangs the emulator is recorded as such and the child is restarted after it.
3. *Table.*  The base is the source-read table (op builders of ``op_builder_factory.cc``,
   ``partsim/gen/ep_tables.py``).  For every op with evidence, the rule keeps the builder's
   predicates and gets the dtypes of input 0 QNN claimed and, per dtype set, the rank range it
   claimed (``min_rank``/``max_rank`` only where a refused rank lies outside it); an op QNN never
   claimed is dropped, an op it claimed without a builder in the list (e.g. ``Identity``) is
   added.  Evidence is summarised in the table's ``source.probes``.

Partition rules (``partitioning``) come from ``qnn_execution_provider.cc`` (onnxruntime/onnxruntime-qnn
``QnnEp::GetCapabilityImpl``): single Q/DQ partitions dropped, graph I/O quantization offloaded.
Same evidence -> same table, byte for byte (everything is sorted).
"""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

__all__ = ["PROBE_OPS", "DTYPES", "RANKS", "probe_specs", "build_probe", "qdq_specs", "build_qdq_probe", "probe_models",
           "derive_rules", "usable_evidence", "qdq_unit_types", "qnn_table"]

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
    if len(schema.inputs) <= k:
        return ()
    tc = schema.inputs[k].type_str
    allowed = None
    for c in schema.type_constraints:
        if c.type_param_str == tc:
            allowed = {t[len("tensor("):-1] for t in c.allowed_type_strs if t.startswith("tensor(")}
    if allowed is None:
        allowed = {tc[len("tensor("):-1]} if tc.startswith("tensor(") else set()
    return tuple(d for d in DTYPES if d in allowed)


# attribute variants probed besides the defaults (on float inputs of rank 4)
VARIANTS = {op: ({"keepdims": 0},) for op in REDUCE}
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
#: the fate of a refusal that only speaks about attributes (see :func:`usable_evidence`)
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
    from onnx import TensorProto, helper, numpy_helper

    shape = list(_SHAPE[:rank])
    x = helper.make_tensor_value_info("x", _tp(dtype), shape)
    inputs, inits, attrs, out_dtype, out_shape = ["x"], [], {}, dtype, None
    graph_inputs = [x]
    variant = dict(variant)
    dynamic_side = variant.pop(DYNAMIC_SIDE, False)
    side = []

    def const(name, arr):
        arr = np.asarray(arr)
        if dynamic_side:  # the same tensor, fed at run time
            side.append(helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(arr.dtype),
                                                      list(arr.shape)))
        else:
            inits.append(numpy_helper.from_array(arr, name))
        inputs.append(name)

    if op in BINARY:
        graph_inputs.append(helper.make_tensor_value_info("x2", _tp(dtype), shape))
        inputs.append("x2")
        if op in ("Equal", "Greater", "GreaterOrEqual", "Less", "LessOrEqual"):
            out_dtype = "bool"
    elif op in ("IsInf", "IsNaN"):
        out_dtype = "bool"
    elif op in ("Shape", "Size"):
        out_dtype = "int64"
    elif op in ("ArgMax", "ArgMin"):
        out_dtype = "int64"
    elif op in REDUCE:
        const("axes", np.array([rank - 1], dtype=np.int64))
    elif op == "DynamicQuantizeLinear":
        out_dtype = "uint8"
    elif op in ("MatMulInteger", "MatMul"):
        k = shape[-1] if shape else 1
        const("B", np.ones((k, 3), dtype=_np(dtype)))
        out_dtype = "int32" if op == "MatMulInteger" else dtype
    elif op == "LayerNormalization":
        c = shape[-1] if shape else 1
        const("scale", np.ones((c,), dtype=_np(dtype)))
        const("bias", np.zeros((c,), dtype=_np(dtype)))
    elif op == "CastLike":
        like = "float" if dtype != "float" else "float16"
        graph_inputs.append(helper.make_tensor_value_info("like", _tp(like), [1]))
        inputs.append("like")
        out_dtype = like
    elif op == "Gather":
        const("indices", np.array([0], dtype=np.int64))
    elif op in ("GatherElements", "ScatterElements"):  # indices of the data's rank, one row along axis 0
        const("indices", np.zeros([1] + shape[1:], dtype=np.int64))
        if op == "ScatterElements":
            const("updates", np.ones([1] + shape[1:], dtype=_np(dtype)))
        else:
            out_shape = [1] + shape[1:]
    elif op in ("GatherND", "ScatterND"):  # one index tuple of length 1
        const("indices", np.zeros((1, 1), dtype=np.int64))
        if op == "ScatterND":
            const("updates", np.ones([1] + shape[1:], dtype=_np(dtype)))
        else:
            out_shape = [1] + shape[1:]
    elif op in QLINEAR:  # per-tensor scales and zero points (fed at run time by the dynamic variant), weight constant
        zp = _np(dtype)
        const("x_scale", np.array(0.1, np.float32))
        const("x_zero_point", np.array(0, zp))
        if op == "QLinearMatMul":
            w = np.ones((shape[-1] if shape else 1, 3), dtype=zp)
        else:
            w = np.ones((shape[1], shape[1]) + (1,) * (rank - 2), dtype=zp)
        inits.append(numpy_helper.from_array(w, "w"))
        inputs.append("w")
        const("w_scale", np.array(0.05, np.float32))
        const("w_zero_point", np.array(0, zp))
        const("y_scale", np.array(0.2, np.float32))
        const("y_zero_point", np.array(0, zp))
    elif op == "GridSample" and rank >= 3:  # grid [N, *output spatial, rank - 2]: the output keeps x's shape
        graph_inputs.append(helper.make_tensor_value_info("grid", _tp(dtype), [shape[0]] + shape[2:] + [rank - 2]))
        inputs.append("grid")
        out_shape = shape
    elif op == "GroupNormalization":  # opset 21: scale and bias per channel
        c = shape[1]
        const("scale", np.ones((c,), dtype=_np(dtype)))
        const("bias", np.zeros((c,), dtype=_np(dtype)))
        attrs["num_groups"] = 1
        # ORT infers no output shape for GroupNormalization-21 (a function op), and QNN refuses the NHWC node
        # of an unknown shape; models declare it (the node tests do), so the probe declares it too
        out_shape = shape
    elif op in ("BatchNormalization", "InstanceNormalization"):
        c = shape[1]
        const("scale", np.ones((c,), dtype=_np(dtype)))
        const("B", np.zeros((c,), dtype=_np(dtype)))
        if op == "BatchNormalization":
            const("mean", np.zeros((c,), dtype=_np(dtype)))
            const("var", np.ones((c,), dtype=_np(dtype)))
    elif op in ("Conv", "ConvTranspose"):
        c = shape[1]
        w = (c, c) + (1,) * (rank - 2)
        const("W", np.ones(w, dtype=_np(dtype)))
    elif op == "LRN":
        attrs["size"] = 3
    elif op in ("DepthToSpace", "SpaceToDepth"):
        attrs["blocksize"] = 1
    elif op == "Resize":
        inputs.append("")
        const("scales", np.array([1.0, 1.0] + [2.0] * (rank - 2), dtype=np.float32))
    elif op in ("MaxPool", "AveragePool", "LpPool"):
        attrs["kernel_shape"] = [2] * (rank - 2)
    elif op == "Cast":
        attrs["to"] = TensorProto.FLOAT if dtype != "float" else TensorProto.FLOAT16
        out_dtype = "float" if dtype != "float" else "float16"
    elif op == "Where":
        graph_inputs = [helper.make_tensor_value_info("c", TensorProto.BOOL, shape), x,
                        helper.make_tensor_value_info("x2", _tp(dtype), shape)]
        inputs = ["c", "x", "x2"]
    elif op == "CumSum":
        const("axis", np.array(0, dtype=np.int64))
    elif op in ("Expand", "Tile"):
        const("reps" if op == "Tile" else "shape", np.ones(rank, dtype=np.int64))
    elif op in ("Squeeze", "Unsqueeze"):
        if op == "Unsqueeze":
            const("axes", np.array([0], dtype=np.int64))
        else:
            shape = [1] + shape[1:]
            graph_inputs[0] = helper.make_tensor_value_info("x", _tp(dtype), shape)
            const("axes", np.array([0], dtype=np.int64))
    elif op == "Reshape":
        const("shape", np.array([-1], dtype=np.int64))
    elif op == "Concat":
        graph_inputs.append(helper.make_tensor_value_info("x2", _tp(dtype), shape))
        inputs.append("x2")
        attrs["axis"] = 0
    elif op == "Split":
        attrs["axis"] = 0
        attrs["num_outputs"] = 2
    elif op == "Slice":
        const("starts", np.array([0], dtype=np.int64))
        const("ends", np.array([1], dtype=np.int64))
    elif op == "Pad":
        const("pads", np.array([0] * rank + [1] * rank, dtype=np.int64))
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


CHILD = Path(__file__).resolve().parents[1] / "runtime" / "qnn_probe_child.py"


def probe_models(paths, ep_options=None, python=None, timeout=60.0, level="ORT_DISABLE_ALL"):
    """Create a real QNN session for each model in ``paths`` (one child process, restarted after a model
    that crashes it or takes more than ``timeout`` seconds); return ``{path: record}`` with
    ``assignment`` or ``create_error``."""
    import selectors

    from ..runtime.child import DEFAULT_MEMORY_LIMIT, memory_ceiling

    paths = [str(p) for p in paths]
    results, todo = {}, list(paths)
    while todo:
        req = {"models": todo, "ep_options": dict(ep_options or {}), "level": level}
        proc = subprocess.Popen([python or sys.executable, str(CHILD)], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                preexec_fn=memory_ceiling(DEFAULT_MEMORY_LIMIT))
        proc.stdin.write(json.dumps(req))
        proc.stdin.close()
        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ)
        fate = None
        while True:
            if not sel.select(timeout):
                fate = "timeout"
                proc.kill()
                break
            line = proc.stdout.readline()
            if not line:
                fate = "crashed" if proc.wait() else None
                break
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if isinstance(rec, dict) and rec.get("model") in req["models"]:
                results[rec["model"]] = rec
        proc.wait()
        sel.close()
        proc.stdout.close()
        todo = [p for p in todo if p not in results]
        if todo and fate:  # the first model without a record took the child down
            results[todo[0]] = {"model": todo[0], "create_error": f"session child {fate}", "fate": fate}
            todo = todo[1:]
        elif todo:
            for p in todo:
                results[p] = {"model": p, "create_error": "no record from the session child"}
            todo = []
    return results


def qdq_unit_types(fates):
    """``{(op, ((port, dtype), ...)): fate}`` of the QDQ node-unit probes -> ``{op: [accepted port dtypes]}`` for
    the ops of which some combination was refused (a unit matching none of its op's entries is refused
    whole).  A unit claimed and then refused after the NHWC conversion counts as accepted (the node-unit
    check passed); a probe without a session says nothing."""
    by_op = {}
    for key, fate in sorted(fates.items()):
        if fate is None:
            continue
        op, combo = key
        by_op.setdefault(op, {"yes": [], "no": 0})
        if fate in (True, "layout_refusal"):
            by_op[op]["yes"].append(dict(sorted(combo)))
        else:
            by_op[op]["no"] += 1
    return {op: v["yes"] for op, v in sorted(by_op.items()) if v["no"]}


def _claimed(rec, node_name):
    if LAYOUT_REFUSAL in rec.get("create_error", "") and f"'{node_name}_token_" in rec["create_error"]:
        return "layout_refusal"  # claimed, converted to NHWC, then refused: ORT fails the session
    for ep, members in rec.get("assignment") or []:
        for m in members:
            if m[0] == node_name or m[0].startswith(node_name + "_token_"):
                return ep == "QNNExecutionProvider"
    return None


def _explained_after_layout(path, node_name):
    """Whether the node ``node_name`` of the model at ``path`` fails one of the QNN table's layout checks
    (``partitioning.layout_checks``): its refusal after the NHWC conversion is that check's, not its op's."""
    from ..io.load import load_model
    from ..sim.layout_checks import LAYOUT_CHECKS

    try:
        model = load_model(path)
    except Exception:  # a model partsim cannot read says nothing here
        return False
    node = next((n for n in model.nodes if n.name == node_name), None)
    return node is not None and any(LAYOUT_CHECKS[c](model, node) for c in QNN_LAYOUT_CHECKS)


def _features(path):
    """(op, domain, dtype of input 0, rank of input 0, node name) of a one-node model, or None."""
    import onnx

    try:
        m = onnx.shape_inference.infer_shapes(onnx.load(path, load_external_data=False))
    except Exception:
        return None
    nodes = [n for n in m.graph.node if n.op_type != "Constant"]
    if len(nodes) != 1:
        return None
    n = nodes[0]
    types = {}
    for v in list(m.graph.input) + list(m.graph.value_info) + list(m.graph.output):
        t = v.type.tensor_type
        if v.type.HasField("tensor_type"):
            types[v.name] = (t.elem_type, len(t.shape.dim) if t.HasField("shape") else None)
    for i in m.graph.initializer:
        types[i.name] = (i.data_type, len(i.dims))
    first = n.input[0] if n.input else (n.output[0] if n.output else "")
    inits = {i.name for i in m.graph.initializer}
    # a side input fed at run time (ONNX node tests feed every input so) is a reason of its own
    dyn_side = any(t and t not in inits for t in n.input[1:])
    elem, rank = types.get(first, (0, None))
    names = {v: k for k, v in onnx.TensorProto.DataType.items()}
    dtype = {"FLOAT": "float", "FLOAT16": "float16", "DOUBLE": "double", "BOOL": "bool"}.get(
        names.get(elem, ""), names.get(elem, "").lower() or None)
    attrs = {}
    for a in n.attribute:
        v = onnx.helper.get_attribute_value(a)
        if isinstance(v, bytes):
            v = v.decode(errors="replace")
        if isinstance(v, (int, float, str)):
            attrs[a.name] = v
    for k, t in enumerate(n.input):
        if k and t and types.get(t, (0,))[0]:  # the dtype of each side input (see _attr_conditions)
            name = names.get(types[t][0], "")
            attrs[f"{SIDE_DTYPE}{k}"] = {"FLOAT": "float", "FLOAT16": "float16", "DOUBLE": "double",
                                         "BOOL": "bool"}.get(name, name.lower())
    if dyn_side:
        attrs[DYNAMIC_SIDE] = "models"
        attrs[DYNAMIC_POSITIONS] = ",".join(str(k) for k, t in enumerate(n.input) if k and t and t not in inits)
    return n.op_type, n.domain, dtype, rank, n.name, attrs


def derive_rules(evidence):
    """``[(op, domain, dtype, rank, claimed)]`` -> ``{(domain, op): [predicate dicts]}``.

    Per op: the dtypes QNN claimed at least once; dtypes with the same claimed rank range share a
    rule; the range is written only where a refused rank of that dtype lies outside it.  An op
    never claimed maps to ``[]``.  A case whose fate is :data:`ATTR_ONLY` counts for the attribute
    conditions only.
    """
    by_op, cases, refusals = {}, {}, {}
    for op, domain, dtype, rank, claimed, *rest in evidence:
        if claimed is None or dtype is None:
            continue
        if claimed == "layout_refusal":
            refusals.setdefault((domain, op), {}).setdefault(dtype, set()).add(rank)
            # a rank refused after the layout conversion bounds the range of the claimed ranks (GridSample:
            # 4-D taken, 5-D refused in NHWC form), so that the layout-refusal rule below can match it
            by_op.setdefault((domain, op), {}).setdefault(dtype, {"yes": set(), "no": set()})["no"].add(rank)
            continue
        if claimed == ATTR_ONLY:
            cases.setdefault((domain, op), []).append((dtype, rank, False, rest[0] if rest else {}))
            continue
        by_op.setdefault((domain, op), {}).setdefault(dtype, {"yes": set(), "no": set()})[
            "yes" if claimed else "no"].add(rank)
        cases.setdefault((domain, op), []).append((dtype, rank, claimed, rest[0] if rest else {}))
    out = {}
    for key in sorted(by_op):
        groups = {}
        for dtype, r in sorted(by_op[key].items()):
            yes = {x for x in r["yes"] if x is not None}
            if not r["yes"]:
                continue
            lo, hi = (min(yes), max(yes)) if yes else (None, None)
            no = {x for x in r["no"] if x is not None}
            lo_w = lo if lo is not None and any(x < lo for x in no) else None
            hi_w = hi if hi is not None and any(x > hi for x in no) else None
            groups.setdefault((lo_w, hi_w), []).append(dtype)
        rules = []
        for (lo, hi), dtypes in sorted(groups.items(), key=lambda kv: (kv[1][0], str(kv[0]))):
            rule = {"types": {"i0": sorted(dtypes, key=DTYPES.index if all(d in DTYPES for d in dtypes) else str)}}
            if lo is not None or hi is not None:
                rule["rank_inputs"] = [0]
                if lo is not None:
                    rule["min_rank"] = lo
                if hi is not None:
                    rule["max_rank"] = hi
            rules.append(rule)
        conds, dtype_vetoes = _attr_conditions(rules, cases.get(key, ()), _attr_defaults(key[1], key[0]))
        if conds:
            for rule in rules:
                rule["attrs"] = conds
        for k, bad in sorted(dtype_vetoes.items()):
            if key[0]:
                continue  # no ONNX schema to list the other dtypes of
            # no dtype left (the only one the schema allows was refused): the input must be absent
            # (Attention's nonpad_kv_seqlen)
            allowed = [d for d in _allowed(key[1], k) if d not in bad]
            for rule in rules:
                rule["types"][f"i{k}"] = allowed
        if key in (("", "Cast"), ("", "CastLike")):
            # the probes cast to the input's own dtype; a Cast to bfloat16 is left to the CPU (measured on
            # onnxruntime-qnn 2.7.0, tests/test_qnn_refusals.py), and the types outside DTYPES have no QNN
            # data type at all
            for rule in rules:
                rule["types"]["o0"] = list(DTYPES)
        if key == ("", "Pow"):
            # the probes feed the exponent the base's dtype; QNN's ElementWisePower was never seen taking
            # another one (the pow_types_float32_int32/int64 node tests are left to the CPU)
            for rule in rules:
                rule["types"]["i1"] = list(rule["types"]["i0"])
        out[key] = rules
    for key in sorted(refusals):
        # dtypes for which some node was claimed before the layout transformation and refused after it;
        # those claimed whole are matched by the rules above first
        for dtype, ranks in sorted(refusals[key].items()):
            known = sorted(r for r in ranks if r is not None)
            if not known:
                out.setdefault(key, []).append({"types": {"i0": [dtype]}, "layout_refusal": True})
                continue
            # one rule per run of refused ranks with no claimed rank inside: a node of a claimed rank that the
            # rules above refuse (GridSample's cubic mode at rank 4) is left to the CPU, not a layout refusal
            claimed = {x for x in by_op.get(key, {}).get(dtype, {}).get("yes", ()) if x is not None}
            runs = [[known[0]]]
            for r in known[1:]:
                if any(runs[-1][-1] < c < r for c in claimed):
                    runs.append([r])
                else:
                    runs[-1].append(r)
            for run in runs:
                out.setdefault(key, []).append({"types": {"i0": [dtype]}, "layout_refusal": True,
                                                "rank_inputs": [0], "min_rank": run[0], "max_rank": run[-1]})
    return out


def usable_evidence(evidence):
    """The cases of ``evidence`` (``(op, domain, dtype, rank, fate, attrs)``) that say something about the
    op's dtype, rank and attributes, with the private markers dropped from ``attrs``.

    A node whose side inputs come at run time may be refused for that reason alone, so such a refusal is
    left out, unless QNN claimed a ``--models`` node of the same op whose run-time side inputs include
    all of these positions (the ONNX node tests feed every input at run time: QNN took
    ``test_resize_downsample_scales_linear`` with its scales so, hence its refusal of the antialiased
    variant is the attribute's doing).  Claims (also ones refused after the NHWC conversion) always count;
    a model without a session that does not load (fate ``None``) says nothing (the local-window
    Attention node tests, invalid graphs, had vetoed ``is_causal=1`` so); one QNN left to a CPU
    without a kernel for it (:data:`NO_KERNEL`) is a refusal (``qnn_table``).
    """
    claimed_dyn = {}
    for op, domain, dtype, rank, fate, attrs in evidence:
        if fate is True and attrs.get(DYNAMIC_SIDE) == "models":
            claimed_dyn.setdefault((domain, op), []).append(_positions(attrs))
    out = []
    for op, domain, dtype, rank, fate, attrs in evidence:
        if DYNAMIC_SIDE in attrs and fate not in (True, "layout_refusal", None):  # None: no session, no fact
            if attrs[DYNAMIC_SIDE] != "models" or not any(
                    _positions(attrs) <= seen for seen in claimed_dyn.get((domain, op), ())):
                continue
            fate = ATTR_ONLY  # not a reason to narrow the dtypes or ranks
        out.append((op, domain, dtype, rank, fate,
                    {k: v for k, v in attrs.items() if k not in (DYNAMIC_SIDE, DYNAMIC_POSITIONS)}))
    return out


def _positions(attrs):
    return frozenset(int(k) for k in str(attrs.get(DYNAMIC_POSITIONS, "")).split(",") if k)


def _static_output(model):
    import onnx

    try:
        m = onnx.shape_inference.infer_shapes(model, data_prop=True)
    except Exception:
        return False
    out = m.graph.output[0].type.tensor_type
    return out.HasField("shape") and all(d.HasField("dim_value") for d in out.shape.dim)


def _attr_defaults(op, domain):
    """Scalar attribute defaults of the op's schema (newest version)."""
    import onnx

    try:
        schema = onnx.defs.get_schema(op, domain=domain or "")
    except Exception:
        return {}
    out = {}
    for name, a in schema.attributes.items():
        if a.default_value is not None and a.default_value.name:
            v = onnx.helper.get_attribute_value(a.default_value)
            if isinstance(v, bytes):
                v = v.decode(errors="replace")
            if isinstance(v, (int, str)):
                out[name] = v
    return out


def _covers(rule, dtype, rank):
    if dtype not in rule["types"]["i0"]:
        return False
    if rank is None:
        return True
    return rule.get("min_rank", rank) <= rank <= rule.get("max_rank", rank)


def _attr_conditions(rules, cases, defaults=None):
    """``not_in`` conditions for attribute values seen only on nodes QNN refused although their dtype
    and rank are covered by ``rules`` (and never on a node it claimed; an attribute a claimed node
    leaves out counts with its schema default, ``defaults``).

    A refused node may carry several such values while one of them is the reason: the values are
    chosen greedily, the one explaining most refused nodes not yet explained first, and a value
    that explains no further node is not vetoed (the ArgMax node tests refused for
    ``select_last_index=1`` also use ``axis=-1``, which QNN takes).  Float values explain a refusal
    but are never written (a float is not a ``not_in`` value).  The dtypes of side inputs
    (:data:`SIDE_DTYPE` pseudo attributes of ``--models`` cases) compete the same way; returns
    ``(conditions, {input index: vetoed dtypes})`` (Attention with a bool ``attn_mask``).
    """
    seen_yes, refused = {}, []
    defaults = defaults or {}
    for dtype, rank, claimed, attrs in cases:
        if not claimed and not any(_covers(r, dtype, rank) for r in rules):
            continue  # refused for its dtype or rank already
        if claimed:
            for name, value in defaults.items():
                if name not in attrs:
                    seen_yes.setdefault(name, set()).add(value)
        norm = {name: (round(v, 6) if isinstance(v, float) else v) for name, v in attrs.items()}
        if claimed:
            for name, value in norm.items():
                seen_yes.setdefault(name, set()).add(value)
        else:
            refused.append(norm)
    candidates = {}  # (name, value) -> indices of the refused nodes it could explain
    for k, attrs in enumerate(refused):
        for name, value in attrs.items():
            if value not in seen_yes.get(name, set()):
                candidates.setdefault((name, value), set()).add(k)
    explained, chosen = set(), []
    while True:
        best = max(sorted(candidates, key=lambda nv: (nv[0], str(nv[1]))),
                   key=lambda nv: len(candidates[nv] - explained), default=None)
        if best is None or not candidates[best] - explained:
            break
        explained |= candidates.pop(best)
        chosen.append(best)
    bad_by_name, dtype_vetoes = {}, {}
    for name, value in chosen:
        if name.startswith(SIDE_DTYPE):
            dtype_vetoes.setdefault(int(name[len(SIDE_DTYPE):]), set()).add(value)
        else:
            bad_by_name.setdefault(name, []).append(value)
    conds = []
    for name in sorted(bad_by_name):
        bad = sorted(v for v in bad_by_name[name] if isinstance(v, (int, str)))
        if bad and all(type(v) is type(bad[0]) for v in bad):
            conds.append({"name": name, "not_in": bad})
    return conds, dtype_vetoes


def qnn_table(models=(), soc_model="60", python=None, ops=PROBE_OPS, ranks=RANKS, work=None, evidence_out=None,
              qdq=True):
    """YAML text of the measured QNN table (see the module docstring)."""
    import onnx

    from .ep_tables import QNN_PREDICATES, TABLES
    from .yamlout import dump_table

    with tempfile.TemporaryDirectory(prefix="partsim-qnn-probes-") as tmp:
        base_dir = Path(work or tmp)
        paths, expect, probes = [], {}, set()
        for op, dtype, rank, variant in probe_specs(ops, ranks):
            tag = "".join(f".{k}={v}" for k, v in variant)
            p = base_dir / f"{op}.{dtype}.r{rank}{tag}.onnx"
            onnx.save(build_probe(op, dtype, rank, variant), str(p))
            paths.append(str(p))
            probes.add(str(p))
            expect[str(p)] = (op, "", dtype, rank, f"n0_{op}", dict(variant))
        for d in models:
            for p in sorted(Path(d).glob("*.onnx")):
                f = _features(str(p))
                if f is not None:
                    paths.append(str(p))
                    expect[str(p)] = f
        qdq_paths = {}
        for op, combo in (qdq_specs() if qdq else ()):
            p = base_dir / ("qdq." + op + "".join(f".{k}={v}" for k, v in combo) + ".onnx")
            onnx.save(build_qdq_probe(op, combo), str(p))
            qdq_paths[str(p)] = (op, combo)
        recs = probe_models(paths + list(qdq_paths), {"soc_model": str(soc_model)}, python=python)
    unit_types = qdq_unit_types({qdq_paths[p]: _claimed(recs[p], f"n0_{qdq_paths[p][0]}") for p in qdq_paths})
    evidence = []
    for p in paths:
        op, domain, dtype, rank, name, attrs = expect[p]
        rec = recs[p]
        err = rec.get("create_error", "")
        fate = _claimed(rec, name) if "assignment" in rec or LAYOUT_REFUSAL in err else None
        if fate is None and NO_KERNEL in err and f"node with name '{name}'" in err and p not in probes:
            # a --models node QNN left to a CPU without a kernel for it: a refusal all the same (not
            # read from the probes: Where's are keyed by input 0, the bool condition, while the CPU
            # lacks the bool values they feed)
            fate = False
        if fate == "layout_refusal" and _explained_after_layout(p, name):
            fate = True  # claimed as it is; its NHWC form fails a check the table states (sim/layout_checks.py)
        evidence.append((op, domain, dtype, rank, fate, attrs))
    if evidence_out:  # the raw evidence, one JSON object per model (for review; not read back)
        with open(evidence_out, "w") as f:
            for p, e in zip(paths, evidence):
                rec = recs[p]
                f.write(json.dumps({"model": Path(p).name, "op": e[0], "domain": e[1], "dtype": e[2], "rank": e[3],
                                    "fate": e[4], "attrs": e[5], "error": rec.get("create_error", "")[:300]},
                                   sort_keys=True) + "\n")
    # nodes whose side inputs come at run time: a claim (also one refused after the NHWC conversion) is
    # evidence, a refusal may be for that reason alone
    dynamic = [e for e in evidence if e[5].get(DYNAMIC_SIDE) == 1]  # the probes (a --models case says "models")
    evidence = usable_evidence(evidence)
    derived = derive_rules(evidence)
    for op, domain, dtype, rank, fate, attrs in dynamic:
        # claimed with constant side inputs, refused when they come at run time (the output shapes declared
        # as before): the builder wants those inputs constant
        rules = [r for r in derived.get((domain, op)) or [] if not r.get("layout_refusal")]
        probe = build_probe(op, dtype, rank, ((DYNAMIC_SIDE, 1),))
        if fate is False and any(_covers(r, dtype, rank) for r in rules):
            fed = {v.name for v in probe.graph.input}  # the side inputs the dynamic variant feeds at run time
            side = [k for k, t in enumerate(probe.graph.node[0].input) if k and t in fed]
            for r in derived[(domain, op)]:
                r["const_inputs"] = side
    from ..sim.layout import LAYOUT_SENSITIVE_OPS

    converted, claimed_sensitive = set(), set()
    for rec in recs.values():
        for ep, members in rec.get("assignment") or []:
            converted.update(m[1] for m in members if m[2] == "com.ms.internal.nhwc")
            if ep == "QNNExecutionProvider":
                claimed_sensitive.update(m[1] for m in members if not m[2] and m[1] in LAYOUT_SENSITIVE_OPS)
        err = rec.get("create_error", "")
        if LAYOUT_REFUSAL in err and "OpType:" in err:
            converted.add(err.split("OpType:", 1)[1].split()[0])
    table = TABLES["qnn"]()
    ops_out = []
    seen = set()
    for rule in table["ops"]:
        key = (rule.get("domain", ""), rule["op"])
        seen.add(key)
        if key not in derived or (not derived[key] and key[1] not in PROBE_OPS):
            # no evidence, or only refusals among the --models cases (their side inputs and attributes
            # are not the defaults): the builder's rule stands
            ops_out.append(rule)
            continue
        for d in derived[key]:
            merged = {k: v for k, v in rule.items() if k not in ("min_rank", "max_rank", "rank_inputs")
                      or not ("min_rank" in d or "max_rank" in d)}
            merged.update(d)
            if rule.get("attrs") and d.get("attrs"):  # the builder's conditions stay, the measured ones add
                merged["attrs"] = list(rule["attrs"]) + [a for a in d["attrs"] if a["name"] not in
                                                         {b["name"] for b in rule["attrs"]}]
            ops_out.append(merged)
    for key in sorted(set(derived) - seen):
        # an op the builder list lacks but the sessions show claimed: the builder checks known for it
        # (QNN_PREDICATES, e.g. Attention's inputs) still apply
        known = QNN_PREDICATES.get(key[1], {}) if not key[0] else {}
        for d in derived[key]:
            ops_out.append({"op": key[1], **({"domain": key[0]} if key[0] else {}), **known, **d})
    # ORT's node units take com.microsoft QuantizeLinear/DequantizeLinear as they take ONNX's (node_unit.cc,
    # qdq_selectors.cc match both domains), and so does the QNN EP: the 16-bit QDQ models ORT's quantization
    # tools write (get_qnn_qdq_config, com.microsoft Q/DQ) ran whole on QNN 2.7.0 (four torchvision models)
    for rule in [r for r in ops_out if r["op"] in ("QuantizeLinear", "DequantizeLinear") and not r.get("domain")]:
        ops_out.append({**rule, "domain": "com.microsoft"})
    claimed = sum(1 for e in evidence if e[4] in (True, "layout_refusal"))
    table["ops"] = ops_out
    table["source"] = dict(table["source"])
    table["source"]["description"] = ("QNN EP op builders (op_builder_factory.cc) narrowed and extended by real "
                                      "onnxruntime-qnn sessions on single-op probes (partsim/gen/qnn.py)")
    table["source"]["generated_by"] = "partsim rules import qnn" + "".join(f" --models {m}" for m in models)
    refused = sum(1 for e in evidence if e[4] is False or e[4] == ATTR_ONLY)
    no_session = sum(1 for e in evidence if e[4] is None)
    table["source"]["version"] = (f"onnxruntime {_ort_version(python)} + onnxruntime-qnn {_qnn_version(python)}, "
                                  f"HTP emulator soc_model {soc_model}; builders {table['source']['version']}")
    probe_note = (f"evidence: {len(paths)} one-node models ({claimed} claimed by QNN, {refused} left to the CPU, "
                  f"{no_session} without a session or a node of that name); {len(qdq_paths)} QDQ node-unit probes")
    table["partitioning"] = dict(table["partitioning"])
    table["partitioning"]["offload_graph_io_quantization"] = True
    # seen on real sessions: tiny_resnet with a symbolic batch (only its weight Identities are claimed) and the
    # attention *_expanded node tests fail with "Having zero graph inputs is not supported on this backend"
    table["partitioning"]["refuse_all_constant_input_groups"] = True
    # the Cast builder reads CastLike's second input for its type only and makes no QNN tensor for it; a
    # partition whose first input is such a tensor gets none at all (qnn_model_wrapper.cc
    # GetGraphInputOutputTensorWrapper stops there; seen on the affine_grid *_expanded node tests)
    table["partitioning"]["type_only_inputs"] = {"CastLike": [1]}
    # no float64 graph input tensor ("Failed to pre-register input ... error code: 7004"; test_bernoulli, whose
    # RandomUniformLike reads a double graph input)
    table["partitioning"]["refused_graph_input_dtypes"] = ["double"]
    # the STFT builder reads frame_step/frame_length (and the window) as initializers without checking: fed at
    # run time the process crashes (test_stft, test_stft_with_window) or the graph does not finalize
    table["partitioning"]["build_needs_constant_inputs"] = {"STFT": [1, 2, 3]}
    # onnxruntime-qnn 2.x is a plugin EP: its own copy of the partition wave forms the groups, ORT re-partitions
    # each and drops them all when one splits (ep_plugin_provider_interfaces.cc; seen on fasterrcnn, all CPU)
    table["partitioning"]["plugin_group_check"] = True
    # which 8/16-bit tensors reach the backend quantized: the first node unit that meets one registers it
    # (base_op_builder.cc ProcessInput), quantized only by a DQ/Q, a QDQ unit or a QOperator op; a lone DQ on a
    # plain tensor and a plain output written from a quantized input are refused (seen on
    # q_tiny_transformer.dynamo.{dyn,qop}; partsim/sim/qnn_tensors.py).  transpose_op_builder.cc: Transpose's
    # output takes the input's data type and quantization
    table["partitioning"]["quantized_tensor_types"] = True
    table["partitioning"]["quantized_passthrough_ops"] = ["Transpose"]
    # QnnEp::GetCapabilityImpl returns at once for a graph with a parent node: nothing inside If/Loop/Scan
    table["partitioning"]["subgraphs"] = "unsupported"
    # qnn_node_group/dq_matmul_integer_fusion.cc: DynamicQuantizeLinear + MatMulInteger (+ Cast, Muls, Add) as
    # one float MatMul; neither has a builder alone (seen on q_tiny_resnet.ts.dyn's classifier)
    table["partitioning"]["node_groups"] = ["dq_matmul_integer", "dq_conv_integer", "gelu",
                                           "reshape_transpose_rank6"]
    # probes whose side inputs come at run time (output shape unknown) were all refused, while a Reshape
    # whose shape input is computed from static shapes is claimed: the outputs must be static too
    table["defaults"] = {**table["defaults"], "static_outputs": True}
    if unit_types:  # the HTP backend validates a QDQ unit's quantized types as a whole
        table["partitioning"]["qdq_unit_types"] = unit_types
    extra = sorted(converted - LAYOUT_SENSITIVE_OPS)
    if extra:  # QnnEp::ShouldConvertDataLayoutForOpImpl asks for these too
        table["partitioning"]["layout_extra_ops"] = extra
    kept = sorted(claimed_sensitive - converted)
    if kept:  # layout-sensitive ops QNN claimed and ORT never converted for it (QLinearConv: its builder
        # transposes by itself, seen on q_tiny_resnet.ts.qop)
        table["partitioning"]["layout_keep_ops"] = kept
    # the pool builder computes a ceil_mode output size ONNX does not (sim/layout_checks.py; measured on the
    # maxpool/averagepool ceil node tests and tests/test_qnn_refusals.py)
    table["partitioning"]["layout_checks"] = list(QNN_LAYOUT_CHECKS)
    # zero-size tensors: these builders refuse the node, the others take it and the graph then fails to compose
    # (sim/zero_size.py; measured on single-node graphs, tests/test_qnn_refusals.py)
    table["partitioning"]["zero_size_tensors"] = {"fallback_ops": ["Reshape", "Slice", "Split"]}
    # the HTP takes no tensor of rank 6 or more, whatever the op (measured: no claimed node test has one,
    # 25 refused ones do; a Reshape to rank 6 between QNN nodes is refused), except inside a node group
    table["partitioning"]["max_tensor_rank"] = 5
    table["notes"] = list(table["notes"]) + [probe_note,
        "dtypes and rank ranges per op measured on the x86-64 HTP emulator (soc_model "
        f"{soc_model}); a phone's HTP may differ (fp16 and int16 support depend on the architecture).",
        "Graph I/O quantization: a QuantizeLinear reading a graph input or a DequantizeLinear writing a graph "
        "output is left to the CPU (QNN provider option offload_graph_io_quantization, default on).",
    ]
    header = "qnn: generated by partsim/gen/qnn.py from real QNN sessions (see 'source')."
    return dump_table(table, header)


def _ort_version(python):
    try:
        out = subprocess.run([python or sys.executable, "-c", "import onnxruntime as o; print(o.__version__)"],
                             capture_output=True, text=True, timeout=60)
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"


def _qnn_version(python):
    try:
        out = subprocess.run([python or sys.executable, "-c", "import onnxruntime_qnn as q; print(q.__version__)"],
                             capture_output=True, text=True, timeout=60, env=dict(os.environ))
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
