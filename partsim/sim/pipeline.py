"""ORT's optimization pipeline as data: levels, each transformer's provider set, node origins.

Pure (no I/O, no onnxruntime).  The facts are ported from ONNX Runtime:

- levels: ``onnxruntime/core/session/abi_session_options.cc`` (``ORT_DISABLE_ALL`` ->
  Default, ``ORT_ENABLE_BASIC`` -> Level1, ``ORT_ENABLE_EXTENDED`` -> Level2,
  ``ORT_ENABLE_ALL`` -> MaxLevel); Python's default is ``ORT_ENABLE_ALL``;
- the order (``core/session/inference_session.cc``, ``InferenceSession::TransformGraph``):
  AOT function inlining, EnsureUniqueDQForNodeUnit (every level), Level 1, partitioning,
  Level 2, Level 3, InsertCast, Memcpy;
- the provider set of each Level 2/3 transformer, and the name ORT filters it by:
  ``core/optimizer/graph_transformer_utils.cc`` (``GenerateTransformers``) of microsoft/onnxruntime
  main as of 2026-08-07 (commit cf5e9eba49b0; onnxruntime 1.31.1's library has the transformers and log
  lines of its July 2026 commits), with the WebGPU changes merged after it that 1.31.1 shows on real
  sessions (tests/sim/test_webgpu_fusions.py): GeluFusion and BiasGeluFusion (PR #32053, 2026-08),
  FastGeluFusion (PR #32118) and LayerNormFusion (PR #32294) take WebGPU nodes, as QuickGeluFusion and
  SkipLayerNormFusion already did (PR #28410); ROCm and ArmNN are gone (PRs #26712, #27447).  The Level 2
  GeluFusion and LayerNormFusion are named ``GeluFusionL2`` / ``LayerNormFusionL2`` (``gelu_fusion.h``,
  ``layer_norm_fusion.h``; the Level 1 instances, ``...L1``, have no provider filter).
  A transformer touches a node only when the node's provider is in its set
  (``graph_utils::IsSupportedProvider``; an empty set means any provider).
"""

__all__ = ["LEVELS", "ORT_LEVEL", "normalize_level", "TRANSFORMER_EPS", "transformers_to_disable", "annotate_summary", "partitioning_level", "FINAL_LEVELS",
           "origin_of", "FUSED_NAMING"]

CPU = "CPUExecutionProvider"
CUDA = "CUDAExecutionProvider"
DML = "DmlExecutionProvider"
ACL = "ACLExecutionProvider"
JS = "JsExecutionProvider"
WEBGPU = "WebGpuExecutionProvider"

# partsim's --level names, in increasing order: the levels partsim predicts
LEVELS = ("disable", "basic", "extended", "all")
# every level name -> ORT's GraphOptimizationLevel name; ORT_ENABLE_LAYOUT (3) is a level sessions
# (observations, the determinism grid) may run at, but not one partsim predicts
ORT_LEVEL = {"disable": "ORT_DISABLE_ALL", "basic": "ORT_ENABLE_BASIC", "extended": "ORT_ENABLE_EXTENDED",
             "layout": "ORT_ENABLE_LAYOUT", "all": "ORT_ENABLE_ALL"}
_ALIASES = {"none": "disable", "disable_all": "disable", "enable_basic": "basic", "enable_extended": "extended",
            "enable_layout": "layout", "enable_all": "all"}


# levels whose final graph differs from the graph ORT partitions (Level 2/3 run after partitioning)
FINAL_LEVELS = ("extended", "all")


def partitioning_level(level):
    """The level whose optimized graph is the graph ORT partitions at ``level``: Level 1 runs before
    partitioning, Level 2/3 after it (``inference_session.cc`` ``TransformGraph``, ORT-PIPELINE §1),
    so at ``extended``/``all`` ORT partitions the ``basic`` graph.

    >>> partitioning_level("all"), partitioning_level("disable")
    ('basic', 'disable')
    """
    return "basic" if level in FINAL_LEVELS else level


def normalize_level(level, allowed=LEVELS):
    """``none``/``ORT_DISABLE_ALL`` -> ``disable`` and so on; ``None`` for a name not in ``allowed``.

    >>> normalize_level("ORT_ENABLE_ALL"), normalize_level("none"), normalize_level("max")
    ('all', 'disable', None)
    >>> normalize_level("ORT_ENABLE_LAYOUT"), normalize_level("ORT_ENABLE_LAYOUT", allowed=ORT_LEVEL)
    (None, 'layout')
    """
    key = str(level).strip().lower()
    if key.startswith("ort_"):
        key = key[4:]
    key = _ALIASES.get(key, key)
    return key if key in allowed else None


_CPU_CUDA = frozenset({CPU, CUDA})
_CPU_CUDA_DML = frozenset({CPU, CUDA, DML})
_CPU_ACL_CUDA_DML = frozenset({CPU, ACL, CUDA, DML})
_CPU_ACL_CUDA_DML_WEBGPU = frozenset({CPU, ACL, CUDA, DML, WEBGPU})
_CPU_CUDA_DML_WEBGPU = frozenset({CPU, CUDA, DML, WEBGPU})
_CPU_ACL_CUDA_DML_JS_WEBGPU = frozenset({CPU, ACL, CUDA, DML, JS, WEBGPU})
_CPU_ACL_JS_WEBGPU = frozenset({CPU, ACL, JS, WEBGPU})

# Level 2 and 3 transformers (and the Level 2 rewrite rules that check a provider), by the name
# ORT filters them with (``disabled_optimizers``: ``GraphTransformer::Name()``), with the providers
# whose nodes they touch.  graph_transformer_utils.cc GenerateTransformers /
# GenerateRuleBasedGraphTransformer (microsoft/onnxruntime main, 2026-08-07, see above); the Quant
# rules (clip_quantizelinear.cc, relu_quantizelinear.cc) apply to CPU nodes only.  Not listed: the
# Level 2 MatMulAddFusion (any provider; the name is the Level 1 one's) and QDQFinalCleanupTransformer
# (any provider); MatMulNBitsMlpFusion/MatMulNBitsQkvFusion run only where a WebGPU EP registered those
# kernels (partsim/gen/ep_webgpu.py lists neither for onnxruntime-ep-webgpu).
TRANSFORMER_EPS = {
    # Level 2
    "ClipQuantRewrite": frozenset({CPU}),
    "ReluQuantRewrite": frozenset({CPU}),
    "TransposeOptimizer_CPUExecutionProvider": frozenset({CPU}),
    "QDQS8ToU8Transformer": frozenset({CPU}),
    "QDQSelectorActionTransformer": frozenset({CPU}),  # per rule; only DQ->MatMulNBits includes CUDA
    "GemmActivationFusion": frozenset({CPU}),
    "MatMulIntegerToFloatFusion": frozenset({CPU, DML, ACL}),
    "DynamicQuantizeMatMulFusion": frozenset({CPU, ACL}),
    "ConvActivationFusion": _CPU_ACL_JS_WEBGPU,
    "GeluFusionL2": _CPU_ACL_CUDA_DML_WEBGPU,  # WebGPU: PR #32053
    "LayerNormFusionL2": _CPU_ACL_CUDA_DML_WEBGPU,  # WebGPU: PR #32294
    "SimplifiedLayerNormFusion": _CPU_CUDA,
    "AttentionFusion": _CPU_ACL_CUDA_DML,
    "EmbedLayerNormFusion": _CPU_ACL_CUDA_DML,
    "GatherSliceToSplitFusion": _CPU_CUDA,
    "GatherToSliceFusion": _CPU_CUDA,
    "MatmulTransposeFusion": _CPU_CUDA_DML,
    "BiasGeluFusion": _CPU_ACL_CUDA_DML_WEBGPU,  # WebGPU: PR #32053
    "GroupQueryAttentionFusion": frozenset({CUDA}),
    "SkipLayerNormFusion": _CPU_ACL_CUDA_DML_JS_WEBGPU,
    "BiasSkipLayerNormFusion": _CPU_ACL_CUDA_DML_JS_WEBGPU,
    "FastGeluFusion": _CPU_CUDA_DML_WEBGPU,  # WebGPU: PR #32118
    "QuickGeluFusion": _CPU_ACL_CUDA_DML_JS_WEBGPU,
    "BiasSoftmaxFusion": _CPU_CUDA,
    "BiasDropoutFusion": frozenset({CUDA}),
    "MatMulScaleFusion": _CPU_ACL_CUDA_DML,
    "MatMulActivationFusion": frozenset({DML}),
    "Avx2WeightS8ToU8Transformer": frozenset({CPU}),
    "MatMulNBitsFusion": _CPU_CUDA,  # CUDA since PR #29170 (2026-06)
    "GroupQueryAttentionPreNormFusion": frozenset({CUDA, WEBGPU}),
    "MatMulNBitsMlpFusion": frozenset({WEBGPU}),
    "MatMulNBitsQkvFusion": frozenset({WEBGPU}),
    # Level 3 (CPU only; NchwcTransformer only where MlasNchwcGetBlockSize() > 1, i.e. x86-64)
    "NchwcTransformer": frozenset({CPU}),
    "NhwcTransformer": frozenset({CPU}),
    "ConvAddActivationFusion": frozenset({CPU}),
}


def transformers_to_disable(kernel_providers):
    """The Level 2/3 transformers to switch off in a CPU-only ORT session so that it rewrites
    the graph as a session whose nodes sit on ``kernel_providers`` would.

    A transformer stays on when every one of ``kernel_providers`` is in its provider set (the
    nodes it could touch are then all eligible); it is switched off when one of them is not.
    With CPU alone only the transformers that never touch a CPU node are switched off: the
    CPU-only session *is* the prediction.

    >>> transformers_to_disable(["CPUExecutionProvider"])[:3]
    ('BiasDropoutFusion', 'GroupQueryAttentionFusion', 'GroupQueryAttentionPreNormFusion')
    >>> "QuickGeluFusion" in transformers_to_disable(["WebGpuExecutionProvider", "CPUExecutionProvider"])
    False
    >>> "GatherSliceToSplitFusion" in transformers_to_disable(["WebGpuExecutionProvider", "CPUExecutionProvider"])
    True
    >>> "ConvActivationFusion" in transformers_to_disable(["CUDAExecutionProvider", "CPUExecutionProvider"])
    True
    >>> "SkipLayerNormFusion" in transformers_to_disable(["CUDAExecutionProvider", "CPUExecutionProvider"])
    False
    """
    eps = set(kernel_providers)
    return tuple(sorted(name for name, allowed in TRANSFORMER_EPS.items() if not eps <= allowed))


# How ORT names what its transformers create, for ``origin``: (op domain, op type) of the new
# node -> transformer, and name patterns checked first.  Sources: the fusion files under
# core/optimizer/ (gelu_fusion.cc "Gelu", fast_gelu_fusion.cc "GPT2Gelu", bias_gelu_fusion.cc,
# layer_norm_fusion.cc "<mul>/LayerNormFusion/", skip_layer_norm_fusion.cc, attention_fusion.cc,
# matmul_scale_fusion.cc "<node>/MatMulScaleFusion/", matmul_transpose_fusion.cc,
# gemm_*_fusion.cc, conv_activation_fusion.cc (keeps the Conv's name), nchwc_transformer.cc
# (ReorderInput/ReorderOutput, "<out>_nchwc"), matmul_add_fusion.cc, reshape_fusion.cc).
FUSED_NAMING = (
    ("/MatMulScaleFusion/", "MatMulScaleFusion"),
    ("/MatmulTransposeFusion/", "MatmulTransposeFusion"),
    ("/LayerNormFusion/", "LayerNormFusion"),
    ("/SimplifiedLayerNormFusion/", "SimplifiedLayerNormFusion"),
    ("/QuickGeluFusion/", "QuickGeluFusion"),
    ("/GemmSumFusion/", "GemmSumFusion"),
    ("/GemmTransposeFusion/", "GemmTransposeFusion"),
    ("/GatherSliceToSplitFusion", "GatherSliceToSplitFusion"),
    ("/MatMulAddFusion", "MatMulAddFusion"),
    ("MatMulBnFusion_Gemm", "MatmulBNFusion"),
    ("_new_reshape", "ReshapeFusion"),
    ("GPT2Gelu", "FastGeluFusion"),
)
_FUSED_OPS = {
    ("com.microsoft", "FusedConv"): "ConvActivationFusion",
    ("com.microsoft", "FusedGemm"): "GemmActivationFusion",
    ("com.microsoft", "FusedMatMul"): "MatMulScaleFusion",
    ("com.microsoft", "Gelu"): "GeluFusion",
    ("", "Gelu"): "GeluFusion",
    ("", "LayerNormalization"): "LayerNormFusion",
    ("com.microsoft", "SkipLayerNormalization"): "SkipLayerNormFusion",
    ("com.microsoft", "SkipSimplifiedLayerNormalization"): "SkipLayerNormFusion",
    ("", "RMSNormalization"): "SimplifiedLayerNormFusion",
    ("com.microsoft", "SimplifiedLayerNormalization"): "SimplifiedLayerNormFusion",
    ("com.microsoft", "Attention"): "AttentionFusion",
    ("com.microsoft", "EmbedLayerNormalization"): "EmbedLayerNormFusion",
    ("com.microsoft", "BiasGelu"): "BiasGeluFusion",
    ("com.microsoft", "FastGelu"): "FastGeluFusion",
    ("com.microsoft", "QuickGelu"): "QuickGeluFusion",
    ("com.microsoft", "BiasSoftmax"): "BiasSoftmaxFusion",
    ("com.microsoft", "BiasDropout"): "BiasDropoutFusion",
    ("com.microsoft", "GroupQueryAttention"): "GroupQueryAttentionFusion",
    ("com.microsoft", "MatMulIntegerToFloat"): "MatMulIntegerToFloatFusion",
    ("com.microsoft", "DynamicQuantizeMatMul"): "DynamicQuantizeMatMulFusion",
    ("com.microsoft", "MatMulNBits"): "QDQSelectorActionTransformer",
    ("com.microsoft", "QLinearAdd"): "QDQSelectorActionTransformer",
    ("com.microsoft", "QLinearMul"): "QDQSelectorActionTransformer",
    ("com.microsoft", "QLinearSigmoid"): "QDQSelectorActionTransformer",
    ("com.microsoft", "QLinearLeakyRelu"): "QDQSelectorActionTransformer",
    ("com.microsoft", "QLinearConcat"): "QDQSelectorActionTransformer",
    ("com.microsoft", "QLinearAveragePool"): "QDQSelectorActionTransformer",
    ("com.microsoft", "QLinearGlobalAveragePool"): "QDQSelectorActionTransformer",
    ("com.microsoft", "QLinearSoftmax"): "QDQSelectorActionTransformer",
    ("com.microsoft", "QLinearWhere"): "QDQSelectorActionTransformer",
    ("", "QLinearConv"): "QDQSelectorActionTransformer",
    ("", "QLinearMatMul"): "QDQSelectorActionTransformer",
    ("com.microsoft", "QGemm"): "QDQSelectorActionTransformer",
    ("com.ms.internal.nhwc", None): "NhwcTransformer",
    ("com.microsoft.nchwc", None): "NchwcTransformer",
}


def origin_of(name, domain, op_type, original):
    """Where a node of the graph ORT partitions came from.

    Parameters
    ----------
    name, domain, op_type : str
        The node after the pipeline.
    original : dict
        Node name -> ``(domain, op_type)`` of the model as written.

    Returns
    -------
    str
        ``model`` (as written), ``inlined:<op>`` (a function body ORT expanded; its tensors
        are prefixed ``_inlfunc_<op>``), ``duplicated:dq`` (EnsureUniqueDQForNodeUnit),
        ``fused:<transformer>`` (a node a transformer made or rewrote), or ``inserted:cast``.

    >>> origin_of("c1", "", "Conv", {"c1": ("", "Conv")})
    'model'
    >>> origin_of("c1", "com.microsoft", "FusedConv", {"c1": ("", "Conv")})
    'fused:ConvActivationFusion'
    >>> origin_of("dq/duplicated_token_3", "", "DequantizeLinear", {})
    'duplicated:dq'
    """
    was = original.get(name)
    if was == (domain, op_type):
        return "model"
    if name.endswith("/duplicated") or "/duplicated_token_" in name:
        return "duplicated:dq"
    if name.startswith("_inlfunc_"):
        op = name[len("_inlfunc_"):].split("_token_")[0]
        return f"inlined:{op}"
    if name.startswith("InsertedPrecisionFreeCast_"):
        return "inserted:cast"
    for pattern, transformer in FUSED_NAMING:
        if pattern in name:
            return f"fused:{transformer}"
    found = _FUSED_OPS.get((domain, op_type)) or _FUSED_OPS.get((domain, None))
    if found:
        return f"fused:{found}"
    if name.endswith("_nchwc") or op_type in ("ReorderInput", "ReorderOutput"):
        return "fused:NchwcTransformer"
    if op_type == "Transpose" and (name == "Transpose" or name.startswith("Transpose_token_")):
        return "fused:TransposeOptimizer"
    # nhwc_transformer.cc (CPU, Level 3): quantized layout-sensitive ops recreated in NHWC form as
    # com.microsoft ops under GenerateNodeName(<orig>) = <orig>_token_<k>
    if domain == "com.microsoft" and "_token_" in name and op_type in (
            "QLinearConv", "NhwcMaxPool", "QLinearAveragePool", "QLinearGlobalAveragePool", "NhwcConv",
            "NhwcFusedConv"):
        return "fused:NhwcTransformer"
    # onnx_transpose_optimization.cc HandleShape: a Shape read past a moved Transpose becomes
    # Shape + Gather(perm), the Gather named by GenerateNodeName("Gather")
    if op_type == "Gather" and not domain and (name == "Gather" or name.startswith("Gather_token_")):
        return "fused:TransposeOptimizer"
    if op_type == "Reshape" and name.startswith(("gemm_input_reshape", "gemm_output_reshape")):
        return "fused:MatMulAddFusion"  # matmul_add_fusion.cc: a 3-D MatMul+Add as Reshape, Gemm, Reshape
    if op_type == "Squeeze" and (name == "Squeeze" or name.startswith("Squeeze_token_")):
        return "fused:GatherSliceToSplitFusion"  # gather_slice_fusion.cc: scalar-index Gathers as Split + Squeeze
    return "fused:unattributed"


def annotate_summary(summary, level, origins=None, failure="", notes=()):
    """Add the level, every node's ``origin`` and ORT's own failure to a partitionSummary.

    ``origins`` maps node names to origins (``None``: the graph was given as is, every node
    ``model``).  A ``failure`` (ORT could not build the session) makes the status
    ``session_would_fail`` with ORT's message as the reason.
    """
    summary["level"] = level
    for n in summary["nodes"]:
        n["origin"] = origins.get(n["name"], "model") if origins else "model"
    if failure:
        summary["status"] = "session_would_fail"
        summary["failure"] = failure
    if notes:
        summary.setdefault("warnings", []).extend(notes)
    return summary
