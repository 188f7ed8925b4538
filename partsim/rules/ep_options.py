"""Provider options as prediction inputs (``--ep-option KEY=VALUE``): the tables they select or change.

A plugin EP's session options change where nodes go; partsim predicts with the same options:

- WebGPU ``enableInt64=1``: the ``webgpu:int64`` table, measured on sessions made with that option
  (``partsim rules import webgpu --variant int64``).
- WebGPU ``preferredLayout=NCHW``: ORT runs no NHWC layout transformation for it (the EP's
  GetPreferredDataLayout, ``webgpu_execution_provider.cc``); ``NHWC`` is the default.
- WebGPU ``forceCpuNodeNames``: nodes of these names are left to the CPU (WebGPU's GetCapability
  skips them before any kernel lookup; newline- or comma-separated names).

For WebGPU, options that name no known effect are refused (exit 2) rather than ignored: a prediction that
silently dropped an option would be one for another session.  Other plugins' options (QNN's) go to their
real session only.
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


def apply_ep_options(resolution, options, tables=None):
    """``resolution`` with the tables ``options`` ask for (see the module docstring); the same object
    when there are none.  ``tables`` (a TableSet) provides the variants an option selects."""
    if not options or WEBGPU not in resolution.effective:  # other plugins' options reach their session only
        return resolution
    known = {"enableInt64", "preferredLayout", "forceCpuNodeNames"}
    unknown = sorted(set(options) - known)
    if unknown:
        raise UsageError(f"--ep-option {unknown[0]} is not a prediction input partsim knows "
                         f"(known: {', '.join(sorted(known))})")
    out = []
    for t in resolution.tables:
        if t.provider != WEBGPU:
            out.append(t)
            continue
        variant = variant_for(WEBGPU, options)
        if variant and t.variant != variant:
            pick = [v for v in (tables.get(WEBGPU, []) if tables is not None else []) if v.variant == variant]
            if not pick:
                raise UsageError(f"no webgpu:{variant} table for --ep-option enableInt64=1")
            t = pick[0]
        layout = str(options.get("preferredLayout", "NHWC")).strip().upper()
        if layout not in ("NHWC", "NCHW"):
            raise UsageError(f"--ep-option preferredLayout expects NHWC or NCHW, got {layout!r}")
        part = dict(t.partitioning)
        if "forceCpuNodeNames" in options:
            part["force_cpu_node_names"] = _names(options["forceCpuNodeNames"])
        out.append(replace(t, layout=layout, partitioning=part))
    return replace(resolution, tables=tuple(out))
