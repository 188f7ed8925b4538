"""partsim observe / providers: real ORT sessions, isolated in a child process."""

import argparse
import tempfile
from pathlib import Path

from ..data import data_path
from ..errors import EXIT_FAIL, EXIT_OK, SessionError, UsageError
from .args import parse_ep_option_list
from ..runtime.observation import normalize_level
from ..runtime.observe import dropped_providers, observation_from_run, run_session
from ..report.output import to_json, write_output
from ..report.observe_table import render_observe_table
from ..report.providers_table import render_providers_table
from .args import RUN_DIM_HELP, add_dim_arg, add_output_args, parse_dims, split_list

OBSERVE_HELP = """\
Run MODEL in a real ONNX Runtime session (in a child process with a timeout) and
record where every node went: get_provider_graph_assignment_info() with
session.record_ep_graph_assignment_info=1, plus the profiling JSON (Memcpy
nodes).  Graph-only models get seeded random weights in a temporary folder.
The observation JSON feeds `partsim verify --observation`.

  partsim observe model.onnx -p cpu -o obs.json
  partsim observe model.onnx -p openvino --python .venv-openvino/bin/python
"""

PROVIDERS_HELP = """\
The provider you request is not necessarily the one you get.  Ask a real ORT
session: requested vs available vs granted (get_providers()) vs actually used
(nodes per provider), with ORT's own warnings.  --strict exits 1 when a requested
accelerator was dropped or got zero nodes.

  partsim providers --request CUDAExecutionProvider,FooExecutionProvider,CPUExecutionProvider --strict
"""


def add_parser(sub):
    p = sub.add_parser("observe", help="record real ORT placement (child process, timeout)",
                       description=OBSERVE_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", metavar="MODEL")
    p.add_argument("--providers", "-p", action="append", metavar="EP[,EP…]", help="providers to request (ORT names)")
    _session_args(p)
    add_output_args(p, formats=("json", "table"))
    p.set_defaults(run=run_observe)


def add_providers_parser(sub):
    p = sub.add_parser("providers", help="requested vs granted vs used providers, from a real session",
                       description=PROVIDERS_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", metavar="MODEL", nargs="?", help="model to place (default: a one-node model)")
    p.add_argument("--request", action="append", required=True, metavar="EP[,EP…]")
    p.add_argument("--strict", action="store_true", help="exit 1 when a requested accelerator was dropped or unused")
    _session_args(p)
    add_output_args(p, formats=("table", "json"))
    p.set_defaults(run=run_providers)


def _session_args(p):
    g = p.add_argument_group("session")
    g.add_argument("--level", default="all", help="graph optimization level: disable, basic, extended, all "
                   "(default all, ORT's default)")
    g.add_argument("--python", metavar="PATH", help="interpreter with another ORT build (e.g. onnxruntime-openvino)")
    g.add_argument("--timeout", type=float, default=120.0, help="seconds before the session counts as hung")
    g.add_argument("--memory-limit", type=float, default=32.0, metavar="GiB",
                   help="address-space ceiling of the session's child process (default 32 GiB; 0 = none)")
    g.add_argument("--seed", type=int, default=0, help="seed for random inputs and weights")
    add_dim_arg(p, RUN_DIM_HELP, g)
    g.add_argument("--inputs", metavar="FILE.npz", help="inputs keyed by name (no pickles)")
    add_qnn_args(g)


def add_qnn_args(g):
    """``--soc-model`` / ``--qnn-backend`` (QNN) and ``--ep-option`` (any plugin EP): options of the plugin
    EPs (see partsim/runtime/plugin_eps.py)."""
    g.add_argument("--soc-model", default="60", metavar="N",
                   help="QNN: SoC model the HTP emulator builds for (default 60, Snapdragon 8 Gen 3)")
    g.add_argument("--qnn-backend", default="htp", choices=("htp", "cpu", "gpu"), help="QNN: backend library")
    g.add_argument("--ep-option", action="append", default=[], metavar="KEY=VALUE",
                   help="a provider option of the plugin EP (repeatable), e.g. enableInt64=1 or "
                        "preferredLayout=NCHW for WebGPU")


def ep_options(args, providers):
    """Provider options for the session child: those of the plugin EP among ``providers`` (QNN's
    ``--soc-model``/``--qnn-backend`` and every ``--ep-option``), ``None`` when no plugin EP is asked for."""
    from ..runtime.plugin_eps import PLUGINS, QNN

    extra = parse_ep_option_list(getattr(args, "ep_option", None))
    if not any(p in PLUGINS for p in providers):
        if extra:
            raise UsageError("--ep-option is for a plugin EP (qnn, webgpu, openvino)")
        return None
    if QNN not in providers:
        return extra
    if not str(args.soc_model).isdigit():
        raise UsageError(f"--soc-model expects a number, got {args.soc_model!r}")
    return {"soc_model": str(args.soc_model), "backend": args.qnn_backend, **extra}


def refuse_unavailable(rec, model):
    """A plugin EP this machine cannot run (not installed, no device, no WebGPU environment) is no fact
    about the model: one line, exit 2."""
    if rec.get("unavailable"):
        raise UsageError(f"cannot run this session here: {rec.get('error')}", model)


def _prepare(model, tmp, seed):
    """A runnable copy: weights materialized when the model is graph-only."""
    try:
        from ..io.materialize import materialize_weights
    except ImportError:  # pragma: no cover - materialize ships with partsim
        return Path(model)
    return materialize_weights(model, tmp, seed=seed)


def _observe(model, providers, args):
    level = normalize_level(args.level)
    if not Path(model).is_file():
        raise UsageError("no such model file", model)
    with tempfile.TemporaryDirectory(prefix="partsim-observe-") as tmp:
        runnable = _prepare(model, Path(tmp), args.seed)
        rec = run_session(runnable, providers, level, args.python, args.timeout, args.seed, parse_dims(args.dim),
                          args.inputs, memory_limit=int(args.memory_limit * 1024**3),
                          ep_options=ep_options(args, providers))
    refuse_unavailable(rec, model)
    refuse_unfinished(rec, model)
    return rec, level


def refuse_unfinished(rec, model):
    """A session that timed out or crashed, in a fresh child too (:func:`partsim.runtime.observe.run_session`
    tries twice), is no observation of the model: exit 2 with one line naming the cause."""
    if rec.get("state") in ("crashed", "timeout"):
        what = "timed out" if rec["state"] == "timeout" else "crashed"
        raise SessionError(f"the ORT session {what}, in a fresh process too ({rec.get('error', '')}); "
                           "that says nothing about the model, so nothing is recorded", model)


def run_observe(args):
    from ..rules.providers import canonical_name

    # aliases (openvino, cuda, …) name the real ORT providers; ORT itself knows only the real names
    providers = [canonical_name(p.partition(":")[0]) for p in split_list(args.providers)] or ["CPUExecutionProvider"]
    rec, level = _observe(args.model, providers, args)
    obs = observation_from_run(rec, level)
    obs["model"] = args.model
    if rec.get("error"):
        obs["error"] = rec["error"]
    text = to_json(obs) if args.format == "json" else render_observe_table(obs)
    plugin = obs.get("plugin")
    if plugin and args.format != "json":  # the plugin EP's version and options, and why a session failed
        opts = " ".join(f"{k}={v}" for k, v in plugin["options"].items())
        text = (f"{plugin['package']} {plugin['version']}  {opts}\n"
                + (f"error     {obs['error']}\n" if obs.get("error") else "") + text)
    write_output(text, args.output)
    return EXIT_OK if obs["state"] == "ok" else EXIT_FAIL


def run_providers(args):
    from ..rules.providers import canonical_name

    requested = [canonical_name(r) for r in split_list(args.request)]  # aliases in, real names out
    model = args.model or str(data_path("one_relu.onnx"))
    rec, _ = _observe(model, requested, args)
    available = rec.get("available", [])
    granted = rec.get("granted", [])
    used = {}
    for ep, members in rec.get("assignment") or []:
        used[ep] = used.get(ep, 0) + len(members)
    dropped = dropped_providers(requested, granted)
    warnings = list(rec.get("warnings", [])) + [f"EP Error {b}" for b in rec.get("stderr_banners", [])]
    result = {"requested": requested, "available": available, "granted": granted, "used": used,
              "dropped": dropped, "warnings": warnings, "state": rec.get("state")}
    accel_requested = [r for r in requested if r != "CPUExecutionProvider"]
    failed = bool(dropped) or any(used.get(r, 0) == 0 for r in accel_requested if r in granted)
    result["passed"] = not (args.strict and failed)
    text = to_json(result) if args.format == "json" else render_providers_table(result)
    write_output(text, args.output)
    return EXIT_FAIL if (args.strict and failed) else EXIT_OK


DOCTOR_HELP = """\
Which real execution providers this machine can observe (partsim verify --observe,
partsim observe): CPU, QNN (the onnxruntime-qnn plugin; its HTP emulator on x86-64
Linux), OpenVINO as the plugin EP onnxruntime-ep-openvino (table `openvino`; an Intel
CPU, or the checkout's test harness made by `make openvino-plugin`:
--openvino-plugin-python) and as its own onnxruntime build (table `openvino:1.24`, a
second interpreter: --openvino-python, else the checkout's .venv-openvino made by
`make openvino`), and WebGPU (the onnxruntime-ep-webgpu plugin and a Vulkan driver).
Each is tried with a real one-node session in a child process; a missing one comes with
the one command that installs it (docs/environments.md).

--setup webgpu makes the Vulkan environment WebGPU needs first (Mesa's lavapipe, unpacked
into $PARTSIM_WEBGPU_HOME, the checkout's .webgpu, or ~/.local/share/partsim/webgpu;
apt-get and the network needed, nothing installed system-wide).

Exit codes: 0 every provider observable, 1 at least one is not (each with its fix),
2 bad usage (an --openvino-python that is not a file) or a failed --setup.
"""


def add_doctor_parser(sub):
    p = sub.add_parser("doctor", help="which real execution providers this machine can observe, and how to get "
                                      "the missing ones", description=DOCTOR_HELP,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--openvino-python", metavar="PATH",
                   help="interpreter whose onnxruntime has the OpenVINO EP built in, onnxruntime-openvino 1.24 "
                        "(default: .venv-openvino/bin/python of this checkout, when there)")
    p.add_argument("--openvino-plugin-python", metavar="PATH",
                   help="interpreter with the onnxruntime-ep-openvino plugin (default: the checkout's "
                        ".venv-ovplugin harness or venv when there, else this one)")
    p.add_argument("--setup", choices=("webgpu",), help="make the WebGPU Vulkan environment first")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per probe session")
    add_output_args(p, formats=("table", "json"))
    p.set_defaults(run=run_doctor)


def _interpreter(given, option, defaults):
    """``given`` (which must be a file), else the first of ``defaults`` there, else ``None``."""
    if given:
        if not Path(given).is_file():
            raise UsageError(f"{option} {given}: no such file")
        return Path(given)
    return next((p for p in defaults if p.is_file()), None)


def doctor_report(openvino_python=None, timeout=120.0, openvino_plugin_python=None):
    """``{"schemaVersion", "providers": [probe records], "observable": [names]}`` for this machine; each
    record names the ``table`` it observes for (``openvino``: the plugin EP, ``openvino:1.24``: onnxruntime-openvino)."""
    import importlib.util
    import sys

    from ..runtime import observe

    ov = _interpreter(openvino_python, "--openvino-python", (observe.OPENVINO_VENV,))
    plugin = _interpreter(openvino_plugin_python, "--openvino-plugin-python",
                          observe.OPENVINO_PLUGIN_PYTHONS) or Path(sys.executable)
    rows = [dict(observe.probe_provider("CPUExecutionProvider", timeout=timeout), table="cpu"),
            dict(observe.probe_provider("QNNExecutionProvider", timeout=timeout), table="qnn"),
            dict(observe.probe_provider("OpenVINOExecutionProvider", str(plugin), timeout), table="openvino")]
    if ov is not None:
        row = observe.probe_provider("OpenVINOExecutionProvider", str(ov), timeout)
        if row["state"] != "observable":
            row["fix"] = observe.fix_for("OpenVINOExecutionProvider:1.24", row["detail"])
    else:
        where = observe.OPENVINO_VENV if observe.in_checkout() else None
        row = {"provider": "OpenVINOExecutionProvider", "python": str(where or ""), "runtime": "", "state": "missing",
               "detail": "no interpreter with onnxruntime-openvino " + (f"({where} is absent)" if where else
                                                                         "(--openvino-python names one)"),
               "fix": observe.fix_for("OpenVINOExecutionProvider:1.24")}
    rows.append(dict(row, table="openvino:1.24"))
    if importlib.util.find_spec("partsim.runtime.plugin_eps") is not None:  # partsim runs WebGPU sessions
        rows.append(dict(observe.probe_provider("WebGpuExecutionProvider", timeout=timeout), table="webgpu"))
    else:
        rows.append(dict(observe.probe_webgpu_prerequisites(), table="webgpu"))
    return {"schemaVersion": "1", "providers": rows,
            "observable": [r["table"] for r in rows if r["state"] == "observable"]}


def run_doctor(args):
    from ..report.doctor_table import render_doctor_table

    if args.setup == "webgpu":
        from ..progress import stage
        from ..runtime.webgpu_host import home
        from ..runtime.webgpu_setup import setup_webgpu

        with stage("making the WebGPU Vulkan environment", f"made the WebGPU Vulkan environment in {home()}"):
            setup_webgpu(home())
    doc = doctor_report(args.openvino_python, args.timeout, args.openvino_plugin_python)
    text = to_json(doc) if args.format == "json" else render_doctor_table(doc)
    write_output(text, args.output)
    return EXIT_OK if len(doc["observable"]) == len(doc["providers"]) else EXIT_FAIL
