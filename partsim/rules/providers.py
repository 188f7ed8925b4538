"""Provider names: ORT's provider names, short aliases and table variants.
"""


__all__ = ["CPU", "canonical_name", "KNOWN_PROVIDERS", "ALIASES"]


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
