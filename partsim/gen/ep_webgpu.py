"""The WebGPU table from the EP's kernel registrations (see :mod:`partsim.gen.ep_tables`).
"""

from .ep_source import ORT_DESCRIBES, ORT_VERSION, _URL


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
# type constraints of kernels the probes do not reach: If's outputs are tensors only (V =
# DataTypeImpl::AllFixedSizeTensorTypes(), no sequence or optional; B = bool), microsoft/onnxruntime
# onnxruntime/core/providers/webgpu/controlflow/if.cc @2d623e8: an If returning sequences stays on the CPU
_FIXED_SIZE_TENSORS = ("bfloat16", "bool", "double", "float", "float16", "int16", "int32", "int64", "int8", "uint16",
                       "uint32", "uint64", "uint8")
_WEBGPU_TYPES = {("", "If"): {"B": ("bool",), "V": _FIXED_SIZE_TENSORS}}


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
        if (domain, op) in _WEBGPU_TYPES:
            rule["types"] = {k: list(v) for k, v in _WEBGPU_TYPES[(domain, op)].items()}
        ops.append(rule)
    return {
        "provider": "WebGpuExecutionProvider", "aliases": ["webgpu"], "kind": "kernel", "cpu_based": False,
        "layout": "NHWC", "precisions": ["fp32", "fp16"], "compute_precision": "fp32",
        "source": {"description": "ORT WebGPU EP kernel registrations (webgpu_execution_provider.cc "
                                  "RegisterKernels, contrib_ops/webgpu/webgpu_contrib_kernels.cc); "
                                  "docs/OperatorKernels.md has no WebGPU section",
                   "version": ORT_VERSION, "generated_by": "partsim rules import ep-table --provider webgpu",
                   "url": _URL + "onnxruntime/core/providers/webgpu/webgpu_execution_provider.cc",
                   "describes": dict(ORT_DESCRIBES)},
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


