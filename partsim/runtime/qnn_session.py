"""Session options for the QNN execution provider as a plugin EP (onnxruntime-qnn 2.x).

``onnxruntime-qnn`` (PyPI) is not a build of ORT but a plugin library for
onnxruntime >= 1.24.2: the library is registered with
``onnxruntime.register_execution_provider_library``, its devices are read from
``get_ep_devices()``, and the session gets them through
``SessionOptions.add_provider_for_devices`` (the old ``providers=[...]`` list does
not know a plugin EP).  The HTP backend (``libQnnHtp.so``) is an emulator on x86-64
Linux; there the configured ``soc_model`` is used instead of a discovered one
(onnxruntime/onnxruntime-qnn PR #838), and without it most float graphs fail to
finalize (``QNN_COMMON_ERROR_MEM_ALLOC``; FP16 needs a SoC, PR #68).

This module is imported by the session child processes (``ort_child.py``,
``numerics/ort_outputs_child.py``), which run under any interpreter and import
nothing from partsim: it needs the standard library and onnxruntime only.
"""

QNN = "QNNExecutionProvider"
DEFAULT_SOC_MODEL = "60"  # Snapdragon 8 Gen 3 (HTP v75)
DEFAULT_BACKEND = "htp"

__all__ = ["QNN", "DEFAULT_SOC_MODEL", "DEFAULT_BACKEND", "wants_qnn", "qnn_provider_options", "configure"]


def wants_qnn(providers):
    """True when the requested provider list names the QNN EP."""
    return QNN in list(providers or ())


def qnn_provider_options(ep_options=None):
    """The QNN provider options partsim records: ``soc_model`` and ``backend`` (htp|cpu|gpu) plus any
    other ``key: value`` the caller passes through unchanged (values are strings, as ORT wants them)."""
    opts = {"backend": DEFAULT_BACKEND, "soc_model": DEFAULT_SOC_MODEL}
    for k, v in (ep_options or {}).items():
        if v is not None:
            opts[str(k)] = str(v)
    return dict(sorted(opts.items()))


def configure(ort, so, providers, ep_options=None):
    """Register the plugin and add its devices to ``so``; return a record of what was done.

    ``providers`` is the requested list (QNN first, CPU last, as ORT orders them anyway).
    The returned dict has ``qnn`` (package version), ``qnnOptions`` (the options as given
    to ORT, ``backend_path`` left out: it is a path of this machine) and ``ok``; when the
    plugin is missing or has no device, ``ok`` is False and ``error`` says why, and the
    caller records the session as not created.
    """
    opts = qnn_provider_options(ep_options)
    rec = {"qnnOptions": opts, "ok": False}
    try:
        import onnxruntime_qnn as qnn
    except ImportError as exc:
        rec["error"] = f"onnxruntime-qnn is not installed in this interpreter ({exc})"
        return rec
    rec["qnn"] = getattr(qnn, "__version__", "?")
    if not hasattr(ort, "register_execution_provider_library"):
        rec["error"] = f"onnxruntime {ort.__version__} cannot load plugin EPs (needs >= 1.24.2)"
        return rec
    try:
        ort.register_execution_provider_library(QNN, qnn.get_library_path())
    except Exception as exc:  # already registered in this process is fine; anything else is not
        if "already" not in str(exc).lower():
            rec["error"] = f"cannot register the QNN plugin: {' '.join(str(exc).split())[:300]}"
            return rec
    devices = [d for d in ort.get_ep_devices() if d.ep_name == QNN]
    if not devices:
        rec["error"] = "the QNN plugin registered no device"
        return rec
    backend = opts["backend"]
    paths = {"htp": qnn.get_qnn_htp_path, "cpu": qnn.get_qnn_cpu_path, "gpu": qnn.get_qnn_gpu_path}
    if backend not in paths:
        rec["error"] = f"unknown QNN backend {backend!r} (htp, cpu, gpu)"
        return rec
    given = {k: v for k, v in opts.items() if k != "backend"}
    given["backend_path"] = paths[backend]()
    so.add_provider_for_devices(devices[:1], given)
    rec["ok"] = True
    return rec
