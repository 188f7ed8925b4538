"""Generate the NNAPI and CoreML capability tables from ORT's mobile op lists.

Source: the markdown tables shipped in the onnxruntime wheel under
``onnxruntime/tools/mobile_helpers/`` (``nnapi_supported_ops.md``,
``coreml_supported_neuralnetwork_ops.md``, ``coreml_supported_mlprogram_ops.md``),
the same files ORT's own ``usability_checker.py`` reads.  Each row is
``|domain:op|caveat|``; the caveat is free text (``<br/>`` separated).

The op list is taken from the file as it stands.  The caveats are turned into
rule predicates by the hand-written, reviewable :data:`CAVEATS` mapping below:
each entry quotes the caveat text it encodes, and is used only when the file
still carries exactly that text.  A caveat that has no entry (a newer wheel, a
user-supplied file) or only partly encodable ends up verbatim in the op rule's
``notes`` (reported as an unchecked caveat).  Several predicate sets for one op
mean "any of them" (partsim tries an op's rules in order, first accept wins).

Facts taken from ORT besides the md files (onnxruntime 1.31.1,
``tools/mobile_helpers/usability_checker.py``):

* NNAPI: the checker assumes fixed input shapes (``require_fixed_input_sizes``)
  -> ``defaults.static_shape: true``.
* CoreML: the checker uses ``max_rank = 5`` -> ``defaults.max_rank: 5``.

Regenerate the shipped NNAPI table with::

    partsim rules import mobile-md --provider nnapi -o rules/nnapi.yaml

The shipped CoreML tables come from the CoreML op builders' source (:mod:`partsim.gen.coreml_builders`);
``--provider coreml-mlprogram`` / ``coreml-neuralnetwork`` still write the checker's lists as a table
(``-r`` it for the usability checker's view as a table; ``--compat usability-checker`` reads the md files).
"""

from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UsageError
from .yamlout import dump_table

__all__ = ["import_mobile_md", "parse_mobile_md", "default_md_path", "unmapped_caveats", "PROVIDERS",
           "CAVEATS", "OP_NAME_FIXES"]

MAX_MD_BYTES = 1024 * 1024


@dataclass(frozen=True)
class _Target:
    file: str
    provider: str
    aliases: tuple
    variant: str = ""
    default_variant: bool = False
    defaults: dict = field(default_factory=dict, hash=False, compare=False)
    precisions: tuple = ("fp32",)
    notes: tuple = ()


_COMMON_NOTES = (
    "Op list and caveats from ORT's mobile_helpers markdown; op versions and dtypes are not listed there, "
    "so every opset version and dtype of a listed op is accepted unless a caveat says otherwise.",
)

PROVIDERS = {
    "nnapi": _Target(
        file="nnapi_supported_ops.md", provider="NnapiExecutionProvider", aliases=("nnapi",),
        defaults={"static_shape": True}, precisions=("fp32", "int8"),
        notes=_COMMON_NOTES + (
            "static_shape: NNAPI needs fixed input shapes (ORT's usability_checker assumes "
            "require_fixed_input_sizes for NNAPI).",
            "compute_precision fp32: NNAPI's relaxed fp32->fp16 computation is opt-in "
            "(NNAPI_FLAG_USE_FP16) and not assumed.",
        )),
    "coreml-neuralnetwork": _Target(
        file="coreml_supported_neuralnetwork_ops.md", provider="CoreMLExecutionProvider", aliases=("coreml",),
        variant="neuralnetwork", defaults={"max_rank": 5}, precisions=("fp32", "fp16"),
        notes=_COMMON_NOTES + (
            "max_rank 5: ORT's usability_checker uses max_rank=5 for CoreML.",
            "compute_precision fp32: CoreML may run on the GPU/ANE in fp16; low precision is not assumed.",
        )),
    "coreml-mlprogram": _Target(
        file="coreml_supported_mlprogram_ops.md", provider="CoreMLExecutionProvider", aliases=("coreml",),
        variant="mlprogram", default_variant=True, defaults={"max_rank": 5}, precisions=("fp32", "fp16"),
        notes=_COMMON_NOTES + (
            "max_rank 5: ORT's usability_checker uses max_rank=5 for CoreML.",
            "compute_precision fp32: CoreML may run on the GPU/ANE in fp16; low precision is not assumed.",
        )),
}

# Op names in the md files that are not the ONNX spelling (onnxruntime 1.31.1).
OP_NAME_FIXES = {
    # coreml_supported_mlprogram_ops.md lists "ai.onnx:Argmax"; the ONNX op is ArgMax
    # (op types are case-sensitive, "Argmax" would never match a node).
    "Argmax": "ArgMax",
}
# coreml_supported_neuralnetwork_ops.md writes "ai.onnx.ReduceSum" (a dot, not a colon).
# ORT's usability_checker skips that row (no ':'), but ORT's CoreML EP has a ReduceSum
# builder; the row is read as ai.onnx:ReduceSum here.


# ---------------------------------------------------------------------------
# caveat text -> predicates
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Caveat:
    """How one md caveat is encoded.

    text : the caveat exactly as in the md cell (``<br/>`` kept).
    rules : predicate sets (op-rule keys); several mean "any of them"; empty = no restriction.
    complete : True when ``rules`` capture everything the text says; otherwise the
        text is kept as the rule's ``notes`` (an unchecked caveat).
    """

    text: str
    rules: tuple = ()
    complete: bool = True


def _rank(lo, hi, inputs=(0,)):
    return {"min_rank": lo, "max_rank": hi, "rank_inputs": list(inputs)}


def _const(*idx):
    return {"const_inputs": list(idx)}


def _attr(name, **cond):
    return dict(name=name, **cond)


def _p(*parts):
    """Merge predicate fragments into one predicate set (attrs lists are concatenated)."""
    out = {}
    for part in parts:
        for k, v in part.items():
            if k == "attrs":
                out.setdefault("attrs", []).extend(v)
            else:
                out[k] = v
    return out


_POOL2D = _rank(4, 4)       # "2D pool" = NCHW input of rank 4
_CONV2D = _rank(4, 4)
_CONV1D2D = _rank(3, 4)
_QUANT = "All quantization scales and zero points should be constant."
_POOL_NN = "Only 2D Pool is supported."
_POOL_ML = "Only 2D Pool is supported currently. 3D and 5D support can be added if needed."

CAVEATS = {
    # ------------------------------------------------------------- NNAPI
    "nnapi": {
        # "Only 2D Pool is supported."
        "AveragePool": Caveat(_POOL_NN, (_POOL2D,)),
        "GlobalAveragePool": Caveat(_POOL_NN, (_POOL2D,)),
        "GlobalMaxPool": Caveat(_POOL_NN, (_POOL2D,)),
        "MaxPool": Caveat(_POOL_NN, (_POOL2D,)),
        # "Only 2D Conv is supported. Weights and bias should be constant."  (inputs W=1, B=2)
        "Conv": Caveat("Only 2D Conv is supported.<br/>Weights and bias should be constant.",
                       (_p(_CONV2D, _const(1, 2)),)),
        # "Only DCR mode DepthToSpace is supported."  (ONNX default mode is DCR)
        "DepthToSpace": Caveat("Only DCR mode DepthToSpace is supported.",
                               ({"attrs": [_attr("mode", default="DCR", **{"in": ["DCR"]})]},)),
        # "All quantization scales and zero points should be constant."  (x_scale=1, x_zero_point=2)
        "DequantizeLinear": Caveat(_QUANT, (_const(1, 2),)),
        "QuantizeLinear": Caveat(_QUANT, (_const(1, 2),)),
        # "Input indices should be constant if not int32 type."  -> int32 indices OR constant indices
        "Gather": Caveat("Input indices should be constant if not int32 type.",
                         ({"types": {"i1": ["int32"]}}, _const(1))),
        # "If input B is not constant, transB should be 1."  -> constant B OR transB == 1
        "Gemm": Caveat("If input B is not constant, transB should be 1.",
                       (_const(1), {"attrs": [_attr("transB", default=0, **{"in": [1]})]})),
        # "Only constant mode Pad is supported. Input pads and constant_value should be constant.
        #  Input pads values should be non-negative."  (pads=1, constant_value=2; the sign of the
        #  pads values is not checked -> notes)
        "Pad": Caveat("Only constant mode Pad is supported.<br/>Input pads and constant_value should be constant."
                      "<br/>Input pads values should be non-negative.",
                      (_p({"attrs": [_attr("mode", default="constant", **{"in": ["constant"]})]}, _const(1, 2)),),
                      complete=False),
        # "Only 2D Conv ... Weights and bias should be constant ... scales and zero points constant"
        # QLinearConv inputs: x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B
        "QLinearConv": Caveat("Only 2D Conv is supported.<br/>Weights and bias should be constant.<br/>" + _QUANT,
                              (_p(_CONV2D, _const(1, 2, 3, 4, 5, 6, 7, 8)),)),
        # QLinearMatMul inputs: a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp
        "QLinearMatMul": Caveat(_QUANT, (_const(1, 2, 4, 5, 6, 7),)),
        # "Only 2D Resize is supported."
        "Resize": Caveat("Only 2D Resize is supported.", (_rank(4, 4),)),
        # "Number of splits must evenly divide split axis size. Input split should be constant if
        #  provided."  (split=1; divisibility is not checked -> notes)
        "Split": Caveat("Number of splits must evenly divide split axis size. Input split should be constant "
                        "if provided.", (_const(1),), complete=False),
        # "Input axes should be constant."  (axes=1 since opset 13; an attribute before)
        "Squeeze": Caveat("Input axes should be constant.", (_const(1),)),
        "Unsqueeze": Caveat("Input axes should be constant.", (_const(1),)),
        # com.microsoft QLinearAdd inputs: A, A_scale, A_zp, B, B_scale, B_zp, C_scale, C_zp
        "com.microsoft:QLinearAdd": Caveat(_QUANT, (_const(1, 2, 4, 5, 6, 7),)),
        # QLinearAveragePool inputs: X, x_scale, x_zp, y_scale, y_zp
        "com.microsoft:QLinearAveragePool": Caveat(_POOL_NN + "<br/>" + _QUANT,
                                                   (_p(_POOL2D, _const(1, 2, 3, 4)),)),
        # QLinearSigmoid inputs: X, X_scale, X_zp, Y_scale, Y_zp
        "com.microsoft:QLinearSigmoid": Caveat(_QUANT, (_const(1, 2, 3, 4),)),
    },
    # ------------------------------------------------------------- CoreML NeuralNetwork
    "coreml-neuralnetwork": {
        "AveragePool": Caveat(_POOL_NN, (_POOL2D,)),
        "GlobalAveragePool": Caveat(_POOL_NN, (_POOL2D,)),
        "GlobalMaxPool": Caveat(_POOL_NN, (_POOL2D,)),
        "MaxPool": Caveat(_POOL_NN, (_POOL2D,)),
        # "Only 1D/2D Conv is supported. Weights and bias should be constant."  (rank 3 or 4)
        "Conv": Caveat("Only 1D/2D Conv is supported.<br/>Weights and bias should be constant.",
                       (_p(_CONV1D2D, _const(1, 2)),)),
        "DepthToSpace": Caveat("Only DCR mode DepthToSpace is supported.",
                               ({"attrs": [_attr("mode", default="DCR", **{"in": ["DCR"]})]},)),
        # "Input `indices` with scalar value is not supported."  -> indices rank >= 1
        # (the table's max_rank 5 then applies to input 1 only)
        "Gather": Caveat("Input `indices` with scalar value is not supported.", ({"min_rank": 1, "rank_inputs": [1]},)),
        # "Input B should be constant."
        "Gemm": Caveat("Input B should be constant.", (_const(1),)),
        "MatMul": Caveat("Input B should be constant.", (_const(1),)),
        # "Only constant mode and last two dim padding is supported. Input pads and constant_value should
        #  be constant. If provided, axes should be constant."  (pads=1, constant_value=2, axes=3; which
        #  dims are padded depends on the pads values -> notes)
        "Pad": Caveat("Only constant mode and last two dim padding is supported.<br/>Input pads and constant_value "
                      "should be constant.<br/>If provided, axes should be constant.",
                      (_p({"attrs": [_attr("mode", default="constant", **{"in": ["constant"]})]}, _const(1, 2, 3)),),
                      complete=False),
        # "Only supports cases when both inputs are fp32."
        "Pow": Caveat("Only supports cases when both inputs are fp32.", ({"types": {"i0": ["float"], "i1": ["float"]}},)),
        # "Input slope should be constant. Input slope should either have shape [C, 1, 1] or have 1
        #  element."  (slope=1; its shape is not checked -> notes)
        "PRelu": Caveat("Input slope should be constant.<br/>Input slope should either have shape [C, 1, 1] or have "
                        "1 element.", (_const(1),), complete=False),
        # "4D input. coordinate_transformation_mode == asymmetric. mode == linear or nearest.
        #  nearest_mode == floor. exclude_outside == false. scales or sizes must be constant."
        # ORT's CoreML resize builder checks nearest_mode only for mode == nearest, hence two rules.
        # Inputs: X, roi, scales=2, sizes=3 (the opset-10 form X, scales has no input 2/3 and is
        # rejected by the builder; not expressible here).
        "Resize": Caveat(
            "4D input.<br/>`coordinate_transformation_mode` == `asymmetric`.<br/>`mode` == `linear` or "
            "`nearest`.<br/>`nearest_mode` == `floor`.<br/>`exclude_outside` == false<br/>`scales` or `sizes` "
            "must be constant.",
            tuple(_p(_rank(4, 4), _const(2, 3), {"attrs": [
                _attr("coordinate_transformation_mode", default="half_pixel", **{"in": ["asymmetric"]}),
                _attr("exclude_outside", default=0, **{"in": [0]})]}, {"attrs": mode})
                  for mode in ([_attr("mode", default="nearest", **{"in": ["linear"]})],
                               [_attr("mode", default="nearest", **{"in": ["nearest"]}),
                                _attr("nearest_mode", default="round_prefer_floor", **{"in": ["floor"]})]))),
        # "Attribute `start` with non-default value is not supported. Attribute `end` is not supported."
        "Shape": Caveat("Attribute `start` with non-default value is not supported.<br/>Attribute `end` is not "
                        "supported.", ({"attrs": [_attr("start", default=0, **{"in": [0]}),
                                                  _attr("end", absent=True)]},)),
        # "Inputs starts, ends, axes, and steps should be constant. Empty slice is not supported."
        # (inputs 1-4; emptiness depends on values -> notes)
        "Slice": Caveat("Inputs `starts`, `ends`, `axes`, and `steps` should be constant. Empty slice is not "
                        "supported.", (_const(1, 2, 3, 4),), complete=False),
        # "If provided, `splits` must be constant."  (split=1)
        "Split": Caveat("If provided, `splits` must be constant.", (_const(1),)),
    },
    # ------------------------------------------------------------- CoreML MLProgram
    "coreml-mlprogram": {
        # "Both inputs must be bool."
        "And": Caveat("Both inputs must be bool.", ({"types": {"i0": ["bool"], "i1": ["bool"]}},)),
        "AveragePool": Caveat(_POOL_ML, (_POOL2D,)),
        "GlobalAveragePool": Caveat(_POOL_ML, (_POOL2D,)),
        "GlobalMaxPool": Caveat(_POOL_ML, (_POOL2D,)),
        "MaxPool": Caveat(_POOL_ML, (_POOL2D,)),
        # "Only 1D/2D Conv is supported. Bias if provided must be constant."  (B=2)
        "Conv": Caveat("Only 1D/2D Conv is supported.<br/>Bias if provided must be constant.",
                       (_p(_CONV1D2D, _const(2)),)),
        # "Weight and bias must be constant. padding_type of SAME_UPPER/SAME_LOWER is not supported.
        #  kernel_shape must have default values. output_shape is not supported. output_padding must
        #  have default values."  (W=1, B=2; output_padding default = all zeros; kernel_shape may be
        #  given if it equals the weight's spatial dims, which is not checked -> notes)
        "ConvTranspose": Caveat(
            "Weight and bias must be constant.<br/>padding_type of SAME_UPPER/SAME_LOWER is not supported.<br/>"
            "kernel_shape must have default values.<br/>output_shape is not supported.<br/>output_padding must "
            "have default values.",
            (_p(_const(1, 2), {"attrs": [
                _attr("auto_pad", default="NOTSET", not_in=["SAME_UPPER", "SAME_LOWER"]),
                _attr("output_shape", absent=True),
                _attr("output_padding", **{"in": [[0], [0, 0], [0, 0, 0]]})]}),),
            complete=False),
        # "If 'mode' is 'CRD' the input must have a fixed shape."  -> DCR mode OR static shape
        "DepthToSpace": Caveat("If 'mode' is 'CRD' the input must have a fixed shape.",
                               ({"attrs": [_attr("mode", default="DCR", **{"in": ["DCR"]})]}, {"static_shape": True})),
        # "batch_dims must be 0."
        "GatherND": Caveat("batch_dims must be 0.", ({"attrs": [_attr("batch_dims", default=0, **{"in": [0]})]},)),
        # "Input B must be constant."
        "Gemm": Caveat("Input B must be constant.", (_const(1),)),
        # "4D input. 'mode' of 'linear' or 'zeros'. (mode==linear && padding_mode==reflection &&
        #  align_corners==0) is not supported."  The literal mode values are what ORT's builder
        #  compares (default "linear"); the excluded combination becomes three alternatives.
        "GridSample": Caveat(
            "4D input.<br/>'mode' of 'linear' or 'zeros'.<br/>(mode==linear && padding_mode==reflection && "
            "align_corners==0) is not supported.",
            tuple(_p(_rank(4, 4), {"attrs": [_attr("mode", default="linear", **{"in": ["linear", "zeros"]})]},
                     {"attrs": alt})
                  for alt in ([_attr("padding_mode", default="zeros", not_in=["reflection"])],
                              [_attr("align_corners", default=0, not_in=[0])],
                              [_attr("mode", default="linear", **{"in": ["zeros"]})]))),
        # "Only support for transA == 0, alpha == 1.0 and beta == 1.0 is currently implemented."
        # ORT's CoreML Gemm builder also builds MatMul; ONNX MatMul has none of these attributes,
        # so the conditions always hold for a MatMul node: nothing to check, nothing left unchecked.
        "MatMul": Caveat("Only support for transA == 0, alpha == 1.0 and beta == 1.0 is currently implemented.", ()),
        "Pow": Caveat("Only supports cases when both inputs are fp32.", ({"types": {"i0": ["float"], "i1": ["float"]}},)),
        # "this ask for a `epislon` (default 1e-4) where onnx don't provide" -- a numerical
        # difference, not a support limit: no predicate, text kept as a note.
        "Reciprocal": Caveat("this ask for a `epislon` (default 1e-4) where onnx don't provide", (), complete=False),
        # "See resize_op_builder.cc ... too many permutations to describe" -> nothing checkable.
        "Resize": Caveat("See [resize_op_builder.cc](https://github.com/microsoft/onnxruntime/blob/main/onnxruntime/"
                         "core/providers/coreml/builders/impl/resize_op_builder.cc) implementation. There are too "
                         "many permutations to describe the valid combinations.", (), complete=False),
        # "starts/ends/axes/steps must be constant initializers."  (inputs 1-4)
        "Slice": Caveat("starts/ends/axes/steps must be constant initializers.", (_const(1, 2, 3, 4),)),
        "Split": Caveat("If provided, `splits` must be constant.", (_const(1),)),
        # "`repeats` may be a constant initializer or a runtime tensor (MLProgram only). Input rank up to 5."
        "Tile": Caveat("`repeats` may be a constant initializer or a runtime tensor (MLProgram only). Input rank "
                       "up to 5.", ({"max_rank": 5, "rank_inputs": [0]},)),
        # "`X`/`Y` branches must be float or float16."  (X=1, Y=2)
        "Where": Caveat("`X`/`Y` branches must be float or float16.",
                        ({"types": {"i1": ["float", "float16"], "i2": ["float", "float16"]}},)),
        # provenance notes (which ORT fusion produces the op), not limits: no predicates, no notes
        "com.microsoft:QuickGelu": Caveat("Produced by ORT's `QuickGeluFusion` optimizer pass. Decomposed into "
                                          "`mul` / `sigmoid` / `mul`."),
        "com.microsoft:FusedConv": Caveat("Produced by ORT's `ConvActivationFusion` pass. Decomposed into `conv` + "
                                          "the fused activation (`Relu`, `Sigmoid`, `Tanh`, `LeakyRelu`, `Clip`, "
                                          "`HardSigmoid`)."),
    },
}


# ---------------------------------------------------------------------------
# md parsing
# ---------------------------------------------------------------------------

def default_md_path(provider_key):
    """The md file for ``provider_key`` inside the installed onnxruntime (found without importing it)."""
    import importlib.util

    target = _target(provider_key)
    spec = importlib.util.find_spec("onnxruntime")
    if spec is None or not spec.submodule_search_locations:
        raise UsageError("onnxruntime is not installed: give the md file explicitly")
    base = Path(list(spec.submodule_search_locations)[0])
    return base / "tools" / "mobile_helpers" / target.file


def _ort_version():
    from importlib import metadata

    try:
        return metadata.version("onnxruntime")
    except metadata.PackageNotFoundError:
        return "unknown"


def _target(provider_key):
    key = (provider_key or "").lower()
    if key not in PROVIDERS:
        raise UsageError(f"--provider must be one of {', '.join(sorted(PROVIDERS))} for mobile-md, "
                         f"not {provider_key!r}")
    return PROVIDERS[key]


def _split_op(cell):
    """``ai.onnx:Conv`` -> ("", "Conv"); ``com.microsoft:X`` -> ("com.microsoft", "X")."""
    cell = cell.strip()
    if ":" in cell:
        domain, _, op = cell.partition(":")
    elif cell.startswith("ai.onnx."):  # "ai.onnx.ReduceSum" (see the note at OP_NAME_FIXES)
        domain, op = "ai.onnx", cell[len("ai.onnx."):]
    else:
        return None
    domain, op = domain.strip(), op.strip()
    if not op or not domain:
        return None
    op = OP_NAME_FIXES.get(op, op)
    return ("" if domain in ("ai.onnx", "") else domain), op


def parse_mobile_md(path):
    """Read one md table: ``[((domain, op), caveat_text), ...]`` in file order.

    Rows are ``|domain:op|caveat|``; the header and separator rows are skipped.
    """
    from ..io.files import read_text

    text = read_text(path, MAX_MD_BYTES)
    rows = []
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("|"):
            continue
        cells = line.split("|")
        if len(cells) != 4:  # '', op, caveat, ''
            continue
        key = _split_op(cells[1])
        if key is None:  # header, separator
            continue
        rows.append((key, cells[2].strip()))
    if not rows:
        raise UsageError("no '|domain:op|caveat|' rows found: not an ORT mobile_helpers op table", path)
    return rows


def _caveat_key(domain, op):
    return f"{domain}:{op}" if domain else op


def _op_rules(provider_key, domain, op, text):
    """Op rules (dicts) for one md row, and whether its caveat was left unmapped."""
    base = {"op": op}
    if domain:
        base["domain"] = domain
    if not text:
        return [base], False
    cav = CAVEATS.get(provider_key, {}).get(_caveat_key(domain, op))
    if cav is None or cav.text != text:
        return [dict(base, notes=_plain(text))], True
    notes = {} if cav.complete else {"notes": _plain(text)}
    if not cav.rules:
        return [dict(base, **notes)], False
    out = []
    for preds in cav.rules:
        rule = dict(base)
        for k in ("types", "static_shape", "min_rank", "max_rank", "rank_inputs", "const_inputs", "attrs",
                  "dtype_pairs"):
            if k in preds:
                rule[k] = preds[k]
        rule.update(notes)
        out.append(rule)
    return out, False


def _plain(text):
    return " ".join(text.replace("<br/>", " ").split())


def _read_rows(inputs, provider_key):
    paths = [Path(p) for p in inputs] if inputs else [default_md_path(provider_key)]
    merged = {}
    for p in paths:
        for key, text in parse_mobile_md(p):
            if key in merged and merged[key] != text:
                raise UsageError(f"{_caveat_key(*key)} appears twice with different caveats", p)
            merged[key] = text
    return paths, merged


def unmapped_caveats(provider_key, inputs=()):
    """Caveats of the md file(s) that :data:`CAVEATS` does not encode (text changed or new)."""
    _, rows = _read_rows(inputs, provider_key)
    return sorted(_caveat_key(*key) for key, text in rows.items()
                  if _op_rules(provider_key, key[0], key[1], text)[1])


def import_mobile_md(inputs, provider, wheel=None):
    """YAML text of the NNAPI / CoreML table built from ORT's mobile_helpers md file(s).

    Parameters
    ----------
    inputs : list of path
        md files; empty -> the installed onnxruntime wheel's file for ``provider``.
    provider : str
        ``nnapi``, ``coreml-neuralnetwork`` or ``coreml-mlprogram``.  When ``None`` and one
        input is given, it is inferred from the file name.
    wheel : (version, folder), optional
        Another ORT's release and ``onnxruntime`` package folder (``partsim rules refresh``): its
        md files instead of the installed wheel's.
    """
    if provider is None and inputs:
        names = {Path(p).name for p in inputs}
        hits = [k for k, t in PROVIDERS.items() if t.file in names]
        if len(hits) == 1:
            provider = hits[0]
    key = (provider or "").lower()
    target = _target(key)
    if wheel and not inputs:
        inputs = [Path(wheel[1]) / "tools" / "mobile_helpers" / target.file]
    paths, rows = _read_rows(inputs, key)
    ops = []
    for (domain, op) in sorted(rows, key=lambda k: (k[0], k[1])):
        ops.extend(_op_rules(key, domain, op, rows[(domain, op)])[0])
    version = wheel[0] if wheel else _ort_version()
    default = paths[0] if wheel else default_md_path(key) if not inputs else None
    if default is not None:
        src_version = f"onnxruntime {version} (mobile_helpers/{target.file})"
    else:
        src_version = f"{', '.join(p.name for p in paths)} (installed onnxruntime {version})"
    gen = f"partsim rules import mobile-md --provider {key}"
    table = {"provider": target.provider, "aliases": list(target.aliases)}
    if target.variant:
        table["variant"] = target.variant
    if target.default_variant:
        table["default_variant"] = True
    table.update({
        "kind": "compiling",
        "cpu_based": True,
        "precisions": list(target.precisions),
        "compute_precision": "fp32",
        "source": {
            "description": f"ORT mobile usability-checker op table {target.file}: supported ops with caveats",
            "version": src_version,
            "generated_by": gen,
            "describes": {"onnxruntime": version},
        },
        "partitioning": {"qdq_node_units": True},
        "defaults": dict(target.defaults),
        "notes": list(target.notes),
        "ops": ops,
    })
    return dump_table(table)
