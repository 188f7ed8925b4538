"""The checks of ORT's CoreML op builders that a capability table can express, written down by hand.

Each :class:`Cond` quotes the C++ text it reads (``quote``, which must occur exactly once in the
builder's file for the condition to be used: partsim/gen/coreml_builders.py records its line), the
builder function it belongs to (``reads``), the variants it applies to, and the predicate sets it
becomes (``any_of``: several mean "any of them").  ``refuses``: the builder refuses the op outright in
that variant.  ``left``: what that function checks beyond the predicates (kept in the rule's notes as an
unchecked caveat); ``complete``: nothing is left.  Read from microsoft/onnxruntime main @ae857d7a,
``onnxruntime/core/providers/coreml/builders/impl/*_op_builder.cc`` (2026-06-30).
"""

from dataclasses import dataclass

from .ep_source import _const, _rank

__all__ = ["Cond", "CONDITIONS"]

ML = ("mlprogram",)
NN = ("neuralnetwork",)
BOTH = ML + NN
IS_OP = "IsOpSupportedImpl"
HAS_IN = "HasSupportedInputsImpl"
# TensorProto data types (onnx.proto) the Cast builder compares 'to' with
INT32, INT64, FLOAT, FLOAT16, BOOL = 6, 7, 1, 10, 9


@dataclass(frozen=True)
class Cond:
    quote: str
    says: str
    any_of: tuple = ({},)
    variants: tuple = BOTH
    reads: str = IS_OP
    refuses: bool = False
    complete: bool = False
    left: str = ""


def _attr(name, **cond):
    return {"attrs": [dict(name=name, **cond)]}


def _types(**ports):
    return {"types": dict(ports)}


def _nn_refuses(quote):
    return Cond(quote, "refused when the EP builds a NeuralNetwork", variants=NN, refuses=True)


def _ml_only(quote):
    """Refused outside an ML Program, and checked no further in one."""
    return (_nn_refuses(quote), Cond(quote, "no other check in an ML Program", variants=ML, complete=True))


def _input_dtype(reads=HAS_IN, quote="if (!IsInputDtypeSupport(node, 0, input_params, logger))"):
    """IsInputDtypeSupport(node, 0): float; float16 and int64 in an ML Program (base_op_builder.cc)."""
    return (Cond(quote, "input 0 float, float16 or int64", (_types(i0=["float", "float16", "int64"]),), ML, reads,
                 complete=True),
            Cond(quote, "input 0 float", (_types(i0=["float"]),), NN, reads, complete=True))


_ACT_NN = 'if (op_type == "Gelu" || op_type == "Softplus" || op_type == "Elu") {'
_ACT_DONE = Cond('if (op_type == "PRelu") {\n    return IsPReluOpSupported(node, input_params, logger);',
                 "only HardSigmoid, PRelu (and Gelu/Softplus/Elu outside an ML Program) have further checks",
                 complete=True)
_UNARY_NN = 'if (op_type == "Erf" || op_type == "Round" || op_type == "Exp" ||'
_UNARY_DONE = Cond(_UNARY_NN, "no other check", complete=True)
_REDUCE_NN = '(node.OpType() == "ReduceMax" || node.OpType() == "ReduceMin" || node.OpType() == "ReduceProd")'
_REDUCE = (Cond("GetConstantInitializer(axes_name)", "axes a constant initializer", (_const(1),),
                left="noop_with_empty_axes with empty axes outside an ML Program; ReduceSum float16 on the x86-64 "
                     "iOS simulator"),)
_POOL = (Cond("if (input_size != 4) {", "a 4-D input", (_rank(4, 4),)),
         Cond('helper.Get("storage_order", 0);', "storage_order 0", (_attr("storage_order", default=0, **{"in": [0]}),)),
         Cond('if (helper.Get("dilations", std::vector<int32_t>{1, 1}) !=', "dilations 1",
              (_attr("dilations", max=1),)),
         Cond("if (node.OutputDefs().size() != 1) {", "one output (no Indices)", ({"max_outputs": 1},)),
         Cond('if (helper.Get("ceil_mode", 0) == 1) {', "ceil_mode 0 outside an ML Program",
              (_attr("ceil_mode", default=0, **{"in": [0]}),), NN, complete=True))
_POOL_ML_DONE = Cond('if (op_type == "AveragePool" || op_type == "MaxPool") {', "kernel_shape of 2 (the 4-D input)",
                     variants=ML, complete=True)
_NORM = (Cond('const auto stash_type = helper.Get("stash_type", 1);', "stash_type 1 (not InstanceNormalization)",
              (_attr("stash_type", default=1, **{"in": [1]}),), ML),
         Cond("if (node.OutputDefs().size() != 1) {", "one output", ({"max_outputs": 1},), ML),
         Cond("GetConstantInitializer(scale_name)", "scale (and B) constant initializers", (_const(1, 2),), ML,
              complete=True),
         Cond("if (!input_params.create_mlprogram) {\n    return false;", "refused outside an ML Program", (),
              NN, HAS_IN, refuses=True),
         Cond("input_type_0 != ONNX_NAMESPACE::TensorProto_DataType_FLOAT16", "X float or float16",
              (_types(i0=["float", "float16"]),), ML, HAS_IN, left="scale and B of X's dtype"))
_GATHER_IN = (
    Cond("input_type != ONNX_NAMESPACE::TensorProto_DataType_INT64", "data float, int64 (float16 in an ML Program)",
         (_types(i0=["float", "float16", "int64"]),), ML, HAS_IN, complete=True),
    Cond("input_type != ONNX_NAMESPACE::TensorProto_DataType_INT64", "data float or int64",
         (_types(i0=["float", "int64"]),), NN, HAS_IN, complete=True),
    Cond("indices_dtype != ONNX_NAMESPACE::TensorProto_DataType_INT64", "indices int32 or int64",
         (_types(i1=["int32", "int64"]),),
         left="scalar indices need a static data shape of rank <= 4; rank(data) + rank(indices) - 1 <= 5"))
_SQUEEZE = Cond("GetConstantInitializer(axes_name)", "axes (opset > 12) a constant initializer", (_const(1),),
                complete=True)

CONDITIONS = {
    "LRN": (Cond("if (input_rank != 3 && input_rank != 4) {", "a 3-D or 4-D input", (_rank(3, 4),), complete=True),),
    **{op: (_ACT_DONE,) for op in ("Sigmoid", "Tanh", "Relu", "LeakyRelu")},
    **{op: (_nn_refuses(_ACT_NN), _ACT_DONE) for op in ("Gelu", "Softplus", "Elu")},
    "HardSigmoid": (Cond('<< "HardSigmoid input data type ["', "input float or float16",
                         (_types(i0=["float", "float16"]),), complete=True),),
    "PRelu": (Cond("return IsPReluOpSupported(node, input_params, logger);", "IsPReluOpSupported",
                   left="IsPReluOpSupported: the slope's shape and constness, X of rank 3 or 4"),),
    "ArgMax": (Cond('helper.Get("select_last_index", 0);', "select_last_index 0",
                    (_attr("select_last_index", default=0, **{"in": [0]}),), complete=True, variants=ML),
               Cond('helper.Get("select_last_index", 0);', "select_last_index 0",
                    (_attr("select_last_index", default=0, **{"in": [0]}),), variants=NN,
                    left="with several consumers, none may be a Cast to int32")),
    "BatchNormalization": (
        Cond("if (node.OutputDefs().size() != 1) {", "one output", ({"max_outputs": 1},)),
        Cond("if (input_size != 4) {", "a 4-D input", (_rank(4, 4),)),
        Cond('const auto spatial = helper.Get("spatial", 1);', "spatial 1",
             (_attr("spatial", default=1, **{"in": [1]}),)),
        Cond("if (!Contains(initializers, var_name)) {", "scale, B, mean and var initializers",
             (_const(1, 2, 3, 4),), complete=True)),
    **{op: _input_dtype() for op in ("Add", "Div", "Mul", "Sub")},
    "Max": _input_dtype() + (_nn_refuses('if (node.OpType() == "Max" && !input_params.create_mlprogram) {'),),
    "Pow": (Cond("if (!GetType(input1, input_type1, logger) || input_type1 != input_type0) {",
                 "both inputs of one dtype", tuple(_types(i0=[t], i1=[t]) for t in ("float", "float16", "int64")), ML,
                 HAS_IN, complete=True),
            Cond("if (!GetType(input1, input_type1, logger) || input_type1 != input_type0) {",
                 "both inputs float", (_types(i0=["float"], i1=["float"]),), NN, HAS_IN, complete=True)),
    "Cast": (Cond("input_type == ONNX_NAMESPACE::TensorProto_DataType_BOOL) &&",
                  "input and output int32, int64, float, float16 or bool",
                  (dict(_types(i0=["int32", "int64", "float", "float16", "bool"]),
                        **_attr("to", **{"in": [INT32, INT64, FLOAT, FLOAT16, BOOL]})),), ML, HAS_IN, complete=True),
             Cond("if (input_type != ONNX_NAMESPACE::TensorProto_DataType_INT64) {", "an int64 input cast to int32",
                  (dict(_types(i0=["int64"]), **_attr("to", **{"in": [INT32]})),), NN, HAS_IN, complete=True),
             Cond('if (prec_node.OpType() != "ArgMax") {', "only after a supported ArgMax", variants=NN,
                  left="its input must come from a supported ArgMax")),
    "Clip": (Cond("bool ret = GetClipMinMax(input_params.graph_viewer, node, min, max, logger);",
                  "min and max known", (_const(1, 2),), left="min and max must differ"),),
    "Concat": (Cond("if (input_defs.size() < 2) {", "at least two inputs", ({"min_inputs": 2},), ML, complete=True),
               Cond("if (input_defs.size() < 2) {", "at least two inputs", ({"min_inputs": 2},), NN),
               Cond("if (rank != axis + 3) {", "a 4-D input concatenated on the channel axis",
                    (dict(_rank(4, 4), **_attr("axis", default=1, **{"in": [1, -3]})),), NN, complete=True)),
    "Conv": (Cond("if (num_dims != 3 && num_dims != 4) {", "a 1-D or 2-D convolution (W of rank 3 or 4)",
                  (_rank(3, 4, (1,)),), left="kernel_shape equal to W's spatial dims; no dimension over 16384; "
                                             "SAME_LOWER needs CoreML 6"),
             Cond("if (input_defs.size() > 2 && !input_params.graph_viewer.GetConstantInitializer(input_defs[2]",
                  "B a constant initializer", (_const(2),), ML),
             Cond("if (!weight) {", "W and B constant initializers", (_const(1, 2),), NN)),
    "ConvTranspose": (
        _nn_refuses("if (!input_params.create_mlprogram) {"),
        Cond("const auto* weight = input_params.graph_viewer.GetConstantInitializer(weight_name);",
             "W and B constant initializers", (_const(1, 2),), ML),
        Cond("if (autopad == AutoPadType::SAME_LOWER || autopad == AutoPadType::SAME_UPPER) {", "no SAME_* auto_pad",
             (_attr("auto_pad", default="NOTSET", not_in=["SAME_UPPER", "SAME_LOWER"]),), ML),
        Cond('"ConvTranspose: output_shape is not supported', "no output_shape",
             (_attr("output_shape", absent=True),), ML),
        Cond('auto output_padding = helper.GetInt64s("output_padding");', "output_padding zeros",
             (_attr("output_padding", max=0),), ML,
             left="every pad equal; kernel_shape equal to W's spatial dims; no dimension over 16384")),
    "DepthToSpace": (
        Cond('if (mode == "CRD" && !IsStaticShape(input_shape)) {', "mode DCR, or a static input",
             (_attr("mode", default="DCR", **{"in": ["DCR"]}), {"static_shape": True}), ML,
             left="DCR with float16 needs CoreML 7"),
        Cond('if (mode != "DCR") {', "mode DCR", (_attr("mode", default="DCR", **{"in": ["DCR"]}),), NN,
             complete=True)),
    "Flatten": (Cond("if (input_shape.empty()) {", "not a scalar", (_rank(1, None),), complete=True),),
    "GatherND": (
        _nn_refuses("if (!input_params.create_mlprogram) {"),
        Cond('const auto batch_dims = helper.Get("batch_dims", int64_t{0});', "batch_dims 0",
             (_attr("batch_dims", default=0, **{"in": [0]}),), ML),
        Cond("IsConstantInitializer(node.InputDefs()[1]->Name(), /*check_outer_scope*/ true)",
             "indices a constant initializer", (_const(1),), ML,
             left="indices' last dim at most data's rank, data's leading dims known"),
        Cond("data_type != ONNX_NAMESPACE::TensorProto_DataType_BOOL) {", "data float, float16, int32, int64 or bool; "
             "indices int32 or int64", (_types(i0=["float", "float16", "int32", "int64", "bool"],
                                              i1=["int32", "int64"]),), ML, HAS_IN, complete=True)),
    "Gather": _GATHER_IN,
    "Gemm": (Cond("if (!(transA == 0 && alpha == 1.f && beta == 1.f)) {", "transA 0, alpha 1, beta 1",
                  ({"attrs": [dict(name="transA", default=0, **{"in": [0]}),
                              dict(name="alpha", default=1.0, **{"in": [1.0]}),
                              dict(name="beta", default=1.0, **{"in": [1.0]})]},)),
             Cond("if (!input_params.graph_viewer.GetConstantInitializer(input_defs[c_idx]->Name())) {",
                  "B and C constant initializers", (_const(1, 2),),
                  left="C of shape [], [1], [N], or [1, N]")),
    "MatMul": (Cond("if (a_rank != 2 || b_rank != 2) {", "B a constant initializer; A and B 2-D",
                    (dict(_const(1), **_rank(2, 2, (0, 1))),), NN, complete=True),
               Cond("if ((a_rank == 1 && b_rank > 1) || (a_rank > 1 && b_rank == 1)) {", "B may be computed",
                    variants=ML, left="A and B both 1-D or both of rank >= 2")),
    "GridSample": (
        _nn_refuses("if (!input_params.create_mlprogram) {"),
        Cond("if (input_rank != 4) {", "a 4-D input", (_rank(4, 4),), ML,
             left="mode linear/bilinear or zeros; not (linear, reflection padding, align_corners 0)")),
    "And": _ml_only("if (!input_params.create_mlprogram) {") + (
            Cond("y_type != ONNX_NAMESPACE::TensorProto_DataType_BOOL) {", "both inputs bool",
                 (_types(i0=["bool"], i1=["bool"]),), ML, HAS_IN, complete=True),),
    **{op: _NORM for op in ("GroupNormalization", "LayerNormalization")},
    "InstanceNormalization": _NORM[1:],  # stash_type: not an attribute of it (the builder skips the check)
    "Pad": (
        Cond("if (input_params.create_mlprogram && input_type == ONNX_NAMESPACE::TensorProto_DataType_FLOAT16) {",
             "input float or float16", (_types(i0=["float", "float16"]),), ML, HAS_IN, complete=True),
        Cond("if (input_params.create_mlprogram && input_type == ONNX_NAMESPACE::TensorProto_DataType_FLOAT16) {",
             "input float", (_types(i0=["float"]),), NN, HAS_IN, complete=True),
        Cond('if (mode != "constant" && mode != "reflect") {', "mode constant or reflect; pads, constant_value, axes "
             "constant initializers", (dict(_const(1, 2, 3), **_attr("mode", default="constant",
                                                                     **{"in": ["constant", "reflect"]})),), ML,
             left="no negative pads, a non-empty input; reflect pads only the last two dims, by less than their "
                  "size"),
        Cond('if (mode != "constant") {', "mode constant; pads, constant_value, axes constant initializers; rank >= 2",
             (dict(_const(1, 2, 3), **_rank(2, None), **_attr("mode", default="constant", **{"in": ["constant"]})),),
             NN, left="constant_value float; no negative pads; only the last two dims padded"),
        Cond("`constant_value` input is required for constant mode Pad op in NeuralNetwork mode.",
             "constant_value given", ({"min_inputs": 3},), NN)),
    "MaxPool": _POOL + (_POOL_ML_DONE,),
    "AveragePool": _POOL[:1] + _POOL[2:] + (_POOL_ML_DONE,),  # storage_order: MaxPool's attribute only
    **{op: (_POOL[0], _POOL_ML_DONE, Cond("if (input_size != 4) {", "a 4-D input", variants=NN, complete=True))
       for op in ("GlobalAveragePool", "GlobalMaxPool")},
    "QuickGelu": (_nn_refuses("if (!input_params.create_mlprogram) {"),),
    **{op: _REDUCE for op in ("ReduceMean", "ReduceSum")},
    **{op: (_nn_refuses(_REDUCE_NN),) + _REDUCE for op in ("ReduceMax", "ReduceMin", "ReduceProd")},
    "Reshape": (Cond("if (!GetStaticShape(*input_defs[0], input_shape, logger))",
                     "shape a constant initializer, data of a static shape, not a scalar",
                     (dict(_const(1), static_shape=True, **_rank(1, None)),),
                     left="a new shape of at most 5 dims; allowzero 1 with a 0 in it"),),
    "Resize": (
        Cond('if (helper.Get("antialias", 0) != 0) {', "antialias 0, exclude_outside 0, keep_aspect_ratio_policy "
             "stretch", ({"attrs": [dict(name="antialias", default=0, **{"in": [0]}),
                                    dict(name="exclude_outside", default=0, **{"in": [0]}),
                                    dict(name="keep_aspect_ratio_policy", default="stretch", **{"in": ["stretch"]})]},),
             left="scales or sizes given, constant and of supported values; the linear coordinate modes"),
        Cond("if (input_rank < 3 || input_rank > 5) {", "a 3-D to 5-D input", (_rank(3, 5),), ML),
        Cond("if (input_rank != 4) {", "a 4-D input", (_rank(4, 4),), NN),
        Cond('const auto nearest_mode = helper.Get("nearest_mode", "round_prefer_floor");',
             "mode linear, or nearest with nearest_mode floor and coordinate_transformation_mode asymmetric",
             ({"attrs": [dict(name="mode", default="nearest", **{"in": ["linear"]})]},
              {"attrs": [dict(name="mode", default="nearest", **{"in": ["nearest"]}),
                         dict(name="nearest_mode", default="round_prefer_floor", **{"in": ["floor"]}),
                         dict(name="coordinate_transformation_mode", default="half_pixel",
                              **{"in": ["asymmetric"]})]}))),
    "Shape": (Cond('if (node_attr_helper.Get("start", 0) != 0) {', "no end, start 0",
                   ({"attrs": [dict(name="end", absent=True), dict(name="start", default=0, **{"in": [0]})]},), NN,
                   complete=True),
              Cond('int64_t end = node_attr_helper.HasAttr("end")', "start/end need a known rank",
                   variants=ML, left="start/end other than the whole shape need a known rank and a non-empty slice"),
              Cond("input_type == ONNX_NAMESPACE::TensorProto_DataType_INT64)) {", "input int32, float, float16 or "
                   "int64", (_types(i0=["int32", "float", "float16", "int64"]),), ML, HAS_IN, complete=True),
              Cond("} else if (input_type != ONNX_NAMESPACE::TensorProto_DataType_FLOAT) {", "input float",
                   (_types(i0=["float"]),), NN, HAS_IN, complete=True)),
    "Slice": (Cond("input_type == ONNX_NAMESPACE::TensorProto_DataType_FLOAT16) {", "data float, int64 (float16 in "
                   "an ML Program)", (_types(i0=["float", "float16", "int64"]),), ML, HAS_IN, complete=True),
              Cond("input_type == ONNX_NAMESPACE::TensorProto_DataType_FLOAT16) {", "data float or int64",
                   (_types(i0=["float", "int64"]),), NN, HAS_IN, complete=True),
              Cond("if (!GetStaticShape(*input_defs[0], data_shape, logger)) {", "data of a static shape; starts, "
                   "ends, axes, steps constant initializers", (dict(_const(1, 2, 3, 4), static_shape=True),),
                   left="the slice's values (ValidateSliceComputeMetadataForCoreML: e.g. not empty)")),
    "Softmax": (Cond("if (!IsStaticShape(input_shape) && node.SinceVersion() < 13) {", "static shape before opset 13",
                     left="a dynamic input shape only from Softmax-13"),),
    "Split": (Cond("const auto* splits_tensor = input_params.graph_viewer.GetConstantInitializer(", "split a constant "
                   "initializer", (_const(1),), left="at least two splits summing to the (known) axis size, none 0; "
                                                     "num_outputs/outputs dividing the axis"),),
    "Squeeze": (_SQUEEZE,),
    "Unsqueeze": (_nn_refuses('if (node.OpType() == "Unsqueeze") {\n    if (!input_params.create_mlprogram) {'),
                  Cond("GetConstantInitializer(axes_name)", "axes (opset > 12) a constant initializer", (_const(1),),
                       ML, left="the output rank at most 5")),
    "Tile": (Cond("case ONNX_NAMESPACE::TensorProto_DataType_BOOL:", "input float, int32, int64, bool (float16 in an "
                  "ML Program)", (_types(i0=["float", "int32", "int64", "bool", "float16"]),), ML, HAS_IN,
                  complete=True),
             Cond("case ONNX_NAMESPACE::TensorProto_DataType_BOOL:", "input float, int32, int64 or bool",
                  (_types(i0=["float", "int32", "int64", "bool"]),), NN, HAS_IN, complete=True),
             Cond("if (!input_params.create_mlprogram && !repeats_tensor) {", "repeats a constant initializer outside "
                  "an ML Program", (_const(1),), NN, left="repeats of the input's rank, each >= 1"),
             Cond("if (!input_params.create_mlprogram && !repeats_tensor) {", "repeats may be computed", variants=ML,
                  left="constant repeats of the input's rank, each >= 1")),
    **{op: (_nn_refuses(_UNARY_NN),) * (op not in ("Sqrt", "Reciprocal")) + (_UNARY_DONE,)
       for op in ("Erf", "Round", "Exp", "Sin", "Cos", "Ceil", "Sqrt", "Reciprocal")},
    "Where": _ml_only("if (!input_params.create_mlprogram) {") + (
              Cond("if (cond_type != ONNX_NAMESPACE::TensorProto_DataType_BOOL) {", "condition bool, X and Y float "
                   "or float16", (_types(i0=["bool"], i1=["float", "float16"], i2=["float", "float16"]),), ML, HAS_IN,
                   left="X and Y of one dtype"),),
}
# FusedConv (com.microsoft, from ORT's ConvActivationFusion) is built by the Conv builder: these and Conv's checks
CONDITIONS["FusedConv"] = (
    _nn_refuses("if (is_fused_conv) {\n    if (!input_params.create_mlprogram) {"),
    Cond("if (input_defs.size() > 3) {", "X, W, B only (no Z)", ({"max_inputs": 3},), ML),
    Cond("x_elem_type != ONNX_NAMESPACE::TensorProto_DataType_FLOAT16) {", "X float or float16",
         (_types(i0=["float", "float16"]),), ML, left="an activation CoreML has, with its parameter count"),
) + tuple(c for c in CONDITIONS["Conv"] if c.variants in (ML, BOTH))
