"""Provider names: ORT's provider names, short aliases and table variants.
"""


__all__ = ["CPU", "canonical_name", "KNOWN_PROVIDERS", "ALIASES", "suggest_provider", "check_provider_request"]


# Every provider name ORT knows (onnxruntime/core/graph/constants.h and the plugin EPs).
KNOWN_PROVIDERS = (
    "CPUExecutionProvider", "CUDAExecutionProvider", "TensorrtExecutionProvider",
    "NvTensorRTRTXExecutionProvider", "OpenVINOExecutionProvider", "DnnlExecutionProvider",
    "NnapiExecutionProvider", "CoreMLExecutionProvider", "QNNExecutionProvider",
    "XnnpackExecutionProvider", "WebGpuExecutionProvider", "WebNNExecutionProvider",
    "JsExecutionProvider", "ROCMExecutionProvider", "MIGraphXExecutionProvider",
    "DmlExecutionProvider", "ACLExecutionProvider", "ArmNNExecutionProvider",
    "RknpuExecutionProvider", "VitisAIExecutionProvider", "SNPEExecutionProvider",
    "CANNExecutionProvider", "AzureExecutionProvider", "VSINPUExecutionProvider",
    "TvmExecutionProvider",
)


# short names accepted on input; the real name is always what partsim prints
ALIASES = {
    "cpu": "CPUExecutionProvider", "cuda": "CUDAExecutionProvider",
    "tensorrt": "TensorrtExecutionProvider", "trt": "TensorrtExecutionProvider",
    "openvino": "OpenVINOExecutionProvider", "ov": "OpenVINOExecutionProvider",
    "nnapi": "NnapiExecutionProvider", "coreml": "CoreMLExecutionProvider",
    "qnn": "QNNExecutionProvider", "xnnpack": "XnnpackExecutionProvider",
    "webgpu": "WebGpuExecutionProvider", "dml": "DmlExecutionProvider",
    "rocm": "ROCMExecutionProvider", "dnnl": "DnnlExecutionProvider",
    "webnn": "WebNNExecutionProvider", "migraphx": "MIGraphXExecutionProvider",
    "azure": "AzureExecutionProvider",
}

CPU = "CPUExecutionProvider"


def canonical_name(name):
    """ORT's name for a provider name or alias, any case (``cuda`` -> ``CUDAExecutionProvider``); else as given.

    >>> canonical_name("nnapi"), canonical_name("cpuexecutionprovider"), canonical_name("Foo")
    ('NnapiExecutionProvider', 'CPUExecutionProvider', 'Foo')
    """
    key = name.strip()
    if key.lower() in ALIASES:
        return ALIASES[key.lower()]
    for known in KNOWN_PROVIDERS:
        if known.lower() == key.lower():
            return known
    return key


def suggest_provider(name, extra=()):
    """``"did you mean nnapi?"`` for a misspelt provider name, or ``""`` when nothing is close.

    Names are compared without case and without the common ``ExecutionProvider`` suffix,
    so ``FooExecutionProvider`` is not "close" to every ORT name.
    """
    import difflib

    suffix = "executionprovider"

    def stem(s):
        s = s.strip().lower()
        return s[:-len(suffix)] if s.endswith(suffix) and len(s) > len(suffix) else s

    candidates = {}
    for p in KNOWN_PROVIDERS + tuple(extra):
        candidates.setdefault(stem(p), p)
    for alias in ALIASES:
        candidates[alias] = alias  # the short name wins where it equals a stem (cuda, nnapi)
    if not name.strip().lower().endswith(suffix):  # a misspelt full name (NnapiExecutionProvdier)
        for p in KNOWN_PROVIDERS + tuple(extra):
            candidates.setdefault(p.lower(), p)
    close = difflib.get_close_matches(stem(name), list(candidates), n=1, cutoff=0.6)
    return f"did you mean {candidates[close[0]]}?" if close else ""


def check_provider_request(providers, extra=()):
    """Refuse a provider request partsim could only answer with a silent CPU-only prediction.

    ``providers``: ``None`` (not given: CPU only), a single string (one name) or a list of
    names (``NAME`` or ``NAME:variant``).  ``extra``: names of ad-hoc providers (``--support``).
    Returns the list; raises :class:`~partsim.errors.UsageError` on an empty list, an empty
    name, or a name neither ORT nor a table knows (with the closest known name).  ORT itself
    drops unknown names with a warning (``partsim providers`` shows that); a prediction
    must not.
    """
    from ..errors import UsageError

    if providers is None:
        return None
    if isinstance(providers, str):
        providers = [providers]
    providers = list(providers)
    if not providers:
        raise UsageError("the provider list is empty: name at least one provider (e.g. -p nnapi), "
                         "or leave the option out for CPU only")
    extra = tuple(extra)
    for raw in providers:
        if not isinstance(raw, str) or not raw.strip():
            raise UsageError(f"empty provider name in {providers!r}")
        base = raw.partition(":")[0].strip()
        if base in extra or canonical_name(base) in KNOWN_PROVIDERS:
            continue
        hint = suggest_provider(base, extra)
        raise UsageError(f"unknown provider {base!r}: neither ORT nor a capability table knows it"
                         + (f"; {hint}" if hint else f" (known: {', '.join(sorted(ALIASES))})"))
    return providers
