"""Plugin execution providers: register the library, choose the device, pass the options.

ORT's execution providers increasingly ship as *plugin EPs* on PyPI, libraries registered
into a plain ``onnxruntime`` (>= 1.24.2): ``onnxruntime.register_execution_provider_library``,
then ``get_ep_devices()`` lists the devices each plugin offers, and the session gets them
through ``SessionOptions.add_provider_for_devices`` (the ``providers=[...]`` list does not know
a plugin EP).  The plugins partsim drives (:data:`PLUGINS`):

- ``onnxruntime-qnn`` 2.x (``QNNExecutionProvider``).  The HTP backend (``libQnnHtp.so``) is an
  emulator on x86-64 Linux; there the configured ``soc_model`` is used instead of a discovered one
  (onnxruntime/onnxruntime-qnn PR #838), and without it most float graphs fail to finalize
  (``QNN_COMMON_ERROR_MEM_ALLOC``; FP16 needs a SoC, PR #68).
- ``onnxruntime-ep-webgpu`` 0.4.0 (``WebGpuExecutionProvider``): offers a device only for a GPU that
  ORT's device discovery lists (see :mod:`webgpu_host`, next to this file).
- ``onnxruntime-ep-openvino`` 1.8.1 (``OpenVINOExecutionProvider``): offers a device only on an Intel
  CPU (``MatchOvDevice`` compares the vendor id with 0x8086).

An EP that the interpreter's ORT build has built in (``onnxruntime-openvino`` 1.24.1 lists
``OpenVINOExecutionProvider`` in ``get_available_providers()``) is not a plugin there: the caller
uses ``providers=[...]``.  Sessions with a plugin are created with ``enable_fallback=0``: otherwise
ORT's Python wrapper silently retries on the CPU after an EP error.

This module is imported by the ORT child's sub-commands (``child_observe.py``, ``child_outputs.py``,
``child_probe.py``), which run under any interpreter and import nothing from partsim: it needs
the standard library and onnxruntime only.
"""

import importlib
import os
import sys

QNN = "QNNExecutionProvider"
WEBGPU = "WebGpuExecutionProvider"
OPENVINO = "OpenVINOExecutionProvider"
DEFAULT_SOC_MODEL = "60"  # Snapdragon 8 Gen 3 (HTP v75)
DEFAULT_BACKEND = "htp"

#: per plugin EP: its Python module and PyPI package, the device type it is given, the options partsim
#: always passes, and the key its version and options are recorded under ("qnn"/"qnnOptions" kept for QNN)
PLUGINS = {
    QNN: {"module": "onnxruntime_qnn", "package": "onnxruntime-qnn", "device": "NPU",
          "defaults": {"backend": DEFAULT_BACKEND, "soc_model": DEFAULT_SOC_MODEL}, "key": "qnn"},
    WEBGPU: {"module": "onnxruntime_ep_webgpu", "package": "onnxruntime-ep-webgpu", "device": "GPU",
             "defaults": {}, "key": "webgpu"},
    # the plugin defaults to bf16 inference on AVX512-BF16 CPUs; f32 keeps outputs comparable with the CPU EP.
    # Its device is the one given (the CPU it offers); it ignores device_type with a warning
    OPENVINO: {"module": "onnxruntime_ep_openvino", "package": "onnxruntime-ep-openvino", "device": "CPU",
               "defaults": {"load_config": '{"CPU": {"INFERENCE_PRECISION_HINT": "f32"}}'}, "key": "openvino"},
}

__all__ = ["QNN", "WEBGPU", "OPENVINO", "PLUGINS", "DEFAULT_SOC_MODEL", "DEFAULT_BACKEND", "plugin_provider",
           "provider_options", "prepare_host", "configure", "create_session"]


def plugin_provider(ort, providers):
    """The first provider of ``providers`` that is a plugin EP for this interpreter's ORT (``None``
    when there is none): partsim knows its package and the build does not have it built in."""
    built_in = set(ort.get_available_providers()) - _REGISTERED  # a registered plugin is listed there too
    for name in providers or ():
        if name in PLUGINS and name not in built_in:
            return name
    return None


def provider_options(provider, ep_options=None):
    """The options partsim gives plugin ``provider``: its defaults plus any ``key: value`` the caller
    passes (values are strings, as ORT wants them), sorted."""
    opts = dict(PLUGINS[provider]["defaults"])
    for k, v in (ep_options or {}).items():
        if v is not None:
            opts[str(k)] = str(v)
    return dict(sorted(opts.items()))


_HOST = {}
_REGISTERED = set()


def prepare_host(providers):
    """What a plugin among ``providers`` needs of this process, done once and before ``import onnxruntime``
    (ORT discovers the machine's devices once): WebGPU's Vulkan driver and GPU (``webgpu_host``).
    Returns ``None`` or why this machine cannot."""
    if WEBGPU not in (providers or ()):
        return None
    if WEBGPU not in _HOST:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import webgpu_host

        _HOST[WEBGPU] = webgpu_host.prepare()
    return _HOST[WEBGPU]


def _register(ort, provider, module):
    """Register the plugin's library in this process; ``None`` or why not."""
    if not hasattr(ort, "register_execution_provider_library"):
        return f"onnxruntime {ort.__version__} cannot load plugin EPs (needs >= 1.24.2)"
    if provider in _REGISTERED:  # once per process: registering WebGPU's library again crashes ORT 1.31.1
        return None
    try:
        ort.register_execution_provider_library(provider, module.get_library_path())
    except Exception as exc:  # already registered in this process is fine; anything else is not
        if "already" not in str(exc).lower():
            return f"cannot register the {provider} plugin: {' '.join(str(exc).split())[:300]}"
    _REGISTERED.add(provider)
    return None


def configure(ort, so, provider, ep_options=None):
    """Register plugin ``provider`` and add its device to ``so``; return a record of what was done.

    The record has ``plugin`` (``{"ep", "package", "version", "options"}``: the options as given to
    ORT, machine paths left out), the same under the plugin's short key (``qnn``/``qnnOptions``, ...)
    and ``ok``; when the plugin is missing or offers no device, ``ok`` is False and ``error`` says why,
    and the caller records the session as not created.
    """
    spec = PLUGINS[provider]
    opts = provider_options(provider, ep_options)
    rec = {"ok": False, "plugin": {"ep": provider, "package": spec["package"], "version": None, "options": opts},
           spec["key"] + "Options": opts}
    if provider == WEBGPU:
        problem = prepare_host([provider])
        if problem:
            rec["error"] = problem
            return rec
    try:
        module = importlib.import_module(spec["module"])
    except ImportError as exc:
        rec["error"] = f"{spec['package']} is not installed in this interpreter ({exc})"
        return rec
    version = getattr(module, "__version__", None) or _dist_version(spec["package"])
    rec["plugin"]["version"] = rec[spec["key"]] = version
    problem = _register(ort, provider, module)
    if problem:
        rec["error"] = problem
        return rec
    devices = [d for d in ort.get_ep_devices() if d.ep_name == provider]
    if not devices:
        rec["error"] = f"the {provider} plugin offers no device on this machine" + _no_device_hint(provider)
        return rec
    given = dict(opts)
    if provider == QNN:
        paths = {"htp": module.get_qnn_htp_path, "cpu": module.get_qnn_cpu_path, "gpu": module.get_qnn_gpu_path}
        backend = given.pop("backend")
        if backend not in paths:
            rec["error"] = f"unknown QNN backend {backend!r} (htp, cpu, gpu)"
            return rec
        given["backend_path"] = paths[backend]()
    so.add_provider_for_devices(devices[:1], given)
    rec["ok"] = True
    return rec


def _no_device_hint(provider):
    if provider == OPENVINO:
        return " (it offers the CPU only when it is an Intel one: MatchOvDevice)"
    if provider == WEBGPU:
        return " (ORT's device discovery lists no GPU: /sys/class/drm/card*)"
    return ""


def _dist_version(package):
    try:
        from importlib import metadata

        return metadata.version(package)
    except Exception:  # metadata missing: the version stays unknown
        return "?"


def create_session(ort, model, so, providers, plugin):
    """The session: by device for a plugin EP (no silent retry on the CPU), by name otherwise."""
    if plugin:
        return ort.InferenceSession(model, so, enable_fallback=0)
    return ort.InferenceSession(model, so, providers=providers)
