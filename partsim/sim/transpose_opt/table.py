"""The handler table: op type (``domain.op`` outside the ONNX domain) -> (transposible inputs,
handler, transposes outputs), as ``onnx_transpose_optimization.cc`` and ``OrtExtendedHandlers`` list them.
"""

from .handlers import (_all_inputs, _first_input, _h_argminmax, _h_broadcast, _h_concat, _h_pad, _h_qdq, _h_reduce,
                       _h_shape, _h_simple, _h_slice, _h_softmax, _h_split, _h_squeeze, _h_tile, _h_transpose,
                       _h_unsqueeze, _non_scalar_inputs)
from .ort_handlers import _h_gather, _h_never, _h_reshape, _h_unbiased


_UNARY = ("Cast", "Exp", "Gelu", "Identity", "LeakyRelu", "Log", "Reciprocal", "Relu", "Sigmoid", "Sqrt", "Tanh",
          "Abs", "Not", "Ceil", "Floor", "Neg", "Erf", "HardSigmoid", "Round", "IsInf", "IsNaN", "Selu", "Shrink",
          "Sign", "Softplus", "Softsign", "ThresholdedRelu", "Celu", "HardSwish", "Sin", "Cos", "Tan", "Sinh", "Cosh",
          "Asin", "Acos", "Atan", "Asinh", "Acosh", "Atanh")
_BROADCAST = ("Add", "Max", "Min", "Mul", "Sub", "Div", "And", "Or", "Xor", "Mod", "PRelu", "BitShift", "Equal",
              "Greater", "Less", "GreaterOrEqual", "LessOrEqual", "Mean", "Sum", "Pow", "Where")
_REDUCE = ("ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean", "ReduceMin", "ReduceProd", "ReduceSum",
           "ReduceSumSquare", "ReduceL1", "ReduceL2")

# key -> (transposible inputs, handler, transposes_outputs); ONNX-domain keys are the op type
HANDLERS = {op: (_all_inputs, _h_simple, True) for op in _UNARY}
HANDLERS.update({op: (_non_scalar_inputs, _h_broadcast, True) for op in _BROADCAST})
HANDLERS.update({op: (_first_input, _h_reduce, True) for op in _REDUCE})
HANDLERS.update({
    "Clip": (_first_input, _h_simple, True), "CastLike": (_first_input, _h_simple, True),
    "Transpose": (_first_input, _h_transpose, False), "Concat": (_all_inputs, _h_concat, True),
    "Split": (_first_input, _h_split, True), "Shape": (_first_input, _h_shape, False),
    "Pad": (_first_input, _h_pad, True), "ArgMin": (_first_input, _h_argminmax, True),
    "ArgMax": (_first_input, _h_argminmax, True), "Squeeze": (_first_input, _h_squeeze, True),
    "Unsqueeze": (_first_input, _h_unsqueeze, True), "Slice": (_first_input, _h_slice, True),
    "Tile": (_first_input, _h_tile, True), "Softmax": (_first_input, _h_softmax, True),
    "Hardmax": (_first_input, _h_softmax, True), "LogSoftmax": (_first_input, _h_softmax, True),
    "QuantizeLinear": (_first_input, _h_qdq, True), "DequantizeLinear": (_first_input, _h_qdq, True),
    # OrtExtendedHandlers (ort_transpose_optimization.cc), which take priority
    "MaxPool": (_first_input, _h_never, True), "Resize": (_first_input, _h_never, True),
    "Reshape": (_first_input, _h_reshape, False),
    "Gather": (_first_input, _h_gather, True),
    "com.microsoft.QuantizeLinear": (_first_input, _h_qdq, True),
    "com.microsoft.DequantizeLinear": (_first_input, _h_qdq, True),
    "com.microsoft.QLinearAdd": (lambda c, i: [0, 3], _h_broadcast, True),
    "com.microsoft.QLinearMul": (lambda c, i: [0, 3], _h_broadcast, True),
    "com.microsoft.QLinearConcat": (lambda c, i: list(range(2, len(c.g.nodes[i].inputs), 3)), _h_concat, True),
    "com.microsoft.QLinearLeakyRelu": (_first_input, _h_simple, True),
    "com.microsoft.QLinearSigmoid": (_first_input, _h_simple, True),
    "com.microsoft.QLinearReduceMean": (_first_input, _h_reduce, True),
    "com.microsoft.QLinearSoftmax": (_first_input, _h_softmax, True),
    # microsoft/onnxruntime PR #32118 (2026-08, in onnxruntime 1.31.1: a WebGPU Conv -> com.microsoft
    # Gelu/QuickGelu -> Conv runs as two Convs, tests/sim/test_webgpu_fusions.py): the contrib GELUs move
    # a Transpose through them (FastGelu only without its bias)
    "com.microsoft.Gelu": (_first_input, _h_simple, True),
    "com.microsoft.QuickGelu": (_first_input, _h_simple, True),
    "com.microsoft.FastGelu": (_first_input, _h_unbiased, True),
})


def handler_of(nd):
    key = nd.op if nd.domain in ("", "ai.onnx") else f"{nd.domain}.{nd.op}"
    return HANDLERS.get(key)

