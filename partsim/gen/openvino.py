"""Generate the OpenVINO EP capability table (device CPU) for onnxruntime-openvino 1.24.1.

Sources (the OpenVINO EP's own capability code; onnxruntime-openvino 1.24.1 bundles
OpenVINO 2025.4.1):

* ``onnxruntime/core/providers/openvino/ov_versions/data_ops.cc`` -- ``supported_op_mode``
  (op name, first OpenVINO version, devices), ``populate_types_supported`` (dtypes per
  device), ``no_dimension_supported_`` (ops that may take/produce rank-0 tensors),
  ``ops_supported_only_in_model`` and ``InsertNode``.  Read from intel/onnxruntime commit
  b912b18f73 ("OpenVINO EP Features and bug-fixes for ORT-1.24 - Follow up",
  2026-01-16), the EP source of the 1.24 line (``V_2025_4`` is its newest version).
* ``ov_versions/capability.cc`` and ``utils.cc`` -- cluster forming, encoded as the
  ``partitioning`` options (``clusters: topological_runs`` etc., see
  :mod:`partsim.sim.ov_clusters`).

Facts checked against real onnxruntime-openvino 1.24.1 sessions on this machine
(``tests/gen/test_openvino.py``): ``Hardmax`` is *not* claimed (data_ops.cc spells it
``"HardMax"``, and the check is a plain string comparison of the op type); float64
tensors are refused (not in the CPU dtype list); of the per-op ``op_list_`` special cases of data_ops.cc, whose version lists end before 2025.4 in
the source read, the Upsample one does not apply (a rank-4 Upsample is claimed) while the
Unsqueeze (an input named ``axes``) and ReduceMax (int8/uint8 inputs) ones do
(``unsupported_op_modes``); a one-node graph goes through ``SpecialConditionForClusterSizeOne``
(``single_node_graph_checks``: a Reshape with a run-time shape, a float Expand stay on the CPU).

The op check ignores the domain (data_ops.cc compares ``OpType()`` only), and no opset
version is checked.  ``TopK`` and ``NonZero`` (``InsertNode``) are always treated as
unsupported when the graph is split; they are left out of the table (in a graph where
every other node is supported ORT would still hand them to OpenVINO: not modelled).

Regenerate with ``partsim rules import openvino -o rules/openvino-1.24.yaml`` (``-p openvino:1.24``; the
default ``openvino`` table is the measured plugin one, :mod:`partsim.gen.openvino_plugin`).
"""

from .yamlout import dump_table

__all__ = ["openvino_table", "openvino_table_dict", "SUPPORTED_OPS", "OV_VERSION", "CPU_DTYPES", "NO_DIMENSION_OPS",
           "ONLY_IN_MODEL_OPS", "INSERT_NODE_OPS"]

#: OpenVINO version bundled with onnxruntime-openvino 1.24.1 (libopenvino.so.2025.4.1)
OV_VERSION = (2025, 4)

# data_ops.cc supported_op_mode: op -> [(first OpenVINO version, devices)], as (year, minor).
# Only entries whose device list contains "CPU" (or "All") matter for device CPU.
SUPPORTED_OPS = {
    "Abs": [((2020, 4), ("CPU", "GPU"))],
    "Acos": [((2020, 4), ("CPU",)), ((2022, 1), ("GPU",))],
    "Acosh": [((2020, 4), ("CPU",)), ((2022, 1), ("GPU",))],
    "Add": [((2020, 4), ("CPU", "GPU"))],
    "And": [((2020, 4), ("CPU", "GPU"))],
    "ArgMax": [((2020, 4), ("CPU",)), ((2021, 1), ("GPU",))],
    "ArgMin": [((2020, 4), ("CPU",)), ((2022, 1), ("GPU",))],
    "Asin": [((2020, 4), ("CPU", "GPU"))],
    "Asinh": [((2020, 4), ("CPU", "GPU"))],
    "Atan": [((2020, 4), ("CPU", "GPU"))],
    "Atanh": [((2020, 4), ("CPU",)), ((2022, 1), ("GPU",))],
    "Attention": [((2023, 0), ("CPU", "GPU"))],
    "AveragePool": [((2020, 4), ("CPU", "GPU"))],
    "BatchNormalization": [((2020, 4), ("CPU", "GPU"))],
    "BiasGelu": [((2023, 0), ("CPU", "GPU"))],
    "BitShift": [((2022, 1), ("CPU",))],
    "Cast": [((2020, 4), ("CPU", "GPU"))],
    "CastLike": [((2023, 1), ("CPU", "GPU"))],
    "Ceil": [((2020, 4), ("GPU",)), ((2021, 4), ("CPU",))],
    "Celu": [((2022, 1), ("CPU", "GPU"))],
    "Clip": [((2020, 4), ("CPU", "GPU"))],
    "Compress": [((2023, 1), ("CPU", "GPU"))],
    "Concat": [((2020, 4), ("CPU", "GPU"))],
    "ConstantOfShape": [((2020, 4), ("CPU", "GPU"))],
    "Conv": [((2020, 4), ("CPU", "GPU"))],
    "ConvInteger": [((2022, 1), ("CPU", "GPU"))],
    "ConvTranspose": [((2020, 4), ("CPU", "GPU"))],
    "Cos": [((2020, 4), ("CPU",)), ((2022, 1), ("GPU",))],
    "Cosh": [((2020, 4), ("CPU",)), ((2022, 1), ("GPU",))],
    "CumSum": [((2022, 1), ("CPU", "GPU"))],
    "DepthToSpace": [((2020, 4), ("CPU", "GPU"))],
    "DequantizeLinear": [((2021, 4), ("CPU", "GPU")), ((2024, 4), ("NPU",))],
    "DynamicQuantizeLinear": [((2025, 2), ("CPU", "GPU"))],
    "DynamicQuantizeMatMul": [((2025, 0), ("CPU", "GPU"))],
    "Div": [((2020, 4), ("CPU", "GPU"))],
    "Dropout": [((2020, 4), ("CPU", "GPU"))],
    "Elu": [((2020, 4), ("CPU", "GPU"))],
    "Einsum": [((2023, 1), ("CPU", "GPU"))],
    "EmbedLayerNormalization": [((2024, 5), ("CPU", "GPU"))],
    "Equal": [((2020, 4), ("CPU", "GPU"))],
    "Erf": [((2020, 4), ("CPU", "GPU"))],
    "Exp": [((2020, 4), ("CPU", "GPU"))],
    "Expand": [((2022, 1), ("CPU", "GPU"))],
    "EyeLike": [((2022, 1), ("CPU",))],
    "Flatten": [((2020, 4), ("CPU", "GPU"))],
    "Floor": [((2020, 4), ("CPU", "GPU"))],
    "FusedConv": [((2023, 0), ("CPU", "GPU"))],
    "FusedGemm": [((2023, 0), ("CPU", "GPU"))],
    "FusedMatMul": [((2025, 0), ("CPU", "GPU"))],
    "Gather": [((2020, 4), ("CPU", "GPU"))],
    "GatherElements": [((2022, 2), ("CPU", "GPU"))],
    "GatherND": [((2021, 4), ("CPU", "GPU"))],
    "Gelu": [((2023, 1), ("CPU", "GPU"))],
    "Gemm": [((2020, 4), ("CPU", "GPU"))],
    "GlobalAveragePool": [((2020, 4), ("CPU", "GPU"))],
    "GlobalLpPool": [((2020, 4), ("CPU", "GPU"))],
    "GlobalMaxPool": [((2022, 1), ("CPU", "GPU"))],
    "Greater": [((2020, 4), ("CPU", "GPU"))],
    "GreaterOrEqual": [((2022, 1), ("CPU", "GPU"))],
    "GridSample": [((2022, 3), ("CPU",)), ((2023, 0), ("GPU",))],
    "GroupQueryAttention": [((2025, 1), ("GPU",))],
    "GRU": [((2024, 1), ("CPU", "GPU"))],
    "HardMax": [((2022, 1), ("CPU", "GPU")), ((2023, 1), ("CPU", "GPU"))],  # sic: no ONNX op has this name
    "HardSigmoid": [((2020, 4), ("CPU", "GPU"))],
    "HardSwish": [((2023, 3), ("CPU", "GPU"))],
    "Identity": [((2020, 4), ("CPU", "GPU"))],
    "If": [((2022, 3), ("CPU", "GPU"))],
    "ImageScaler": [((2022, 1), ("CPU", "GPU"))],
    "InstanceNormalization": [((2020, 4), ("CPU", "GPU"))],
    "LayerNormalization": [((2023, 0), ("CPU", "GPU"))],
    "LeakyRelu": [((2020, 4), ("CPU", "GPU"))],
    "Less": [((2020, 4), ("CPU", "GPU"))],
    "LessOrEqual": [((2022, 1), ("CPU", "GPU"))],
    "Log": [((2020, 4), ("CPU", "GPU"))],
    "LogSoftMax": [((2022, 1), ("CPU", "GPU"))],  # sic
    "LogSoftmax": [((2024, 1), ("CPU", "GPU"))],
    "Loop": [((2021, 4), ("CPU", "GPU"))],
    "LpNormalization": [((2023, 1), ("CPU", "GPU"))],
    "LRN": [((2020, 4), ("CPU", "GPU"))],
    "LSTM": [((2020, 4), ("CPU", "GPU"))],
    "MatMul": [((2020, 4), ("CPU", "GPU"))],
    "MatMulInteger": [((2022, 1), ("CPU",))],
    "MatMulNBits": [((2024, 5), ("CPU", "GPU"))],
    "Max": [((2020, 4), ("CPU", "GPU"))],
    "MaxPool": [((2020, 4), ("CPU", "GPU"))],
    "Mean": [((2020, 4), ("CPU", "GPU"))],
    "MeanVarianceNormalization": [((2022, 1), ("CPU", "GPU"))],
    "Min": [((2020, 4), ("CPU", "GPU"))],
    "Mod": [((2022, 1), ("CPU", "GPU"))],
    "Mul": [((2020, 4), ("CPU", "GPU"))],
    "Neg": [((2020, 4), ("CPU", "GPU"))],
    "NonMaxSuppression": [((2021, 1), ("CPU", "GPU"))],
    "NonZero": [((2021, 1), ("CPU",)), ((2023, 0), ("GPU",))],
    "Not": [((2020, 4), ("CPU", "GPU"))],
    "OneHot": [((2020, 4), ("CPU", "GPU"))],
    "Or": [((2022, 1), ("CPU", "GPU"))],
    "Pad": [((2020, 4), ("CPU", "GPU"))],
    "Pow": [((2020, 4), ("CPU", "GPU"))],
    "PRelu": [((2020, 4), ("CPU", "GPU"))],
    # "QLinearMatMul" is commented out in the 1.24 data_ops.cc; seen on a real 1.24.1 session:
    # a QLinearMatMul between two claimed nodes stays on the CPU
    "QuantizeLinear": [((2021, 4), ("CPU", "GPU"))],
    "QuickGelu": [((2025, 0), ("CPU", "GPU"))],
    "RNN": [((2023, 1), ("CPU", "GPU"))],
    "RandomNormalLike": [((2023, 0), ("CPU", "GPU"))],
    "RandomNormal": [((2023, 0), ("CPU", "GPU"))],
    "Range": [((2022, 1), ("CPU", "GPU"))],
    "Reciprocal": [((2020, 4), ("CPU", "GPU"))],
    "ReduceL1": [((2022, 1), ("CPU", "GPU"))],
    "ReduceL2": [((2022, 1), ("CPU", "GPU"))],
    "ReduceLogSum": [((2020, 4), ("CPU",)), ((2022, 1), ("CPU", "GPU"))],
    "ReduceLogSumExp": [((2022, 1), ("CPU", "GPU"))],
    "ReduceMax": [((2020, 4), ("CPU", "GPU"))],
    "ReduceMean": [((2020, 4), ("CPU", "GPU"))],
    "ReduceMin": [((2020, 4), ("CPU", "GPU"))],
    "ReduceProd": [((2020, 4), ("CPU",)), ((2022, 1), ("GPU",))],
    "ReduceSum": [((2020, 4), ("CPU", "GPU"))],
    "ReduceSumSquare": [((2020, 4), ("CPU",)), ((2022, 1), ("CPU", "GPU"))],
    "Relu": [((2020, 4), ("CPU", "GPU"))],
    "Resize": [((2020, 4), ("CPU",)), ((2022, 1), ("GPU",))],
    "Reshape": [((2020, 4), ("CPU", "GPU"))],
    "ReverseSequence": [((2022, 1), ("CPU", "GPU"))],
    "RoiAlign": [((2021, 1), ("CPU", "GPU"))],
    "Round": [((2021, 4), ("CPU", "GPU"))],
    "Scatter": [((2022, 1), ("CPU", "GPU"))],
    "ScatterElements": [((2022, 1), ("CPU", "GPU"))],
    "ScatterND": [((2022, 1), ("CPU", "GPU"))],
    "Selu": [((2020, 4), ("CPU", "GPU"))],
    "Shape": [((2020, 4), ("CPU", "GPU"))],
    "Shrink": [((2022, 1), ("CPU", "GPU"))],
    "Sigmoid": [((2020, 4), ("CPU", "GPU"))],
    "Sign": [((2020, 4), ("CPU",)), ((2022, 1), ("GPU",))],
    "SimplifiedLayerNormalization": [((2025, 2), ("CPU", "GPU"))],
    "Sin": [((2022, 1), ("CPU", "GPU"))],
    "Sinh": [((2020, 4), ("CPU",))],
    "Size": [((2022, 1), ("CPU", "GPU"))],
    "SkipLayerNormalization": [((2024, 5), ("CPU", "GPU"))],
    "SkipSimplifiedLayerNormalization": [((2025, 0), ("CPU", "GPU"))],
    "Slice": [((2020, 4), ("CPU", "GPU"))],
    "Softmax": [((2020, 4), ("CPU", "GPU"))],
    "Softplus": [((2022, 1), ("CPU", "GPU"))],
    "Softsign": [((2020, 4), ("CPU",)), ((2022, 1), ("CPU", "GPU"))],
    "SpaceToDepth": [((2020, 4), ("CPU", "GPU"))],
    "Split": [((2020, 4), ("CPU", "GPU"))],
    "Sqrt": [((2020, 4), ("CPU", "GPU"))],
    "Squeeze": [((2020, 4), ("CPU", "GPU"))],
    "Sub": [((2020, 4), ("CPU", "GPU"))],
    "Sum": [((2020, 4), ("CPU", "GPU"))],
    "Tan": [((2020, 4), ("CPU", "GPU"))],
    "Tanh": [((2020, 4), ("CPU", "GPU"))],
    "ThresholdedRelu": [((2022, 1), ("CPU", "GPU"))],
    "Tile": [((2021, 3), ("CPU", "GPU"))],
    "Transpose": [((2020, 4), ("CPU", "GPU"))],
    "Trilu": [((2023, 0), ("CPU", "GPU"))],
    "TopK": [((2020, 4), ("CPU", "GPU"))],
    "Upsample": [((2020, 4), ("CPU", "GPU"))],
    "Unsqueeze": [((2020, 4), ("CPU", "GPU"))],
    "Where": [((2022, 1), ("CPU", "GPU"))],
    "Xor": [((2022, 1), ("CPU", "GPU"))],
}

# data_ops.cc populate_types_supported: supported_types_cpu_ (non-constant tensors) and
# supported_types_initializer_ (constant initializers) hold the same element types for
# OpenVINO >= 2024.4: every input and output of a node must have one of these.
# Seen on a real 1.24.1 session: a float -> uint32 -> float Cast pair is claimed.
CPU_DTYPES = ("bool", "float", "float16", "int16", "int32", "int4", "int64", "int8", "uint16", "uint32", "uint4",
              "uint8")

# data_ops.cc no_dimension_supported_ (entries whose devices include CPU or All): only
# these ops may read a rank-0 non-constant tensor or produce a rank-0 tensor (node_is_supported,
# check 2; every input that is not a constant initializer and every output is checked).  Seen on
# real 1.24.1 sessions: DynamicQuantizeLinear (scalar scale/zero-point outputs) is claimed, a
# ConvInteger reading its scalar zero point is not.
NO_DIMENSION_OPS = (
    "Add", "And", "Cast", "Ceil", "Clip", "DequantizeLinear", "Div", "DynamicQuantizeLinear", "Equal", "Exp",
    "Expand", "Floor", "Gather", "Greater", "Identity", "If", "Less", "Loop", "MatMulInteger", "Max", "Min", "Mul",
    "Neg", "Pow", "PRelu", "QuantizeLinear", "Range", "ReduceMax", "ReduceMin", "ReduceProd", "Reshape", "Shape",
    "Sqrt", "Squeeze", "Sub", "Unsqueeze", "Where",
)

# data_ops.cc ops_supported_only_in_model: a fully supported graph of <= 3 nodes whose
# first node (topological order) is one of these is not claimed (capability.cc).  Seen on real
# 1.24.1 sessions: Cast->Relu and Slice->Relu stay on the CPU, Add/Exp/Round->Relu are claimed.
ONLY_IN_MODEL_OPS = (
    "Cast", "Celu", "ConstantOfShape", "Dropout", "Einsum", "GatherElements", "GatherND", "GridSample",
    "LayerNormalization", "LSTM", "OneHot", "Pad", "RandomNormalLike", "ReduceMin", "Slice", "TopK",
)

# data_ops.cc InsertNode: treated as unsupported when the graph is split into clusters
INSERT_NODE_OPS = ("NonZero", "TopK")


def _supported_on_cpu(entries):
    return any(v <= OV_VERSION and ("CPU" in devs or "All" in devs) for v, devs in entries)


def _domains_and_constraints(op):
    """``[(domain, type-constraint names)]``: ai.onnx when ONNX knows the op, and com.microsoft when ORT's
    contrib schemas define an op of that name too (QuantizeLinear, DequantizeLinear, Gelu ...): the EP
    compares the op type only, so a model's com.microsoft DequantizeLinear (16-bit QDQ models made with
    ORT's quantization tools) is taken as well (seen on onnxruntime-openvino 1.24.1)."""
    from ..ir.schemas import _contrib, onnx_schema_history

    out = []
    onnx_schemas = onnx_schema_history(op)
    if onnx_schemas:
        out.append(("", sorted({tc.type_param_str for s in onnx_schemas for tc in s.type_constraints})))
    for key, versions in sorted(_contrib().items()):
        dom, name = key.split(":", 1)
        if name == op and dom == "com.microsoft":
            contrib = set()
            for entry in versions.values():
                contrib.update((entry.get("constraints") or {}).keys())
            out.append((dom, sorted(contrib)))
    return out


# attribute variants the EP leaves to the CPU, measured on real onnxruntime-openvino 1.24.1 sessions
# (ONNX node tests, ../shared/observed/nodes/openvino-ort1.24.1.jsonl: every Resize with antialias,
# exclude_outside, or a tf_crop_and_resize / half_pixel_symmetric coordinate mode ran on the CPU; the
# other 19 Resize variants on OpenVINO); the check itself is not in the data_ops.cc read
ATTR_CONDITIONS = {
    "Resize": [
        {"name": "antialias", "in": [0], "default": 0, "why": "OpenVINO 1.24.1 leaves antialiased Resize to the CPU"},
        {"name": "exclude_outside", "in": [0], "default": 0,
         "why": "OpenVINO 1.24.1 leaves Resize with exclude_outside to the CPU"},
        {"name": "coordinate_transformation_mode", "not_in": ["tf_crop_and_resize", "half_pixel_symmetric"],
         "default": "half_pixel", "why": "OpenVINO 1.24.1 leaves this coordinate mode to the CPU"},
    ],
}


# ops the EP claims (data_ops.cc lists the name) but its ONNX frontend cannot translate: the compile
# step throws and ORT refuses the session instead of falling back.  Messages of real
# onnxruntime-openvino 1.24.1 sessions (OpenVINO 2025.4.1); the node tests agree (all 39 ONNX
# Attention-23/24 cases and the 3 ScatterND reduction cases failed this way)
KERNEL_REQUIRES = {
    ("", "ScatterND"): [{"name": "reduction", "in": ["none"], "default": "none",
                         "why": "OpenVINO's ONNX frontend (op/scatter_nd.cpp): only reduction none is supported"}],
}
COMPILE_FAILURES = {
    ("", "Attention"): "OpenVINO's ONNX frontend has no ONNX Attention (\"OpenVINO does not support the following "
                       "ONNX operations: Attention\"); the op name it lists is com.microsoft's",
}


DYNAMIC_RANK_FAILS = ("measured: an Unsqueeze of run-time axes (its output's rank unknown) fails (\"CPU plug-in "
                      "doesn't support Unsqueeze operation with dynamic rank\")")
DYNAMIC_REDUCE_AXES_FAILS = ("measured: a Reduce* whose axes come from a Range of run-time bounds claimed with it "
                             "(as in RMSNormalization's function body) fails (\"The axes tensor's shape needs to be "
                             "known(static)\", OpenVINO's ONNX frontend op/reduce.cpp); constant axes and axes "
                             "computed to a known length ran")

UNEVEN_SPLIT_FAILS = ("measured: a Split-18 by num_outputs whose static length num_outputs does not divide fails when "
                      "its axis is written negative (\"dimension_at_axis % num_splits == 0\") or when chunks of "
                      "ceil(length/num_outputs) leave the last output no element (\"The split number is invalid\", "
                      "OpenVINO's ONNX frontend utils/split.cpp), also in a branch of a claimed If that does not run")


UNKNOWN_RANK_PARTITION_INPUT_FAILS = ("measured: a claimed node reading a tensor of no known rank that a CPU node "
                                      "made fails (\"CPU plug-in doesn't support Parameter operation with dynamic "
                                      "rank\"); the same tensor made inside the partition ran")
UNKNOWN_RANK_INPUT_REFUSES_MODEL = ("measured: with a graph input of no known rank (no shape), every node ran on the "
                                    "CPU, also those of a second input's chain of known shapes; a graph input of "
                                    "symbolic dimensions did not change that")


def openvino_table():
    """YAML text of ``rules/openvino-1.24.yaml`` (deterministic)."""
    header = ("OpenVINO EP (device CPU) for onnxruntime-openvino 1.24.1.\n"
              "Source: onnxruntime/core/providers/openvino/ov_versions/data_ops.cc, capability.cc, utils.cc\n"
              "(see partsim/gen/openvino.py for the reviewed tables and what was checked on real sessions).")
    return dump_table(openvino_table_dict(), header)


def openvino_table_dict():
    """The 1.24.1 table as a dict (also the base of the measured plugin table, partsim/gen/openvino_plugin.py)."""
    ops = []
    skipped = []
    for op in sorted(SUPPORTED_OPS, key=lambda s: (s.lower(), s)):
        if not _supported_on_cpu(SUPPORTED_OPS[op]) or op in INSERT_NODE_OPS:
            continue
        found = _domains_and_constraints(op)
        if not found:
            skipped.append(op)
            continue
        for domain, constraints in found:
            rule = {"op": op}
            if domain:
                rule["domain"] = domain
            if constraints:
                rule["types"] = {c: list(CPU_DTYPES) for c in constraints}
            if op in ATTR_CONDITIONS:
                rule["attrs"] = [dict(a) for a in ATTR_CONDITIONS[op]]
            if (domain, op) in KERNEL_REQUIRES:
                rule["kernel_requires"] = [dict(a) for a in KERNEL_REQUIRES[(domain, op)]]
            if (domain, op) in COMPILE_FAILURES:
                rule["compile_failure"] = COMPILE_FAILURES[(domain, op)]
            ops.append(rule)
    return {
        "provider": "OpenVINOExecutionProvider",
        "aliases": ["openvino", "ov"],
        # the legacy onnxruntime-openvino 1.24.1 build, selectable as openvino:1.24 (docs/providers.md); the
        # default is the measured plugin table (onnxruntime-ep-openvino 1.8.1, rules/openvino.yaml)
        "variant": "1.24",
        "kind": "compiling",
        "cpu_based": True,
        "precisions": ["fp32", "fp16", "int8"],
        "compute_precision": "fp32",
        "source": {
            "description": "OpenVINO EP capability code (ov_versions/data_ops.cc supported_op_mode, dtype and "
                           "rank-0 lists; ov_versions/capability.cc + utils.cc cluster forming), device CPU",
            "version": "onnxruntime-openvino 1.24.1 (OpenVINO 2025.4.1)",
            "generated_by": "partsim rules import openvino",
            "describes": {"onnxruntime-openvino": "1.24.1"},
        },
        "partitioning": {
            "clusters": "topological_runs",
            "single_node_cluster_only_last": True,
            "no_dimension_ops": sorted(NO_DIMENSION_OPS),
            "escaping_output_ops": ["Conv", "Identity"],
            "small_graph_reject_ops": list(ONLY_IN_MODEL_OPS),
            "unsupported_op_modes": ["Unsqueeze", "ReduceMax"],
            "single_node_graph_checks": True,
            # the ORT build onnxruntime-openvino 1.24.1 ships: every opset-26 node test failed to load
            # (model_load_utils.h ValidateOpsetForDomain), every opset-25 one loaded
            "runtime_max_onnx_opset": 25,
            "subgraphs": "unsupported",
            # compile failures of claimed nodes, measured on real onnxruntime-openvino 1.24.1 sessions (OpenVINO
            # 2025.4.1; tests/gen/test_openvino.py builds each case): the session fails, ORT does not fall back
            "dynamic_rank_fails": DYNAMIC_RANK_FAILS,
            "dynamic_reduce_axes_fails": DYNAMIC_REDUCE_AXES_FAILS,
            "unknown_rank_partition_input_fails": UNKNOWN_RANK_PARTITION_INPUT_FAILS,
            "unknown_rank_input_refuses_model": UNKNOWN_RANK_INPUT_REFUSES_MODEL,
            "uneven_split_fails": UNEVEN_SPLIT_FAILS,
        },
        "notes": [
            "The OpenVINO EP checks the op type only (any domain, any opset version); partsim lists each op in "
            "the domain ONNX or ORT defines it in, and in both where both define an op of that name.",
            "dtypes: every input and output of a node must be one of " + ", ".join(CPU_DTYPES) + " (float64, "
            "string, bfloat16, uint64 are refused).",
            "Rank-0 tensors: only the ops of no_dimension_supported_ (partitioning.no_dimension_ops) may read a "
            "non-constant one or produce one; a zero-sized dimension only Expand, Equal, Slice, Concat, Shape, "
            "Cast, Resize (checked while clusters are formed, see partsim/sim/ov_clusters.py).",
            "Not claimed although listed: Hardmax (data_ops.cc spells it HardMax).  TopK and NonZero are always "
            "cut out of clusters (InsertNode) and left out of this table.",
            "Control-flow bodies (If/Loop/Scan subgraphs) are not simulated: their nodes stay on the CPU here.",
        ] + ([f"Listed by data_ops.cc but unknown to ONNX and ORT schemas (left out): {', '.join(skipped)}"]
             if skipped else []),
        "ops": ops,
    }
