"""Run real ONNX Runtime sessions in an isolated child process, with a timeout.

A crashing or hanging EP must not take partsim down: each session runs in the ORT child
(:mod:`partsim.runtime.process`, sub-command ``observe``) under ``sys.executable`` or another
interpreter (``--python``), and its fate is recorded as ``ok``, ``create_failed`` (ORT refused
the session), or, when a fresh child failed the same way again, ``crashed`` or ``timeout``.
"""

import re
import tempfile
from pathlib import Path

from .observation import LEVELS, normalize_level, observation_from_records
from .ort_protocol import ObserveRecord, ObserveRequest
from .process import DEFAULT_MEMORY_LIMIT, ChildFailure, run_request

__all__ = ["run_session", "observation_from_run", "dropped_providers", "PLUGIN_KEYS"]

#: what a session child records of a plugin EP (runtime/plugin_eps.py): ``plugin`` ({ep, package, version,
#: options}) and the same under the plugin's short name (``qnn``/``qnnOptions`` as before, ``webgpu`` …)
PLUGIN_KEYS = ("plugin", "qnn", "qnnOptions", "webgpu", "webgpuOptions", "openvino", "openvinoOptions")

_BANNER = re.compile(r"EP Error (.*?) when using")


def run_session(model, providers, level="disable", python=None, timeout=120, seed=0, dims=None,
                inputs_npz=None, run=True, threads=1, memory_limit=DEFAULT_MEMORY_LIMIT,
                ep_options=None):
    """Create (and run) one session in a child process; return its record (a dict).

    The child gets ``timeout`` seconds and an address-space ceiling of ``memory_limit``
    bytes; a crash, a hang or running out of memory is tried once more in a fresh child, then
    recorded (``state`` ``crashed`` or ``timeout``), never raised.
    ``ep_options``: provider options of a plugin EP (QNN: ``{"soc_model": "60"}``, see
    :mod:`partsim.runtime.plugin_eps`), recorded in the result.
    """
    with tempfile.TemporaryDirectory(prefix="partsim-feeds-") as tmp:
        feeds_at, feed_error = str(inputs_npz) if inputs_npz else None, None
        if run and not inputs_npz:
            # seeded feeds made here, by the same code as every numeric command, and handed over as .npz
            from ..errors import PartsimError
            from ..numerics.inputs import save_npz
            from ..numerics.inputs import prepare_feeds

            try:
                feeds = prepare_feeds(model, seed, None, dims)
            except PartsimError as exc:  # e.g. a string input: the session is still observed, not run
                feed_error = exc.message
            else:
                feeds_at = str(Path(tmp) / "feeds.npz")
                save_npz(feeds_at, feeds)
        req = ObserveRequest(str(model), tuple(providers), LEVELS[normalize_level(level)], feeds_at, feed_error,
                             bool(run), int(threads), dict(ep_options or {}),
                             dims={str(k): int(v) for k, v in (dims or {}).items()})
        rec = _run_child(req, python, timeout, memory_limit)
    _refuse_missing_runtime(rec, providers, python)
    unnamed = _unnamed_loaded(model)
    if unnamed:
        rec["unnamed_loaded"] = unnamed
    return rec


# what the session children say when the interpreter lacks a plugin EP's package or a plugin-capable ORT
_MISSING = re.compile(r"(\S+) is not installed in this interpreter|cannot load plugin EPs")
# the one command that installs each plugin EP's package (docs/environments.md)
INSTALL = {"onnxruntime-qnn": 'pip install "partsim[qnn]"', "onnxruntime-ep-webgpu": 'pip install "partsim[webgpu]"',
           "onnxruntime-ep-openvino": 'pip install "partsim[openvino]"'}


def _refuse_missing_runtime(rec, providers, python):
    """A session not created because the runtime itself is missing is no fact about the model: one
    line (exit 2) naming the interpreter and the command that installs what it lacks."""
    from ..errors import UsageError

    if rec.get("state") != "create_failed":
        return
    m = _MISSING.search(rec.get("error") or "")
    if m is None:
        return
    import sys

    package = m.group(1)
    fix = INSTALL.get(package, f"pip install {package}") if package else "pip install -U onnxruntime"
    raise UsageError(f"cannot observe {providers[0]} here: {m.group(0)} ({python or sys.executable}); "
                     f"install it: {fix} (partsim doctor lists what this machine can observe)")


def _unnamed_loaded(model):
    """``[[op, ORT node index], ...]`` of the model's unnamed main-graph nodes as ORT loads them
    (Constant nodes become initializers and get no index): what names the unnamed members of
    the assignment info when the profile cannot (:mod:`partsim.runtime.observation`)."""
    try:
        from ..io.read import read_model_proto

        proto, _ = read_model_proto(model)
    except Exception:  # noqa: BLE001 - the session's record already says what is wrong with the file
        return []
    from ..sim.names import loaded_nodes

    return [[n.op_type, index] for index, n in enumerate(loaded_nodes(proto.graph.node)) if not n.name]


def _run_child(req, python, timeout, memory_limit):
    stderr = []
    try:
        record = run_request("observe", req, ObserveRecord, timeout, python, memory_limit, stderr=stderr)
    except ChildFailure as exc:
        state = "timeout" if exc.cause == "timeout" else "crashed"
        return {"state": state, "requested": list(req.providers), "error": exc.message}
    rec = record.to_dict()
    rec["stderr_banners"] = _BANNER.findall(stderr[0])
    return rec


def dropped_providers(requested, granted):
    """The requested providers a session did not grant, each ``{"name", "reason"}``:
    ``not_available`` for a provider ORT knows but this build lacks (ORT then warns and
    runs its nodes on the providers it has), ``unknown_provider`` for a name no ORT build has."""
    from ..rules.providers import KNOWN_PROVIDERS

    return [{"name": name, "reason": "not_available" if name in KNOWN_PROVIDERS else "unknown_provider"}
            for name in requested if name not in granted]


def observation_from_run(rec, level):
    """Turn a child record into a partsim observation (see :mod:`partsim.runtime.observation`).

    A session that failed gives an observation without nodes, with its ``state``.
    ``dropped`` lists the requested providers the session did not grant, ``warnings`` ORT's
    own warnings (and its "EP Error" banners).
    """
    obs = observation_from_records(rec, rec.get("runtime", ""), "this machine", level=level, strict=False)
    warnings = list(rec.get("warnings", [])) + [f"EP Error {b}" for b in rec.get("stderr_banners", [])]
    obs.update({"state": rec.get("state"), "warnings": warnings,
                "dropped": dropped_providers(rec.get("requested") or [], rec.get("granted") or []),
                "available": list(rec.get("available") or []), "placementLog": rec.get("placement", {})})
    for key in PLUGIN_KEYS:  # the plugin EP's package, version and options (soc_model, preferredLayout …)
        if key in rec:
            obs[key] = rec[key]
    if rec.get("state") != "ok" and rec.get("error"):
        obs["error"] = rec["error"]
    if rec.get("state") == "create_failed":
        # no session, so nothing was granted: a provider this build has refused the graph (the plugin
        # QNN EP, OpenVINO's fused partitions making the graph cyclic ...), an observed refusal to
        # compare with the prediction, not a dropped provider
        has = set(obs["available"])
        obs["dropped"] = [] if "plugin" in rec else [d for d in obs["dropped"] if d["name"] not in has]
    return obs


# --- partsim doctor: which real providers this machine can observe ----------------------------------

PROBE_MODEL = Path(__file__).resolve().parents[1] / "data" / "one_relu.onnx"
# where `make openvino` / `make openvino-plugin` put their interpreters (Makefile OV_VENV, OVP_VENV), relative
# to a partsim checkout
_CHECKOUT = Path(__file__).resolve().parents[2]
OPENVINO_VENV = _CHECKOUT / ".venv-openvino" / "bin" / "python"
OPENVINO_PLUGIN_PYTHONS = (_CHECKOUT / ".venv-ovplugin" / "harness" / "python",
                           _CHECKOUT / ".venv-ovplugin" / "bin" / "python")
_FIX = {
    "CPUExecutionProvider": 'pip install "partsim"  (onnxruntime)',
    "QNNExecutionProvider": 'pip install "partsim[qnn]"',
    "OpenVINOExecutionProvider": "make openvino-plugin  (onnxruntime-ep-openvino 1.8.1 in .venv-ovplugin; on a "
                                 "non-Intel CPU a test harness observes it)",
    "OpenVINOExecutionProvider:1.24": "make openvino  (a second venv with onnxruntime-openvino; then --python "
                                      ".venv-openvino/bin/python)",
    "WebGpuExecutionProvider": "make webgpu  (the plugin with Mesa's lavapipe Vulkan driver, no GPU needed)",
}
# the same for a partsim installed with pip (no checkout, no Makefile)
_FIX_INSTALLED = {
    "OpenVINOExecutionProvider": 'pip install "partsim[openvino]"  (the plugin offers a device on Intel CPUs only)',
    "OpenVINOExecutionProvider:1.24": "python3 -m venv ~/.venv-openvino && ~/.venv-openvino/bin/pip install "
                                      "onnxruntime-openvino==1.24.1 numpy  (then --openvino-python "
                                      "~/.venv-openvino/bin/python)",
    "WebGpuExecutionProvider": 'pip install "partsim[webgpu]"; partsim doctor --setup webgpu  (the plugin, then '
                               "Mesa's lavapipe Vulkan driver: no GPU needed)",
}


def in_checkout():
    """Does partsim run from a checkout (its Makefile beside the package) rather than a pip install?"""
    return (_CHECKOUT / "Makefile").is_file() and (_CHECKOUT / "rules").is_dir()


def fix_for(provider, error=""):
    """The one command that gets ``provider`` observed here, given what its probe said."""
    m = _MISSING.search(error or "")
    if m and m.group(1) in INSTALL and not (in_checkout() and provider.startswith("OpenVINO")):
        return INSTALL[m.group(1)]  # (a checkout keeps the OpenVINO runtimes in venvs of their own: make)
    if provider == "WebGpuExecutionProvider" and "WebGPU environment" in (error or ""):
        import importlib.util

        from .webgpu_host import setup_command

        if importlib.util.find_spec("onnxruntime_ep_webgpu") is not None:  # only the Vulkan driver is missing
            return f"{setup_command()}  (Mesa's lavapipe Vulkan driver, no GPU needed)"
    return (_FIX if in_checkout() else {**_FIX, **_FIX_INSTALLED}).get(provider, "")


def probe_provider(provider, python=None, timeout=120):
    """``{provider, state, python, runtime, detail, fix}``: whether a real session of ``provider``
    places the one-node probe model on it here.  ``state`` is ``observable`` (it did), ``missing``
    (the runtime or device is absent; ``fix`` is the one command that installs it) or ``failed``
    (the session did not run for another reason: ``detail`` says which)."""
    import sys

    providers = [provider] + ([] if provider == "CPUExecutionProvider" else ["CPUExecutionProvider"])
    options = {"soc_model": "60", "backend": "htp"} if provider == "QNNExecutionProvider" else None
    req = ObserveRequest(str(PROBE_MODEL), tuple(providers), LEVELS["disable"], run=False, ep_options=dict(options or {}))
    rec = _run_child(req, python, timeout, DEFAULT_MEMORY_LIMIT)
    out = {"provider": provider, "python": str(python or sys.executable), "runtime": rec.get("runtime", ""),
           "state": "observable", "detail": "", "fix": ""}
    for key in ("qnn", "webgpu", "openvino"):
        if rec.get(key):
            out["runtime"] += f", {key} plugin {rec[key]}"
    placed = provider in (rec.get("placement") or {})
    if rec.get("state") == "ok" and placed:
        return out
    error = rec.get("error") or "; ".join(rec.get("warnings") or ()) or f"session {rec.get('state')}"
    missing = rec.get("state") in ("ok", "create_failed") and (
        not placed and (provider not in (rec.get("available") or [provider]) or _MISSING.search(error)
                        or rec.get("unavailable")))
    out.update(state="missing" if missing or rec.get("state") == "ok" else "failed", detail=error[:300],
               fix=fix_for(provider, error))
    return out


def vulkan_drivers():
    """The Vulkan ICD files a WebGPU (Dawn) session could load: ``VK_DRIVER_FILES`` /
    ``VK_ICD_FILENAMES``, else the system folders."""
    import glob
    import os

    named = os.environ.get("VK_DRIVER_FILES") or os.environ.get("VK_ICD_FILENAMES")
    if named:
        return [p for p in named.split(os.pathsep) if os.path.isfile(p)]
    return sorted(p for d in ("/usr/share/vulkan/icd.d", "/etc/vulkan/icd.d") for p in glob.glob(f"{d}/*.json"))


def probe_webgpu_prerequisites(python=None):
    """WebGPU where partsim cannot run its session yet: the plugin package and a Vulkan driver."""
    import importlib.util
    import sys

    out = {"provider": "WebGpuExecutionProvider", "python": str(python or sys.executable), "runtime": "",
           "state": "missing", "detail": "", "fix": _FIX["WebGpuExecutionProvider"]}
    has_plugin = importlib.util.find_spec("onnxruntime_ep_webgpu") is not None if python is None else None
    drivers = vulkan_drivers()
    parts = [("plugin onnxruntime-ep-webgpu " + ("installed" if has_plugin else "not installed"))
             if has_plugin is not None else "plugin not checked (another interpreter)",
             f"Vulkan driver {'files: ' + ', '.join(drivers) if drivers else 'absent'}"]
    out["detail"] = "; ".join(parts) + "; partsim runs no WebGPU session here yet"
    if has_plugin is False:
        out["fix"] = INSTALL["onnxruntime-ep-webgpu"]
    elif drivers:
        out.update(state="not_tried", fix="")
    return out
