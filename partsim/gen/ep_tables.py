"""Rule tables for TensorRT, QNN, XNNPACK and WebGPU from reviewable source facts.

Each table is built from dicts/blocks below, every one naming the file it was read from.
ORT sources: onnxruntime main @735e69a396afe7e1bdfbc6b38c1d43eeb68b8484 (2026-02-13,
VERSION_NUMBER 1.25.0), the same commit the CUDA table comes from.  TensorRT's op list:
onnx-tensorrt ``docs/operators.md`` @96e781103cfc (ONNX-TensorRT 10.1 GA, 2024-06-17; ORT's
``cmake/deps.txt`` pins onnx-tensorrt d5dce67, a later 10.x whose list was not available here).
Output is deterministic::

    partsim rules import ep-table --provider tensorrt -o rules/tensorrt.yaml   # also qnn, xnnpack, webgpu
"""

import onnx.defs

from ..errors import UsageError
from .yamlout import dump_table

__all__ = ["build_table", "TABLES"]

ORT_COMMIT = "735e69a396afe7e1bdfbc6b38c1d43eeb68b8484"
ORT_VERSION = "onnxruntime main @735e69a (2026-02-13, VERSION_NUMBER 1.25.0)"
_URL = f"https://github.com/microsoft/onnxruntime/blob/{ORT_COMMIT}/"


def _const(*k):
    return {"const_inputs": list(k)}


def _rank(lo=None, hi=None, inputs=(0,)):
    d = {"rank_inputs": list(inputs)}
    if lo is not None:
        d["min_rank"] = lo
    if hi is not None:
        d["max_rank"] = hi
    return d


def _attr(name, **kw):
    return {"name": name, **kw}


# ============================================================================================ TensorRT
# onnx-tensorrt docs/operators.md @96e7811 (ONNX-TensorRT 10.1 GA): rows marked Y, "Op  SupportedTypes"
TRT_OPERATORS = """
    Abs                        FP32,FP16,BF16,INT32,INT64
    Acos                       FP32,FP16,BF16
    Acosh                      FP32,FP16,BF16
    Add                        FP32,FP16,BF16,INT32,INT64
    And                        BOOL
    ArgMax                     FP32,FP16,BF16,INT32,INT64
    ArgMin                     FP32,FP16,BF16,INT32,INT64
    Asin                       FP32,FP16,BF16
    Asinh                      FP32,FP16,BF16
    Atan                       FP32,FP16,BF16
    Atanh                      FP32,FP16,BF16
    AveragePool                FP32,FP16,BF16
    BatchNormalization         FP32,FP16,BF16
    Cast                       FP32,FP16,BF16,INT32,INT64,UINT8,BOOL
    CastLike                   FP32,FP16,BF16,INT32,INT64,UINT8,BOOL
    Ceil                       FP32,FP16,BF16
    Celu                       FP32,FP16,BF16
    Clip                       FP32,FP16,BF16
    Concat                     FP32,FP16,BF16,INT32,INT64,BOOL
    Constant                   FP32,FP16,BF16,INT32,INT64,BOOL
    ConstantOfShape            FP32,FP16,BF16,INT32,INT64,BOOL
    Conv                       FP32,FP16,BF16
    ConvTranspose              FP32,FP16,BF16
    Cos                        FP32,FP16,BF16
    Cosh                       FP32,FP16,BF16
    CumSum                     FP32,FP16,BF16
    DeformConv                 FP32,FP16
    DepthToSpace               FP32,FP16,BF16,INT32,INT64
    DequantizeLinear           INT8,FP8,INT4
    Div                        FP32,FP16,BF16,INT32,INT64
    Dropout                    FP32,FP16,BF16
    Einsum                     FP32,FP16,BF16
    Elu                        FP32,FP16,BF16
    Equal                      FP32,FP16,BF16,INT32,INT64
    Erf                        FP32,FP16,BF16
    Exp                        FP32,FP16,BF16
    Expand                     FP32,FP16,BF16,INT32,INT64,BOOL
    EyeLike                    FP32,FP16,BF16,INT32,INT64,BOOL
    Flatten                    FP32,FP16,BF16,INT32,INT64,BOOL
    Floor                      FP32,FP16,BF16
    Gather                     FP32,FP16,BF16,INT32,INT64,BOOL
    GatherElements             FP32,FP16,BF16,INT32,INT64,BOOL
    GatherND                   FP32,FP16,BF16,INT32,INT64,BOOL
    Gelu                       FP32,FP16,BF16,INT8,INT32,INT64
    Gemm                       FP32,FP16,BF16
    GlobalAveragePool          FP32,FP16,BF16
    GlobalLpPool               FP32,FP16,BF16
    GlobalMaxPool              FP32,FP16,BF16
    Greater                    FP32,FP16,BF16,INT32,INT64
    GreaterOrEqual             FP32,FP16,BF16,INT32,INT64
    GridSample                 FP32,FP16
    GroupNormalization         FP32,FP16,BF16
    GRU                        FP32,FP16,BF16
    HardSigmoid                FP32,FP16,BF16
    HardSwish                  FP32,FP16,BF16
    Hardmax                    FP32,FP16,BF16
    Identity                   FP32,FP16,BF16,INT32,INT64,BOOL
    If                         FP32,FP16,BF16,INT32,INT64,BOOL
    ImageScaler                FP32,FP16,BF16
    InstanceNormalization      FP32,FP16,BF16
    IsInf                      FP32,FP16,BF16
    IsNaN                      FP32,FP16,BF16,INT32,INT64
    LayerNormalization         FP32,FP16,BF16
    LeakyRelu                  FP32,FP16,BF16
    Less                       FP32,FP16,BF16,INT32,INT64
    LessOrEqual                FP32,FP16,BF16,INT32,INT64
    Log                        FP32,FP16,BF16
    LogSoftmax                 FP32,FP16,BF16
    Loop                       FP32,FP16,BF16,INT32,INT64,BOOL
    LRN                        FP32,FP16,BF16
    LSTM                       FP32,FP16,BF16
    LpNormalization            FP32,FP16,BF16
    LpPool                     FP32,FP16,BF16
    MatMul                     FP32,FP16,BF16
    Max                        FP32,FP16,BF16,INT32,INT64
    MaxPool                    FP32,FP16,BF16
    Mean                       FP32,FP16,BF16,FP8,INT32,INT64
    MeanVarianceNormalization  FP32,FP16,BF16
    Min                        FP32,FP16,BF16,INT32,INT64
    Mish                       FP32,FP16
    Mod                        FP32,FP16,BF16,INT32,INT64
    Mul                        FP32,FP16,BF16,INT32,INT64
    Neg                        FP32,FP16,BF16,INT32,INT64
    NonMaxSuppression          FP32,FP16
    NonZero                    FP32,FP16
    Not                        BOOL
    OneHot                     FP32,FP16,BF16,INT32,INT64,BOOL
    Or                         BOOL
    Pad                        FP32,FP16,BF16,INT32,INT64
    ParametricSoftplus         FP32,FP16,BF16
    Pow                        FP32,FP16,BF16
    PRelu                      FP32,FP16,BF16
    QuantizeLinear             FP32,FP16,BF16
    RandomNormal               FP32,FP16,BF16
    RandomNormalLike           FP32,FP16,BF16
    RandomUniform              FP32,FP16,BF16
    RandomUniformLike          FP32,FP16,BF16
    Range                      FP32,FP16,BF16,INT32,INT64
    Reciprocal                 FP32,FP16,BF16
    ReduceL1                   FP32,FP16,BF16,INT32,INT64
    ReduceL2                   FP32,FP16,BF16,INT32,INT64
    ReduceLogSum               FP32,FP16,BF16,INT32,INT64
    ReduceLogSumExp            FP32,FP16,BF16,INT32,INT64
    ReduceMax                  FP32,FP16,BF16,INT32,INT64
    ReduceMean                 FP32,FP16,BF16,INT32,INT64
    ReduceMin                  FP32,FP16,BF16,INT32,INT64
    ReduceProd                 FP32,FP16,BF16,INT32,INT64
    ReduceSum                  FP32,FP16,BF16,INT32,INT64
    ReduceSumSquare            FP32,FP16,BF16,INT32,INT64
    Relu                       FP32,FP16,BF16,INT32,INT64
    Reshape                    FP32,FP16,BF16,INT32,INT64,BOOL
    Resize                     FP32,FP16,BF16
    ReverseSequence            FP32,FP16,BF16,INT32,INT64,BOOL
    RNN                        FP32,FP16,BF16
    RoiAlign                   FP32,FP16
    Round                      FP32,FP16,BF16
    ScaledTanh                 FP32,FP16,BF16
    Scan                       FP32,FP16,BF16
    Scatter                    FP32,FP16,BF16,INT32,INT64
    ScatterElements            FP32,FP16,BF16,INT32,INT64
    ScatterND                  FP32,FP16,BF16,INT32,INT64
    Selu                       FP32,FP16,BF16,
    Shape                      FP32,FP16,BF16,INT32,INT64,BOOL
    Shrink                     FP32,FP16,BF16,INT32,INT64
    Sigmoid                    FP32,FP16,BF16
    Sign                       FP32,FP16,BF16,INT32,INT64
    Sin                        FP32,FP16,BF16
    Sinh                       FP32,FP16,BF16
    Size                       FP32,FP16,BF16,INT32,INT64,BOOL
    Slice                      FP32,FP16,BF16,INT32,INT64,BOOL
    Softmax                    FP32,FP16,BF16
    Softplus                   FP32,FP16,BF16
    Softsign                   FP32,FP16,BF16
    SpaceToDepth               FP32,FP16,BF16,INT32,INT64
    Split                      FP32,FP16,BF16,INT32,INT64,BOOL
    Sqrt                       FP32,FP16,BF16
    Squeeze                    FP32,FP16,BF16,INT32,INT64,BOOL
    Sub                        FP32,FP16,BF16,INT32,INT64
    Sum                        FP32,FP16,BF16,INT32,INT64
    Tan                        FP32,FP16,BF16
    Tanh                       FP32,FP16,BF16
    ThresholdedRelu            FP32,FP16,BF16
    Tile                       FP32,FP16,BF16,INT32,INT64,BOOL
    TopK                       FP32,FP16,BF16,INT32,INT64
    Transpose                  FP32,FP16,BF16,INT32,INT64,BOOL
    Trilu                      FP32,FP16,BF16,INT32,INT64,BOOL
    Unsqueeze                  FP32,FP16,BF16,INT32,INT64,BOOL
    Upsample                   FP32,FP16,BF16
    Where                      FP32,FP16,BF16,INT32,INT64,BOOL
    Xor                        BOOL
"""

_TRT_DTYPES = {"FP32": "float", "FP16": "float16", "BF16": "bfloat16", "INT32": "int32", "INT64": "int64",
               "INT8": "int8", "UINT8": "uint8", "BOOL": "bool", "DOUBLE": "double", "FP8": "float8e4m3fn",
               "INT4": "int4"}

# Restrictions column of docs/operators.md encoded as predicates (the rest become notes).
TRT_PREDICATES = {
    "AveragePool": {**_rank(4, 5), "attrs": [_attr("dilations", **{"in": [[1, 1], [1, 1, 1]]})],
                    "notes": "2D or 3D pooling only; dilations empty or all ones"},
    "MaxPool": {**_rank(4, 5), "attrs": [_attr("dilations", **{"in": [[1, 1], [1, 1, 1]]})],
                "notes": "2D or 3D pooling only; the Indices output is unsupported (not checked)"},
    "LpPool": {"attrs": [_attr("dilations", **{"in": [[1], [1, 1], [1, 1, 1]]})]},
    "CumSum": {**_const(1), "notes": "axis must be an initializer"},
    "Pad": {**_const(3), "notes": "axes must be an initializer"},
    "Slice": {**_const(3), "notes": "axes must be an initializer"},
    "Squeeze": {**_const(1), "notes": "axes must be an initializer"},
    "Unsqueeze": {**_const(1), "notes": "axes must be a constant tensor"},
    "ReduceL1": _const(1), "ReduceL2": _const(1), "ReduceLogSum": _const(1), "ReduceLogSumExp": _const(1),
    "ReduceMax": _const(1), "ReduceMean": _const(1), "ReduceMin": _const(1), "ReduceProd": _const(1),
    "ReduceSum": _const(1), "ReduceSumSquare": _const(1),
    "TopK": {"attrs": [_attr("sorted", default=1, **{"in": [1]})], "notes": "K must be below 3840 (not checked)"},
    "LSTM": {"attrs": [_attr("input_forget", default=0, **{"in": [0]}), _attr("layout", default=0, **{"in": [0]})],
             "notes": "bidirectional: same activations both ways (not checked)"},
    "ScatterND": {"attrs": [_attr("reduction", default="none", **{"in": ["none"]})]},
    "Resize": {"attrs": [
        _attr("coordinate_transformation_mode", default="half_pixel",
              **{"in": ["half_pixel", "pytorch_half_pixel", "tf_half_pixel_for_nn", "asymmetric", "align_corners"]}),
        _attr("mode", default="nearest", **{"in": ["nearest", "linear"]}),
        _attr("nearest_mode", default="round_prefer_floor",
              **{"in": ["floor", "ceil", "round_prefer_floor", "round_prefer_ceil"]}),
        _attr("keep_aspect_ratio_policy", default="stretch", **{"in": ["stretch"]}),
        _attr("antialias", default=0, **{"in": [0]})],
        "notes": "with a scales input, axes must be an iota of length rank (not checked)"},
    "GridSample": _rank(4, 4),
    "EyeLike": {"static_shape": True},
    "Dropout": {**_const(2), "notes": "training_mode must evaluate to False (value not checked)"},
    "DequantizeLinear": {"notes": "x_zero_point must be zero (value not checked)"},
    "QuantizeLinear": {"notes": "y_zero_point must be zero (value not checked)"},
    "If": {"notes": "branch outputs must have the same rank and different names (not checked); ORT's TRT EP "
                    "takes a control-flow node only when all of its subgraphs went to TensorRT"},
    "Loop": {"notes": "scan outputs must have static length (not checked); see If"},
    "Scan": {"notes": "see If"},
}


def _input0_constraint(op):
    try:
        s = onnx.defs.get_schema(op)
    except onnx.defs.SchemaError:
        return None, ()
    if not s.inputs:
        return None, ()
    name = s.inputs[0].type_str
    allowed = {t[7:-1] for tc in s.type_constraints if tc.type_param_str == name for t in tc.allowed_type_strs}
    return (name, allowed) if allowed else (None, ())


def _tensorrt():
    ops = []
    for line in TRT_OPERATORS.strip().splitlines():
        op, _, types = line.strip().partition(" ")
        types = types.strip()
        if not onnx.defs.has(op):
            continue  # e.g. ParametricSoftplus: an ORT-only schema, never an ONNX-domain node from exporters
        rule = {"op": op}
        unknown = [t for t in types.split(",") if t and t not in _TRT_DTYPES]
        if unknown:  # a misspelt type must not vanish silently (it once did: INF64)
            raise ValueError(f"TRT_OPERATORS: {op}: unknown TensorRT type {', '.join(unknown)}")
        dtypes = sorted({_TRT_DTYPES[t] for t in types.split(",") if t})
        constraint, allowed = _input0_constraint(op)
        # the doc's types are those of the op's data tensor; bind them to input 0's constraint when
        # every one of them is allowed there, otherwise (Where's bool condition, Shape's output) leave dtypes open
        if constraint and dtypes and set(dtypes) <= allowed:
            rule["types"] = {constraint: dtypes}
        extra = dict(TRT_PREDICATES.get(op, {}))
        rule.update(extra)
        ops.append(rule)
    return {
        "provider": "TensorrtExecutionProvider", "aliases": ["tensorrt", "trt"], "kind": "compiling",
        "cpu_based": False, "layout": "NCHW", "precisions": ["fp32", "fp16", "bf16", "int8"],
        "compute_precision": "fp32",
        "source": {"description": "onnx-tensorrt docs/operators.md (ops marked Y, types, restrictions) + ORT "
                                  "TensorrtExecutionProvider::GetCapability (tensorrt_execution_provider.cc)",
                   "version": f"onnx-tensorrt 10.1 GA @96e7811; {ORT_VERSION}",
                   "generated_by": "partsim rules import ep-table --provider tensorrt",
                   "url": "https://github.com/onnx/onnx-tensorrt/blob/96e781103cfc4adf4a6bb557e94bac8e693f6f4c/"
                          "docs/operators.md"},
        "partitioning": {"min_nodes": 1, "subgraphs": "separate"},
        "notes": [
            "GetCapability asks the TensorRT parser (supportsModel) which nodes it takes; partsim uses the parser's "
            "documented op list instead of running it, so shape- or value-dependent parser rejections are not seen.",
            "Supported types are bound to the constraint of input 0 when all of them fit it; otherwise dtypes "
            "are not checked. TensorRT 10 parses opsets 9 to 20; op versions are not checked.",
            "trt_min_subgraph_size (default 1) and trt_op_types_to_exclude (default empty) are the defaults here; "
            "nodes TensorRT rejects fall to the next provider (CUDA when listed after TensorRT).",
        ],
        "ops": ops,
    }


# ============================================================================================ QNN (HTP)
# Op types with a builder in onnxruntime/core/providers/qnn/builder/op_builder_factory.cc @735e69a.
# The QNN EP looks builders up by op type only; the com.microsoft ones are listed with their domain.
QNN_OPS = (
    "Abs Add And ArgMax ArgMin Asin Atan AveragePool BatchNormalization Cast Ceil Clip Concat Conv "
    "ConvTranspose Cos CumSum DepthToSpace DequantizeLinear Div Einsum Elu Equal Exp Expand Flatten Floor "
    "Gather GatherElements GatherND Gelu Gemm GlobalAveragePool GlobalMaxPool Greater GreaterOrEqual "
    "GridSample HardSigmoid HardSwish InstanceNormalization LRN LSTM LayerNormalization LeakyRelu Less "
    "LessOrEqual Log LogSoftmax LpNormalization MatMul Max MaxPool Mean Min Mod Mul Neg Not Or PRelu Pad Pow "
    "QuantizeLinear RMSNormalization RandomUniformLike Reciprocal ReduceL2 ReduceMax ReduceMean ReduceMin "
    "ReduceProd ReduceSum Relu Reshape Resize Round STFT ScatterElements ScatterND Sigmoid Sign Sin Slice "
    "Softmax SpaceToDepth Split Sqrt Squeeze Sub Sum Tanh ThresholdedRelu Tile TopK Transpose Unsqueeze "
    "Upsample Where"
).split()
QNN_MS_OPS = ("FusedMatMul", "Gelu", "Inverse", "MatMulNBits", "QuickGelu")

def _last_axis_only():
    """One output (Y) and ``axis`` the last axis: the HTP checks of QNN's LayerNormalization and
    RMSNormalization builders (IsOpSupported; the optional Mean/InvStdDev outputs are refused)."""
    return {"max_outputs": 1, "attrs": [_attr("axis", default=-1, last_axis=True)]}


# Checks in the op builders (file: opbuilder/<name>_op_builder.cc) encoded as predicates.
QNN_PREDICATES = {
    "Conv": _rank(3, 5),            # conv_op_builder.cc: "only supports 3D(rank 5), 2D (rank 4) or 1D (rank 3)"
    "ConvTranspose": _rank(3, 5),
    "BatchNormalization": _rank(None, 4),  # batch_norm_op_builder.cc: input rank <= 4
    "Gather": _rank(2, 4),          # gather_op_builder.cc: input0 rank > 1 && <= 4
    "InstanceNormalization": _rank(3, 4),  # instance_norm_op_builder.cc: rank 3 or 4
    "LRN": _rank(3, 4),             # lrn_op_builder.cc
    "RMSNormalization": {**_rank(None, 4), **_last_axis_only()},  # rmsnormalization_op_builder.cc
    # layernormalization_op_builder.cc: "QNN LayerNorm only support 1 output", "on HTP only supports
    # normalization along the last axis"
    "LayerNormalization": _last_axis_only(),
    "Expand": _const(1),            # expand_op_builder.cc: "QNN doesn't support dynamic shape" (shape input)
    "TopK": _const(1),              # topk_op_builder.cc: "k must be specified as constant input"
    "Split": _const(1),             # split_op_builder.cc: "QNN doesn't support dynamic split"
    # gemm_op_builder.cc ExplictOpCheck: "QNN FullyConnected Op only support alpha=1.0" (and beta=1.0)
    # lstm_op_builder.cc IsOpSupported: "dynamic sequence_length is not supported" (input 4), "Unsupport
    # layout mode" for layout != 0, "non-default clip"
    "LSTM": {**_const(4), "attrs": [_attr("layout", default=0, **{"in": [0]}), _attr("clip", **{"in": [0.0]})]},
    "Gemm": {"attrs": [_attr("alpha", default=1.0, **{"in": [1.0]}), _attr("beta", default=1.0, **{"in": [1.0]})]},
    "Conv_notes": None,
}
QNN_PREDICATES.pop("Conv_notes")
# the variadic element-wise builders refuse a single input: "QNN EP requires Max to have at least 2
# inputs" (Min, Sum alike; Mean: "Mean op requires at least two inputs"), measured on onnxruntime-qnn
# 2.7.0 (node tests max_one_input, min_one_input and built one-input graphs of all four)
for _op in ("Max", "Min", "Sum", "Mean"):
    QNN_PREDICATES[_op] = {**QNN_PREDICATES.get(_op, {}), "min_inputs": 2}
# the Attention builder: "Attention: nonpad_kv_seqlen is not supported by QNN EP" (input 6 of Attention-24;
# 2.7.0's log on the node tests attention_4d_causal_nonpad_*, attention_4d_gqa_causal_nonpad_decode)
QNN_PREDICATES["Attention"] = {**QNN_PREDICATES.get("Attention", {}), "max_inputs": 6}
# pool_op_builder.cc: "QNN Pool only supports dilations 1!" (seen in 2.7.0's log for a MaxPool with dilations)
for _op in ("MaxPool", "AveragePool"):
    QNN_PREDICATES[_op] = {**QNN_PREDICATES.get(_op, {}),
                           "attrs": QNN_PREDICATES.get(_op, {}).get("attrs", []) + [_attr("dilations", max=1)]}


# resize_op_builder.cc (IsOpSupported): no anti-aliasing, the coordinate modes of
# supported_coord_transf_modes (+ tf_half_pixel_for_nn, nearest/floor only), and "cubic" only with a
# constant scales input ("does not support dynamic scales input for cubic mode"): two alternative rules
_RESIZE_ATTRS = [_attr("antialias", default=0, **{"in": [0]}),
                 _attr("coordinate_transformation_mode", default="half_pixel",
                       **{"in": ["align_corners", "asymmetric", "half_pixel", "pytorch_half_pixel",
                                 "tf_half_pixel_for_nn"]})]
QNN_RULE_VARIANTS = {
    "Resize": [{"attrs": _RESIZE_ATTRS + [_attr("mode", default="nearest", not_in=["cubic"])]},
               {"attrs": _RESIZE_ATTRS + [_attr("mode", default="nearest", **{"in": ["cubic"]})],
                "const_inputs": [2]}],
}


def _qnn():
    ops = [{"op": op, **QNN_PREDICATES.get(op, {}), **v} for op in QNN_OPS
           for v in QNN_RULE_VARIANTS.get(op, [{}])]
    ops += [{"op": op, "domain": "com.microsoft"} for op in QNN_MS_OPS]
    return {
        "provider": "QNNExecutionProvider", "aliases": ["qnn"], "kind": "compiling", "cpu_based": True,
        "layout": "NHWC", "precisions": ["int8", "fp16"], "compute_precision": "int8",
        "source": {"description": "ORT QNN EP op builders (qnn/builder/op_builder_factory.cc) and their checks; "
                                  "partition filter of qnn_execution_provider.cc (HTP backend)",
                   "version": ORT_VERSION, "generated_by": "partsim rules import ep-table --provider qnn",
                   "url": _URL + "onnxruntime/core/providers/qnn/builder/op_builder_factory.cc"},
        "partitioning": {"qdq_node_units": True, "reject_single_ops": ["DequantizeLinear", "QuantizeLinear"]},
        "defaults": {"static_shape": True},
        "notes": [
            "static_shape: QnnModelWrapper::GetOnnxShape refuses any dimension without a value.",
            "Each builder's IsOpSupported also validates quantization parameters, per-channel axes and backend "
            "(HTP vs CPU) limits that are not encoded; the table is an upper bound for the HTP backend.",
            "A partition of a single QuantizeLinear/DequantizeLinear node is dropped (qnn_execution_provider.cc).",
        ],
        "ops": ops,
    }


# ============================================================================================ XNNPACK
# Kernels of onnxruntime/core/providers/xnnpack/xnnpack_execution_provider.cc (RegisterKernels) @735e69a;
# NHWC-domain kernels are listed under the ONNX op the layout transformer rewrites.  Checks from each
# kernel's IsOnnxNodeSupported (file named) as predicates.  Relu/Clip are fused into a preceding
# Conv/MaxPool/AveragePool (NodeSupportChecker::IsNodeSupportedWithFusion), not claimed on their own.
_POOL_ATTRS = [_attr("ceil_mode", default=0, **{"in": [0]}),
               _attr("auto_pad", default="NOTSET", **{"in": ["NOTSET", "VALID", "SAME_UPPER"]})]
XNNPACK_KERNELS = {
    # op: (version ranges, predicates)                                   source file
    "AveragePool": (((7, 9), (10, 10), (11, 18), (19, None)),           # nn/average_pool.cc
                    {"types": {"T": ["float", "float16"]}, **_rank(4, 4),
                     "attrs": _POOL_ATTRS + [_attr("count_include_pad", default=0, **{"in": [0]})],
                     "notes": "C, H, W static; 2D kernel other than 1x1; dilations all 1"}),
    "MaxPool": (((8, 9), (10, 10), (11, 11), (12, None)),               # nn/max_pool.cc
                {"types": {"T": ["float", "float16", "int8", "uint8"]}, **_rank(4, 4), "attrs": _POOL_ATTRS,
                 "notes": "C, H, W static; 2D kernel other than 1x1; no Indices output"}),
    "Conv": (((11, None),),                                             # nn/conv_base.cc (opset >= 11 only)
             {"types": {"T": ["float", "float16"]}, **_rank(3, 4), **_const(1, 2),
              "attrs": [_attr("auto_pad", default="NOTSET", **{"in": ["NOTSET", "VALID", "SAME_UPPER"]})],
              "notes": "C and spatial dims static"}),
    "ConvTranspose": (((11, None),),                                    # nn/conv_transpose.cc via ConvBase
                      {"types": {"T": ["float", "float16"]}, **_rank(3, 4), **_const(1, 2),
                       "attrs": [_attr("auto_pad", default="NOTSET", **{"in": ["NOTSET", "VALID", "SAME_UPPER"]})]}),
    "QLinearConv": (((10, None),),                                      # KERNEL_CREATE_INFO_TYPED u8/s8
                    {"types": {"T1": ["int8", "uint8"]}, **_rank(3, 4), **_const(3, 8)}),
    "Resize": (((10, 10), (11, 12), (13, 17), (18, 18), (19, None)),    # tensor/resize.cc
               {**_rank(4, 4), "attrs": [
                   _attr("mode", default="nearest", **{"in": ["linear"]}),
                   _attr("antialias", default=0, **{"in": [0]}),
                   _attr("keep_aspect_ratio_policy", default="stretch", **{"in": ["stretch"]}),
                   _attr("exclude_outside", default=0, **{"in": [0]}),
                   _attr("coordinate_transformation_mode", default="half_pixel",
                         **{"in": ["asymmetric", "half_pixel", "align_corners", "pytorch_half_pixel"]})],
                "notes": "scales or sizes must be constant with channel scale 1"}),
    "Gemm": (((7, 8), (9, 10), (11, 12), (13, None)),                   # math/gemm.cc
             {"types": {"T": ["float", "float16"]}, **_rank(None, 2, (0, 1, 2)), **_const(1, 2),
              "attrs": [_attr("alpha", default=1.0, **{"in": [1.0]}), _attr("beta", default=1.0, **{"in": [1.0]})]}),
    "MatMul": (((1, 8), (9, 12), (13, None)),                           # math/matmul.cc
               {"types": {"T": ["float", "float16"]}, **_rank(None, 2, (1,)), **_const(1)}),
    "Softmax": (((1, 10), (11, 12), (13, None)),                        # math/softmax.cc
                {"types": {"T": ["float", "float16"]}, "notes": "opset 13: axis must be the last one; its dim static"}),
}


def _xnnpack():
    ops = []
    for op, (ranges, preds) in XNNPACK_KERNELS.items():
        for lo, hi in ranges:
            rule = {"op": op, "versions": [lo, hi], **preds}
            if "attrs" in preds:  # keep the conditions on attributes this version of the op has
                have = set(onnx.defs.get_schema(op, lo).attributes)
                rule["attrs"] = [a for a in preds["attrs"] if a["name"] in have]
                if not rule["attrs"]:
                    del rule["attrs"]
            if op in ("AveragePool", "MaxPool", "Conv", "ConvTranspose", "QLinearConv", "Resize"):
                rule["layout_sensitive"] = True
            ops.append(rule)
    return {
        "provider": "XnnpackExecutionProvider", "aliases": ["xnnpack"], "kind": "kernel", "cpu_based": True,
        "layout": "NHWC", "precisions": ["fp32", "fp16", "int8"], "compute_precision": "fp32",
        "source": {"description": "ORT XNNPACK EP kernel registrations (xnnpack_execution_provider.cc) and "
                                  "the IsOnnxNodeSupported checks of each kernel (xnnpack/{math,nn,tensor}/*.cc)",
                   "version": ORT_VERSION, "generated_by": "partsim rules import ep-table --provider xnnpack",
                   "url": _URL + "onnxruntime/core/providers/xnnpack/xnnpack_execution_provider.cc"},
        "partitioning": {"qdq_node_units": True},
        "notes": [
            "float16 needs a build with XNNPACK_FP16_SUPPORTED (ARM64 with fp16 arithmetic); without it every "
            "fp16 node is refused (node_support_checker.cc).",
            "Relu and Clip (constant min/max) after a supported Conv/MaxPool/AveragePool are fused into it, "
            "not claimed alone; that fusion is not simulated.",
            "Quantized QDQ Conv/AveragePool/MaxPool/Softmax units are taken as QLinear* kernels; their "
            "scale/zero-point checks (IsValidQuantConv …) are not encoded.",
        ],
        "ops": ops,
    }


# ============================================================================================ WebGPU
# (domain, op, first, last) from the BuildKernelCreateInfo tables of onnxruntime/core/providers/webgpu/webgpu_execution_provider.cc
# and onnxruntime/contrib_ops/webgpu/webgpu_contrib_kernels.cc @735e69a; Cast (CreateCastKernelInfo) and Range (range.cc) added by hand.
WEBGPU_KERNELS = """
kMSDomain Attention 1 None
kMSDomain BiasAdd 1 None
kMSDomain BiasGelu 1 None
kMSDomain BiasSplitGelu 1 None
kMSDomain FastGelu 1 None
kMSDomain FusedConv 1 None
kMSDomain GatherBlockQuantized 1 None
kMSDomain Gelu 1 None
kMSDomain MatMulNBits 1 None
kMSDomain MoE 1 None
kMSDomain MultiHeadAttention 1 None
kMSDomain QMoE 1 None
kMSDomain QuickGelu 1 None
kMSDomain RotaryEmbedding 1 None
kMSDomain SkipLayerNormalization 1 None
kMSDomain SkipSimplifiedLayerNormalization 1 None
kMSInternalNHWCDomain AveragePool 7 9
kMSInternalNHWCDomain AveragePool 10 10
kMSInternalNHWCDomain AveragePool 11 None
kMSInternalNHWCDomain BatchNormalization 7 8
kMSInternalNHWCDomain BatchNormalization 9 13
kMSInternalNHWCDomain BatchNormalization 14 14
kMSInternalNHWCDomain BatchNormalization 15 None
kMSInternalNHWCDomain Conv 1 10
kMSInternalNHWCDomain Conv 11 21
kMSInternalNHWCDomain Conv 22 None
kMSInternalNHWCDomain ConvTranspose 1 10
kMSInternalNHWCDomain ConvTranspose 11 None
kMSInternalNHWCDomain DepthToSpace 11 12
kMSInternalNHWCDomain DepthToSpace 13 None
kMSInternalNHWCDomain GlobalAveragePool 1 None
kMSInternalNHWCDomain GlobalMaxPool 1 None
kMSInternalNHWCDomain InstanceNormalization 1 5
kMSInternalNHWCDomain InstanceNormalization 6 21
kMSInternalNHWCDomain InstanceNormalization 22 None
kMSInternalNHWCDomain MaxPool 1 7
kMSInternalNHWCDomain MaxPool 8 9
kMSInternalNHWCDomain MaxPool 10 10
kMSInternalNHWCDomain MaxPool 11 11
kMSInternalNHWCDomain MaxPool 12 None
kMSInternalNHWCDomain Resize 10 10
kMSInternalNHWCDomain Resize 11 12
kMSInternalNHWCDomain Resize 13 17
kMSInternalNHWCDomain Resize 18 18
kMSInternalNHWCDomain Resize 19 None
kOnnxDomain Abs 6 12
kOnnxDomain Abs 13 None
kOnnxDomain Acos 7 None
kOnnxDomain Acosh 9 None
kOnnxDomain Add 7 12
kOnnxDomain Add 13 13
kOnnxDomain Add 14 None
kOnnxDomain And 7 None
kOnnxDomain ArgMax 1 10
kOnnxDomain ArgMax 11 12
kOnnxDomain ArgMax 13 None
kOnnxDomain ArgMin 1 10
kOnnxDomain ArgMin 11 12
kOnnxDomain ArgMin 13 None
kOnnxDomain Asin 7 None
kOnnxDomain Asinh 9 None
kOnnxDomain Atan 7 None
kOnnxDomain Atanh 9 None
kOnnxDomain AveragePool 7 9
kOnnxDomain AveragePool 10 10
kOnnxDomain AveragePool 11 None
kOnnxDomain BatchNormalization 7 8
kOnnxDomain BatchNormalization 9 13
kOnnxDomain BatchNormalization 14 14
kOnnxDomain BatchNormalization 15 None
kOnnxDomain Ceil 6 12
kOnnxDomain Ceil 13 None
kOnnxDomain Clip 11 11
kOnnxDomain Clip 12 12
kOnnxDomain Clip 13 None
kOnnxDomain Concat 1 3
kOnnxDomain Concat 4 10
kOnnxDomain Concat 11 12
kOnnxDomain Concat 13 None
kOnnxDomain Conv 1 10
kOnnxDomain Conv 11 21
kOnnxDomain Conv 22 None
kOnnxDomain ConvTranspose 1 10
kOnnxDomain ConvTranspose 11 None
kOnnxDomain Cos 7 None
kOnnxDomain Cosh 9 None
kOnnxDomain CumSum 11 13
kOnnxDomain CumSum 14 None
kOnnxDomain DepthToSpace 11 12
kOnnxDomain DepthToSpace 13 None
kOnnxDomain DequantizeLinear 10 12
kOnnxDomain DequantizeLinear 13 18
kOnnxDomain DequantizeLinear 19 20
kOnnxDomain DequantizeLinear 21 22
kOnnxDomain DequantizeLinear 23 None
kOnnxDomain Div 7 12
kOnnxDomain Div 13 13
kOnnxDomain Div 14 None
kOnnxDomain Einsum 12 None
kOnnxDomain Elu 6 None
kOnnxDomain Equal 7 10
kOnnxDomain Equal 11 12
kOnnxDomain Equal 13 18
kOnnxDomain Equal 19 None
kOnnxDomain Erf 9 12
kOnnxDomain Erf 13 None
kOnnxDomain Exp 6 12
kOnnxDomain Exp 13 None
kOnnxDomain Expand 8 12
kOnnxDomain Expand 13 None
kOnnxDomain Flatten 1 8
kOnnxDomain Flatten 9 10
kOnnxDomain Flatten 11 12
kOnnxDomain Flatten 13 20
kOnnxDomain Flatten 21 None
kOnnxDomain Floor 6 12
kOnnxDomain Floor 13 None
kOnnxDomain Gather 1 10
kOnnxDomain Gather 11 12
kOnnxDomain Gather 13 None
kOnnxDomain GatherElements 11 12
kOnnxDomain GatherElements 13 None
kOnnxDomain GatherND 11 11
kOnnxDomain GatherND 12 12
kOnnxDomain GatherND 13 None
kOnnxDomain Gelu 20 None
kOnnxDomain Gemm 7 8
kOnnxDomain Gemm 9 10
kOnnxDomain Gemm 11 12
kOnnxDomain Gemm 13 None
kOnnxDomain GlobalAveragePool 1 None
kOnnxDomain GlobalMaxPool 1 None
kOnnxDomain Greater 7 8
kOnnxDomain Greater 9 12
kOnnxDomain Greater 13 None
kOnnxDomain GreaterOrEqual 12 15
kOnnxDomain GreaterOrEqual 16 None
kOnnxDomain HardSigmoid 6 None
kOnnxDomain Identity 1 12
kOnnxDomain Identity 13 13
kOnnxDomain Identity 14 15
kOnnxDomain Identity 16 18
kOnnxDomain Identity 19 20
kOnnxDomain Identity 21 22
kOnnxDomain Identity 23 23
kOnnxDomain Identity 24 24
kOnnxDomain Identity 25 None
kOnnxDomain If 1 10
kOnnxDomain If 11 12
kOnnxDomain If 13 18
kOnnxDomain If 19 20
kOnnxDomain If 21 None
kOnnxDomain InstanceNormalization 1 5
kOnnxDomain InstanceNormalization 6 21
kOnnxDomain InstanceNormalization 22 None
kOnnxDomain LayerNormalization 1 16
kOnnxDomain LayerNormalization 17 None
kOnnxDomain LeakyRelu 6 15
kOnnxDomain LeakyRelu 16 None
kOnnxDomain Less 7 8
kOnnxDomain Less 9 12
kOnnxDomain Less 13 None
kOnnxDomain LessOrEqual 12 15
kOnnxDomain LessOrEqual 16 None
kOnnxDomain Log 6 12
kOnnxDomain Log 13 None
kOnnxDomain MatMul 1 12
kOnnxDomain MatMul 13 None
kOnnxDomain MaxPool 1 7
kOnnxDomain MaxPool 8 9
kOnnxDomain MaxPool 10 10
kOnnxDomain MaxPool 11 11
kOnnxDomain MaxPool 12 None
kOnnxDomain MemcpyFromHost 1 None
kOnnxDomain MemcpyToHost 1 None
kOnnxDomain Mul 7 12
kOnnxDomain Mul 13 13
kOnnxDomain Mul 14 None
kOnnxDomain Neg 6 12
kOnnxDomain Neg 13 None
kOnnxDomain Not 1 None
kOnnxDomain Pad 2 10
kOnnxDomain Pad 11 12
kOnnxDomain Pad 13 17
kOnnxDomain Pad 18 18
kOnnxDomain Pad 19 20
kOnnxDomain Pad 21 22
kOnnxDomain Pad 23 None
kOnnxDomain Pow 7 11
kOnnxDomain Pow 12 12
kOnnxDomain Pow 13 14
kOnnxDomain Pow 15 None
kOnnxDomain Reciprocal 6 12
kOnnxDomain Reciprocal 13 None
kOnnxDomain ReduceL1 1 10
kOnnxDomain ReduceL1 11 12
kOnnxDomain ReduceL1 13 17
kOnnxDomain ReduceL1 18 None
kOnnxDomain ReduceL2 1 10
kOnnxDomain ReduceL2 11 12
kOnnxDomain ReduceL2 13 17
kOnnxDomain ReduceL2 18 None
kOnnxDomain ReduceLogSum 1 10
kOnnxDomain ReduceLogSum 11 12
kOnnxDomain ReduceLogSum 13 17
kOnnxDomain ReduceLogSum 18 None
kOnnxDomain ReduceLogSumExp 1 10
kOnnxDomain ReduceLogSumExp 11 12
kOnnxDomain ReduceLogSumExp 13 17
kOnnxDomain ReduceLogSumExp 18 None
kOnnxDomain ReduceMax 1 10
kOnnxDomain ReduceMax 11 11
kOnnxDomain ReduceMax 12 12
kOnnxDomain ReduceMax 13 17
kOnnxDomain ReduceMax 18 19
kOnnxDomain ReduceMax 20 None
kOnnxDomain ReduceMean 1 10
kOnnxDomain ReduceMean 11 12
kOnnxDomain ReduceMean 13 17
kOnnxDomain ReduceMean 18 None
kOnnxDomain ReduceMin 1 10
kOnnxDomain ReduceMin 11 11
kOnnxDomain ReduceMin 12 12
kOnnxDomain ReduceMin 13 17
kOnnxDomain ReduceMin 18 19
kOnnxDomain ReduceMin 20 None
kOnnxDomain ReduceProd 1 10
kOnnxDomain ReduceProd 11 12
kOnnxDomain ReduceProd 13 17
kOnnxDomain ReduceProd 18 None
kOnnxDomain ReduceSum 1 10
kOnnxDomain ReduceSum 11 12
kOnnxDomain ReduceSum 13 None
kOnnxDomain ReduceSumSquare 1 10
kOnnxDomain ReduceSumSquare 11 12
kOnnxDomain ReduceSumSquare 13 17
kOnnxDomain ReduceSumSquare 18 None
kOnnxDomain Relu 6 12
kOnnxDomain Relu 13 13
kOnnxDomain Relu 14 None
kOnnxDomain Reshape 5 12
kOnnxDomain Reshape 13 13
kOnnxDomain Reshape 14 18
kOnnxDomain Reshape 19 20
kOnnxDomain Reshape 21 None
kOnnxDomain Resize 10 10
kOnnxDomain Resize 11 12
kOnnxDomain Resize 13 17
kOnnxDomain Resize 18 18
kOnnxDomain Resize 19 None
kOnnxDomain ScatterElements 11 12
kOnnxDomain ScatterElements 13 15
kOnnxDomain ScatterElements 16 17
kOnnxDomain ScatterElements 18 None
kOnnxDomain ScatterND 11 12
kOnnxDomain ScatterND 13 15
kOnnxDomain ScatterND 16 17
kOnnxDomain ScatterND 18 None
kOnnxDomain Shape 1 12
kOnnxDomain Shape 13 14
kOnnxDomain Shape 15 18
kOnnxDomain Shape 19 20
kOnnxDomain Shape 21 22
kOnnxDomain Shape 23 None
kOnnxDomain Sigmoid 6 12
kOnnxDomain Sigmoid 13 None
kOnnxDomain SimplifiedLayerNormalization 1 None
kOnnxDomain Sin 7 None
kOnnxDomain Sinh 9 None
kOnnxDomain Slice 1 9
kOnnxDomain Slice 10 10
kOnnxDomain Slice 11 12
kOnnxDomain Slice 13 None
kOnnxDomain Softmax 1 10
kOnnxDomain Softmax 11 12
kOnnxDomain Softmax 13 None
kOnnxDomain Split 1 1
kOnnxDomain Split 2 10
kOnnxDomain Split 11 12
kOnnxDomain Split 13 17
kOnnxDomain Split 18 None
kOnnxDomain Sqrt 6 12
kOnnxDomain Sqrt 13 None
kOnnxDomain Squeeze 1 10
kOnnxDomain Squeeze 11 12
kOnnxDomain Squeeze 13 20
kOnnxDomain Squeeze 21 22
kOnnxDomain Squeeze 23 23
kOnnxDomain Squeeze 24 None
kOnnxDomain Sub 7 12
kOnnxDomain Sub 13 13
kOnnxDomain Sub 14 None
kOnnxDomain Tan 7 None
kOnnxDomain Tanh 6 12
kOnnxDomain Tanh 13 None
kOnnxDomain ThresholdedRelu 10 None
kOnnxDomain Tile 6 12
kOnnxDomain Tile 13 None
kOnnxDomain Transpose 1 12
kOnnxDomain Transpose 13 20
kOnnxDomain Transpose 21 22
kOnnxDomain Transpose 23 None
kOnnxDomain Unsqueeze 1 10
kOnnxDomain Unsqueeze 11 12
kOnnxDomain Unsqueeze 13 20
kOnnxDomain Unsqueeze 21 22
kOnnxDomain Unsqueeze 23 None
kOnnxDomain Where 9 15
kOnnxDomain Where 16 None
kOnnxDomain Cast 6 8
kOnnxDomain Cast 9 12
kOnnxDomain Cast 13 18
kOnnxDomain Cast 19 20
kOnnxDomain Cast 21 22
kOnnxDomain Cast 23 None
kOnnxDomain Range 11 None
"""

_WEBGPU_DOMAINS = {"kOnnxDomain": "", "kMSInternalNHWCDomain": "", "kMSDomain": "com.microsoft"}


def _webgpu():
    rows, nhwc = set(), set()
    for line in WEBGPU_KERNELS.strip().splitlines():
        dom, op, lo, hi = line.split()
        if op in ("MemcpyFromHost", "MemcpyToHost"):
            continue
        key = (_WEBGPU_DOMAINS[dom], op, int(lo), None if hi == "None" else int(hi))
        rows.add(key)
        if dom == "kMSInternalNHWCDomain":
            nhwc.add(op)
    ops = []
    for domain, op, lo, hi in sorted(rows, key=lambda r: (r[0], r[1], r[2], r[3] or 0)):
        rule = {"op": op}
        if domain:
            rule["domain"] = domain
        rule["versions"] = [lo, hi]
        if op in nhwc and not domain:
            rule["layout_sensitive"] = True
        ops.append(rule)
    return {
        "provider": "WebGpuExecutionProvider", "aliases": ["webgpu"], "kind": "kernel", "cpu_based": False,
        "layout": "NHWC", "precisions": ["fp32", "fp16"], "compute_precision": "fp32",
        "source": {"description": "ORT WebGPU EP kernel registrations (webgpu_execution_provider.cc "
                                  "RegisterKernels, contrib_ops/webgpu/webgpu_contrib_kernels.cc); "
                                  "docs/OperatorKernels.md has no WebGPU section",
                   "version": ORT_VERSION, "generated_by": "partsim rules import ep-table --provider webgpu",
                   "url": _URL + "onnxruntime/core/providers/webgpu/webgpu_execution_provider.cc"},
        "partitioning": {"cpu_preferred_shape_nodes": True},
        "notes": [
            "Op and version ranges only: each kernel's dtypes (mostly float/float16, int32; int64 only with "
            "enable_int64 or graph capture) are not encoded.",
            "GetCapability also sends CPU-preferred shape nodes to the CPU (GetCpuPreferredNodes, simulated) and "
            "refuses com.microsoft Attention with mask_index/past/past_sequence_length inputs or a present output.",
            "Preferred layout NHWC (the default data_layout); Resize and InstanceNormalization stay NCHW.",
        ],
        "ops": ops,
    }


TABLES = {"tensorrt": _tensorrt, "qnn": _qnn, "xnnpack": _xnnpack, "webgpu": _webgpu}


def build_table(name):
    """YAML text of the table ``name`` (tensorrt, qnn, xnnpack, webgpu)."""
    if name not in TABLES:
        raise UsageError(f"ep-table: --provider must be one of {', '.join(sorted(TABLES))}, not {name!r}")
    header = f"{name}: generated by partsim/gen/ep_tables.py from the sources named in 'source'."
    return dump_table(TABLES[name](), header)


def main(argv=None):
    """``python -m partsim.gen.ep_tables [DIR]``: write all four tables into DIR (default rules/)."""
    import sys
    from pathlib import Path

    from ..report.output import atomic_write

    out = Path((argv or sys.argv[1:] or ["rules"])[0])
    for name in sorted(TABLES):
        atomic_write(out / f"{name}.yaml", build_table(name))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
