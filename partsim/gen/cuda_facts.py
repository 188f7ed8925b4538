"""What the CUDA EP's sources say beyond ``docs/OperatorKernels.md``: host-memory ports, attribute vetoes,
constant inputs, kernels the doc lacks, what kernel constructors enforce (each fact names its file).
"""

# --------------------------------------------------------------------------------------------
# Host-memory ports of CUDA kernels: (domain, op, first, last) -> (host_inputs, host_outputs).
# A doc row [lo, hi] takes the entry whose [first, last] contains it (last None = no end).
# Read from the KernelDefBuilder calls ``.InputMemoryType(OrtMemTypeCPUInput, k)`` and
# ``.OutputMemoryType(OrtMemTypeCPU{Input,Output}, k)`` (ORT counts both mem types as CPU:
# KernelDef::IsInputOnCpu / IsOutputOnCpu) in the files named, onnxruntime @735e69a.
# --------------------------------------------------------------------------------------------
_P = "onnxruntime/core/providers/cuda/"
_C = "onnxruntime/contrib_ops/cuda/"
CUDA_HOST_MEMORY = {
    # op                                    first last  host_inputs       host_outputs   source
    ("", "Shape", 1, None): ((), (0,), _P + "tensor/shape_op.cc"),
    ("", "Size", 1, None): ((), (0,), _P + "tensor/size.cc"),
    ("", "Reshape", 5, None): ((1,), (), _P + "tensor/reshape.cc (Reshape_1 [1,4] has no shape input)"),
    ("", "Slice", 10, None): ((1, 2, 3, 4), (), _P + "tensor/slice.cc (Slice [1,9] uses attributes)"),
    ("", "Expand", 8, None): ((1,), (), _P + "tensor/expand.cc"),
    ("", "ConstantOfShape", 9, None): ((0,), (), _P + "generator/constant_of_shape.cc"),
    ("", "Range", 11, None): ((0, 1, 2), (), _P + "generator/range.cc"),
    ("", "Tile", 6, None): ((1,), (), _P + "tensor/tile.cc"),
    ("", "TopK", 10, None): ((1,), (), _P + "math/topk.cc (TopK [1,9] uses attribute k)"),
    ("", "Squeeze", 13, None): ((1,), (), _P + "tensor/squeeze.cc"),
    ("", "Unsqueeze", 13, None): ((1,), (), _P + "tensor/unsqueeze.cc"),
    ("", "Split", 13, None): ((1,), (), _P + "tensor/split.cc"),
    ("", "Pad", 11, 17): ((1, 2), (), _P + "tensor/pad.cc"),
    ("", "Pad", 18, None): ((1, 2, 3), (), _P + "tensor/pad.cc"),
    ("", "Resize", 10, 10): ((1,), (), _P + "tensor/resize.cc"),
    ("", "Resize", 11, None): ((1, 2, 3), (), _P + "tensor/resize.cc"),
    ("", "Upsample", 7, 9): ((1,), (), _P + "tensor/upsample.cc"),
    ("", "CumSum", 11, None): ((1,), (), _P + "math/cumsum.cc"),
    ("", "Trilu", 14, None): ((1,), (), _P + "tensor/trilu.cc"),
    ("", "OneHot", 11, None): ((1, 2), (), _P + "tensor/onehot.cc"),
    ("", "NonMaxSuppression", 10, None): ((2, 3, 4), (), _P + "object_detection/non_max_suppression.cc"),
    ("", "MatMulInteger", 10, None): ((2, 3), (), _P + "math/matmul_integer.cc"),
    ("", "Dropout", 12, None): ((1, 2), (), _P + "nn/dropout.cc"),
    ("", "RNN", 7, None): ((4,), (), _P + "rnn/rnn.cc (RNN_Input_Index::sequence_lens = 4)"),
    ("", "GRU", 7, None): ((4,), (), _P + "rnn/gru.cc"),
    ("", "LSTM", 7, None): ((4,), (), _P + "rnn/lstm.cc"),
    ("", "If", 1, None): ((0,), (), _P + "controlflow/if.cc"),
    ("", "Loop", 1, None): ((0, 1), (), _P + "controlflow/loop.cc"),
    ("", "Scan", 8, 8): ((0,), (), _P + "controlflow/scan.cc"),
    ("", "SequenceAt", 11, None): ((1,), (), _P + "tensor/sequence_op.cc"),
    ("", "SequenceErase", 11, None): ((1,), (), _P + "tensor/sequence_op.cc"),
    ("", "SequenceInsert", 11, None): ((2,), (), _P + "tensor/sequence_op.cc"),
    ("", "SequenceLength", 11, None): ((), (0,), _P + "tensor/sequence_op.cc"),
    ("", "MemcpyFromHost", 1, None): ((0,), (), _P + "cuda_execution_provider.cc"),
    ("", "MemcpyToHost", 1, None): ((), (0,), _P + "cuda_execution_provider.cc"),
    # reductions: the versions that take axes as an input keep it on the host
    ("", "ReduceSum", 13, None): ((1,), (), _P + "reduction/reduction_ops.cc"),
    ("", "ReduceMax", 18, None): ((1,), (), _P + "reduction/reduction_ops.cc"),
    ("", "ReduceMin", 18, None): ((1,), (), _P + "reduction/reduction_ops.cc"),
    ("", "ReduceMean", 18, None): ((1,), (), _P + "reduction/reduction_ops.cc"),
    ("", "ReduceProd", 18, None): ((1,), (), _P + "reduction/reduction_ops.cc"),
    ("", "ReduceL1", 18, None): ((1,), (), _P + "reduction/reduction_ops.cc"),
    ("", "ReduceL2", 18, None): ((1,), (), _P + "reduction/reduction_ops.cc"),
    ("", "ReduceLogSum", 18, None): ((1,), (), _P + "reduction/reduction_ops.cc"),
    ("", "ReduceLogSumExp", 18, None): ((1,), (), _P + "reduction/reduction_ops.cc"),
    ("", "ReduceSumSquare", 18, None): ((1,), (), _P + "reduction/reduction_ops.cc"),
    # contrib ops (com.microsoft) and the contrib kernels ORT registers in the ONNX domain
    ("", "DynamicSlice", 1, None): ((1, 2, 3), (), _C + "tensor/dynamicslice.cc"),
    ("com.microsoft", "Trilu", 1, None): ((1,), (), _C + "tensor/trilu.cc"),
    ("com.microsoft", "Attention", 1, None): ((6,), (), _C + "bert/attention.cc (past_sequence_length)"),
    ("com.microsoft", "MultiHeadAttention", 1, None): ((8,), (), _C + "bert/multihead_attention.cc"),
    ("com.microsoft", "DecoderMaskedMultiHeadAttention", 1, None): (
        (7, 8), (), _C + "bert/decoder_masked_multihead_attention.cc"),
    ("com.microsoft", "DecoderMaskedSelfAttention", 1, None): (
        (6, 7), (), _C + "bert/decoder_masked_self_attention.cc"),
    ("com.microsoft", "GroupQueryAttention", 1, None): ((6,), (), _C + "bert/group_query_attention.cc"),
    ("com.microsoft", "SparseAttention", 1, None): ((7,), (), _C + "sparse/sparse_attention.cc"),
    ("com.microsoft", "RelativePositionBias", 1, None): ((1, 2), (), _C + "bert/relative_attn_bias.cc"),
    ("com.microsoft", "RemovePadding", 1, None): ((), (3,), _C + "bert/remove_padding.cc"),
    ("com.microsoft", "ConvTransposeWithDynamicPads", 1, None): (
        (2,), (), _C + "conv_transpose_with_dynamic_pads.cc"),
    ("com.microsoft", "BiasDropout", 1, None): ((3, 4), (), _C + "math/bias_dropout.cc"),
    ("com.microsoft", "BitmaskBiasDropout", 1, None): ((3, 4), (), _C + "math/bias_dropout.cc"),
    ("com.microsoft", "BitmaskDropout", 1, None): ((1, 2), (), _C + "math/bitmask_dropout.cc"),
    ("com.microsoft", "QAttention", 1, None): ((3, 4, 6, 7), (), _C + "quantization/attention_quantization.cc"),
    ("com.microsoft", "QOrderedMatMul", 1, None): (
        (1, 4, 7), (), _C + "quantization/qordered_ops/qordered_matmul.cc"),
    ("com.microsoft", "QOrderedLayerNormalization", 1, None): (
        (1, 4), (), _C + "quantization/qordered_ops/qordered_layer_norm.cc"),
    ("com.microsoft", "QOrderedLongformerAttention", 1, None): (
        (1, 3, 5, 6, 9, 11, 13), (), _C + "quantization/qordered_ops/qordered_longformer_attention.cc"),
    ("com.microsoft", "QOrderedGelu", 1, None): ((1, 2), (), _C + "quantization/qordered_ops/qordered_unary_ops.cc"),
    ("com.microsoft", "QuantizeWithOrder", 1, None): ((1,), (), _C + "quantization/qordered_ops/qordered_qdq.cc"),
    ("com.microsoft", "DequantizeWithOrder", 1, None): ((1,), (), _C + "quantization/qordered_ops/qordered_qdq.cc"),
    ("com.microsoft", "BeamSearch", 1, None): (
        (0, 1, 2, 3, 4, 5, 6, 9, 10, 11), (0, 1), _C + "transformers/beam_search.cc"),
    ("com.microsoft", "WhisperBeamSearch", 1, None): (
        (0, 1, 2, 3, 4, 5, 6, 9, 10, 11, 14), (0, 1), _C + "transformers/beam_search.cc"),
    ("com.microsoft", "GreedySearch", 1, None): ((0, 1, 2, 3, 6), (0,), _C + "transformers/greedy_search.cc"),
    ("com.microsoft", "Sampling", 1, None): ((0, 1, 2, 3, 6), (0, 1), _C + "transformers/sampling.cc"),
}
# Not encoded (named here so that a reviewer sees the gap): QOrderedAttention (seven scale inputs,
# indices from an enum in qordered_attention.h) and the NCCL-only collective ops.

# --------------------------------------------------------------------------------------------
# Attribute vetoes of CUDAExecutionProvider::GetCapability
# (onnxruntime/core/providers/cuda/cuda_execution_provider.cc @735e69a: RNNNeedFallbackToCPU,
# ConvTransposeNeedFallbackToCPU, CastNeedFallbackToCPU, ArgMaxOrArgMinNeedFallbackToCPU).
# Keyed by (domain, op, min_since): applied to doc rows whose since version >= min_since.
# ORT checks only attributes that are present, so no defaults are given unless the check
# is on the value ORT sees when the attribute is absent.
# ORT lower-cases activation names before comparing; a rule table compares exactly, so the
# ONNX-spec spelling and the lower-case spelling are both listed.
# --------------------------------------------------------------------------------------------
_WHY_RNN = "cuDNN RNN: no activation_alpha/beta, no clip, default activations only (RNNNeedFallbackToCPU)"


def _acts(*names):
    spec = {"sigmoid": "Sigmoid", "tanh": "Tanh"}
    return [list(names), [spec[n] for n in names]]


CUDA_ATTR_VETOES = {
    ("", "RNN", 1): [
        {"name": "activation_alpha", "absent": True, "why": _WHY_RNN},
        {"name": "activation_beta", "absent": True, "why": _WHY_RNN},
        {"name": "clip", "absent": True, "why": _WHY_RNN},
        {"name": "activations", "in": _acts("tanh") + _acts("tanh", "tanh"), "why": _WHY_RNN},
    ],
    ("", "GRU", 1): [
        {"name": "activation_alpha", "absent": True, "why": _WHY_RNN},
        {"name": "activation_beta", "absent": True, "why": _WHY_RNN},
        {"name": "clip", "absent": True, "why": _WHY_RNN},
        {"name": "activations", "in": _acts("sigmoid", "tanh") + _acts("sigmoid", "tanh", "sigmoid", "tanh"),
         "why": _WHY_RNN},
        {"name": "linear_before_reset", "in": [1], "why": "cuDNN GRU supports only linear_before_reset=1"},
    ],
    ("", "LSTM", 1): [
        {"name": "activation_alpha", "absent": True, "why": _WHY_RNN},
        {"name": "activation_beta", "absent": True, "why": _WHY_RNN},
        {"name": "clip", "absent": True, "why": _WHY_RNN},
        {"name": "activations", "in": _acts("sigmoid", "tanh", "tanh")
         + _acts("sigmoid", "tanh", "tanh", "sigmoid", "tanh", "tanh"), "why": _WHY_RNN},
        {"name": "input_forget", "in": [0], "why": "cuDNN LSTM: input_forget must be 0"},
    ],
    ("", "ConvTranspose", 1): [
        {"name": "pads", "symmetric_pads": True, "why": "cuDNN supports only symmetric padding"},
        {"name": "auto_pad", "not_in": ["SAME_UPPER", "SAME_LOWER"],
         "why": "SAME_* may need asymmetric padding, which the CUDA EP refuses up front"},
    ],
    ("", "ArgMax", 12): [
        {"name": "select_last_index", "in": [0], "why": "cuDNN cannot pick the last index"},
    ],
    ("", "ArgMin", 12): [
        {"name": "select_last_index", "in": [0], "why": "cuDNN cannot pick the last index"},
    ],
    ("", "Cast", 1): [
        {"name": "to", "not_in": [8], "why": "Cast to string (TensorProto.STRING = 8) is not supported on CUDA"},
    ],
}

# Inputs that must be constant initializers (GetCapability: NhwcConvNeedFallbackToCPU).
CUDA_CONST_INPUTS = {
    ("com.microsoft", "NhwcConv", 1): [1],
}

# Kernels that the doc lacks but the ORT build observed has, each with its evidence.  Same row
# shape as the doc's: (domain, op, since, end) -> type constraints.
DOC_SUPPLEMENT = {
    # Registered in onnxruntime/core/providers/cuda/cuda_execution_provider.cc @735e69a
    # (ONNX_OPERATOR_VERSIONED_KERNEL_CLASS_NAME(..., 10, 10, NonMaxSuppression) and (..., 11,
    # NonMaxSuppression)) but absent from that commit's OperatorKernels.md; the kernel declares no
    # type constraint (object_detection/non_max_suppression.cc).
    ("", "NonMaxSuppression", 10, 10): {},
    ("", "NonMaxSuppression", 11, None): {},
    # microsoft/onnxruntime PR #27646 "[CUDA] RoiAlign for opset versions 16 and 22" (merged
    # 2026-03, after the doc's commit): onnxruntime-gpu 1.31.1 runs RoiAlign-16 on CUDA
    # (shared/observed/cuda/fasterrcnn_mobilenet_v3_large_320_fpn.ts).  Types assumed equal to
    # the RoiAlign-10 kernel's.
    ("", "RoiAlign", 16, 21): {"T1": ["double", "float"], "T2": ["int64"]},
    ("", "RoiAlign", 22, None): {"T1": ["double", "float"], "T2": ["int64"]},
}

# Kernels onnxruntime-gpu 1.31.1 has but the doc @001d12d lacks: (domain, op) -> (the newest
# schema version seen on CUDA, types for an op the doc lacks, one observation).  Seen in
# ../shared/observed/nodes/cuda-ort1.31.1.jsonl (H200, ORT_DISABLE_ALL; the node on CUDA
# although the doc's newest kernel for the op is open-ended at an older version, which ORT's
# VerifyKernelDef (kernel_registry.cc) would refuse).  ORT registers a kernel for every schema
# version of an op it keeps up with, so every schema version after the doc's newest up to the
# one seen gets a kernel with the types of the doc's newest row -- an assumption for the versions
# in between, which no observation shows.  Found with `partsim rules calibrate` on the
# 001d12d table (docs/tables.md).
OBSERVED_KERNELS = {
    ("", "Cast"): (25, None, "node__test_flexattention_fp16_expanded_ver26 n32_Cast"),
    ("", "ConstantOfShape"): (25, None, "node__test_constantofshape_int_zeros n0_ConstantOfShape"),
    ("", "ConvTranspose"): (22, None, "node__test_convtranspose n0_ConvTranspose"),
    ("", "Cos"): (22, None, "node__test_cos_example n0_Cos"),
    ("", "DeformConv"): (22, {"T": ["float"]}, "node__test_basic_deform_conv_without_padding n0_DeformConv"),
    ("", "Equal"): (19, None, "node__test_equal n0_Equal"),
    ("", "Flatten"): (25, None, "node__test_flatten_axis1 n0_Flatten"),
    ("", "GlobalAveragePool"): (22, None, "node__test_globalaveragepool n0_GlobalAveragePool"),
    ("", "Identity"): (25, None, "node__test_flexattention_fp16_expanded_ver26 n33_Identity"),
    ("", "LpNormalization"): (22, {"T": ["float"]}, "node__test_l1normalization_axis_0 n0_LpNormalization"),
    ("", "Pad"): (24, None, "node__test_attention_4d_diff_heads_mask4d_padded_kv_expanded n33_Pad"),
    ("", "RNN"): (22, None, "node__test_simple_rnn_bidirectional n0_RNN"),
    ("", "RandomUniformLike"): (22, None, "node__test_bernoulli_seed_expanded n0_RandomUniformLike"),
    ("", "ReduceMax"): (20, None, "node__test_attention_4d_expanded n59_ReduceMax"),
    ("", "Reshape"): (25, None, "node__test_reshape_one_dim n0_Reshape"),
    ("", "Shape"): (25, None, "node__test_shape n0_Shape"),
    ("", "Sin"): (22, None, "node__test_sin n0_Sin"),
    ("", "Size"): (19, None, "node__test_affine_grid_2d_expanded n13_Size"),
    ("", "Softplus"): (22, None, "node__test_softplus_example n0_Softplus"),
    ("", "TopK"): (24, None, "node__test_top_k_smallest n0_TopK"),
    ("", "Transpose"): (25, None, "node__test_transpose_default n0_Transpose"),
    ("", "Unsqueeze"): (25, None, "node__test_unsqueeze_axis_2 n0_Unsqueeze"),
}

# What CUDA kernel constructors enforce (ORT_ENFORCE): GetCapability claims such a node, creating
# its kernel throws, and ORT refuses the whole session (partsim: session_would_fail).
# (domain, op, first, last) -> conditions; a doc row [lo, hi] inside [first, last] gets them.
_BATCHWISE = "Batchwise recurrent operations (layout == 1) are not supported"
CUDA_KERNEL_REQUIRES = {
    # cudnn_rnn_base.h (CudnnRnnBase: ORT_ENFORCE(layout_ == 0)); seen with onnxruntime-gpu 1.31.1:
    # node__test_lstm_batchwise, node__test_simple_rnn_batchwise ("Exception during initialization")
    ("", "RNN", 14, None): [{"name": "layout", "in": [0], "why": _BATCHWISE + " (rnn/cudnn_rnn_base.h)"}],
    ("", "GRU", 14, None): [{"name": "layout", "in": [0], "why": _BATCHWISE + " (rnn/cudnn_rnn_base.h)"}],
    ("", "LSTM", 14, None): [{"name": "layout", "in": [0], "why": _BATCHWISE + " (rnn/cudnn_rnn_base.h)"}],
    # nn/batch_norm.h: ORT_ENFORCE(!(is_training_mode_ && opset == 14), "Training mode does not support
    # BN opset 14 yet.")
    ("", "BatchNormalization", 14, 14): [{"name": "training_mode", "in": [0],
                                          "why": "Training mode does not support BN opset 14 yet (nn/batch_norm.h)"}],
    # contrib_ops/cuda/fused_conv.cc: MapMode knows only "Relu" (cuDNN's fused activation); issue 20
    # reports onnxruntime-gpu 1.31.1 refusing a session with FusedConv(activation=HardSigmoid)
    ("com.microsoft", "FusedConv", 1, None): [{"name": "activation", "in": ["Relu"],
                                               "why": "cuDNN fuses only Relu (contrib_ops/cuda/fused_conv.cc)"}],
}


# Checks GetCapability makes that a rule table cannot express: reported as unchecked caveats.
CUDA_NOTES = {
    ("", "LSTM", 1): "falls back to CPU when the peephole input (7) is given (cuDNN has no peephole)",
}

