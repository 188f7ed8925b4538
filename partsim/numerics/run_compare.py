"""CPU baseline vs accelerated path in real ORT, written as a receipt and compared (docs/contract.md §6).

Both sides run the same model file on the same feeds (seeded or ``--inputs``), each
in its own child process (:mod:`partsim.runtime.sessions`); the accelerated side
may run under another interpreter (``python``, e.g. ``.venv-openvino/bin/python``).
The receipt has one case per model output: each side carries ``modelBundleId``
(of the model file, :mod:`partsim.numerics.bundle`), ``inputDigest`` (computed
by each child from the feeds it actually used), ``shape``, ``dtype``, ``values``
(flattened, C order) and ``delegateState``; the delegate side adds the stages
``availabilityChecked / delegateCreated / prepareCompleted / invocationCompleted``
(each ``ok`` | ``failed`` | ``skipped``), ``fallbackReason`` (one of
:data:`partsim.runtime.sessions.FALLBACK_REASONS`, never a vendor's error text)
and a ``partitionSummary`` excerpt (``delegatedNodeCount``, ``partitionCount``,
``nodesPerProvider``).

``delegateState``: ``invoked`` (the first requested provider was granted, got at
least one node and the run completed), ``fallback_cpu`` (the session ran, but
without the requested provider's nodes), ``failed`` (no output).  With
``CPUExecutionProvider`` as the "accelerated" side (another level or thread
count), ``invoked`` means the CPU EP ran it: a real receipt for CPU-vs-CPU checks.
"""

from ..errors import ObservationError
from ..rules.providers import KNOWN_PROVIDERS, canonical_name

__all__ = ["run_compare", "resolve_providers", "DELEGATE_STATES"]

DELEGATE_STATES = ("invoked", "fallback_cpu", "failed")


def resolve_providers(names):
    """Aliases -> ORT names (a table variant, ``openvino:1.24``, names its provider), duplicates dropped, CPU
    appended last if absent."""
    out = []
    for n in names:
        real = canonical_name(n.partition(":")[0])
        if real not in out:
            out.append(real)
    if "CPUExecutionProvider" not in out:
        out.append("CPUExecutionProvider")
    return out


def _side(values, run, bundle, digest, state):
    import numpy as np

    return {"modelBundleId": bundle, "inputDigest": digest, "shape": list(map(int, values.shape)),
            "dtype": str(values.dtype), "values": np.asarray(values).ravel().tolist(), "delegateState": state}


def _delegate_state(reason, run):
    if reason == "none":
        return "invoked"
    if run.get("stages", {}).get("invocationCompleted") == "ok":
        return "fallback_cpu"
    return "failed"


def run_compare(model, providers, abs_tol, rel_tol, seed=0, inputs=None, python=None, level="all", threads=1,
                cpu_level="disable", cpu_threads=1, top_k=None, thresholds=None, timeout=300.0, dims=None):
    """Run both sides, build the receipt, compare it.

    Returns
    -------
    (dict, dict)
        The receipt (docs/contract.md §6 shape plus the stage fields) and the ``compare`` result.
    """
    from .bundle import bundle_id
    from .compare import compare_receipt
    from .inputs import prepare_feeds
    from ..runtime.sessions import fallback_reason, run_configs

    providers = resolve_providers(providers)
    bundle = bundle_id(model)["modelBundleId"]
    feeds = prepare_feeds(model, seed, inputs, dims)
    cpu_rec, cpu_out = run_configs(model, [{"tag": "cpu", "providers": ["CPUExecutionProvider"], "level": cpu_level,
                                            "threads": cpu_threads}], feeds, timeout=timeout, seed=seed,
                                   dims=dims)
    if "cpu" not in cpu_out:
        run = (cpu_rec.get("runs") or [{}])[0]
        raise ObservationError(f"the CPU baseline did not run ({fallback_reason(run, cpu_rec['state'])}): "
                               f"{run.get('error') or cpu_rec.get('error', '')}", model)
    d_rec, d_out = run_configs(model, [{"tag": "delegate", "providers": providers, "level": level,
                                        "threads": threads}], feeds, python=python, timeout=timeout, seed=seed,
                               dims=dims)
    d_run = (d_rec.get("runs") or [{}])[0]
    target = providers[0]
    reason = fallback_reason(d_run, d_rec["state"], known_provider=target in KNOWN_PROVIDERS)
    state = _delegate_state(reason, d_run)
    nodes = d_run.get("nodesPerProvider") or {}
    summary = {"delegatedNodeCount": int(nodes.get(target, 0)),
               "partitionCount": int((d_run.get("groupsPerProvider") or {}).get(target, 0)),
               "nodesPerProvider": dict(sorted(nodes.items()))}
    common = {"requestedProviders": providers, "grantedProviders": d_run.get("granted", []),
              "stages": d_run.get("stages", {}), "fallbackReason": reason, "partitionSummary": summary,
              "runtime": d_rec.get("runtime"), "optLevel": level, "threads": threads}
    cases = []
    for name, cval in cpu_out["cpu"].items():
        cpu = _side(cval, None, bundle, cpu_rec.get("inputDigest"), "cpu_reference")
        cpu.update(output=name, runtime=cpu_rec.get("runtime"), optLevel=cpu_level, threads=cpu_threads)
        dval = (d_out.get("delegate") or {}).get(name)
        if dval is not None:
            dlg = _side(dval, d_run, bundle, d_rec.get("inputDigest"), state)
        else:
            dlg = {"modelBundleId": bundle, "inputDigest": d_rec.get("inputDigest"), "delegateState": state}
        dlg.update(common, output=name)
        cases.append({"output": name, "cpu": cpu, "delegate": dlg})
    receipt = {"projectAbsTolerance": abs_tol, "projectRelTolerance": rel_tol, "seed": seed,
               "model": str(model), "cases": cases}
    if top_k is not None:
        receipt["topK"] = top_k
    if thresholds:
        receipt["decisionThresholds"] = list(thresholds)
    return receipt, compare_receipt(receipt)
