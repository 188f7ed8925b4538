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
from .ep_source import ORT_DESCRIBES, ORT_VERSION, _URL, _attr, _const, _rank
from .ep_tensorrt import _tensorrt
from .ep_webgpu import _webgpu

__all__ = ["build_table", "TABLES"]

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
                   "url": _URL + "onnxruntime/core/providers/qnn/builder/op_builder_factory.cc",
                   "describes": dict(ORT_DESCRIBES)},
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
                   "url": _URL + "onnxruntime/core/providers/xnnpack/xnnpack_execution_provider.cc",
                   "describes": dict(ORT_DESCRIBES)},
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


TABLES = {"tensorrt": _tensorrt, "qnn": _qnn, "xnnpack": _xnnpack, "webgpu": _webgpu}


def build_table(name):
    """YAML text of the table ``name`` (tensorrt, qnn, xnnpack, webgpu)."""
    if name not in TABLES:
        raise UsageError(f"ep-table: --provider must be one of {', '.join(sorted(TABLES))}, not {name!r}")
    header = f"{name}: generated by partsim/gen/ep_tables.py from the sources named in 'source'."
    return dump_table(TABLES[name](), header)


def main(argv=None):
    """``python -m partsim.gen.ep_tables [DIR]``: write the source-read tables into DIR (default rules/)."""
    import sys
    from pathlib import Path

    from ..report.output import atomic_write

    out = Path((argv or sys.argv[1:] or ["rules"])[0])
    for name in sorted(TABLES):
        if name in ("qnn", "webgpu"):  # the shipped ones are measured: partsim/gen/qnn.py, partsim/gen/webgpu.py
            continue
        atomic_write(out / f"{name}.yaml", build_table(name))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
