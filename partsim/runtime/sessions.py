"""Run a model under several ORT session configurations in an isolated child process.

The child is the ORT child's ``outputs`` sub-command (:mod:`partsim.runtime.child_outputs`;
numpy + onnxruntime only, so ``python`` may be another interpreter with another ORT build).
A crash or hang is tried once more in a fresh child; then it, or a missing interpreter,
becomes a record with ``state`` ``crashed``/``timeout``; partsim goes on.
"""

import tempfile
from dataclasses import asdict
from pathlib import Path

from .observation import LEVELS, normalize_level
from .ort_protocol import OutputsRecord, OutputsRequest, OutputsRun
from .process import ChildFailure, run_request

__all__ = ["run_configs", "FALLBACK_REASONS", "fallback_reason"]

# the finite set of reasons a delegate did not run (never a raw vendor string)
FALLBACK_REASONS = ("none", "ep_unknown", "ep_not_available", "session_create_failed", "ep_not_granted",
                    "no_nodes_assigned", "invocation_failed", "crashed", "timeout")


def run_configs(model_path, configs, feeds, python=None, timeout=300.0, seed=0, extra_feeds=None, dims=None):
    """Run ``configs`` (``[{tag, providers, level, threads}]``) in one child process.

    A config may add ``provider_options`` (list parallel to ``providers``) and
    ``invocations`` (``[{"name", "feeds"}]``, ``feeds`` a key of ``extra_feeds`` or
    None for ``feeds``): the same session runs once per entry (lifecycle matrix).  ``dims``
    (``{"batch": 1}``, ``--dim``) are fixed in every session with ORT's free dimension overrides
    (``SessionOptions.add_free_dimension_override_by_name``), as the prediction fixes them.

    Returns
    -------
    (dict, dict)
        The child's record (``state`` added: ok | crashed | timeout) and
        ``{tag: {output name: ndarray}}`` for the runs that completed
        (``{"<tag>~<invocation>": …}`` for invocations).
    """
    import numpy as np

    from ..io.materialize import materialize_weights
    from ..numerics.inputs import load_npz, save_npz

    with tempfile.TemporaryDirectory(prefix="partsim-num-") as tmp:
        runnable = materialize_weights(model_path, Path(tmp) / "model", seed=seed)
        npz = Path(tmp) / "inputs.npz"
        save_npz(npz, feeds)
        extra_paths = {}
        for i, key in enumerate(sorted(extra_feeds or {})):
            extra_paths[key] = Path(tmp) / f"inputs-{i}.npz"
            save_npz(extra_paths[key], extra_feeds[key])
        runs = tuple(_run_of(c, extra_paths, npz) for c in configs)
        req = OutputsRequest(str(runnable), str(npz), tmp, runs, {str(k): int(v) for k, v in (dims or {}).items()})
        try:
            rec = asdict(run_request("outputs", req, OutputsRecord, timeout, python))
        except ChildFailure as exc:
            if exc.cause == "timeout":
                return {"state": "timeout", "runs": []}, {}
            return {"state": "crashed", "runs": [], "error": exc.message}, {}
        rec["state"] = "ok"
        _refuse_unavailable(rec, python)
        arrays = {}
        for r in rec.get("runs", []):
            f = Path(tmp) / f"{r['tag']}.npz"
            if r.get("outputs") is not None and f.is_file():
                arrays[r["tag"]] = load_npz(f)
                # keep the model's output order
                arrays[r["tag"]] = {n: np.asarray(arrays[r["tag"]][n]) for n, _, _ in r["outputs"]}
            for inv in r.get("invocations") or ():
                f = Path(tmp) / f"{r['tag']}~{inv['name']}.npz"
                if inv.get("ok") and f.is_file():
                    z = load_npz(f)
                    arrays[f"{r['tag']}~{inv['name']}"] = {n: np.asarray(z[n]) for n, _, _ in inv["outputs"]}
    return rec, arrays


def _refuse_unavailable(rec, python):
    """A run whose provider this interpreter cannot load (its plugin package absent, no device, no
    WebGPU environment) is no fact about the model: one line (exit 2) with the command that fixes it."""
    import sys

    from ..errors import UsageError
    from .observe import fix_for

    for run in rec.get("runs", []):
        if run.get("unavailable"):
            provider = (run.get("plugin") or {}).get("ep") or run["providers"][0]
            raise UsageError(f"cannot run {provider} here: {run.get('error') or 'not available'} "
                             f"({python or sys.executable}); {fix_for(provider, run.get('error', ''))} "
                             "(partsim doctor lists what this machine can run)")


def _run_of(config, extra_paths, npz):
    """The :class:`OutputsRun` of one config of :func:`run_configs`."""
    invocations = None
    if config.get("invocations") is not None:
        invocations = tuple({"name": i["name"], "inputs_npz": str(extra_paths[i["feeds"]] if i.get("feeds") else npz)}
                            for i in config["invocations"])
    options = config.get("provider_options")
    return OutputsRun(config["tag"], tuple(config["providers"]), LEVELS[normalize_level(config["level"])],
                      int(config.get("threads", 1)), tuple(dict(o or {}) for o in options) if options else None,
                      invocations)


def fallback_reason(run, child_state="ok", known_provider=True):
    """Map a run record to one of :data:`FALLBACK_REASONS`."""
    if child_state in ("crashed", "timeout"):
        return child_state
    st = run.get("stages", {})
    if st.get("availabilityChecked") == "failed":
        return "ep_not_available" if known_provider else "ep_unknown"
    if run.get("failedAt") == "create":
        return "session_create_failed"
    if st.get("delegateCreated") == "failed":
        return "ep_not_granted"
    if st.get("prepareCompleted") == "failed":
        return "no_nodes_assigned"
    if st.get("invocationCompleted") == "failed":
        return "invocation_failed"
    return "none"
