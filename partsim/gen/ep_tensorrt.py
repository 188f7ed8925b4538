"""The TensorRT table from onnx-tensorrt's ``docs/operators.md`` and its Restrictions column
(see :mod:`partsim.gen.ep_tables`).
"""

import onnx.defs

from .ep_source import ORT_DESCRIBES, ORT_VERSION, _attr, _const, _rank


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
                          "docs/operators.md", "describes": dict(ORT_DESCRIBES, **{"onnx-tensorrt": "10.1"})},
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


