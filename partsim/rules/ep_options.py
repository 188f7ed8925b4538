"""Provider options as prediction inputs (``--ep-option KEY=VALUE``): the tables they select or change.

A plugin EP's session options change where nodes go; partsim predicts with the same options:

- WebGPU ``enableInt64=1``: the ``webgpu:int64`` table, measured on sessions made with that option
  (``partsim rules import webgpu --variant int64``).
- WebGPU ``preferredLayout=NCHW``: ORT runs no NHWC layout transformation for it (the EP's
  GetPreferredDataLayout, ``webgpu_execution_provider.cc``); ``NHWC`` is the default.
- WebGPU ``forceCpuNodeNames``: nodes of these names are left to the CPU (WebGPU's GetCapability
  skips them before any kernel lookup; newline- or comma-separated names).

- CoreML ``ModelFormat=MLProgram|NeuralNetwork``: the ``coreml:mlprogram`` or ``coreml:neuralnetwork`` table
  (ORT's own default, without the option, is NeuralNetwork: ``CoreMLOptions`` sets ``create_mlprogram_`` only
  for COREML_FLAG_CREATE_MLPROGRAM or this option; partsim's ``-p coreml`` means ML Program, the format Apple
  develops and current users ask for, so ``-p coreml`` with no option predicts ``ModelFormat=MLProgram``).
  ``RequireStaticInputShapes=1``: every input of a node static (``helper.cc IsInputSupported``);
  ``EnableOnSubgraphs=1``: nodes inside If/Loop/Scan bodies may go to CoreML.  The options that change no
  placement (MLComputeUnits, SpecializationStrategy, ProfileComputePlan, AllowLowPrecisionAccumulationOnGPU,
  ModelCacheDirectory) are accepted.  Source: microsoft/onnxruntime @ae857d7a
  ``onnxruntime/core/providers/coreml/coreml_options.cc`` (ValidateAndParseProviderOption).

For WebGPU and CoreML, options that name no known effect are refused (exit 2) rather than ignored: a
prediction that silently dropped an option would be one for another session.  Other plugins' options (QNN's)
go to their real session only.
"""

from dataclasses import replace

from ..errors import UsageError

__all__ = ["apply_ep_options", "variant_for"]

WEBGPU = "WebGpuExecutionProvider"
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def variant_for(provider, options):
    """The table variant ``options`` select for ``provider`` ("" = the default)."""
    if provider != WEBGPU:
        return ""
    value = str((options or {}).get("enableInt64", "0")).strip().lower()
    if value not in _TRUE | _FALSE:
        raise UsageError(f"--ep-option enableInt64 expects 0 or 1, got {value!r}")
    return "int64" if value in _TRUE else ""


def _names(value):
    return tuple(sorted({n.strip() for part in str(value).split("\n") for n in part.split(",") if n.strip()}))


COREML = "CoreMLExecutionProvider"
_COREML_NO_EFFECT = {"MLComputeUnits", "SpecializationStrategy", "ProfileComputePlan",
                     "AllowLowPrecisionAccumulationOnGPU", "ModelCacheDirectory"}
_COREML_KNOWN = {"ModelFormat", "RequireStaticInputShapes", "EnableOnSubgraphs"} | _COREML_NO_EFFECT
_WEBGPU_KNOWN = {"enableInt64", "preferredLayout", "forceCpuNodeNames"}


def apply_ep_options(resolution, options, tables=None):
    """``resolution`` with the tables ``options`` ask for (see the module docstring); the same object
    when there are none.  ``tables`` (a TableSet) provides the variants an option selects."""
    present = {p for p in (WEBGPU, COREML) if p in resolution.effective}
    if not options or not present:  # other plugins' options reach their session only
        return resolution
    known = (_WEBGPU_KNOWN if WEBGPU in present else set()) | (_COREML_KNOWN if COREML in present else set())
    unknown = sorted(set(options) - known)
    if unknown:
        raise UsageError(f"--ep-option {unknown[0]} is not a prediction input partsim knows "
                         f"(known: {', '.join(sorted(known))})")
    out = []
    for t in resolution.tables:
        if t.provider == WEBGPU:
            t = _webgpu_table(t, options, tables)
        elif t.provider == COREML:
            t = _coreml_table(t, options, tables)
        out.append(t)
    return replace(resolution, tables=tuple(out))


def _variant_table(provider, variant, tables, why):
    pick = [v for v in (tables.get(provider, []) if tables is not None else []) if v.variant == variant]
    if not pick:
        raise UsageError(f"no {provider} table of variant {variant!r} for --ep-option {why}")
    return pick[0]


def _flag(options, key):
    value = str(options.get(key, "0")).strip()
    if value not in ("0", "1"):
        raise UsageError(f"--ep-option {key} expects 0 or 1, got {value!r}")
    return value == "1"


def _coreml_table(t, options, tables):
    """The CoreML table ``options`` select: ModelFormat's variant, RequireStaticInputShapes, EnableOnSubgraphs."""
    if "ModelFormat" in options:
        formats = {"MLProgram": "mlprogram", "NeuralNetwork": "neuralnetwork"}
        value = str(options["ModelFormat"]).strip()
        if value not in formats:
            raise UsageError(f"--ep-option ModelFormat expects MLProgram or NeuralNetwork, got {value!r}")
        if t.variant != formats[value]:
            t = _variant_table(COREML, formats[value], tables, f"ModelFormat={value}")
    if _flag(options, "RequireStaticInputShapes"):
        t = replace(t, rules={k: tuple(replace(r, static_shape=True) for r in rs) for k, rs in t.rules.items()})
    if _flag(options, "EnableOnSubgraphs"):
        t = replace(t, partitioning={k: v for k, v in t.partitioning.items() if k != "subgraphs"})
    return t


def _webgpu_table(t, options, tables):
    """The WebGPU table ``options`` select: enableInt64's variant, the layout, the CPU-forced nodes."""
    variant = variant_for(WEBGPU, options)
    if variant and t.variant != variant:
        t = _variant_table(WEBGPU, variant, tables, "enableInt64=1")
    layout = str(options.get("preferredLayout", "NHWC")).strip().upper()
    if layout not in ("NHWC", "NCHW"):
        raise UsageError(f"--ep-option preferredLayout expects NHWC or NCHW, got {layout!r}")
    part = dict(t.partitioning)
    if "forceCpuNodeNames" in options:
        part["force_cpu_node_names"] = _names(options["forceCpuNodeNames"])
    return replace(t, layout=layout, partitioning=part)
