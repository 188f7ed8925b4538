"""Execution receipts: one candidate, one device, one sample, the whole lifecycle matrix.

A receipt (schema ``partsim/data/receipt.schema.json``, version :data:`RECEIPT_SCHEMA_VERSION`)
is what the release gate (:mod:`partsim.numerics.gate`) reads.  ``partsim receipt``
makes one on this machine; a device makes one in the same format and it is imported
as it is.  It holds no user content: input digests, shapes, dtypes and quantization
parameters only (outputs: digests plus the first :data:`partsim.numerics.describe.HEAD` values).

Everything runs in **one** child process (:mod:`partsim.runtime.sessions`, the
runner of ``run-compare``) under the candidate's interpreter (``python``), so the
CPU baseline and the accelerator use the same runtime build, in this order:

1. ``cpu``: the CPU baseline session (``CPUExecutionProvider`` only), invoked on the
   sample and, when the model has a dynamic dimension, on the shape-changed sample;
2. ``accel``: the accelerator session, invoked ``repeat`` times on the sample
   (``first`` = the first invocation, ``repeat`` = the others, each compared with the
   CPU baseline and with the first: outputs must not drift), then on the
   shape-changed sample and once more on the original (``shape_change``);
3. ``rebuild``: the session is released and a new one built and invoked;
4. ``induced``: the accelerator is requested so that it fails, deterministically
   (``invalid_option``: an invalid provider option, e.g. OpenVINO
   ``device_type=PARTSIM_INVALID``, which makes the EP factory fail; or
   ``unknown_provider``: a provider name no runtime has).  This session is never
   invoked nor reused;
5. ``fresh_cpu``: a **new** CPU session (fallbackPolicy ``cpu``) in the same process,
   invoked on the sample; its outputs must be bitwise equal to the baseline's
   (same runtime, same options, same input: any difference means the failed
   delegate left state behind).

CPU baseline gate: with ``expected`` (``.npz`` keyed by output name, or ONNX
test-data ``output_<n>.pb`` files) the baseline outputs are checked against those
authoritative outputs under the project tolerance; if they disagree, or no expected
outputs were given, every accelerator cell of the receipt is ``blocked`` (the
observed state is kept in ``observedState``).

Cell states (:data:`partsim.numerics.receipt_schema.CELL_STATES`): ``passed`` (delegate invoked, outputs within
tolerance, no drift), ``failed`` (delegate invoked, outputs out of tolerance or
drifting; for ``fallback``: fresh CPU outputs differ or did not come), ``fallback_cpu``
(the delegate did not run; the CPU did), ``error`` (no output, or the failure could
not be induced), ``not_applicable`` (``shape_change`` on a model without a dynamic
dimension), ``blocked`` (CPU baseline not verified).
"""

from dataclasses import dataclass
from pathlib import Path

from ..errors import ObservationError, UsageError
from .run_compare import resolve_providers
from .cells import baseline_check, lifecycle_cells, numeric_result, partition_summary, run_record
from .describe import describe_arrays, dynamic_dims, head_values, quant_params
from .expected import pb_set, load_expected
from .receipt_schema import FALLBACK_POLICIES, RECEIPT_SCHEMA_VERSION

__all__ = ["make_receipt"]

FAILURE_METHODS = ("invalid_option", "unknown_provider")


FAILING_PROVIDER = "PartsimInducedFailureExecutionProvider"


# provider options that make the EP factory fail (checked: onnxruntime-openvino 1.24.1 logs
# "Failed to create OpenVINOExecutionProvider" and builds a CPU-only session)
INVALID_OPTIONS = {"OpenVINOExecutionProvider": {"device_type": "PARTSIM_INVALID"},
                   "CUDAExecutionProvider": {"device_id": "9999"},
                   "TensorrtExecutionProvider": {"device_id": "9999"}}


def make_receipt(model, providers, abs_tol, rel_tol, *, python=None, sample=None, device=None, seed=0,
                 inputs=None, dims=None, shape_dims=None, expected=None, level="all", threads=1,
                 cpu_level="disable", cpu_threads=1, repeat=3, force_failure=False, failure_method=None,
                 fallback_policy="cpu", top_k=None, thresholds=None, bundle=None, timeout=300.0):
    """Run the lifecycle matrix of ``model`` and return the receipt (a dict, schema-valid).

    ``inputs``: arrays keyed by input name (else seeded by ``seed``); ``expected``: path
    of authoritative outputs (see :func:`load_expected`); ``bundle``: a
    :func:`partsim.numerics.bundle.bundle_id` result (else the model file's alone).
    """
    from .bundle import bundle_id
    from ..runtime.sessions import run_configs

    if repeat < 2:
        raise UsageError(f"--repeat must be at least 2 (first invocation + repeats), got {repeat}")
    if fallback_policy not in FALLBACK_POLICIES:
        raise UsageError(f"--fallback-policy must be one of {', '.join(FALLBACK_POLICIES)}")
    providers = resolve_providers(providers)
    target = providers[0]
    method, fail_cfg = _induced_failure(providers, failure_method)
    sample_set = _sample_set(model, seed, inputs, dims, shape_dims, expected, sample)
    acc_cfg = fail_cfg if force_failure else {"providers": providers}
    configs = _session_configs(sample_set.dynamic, repeat, acc_cfg, fail_cfg, fallback_policy,
                               {"level": cpu_level, "threads": cpu_threads}, {"level": level, "threads": threads})
    rec, arrays = run_configs(model, configs, sample_set.feeds, python=python, timeout=timeout, seed=seed,
                              extra_feeds=sample_set.extra, dims=dims)
    if "cpu~main" not in arrays:
        run = run_record(rec, "cpu")
        raise ObservationError(f"the CPU baseline did not run ({rec.get('state', 'crashed')}): "
                               f"{run.get('error') or rec.get('error', '')}"[:500], model)
    cpu = arrays["cpu~main"]

    def num(a, b, business=True):
        return numeric_result(a, b, abs_tol, rel_tol, top_k if business else None, thresholds if business else None)

    base_check = baseline_check(cpu, sample_set.expected, sample_set.expected_source, abs_tol, rel_tol)
    cells, stages, dstate, reason = lifecycle_cells(
        rec, arrays, num, sample_set, repeat, acc_cfg["providers"][0], fail_cfg["providers"][0], method,
        fallback_policy)
    if base_check["result"] != "pass":
        for cell in cells.values():
            if cell["state"] != "not_applicable":
                cell["observedState"] = cell["state"]
                cell["state"] = "blocked"
    tol = {"projectAbsTolerance": abs_tol, "projectRelTolerance": rel_tol}
    if top_k:
        tol["topK"] = top_k
    if thresholds:
        tol["decisionThresholds"] = sorted(set(float(t) for t in thresholds))
    accel = {"requestedProviders": providers, "target": target, "optLevel": level, "threads": threads,
             "forcedFailure": bool(force_failure)}
    baseline = {"optLevel": cpu_level, "threads": cpu_threads, "check": base_check}
    return _clean(_document(rec, arrays, bundle or bundle_id(model), sample_set, sample, seed, device, tol,
                            baseline, accel, cells, stages, dstate, reason, fallback_policy,
                            partition_summary(model, run_record(rec, "accel"), acc_cfg["providers"][0])))


def _induced_failure(providers, failure_method):
    """How the ``fallback`` cell makes the accelerator fail: the method and its session config."""
    target = providers[0]
    method = failure_method or ("invalid_option" if target in INVALID_OPTIONS else "unknown_provider")
    if method not in FAILURE_METHODS:
        raise UsageError(f"--failure-method must be one of {', '.join(FAILURE_METHODS)}")
    if method == "invalid_option" and target not in INVALID_OPTIONS:
        raise UsageError(f"no known invalid provider option for {target}; use --failure-method unknown_provider")
    if method == "invalid_option":
        return method, {"providers": providers,
                        "provider_options": [INVALID_OPTIONS[target] if p == target else {} for p in providers]}
    return method, {"providers": [FAILING_PROVIDER] + providers[1:]}


@dataclass
class SampleSet:
    """The inputs one receipt runs on: the sample, its shape-changed twin, the expected outputs."""

    feeds: dict
    source: str  # npz | seeded | onnx-test-data
    dynamic: list  # symbolic dimension names of the inputs
    extra: dict  # extra feeds by key ("shape": the shape-changed sample)
    shape_dims: object  # the values the shape-changed sample gives each dynamic dimension
    expected: object
    expected_source: object
    quant: dict


def _sample_set(model, seed, inputs, dims, shape_dims, expected, sample):
    from ..io.read import read_model_proto
    from .inputs import graph_input_specs, prepare_feeds, seeded_inputs

    proto, _ = read_model_proto(model)
    specs = graph_input_specs(proto)
    exp_arrays, exp_source = None, None
    source = "npz" if inputs is not None else "seeded"
    if expected is not None:
        exp_arrays, exp_source, pb_dir = load_expected(expected, [o.name for o in proto.graph.output], sample)
        if pb_dir is not None and inputs is None and list(Path(pb_dir).glob("input_*.pb")):
            inputs = pb_set(pb_dir, "input", [s[0] for s in specs])
            source = "onnx-test-data"
    feeds = prepare_feeds(model, seed, inputs, dims)
    fixed = {str(k): int(v) for k, v in (dims or {}).items()}
    # a dimension --dim fixes is fixed in the sessions too (free dimension overrides): not dynamic there
    dyn = [d for d in dynamic_dims(specs) if d not in fixed]
    extra, used = {}, None
    if dyn:
        base = {k: int(v) for k, v in (dims or {}).items()}
        for name, _, shape in specs:  # the values the sample really has (from --inputs, or seeded)
            for d, actual in zip(shape, feeds[name].shape):
                if not (isinstance(d, int) and d >= 0):
                    base[str(d)] = int(actual)
        used = {d: int((shape_dims or {}).get(d, base.get(d, 1) + 1)) for d in dyn}
        extra["shape"] = seeded_inputs(specs, seed + 1, {**fixed, **used})
        if all(tuple(extra["shape"][n].shape) == tuple(feeds[n].shape) for n in feeds):
            raise UsageError("--shape-dim leaves every input shape unchanged; the shape-change cell needs a change")
    return SampleSet(feeds, source, dyn, extra, used, exp_arrays, exp_source, quant_params(proto))


def _session_configs(dyn, repeat, acc_cfg, fail_cfg, fallback_policy, cpu_run, acc_run):
    """The sessions of one receipt, in the order the child runs them (see the module docstring)."""
    main_inv = [{"name": "main"}]
    acc_invs = [{"name": f"r{i}"} for i in range(repeat)]
    if dyn:
        acc_invs += [{"name": "shape", "feeds": "shape"}, {"name": "back"}]
    configs = [dict(cpu_run, tag="cpu", providers=["CPUExecutionProvider"],
                    invocations=main_inv + ([{"name": "shape", "feeds": "shape"}] if dyn else [])),
               dict(acc_run, tag="accel", invocations=acc_invs, **acc_cfg),
               dict(acc_run, tag="rebuild", invocations=main_inv, **acc_cfg),
               dict(acc_run, tag="induced", invocations=[], **fail_cfg)]
    if fallback_policy == "cpu":
        configs.append(dict(cpu_run, tag="fresh_cpu", providers=["CPUExecutionProvider"], invocations=main_inv))
    return configs


def _execution_provider(target, package, accel_run):
    """What ran the target: a plugin EP's own package, version and options (runtime/plugin_eps.py), else
    the ORT build that has it built in."""
    plugin = (accel_run or {}).get("plugin")
    if plugin and plugin.get("ep") == target:
        return {"name": target, "implementation": plugin["package"], "version": plugin["version"],
                "options": plugin["options"]}
    return {"name": target, "implementation": package[0], "version": package[1]}


def _document(rec, arrays, bundle, sample_set, sample, seed, device, tol, baseline, accel, cells, stages,
              dstate, reason, fallback_policy, partitions):
    """The receipt document around the judged cells."""
    import platform

    from .. import __version__
    from .inputs import input_digest

    cpu, first = arrays["cpu~main"], arrays.get("accel~r0")
    quant = sample_set.quant
    runtime = str(rec.get("runtime") or "")
    rt_name, _, rt_version = runtime.partition(" ")
    package = rec.get("package") or [rt_name, rt_version]
    env = rec.get("environment") or {}
    target = accel["target"]
    short = target.replace("ExecutionProvider", "").lower() or target
    device = device or f"{(env.get('os') or platform.system()).lower()}-{env.get('machine') or platform.machine()}" \
                       f"-{short}"
    digest = input_digest(sample_set.feeds)
    seeded = sample_set.source == "seeded"
    fr0 = cells["first"]
    top_reason = reason
    if reason == "none" and fr0.get("rawTensorResult") == "fail":
        top_reason = "output_out_of_tolerance"
    return {
        "schemaVersion": RECEIPT_SCHEMA_VERSION,
        "kind": "partsim.executionReceipt",
        "candidate": {"modelBundleId": bundle["modelBundleId"],
                      "bundleParts": {p: v["sha256"] for p, v in bundle["parts"].items()},
                      "runtime": {"name": rt_name or "onnxruntime", "version": rt_version,
                                  "package": package[0], "packageVersion": package[1]},
                      "executionProvider": _execution_provider(target, package, run_record(rec, "accel")),
                      "partsimVersion": __version__},
        "environment": {"device": device, "deviceModel": env.get("cpu"), "os": env.get("os"),
                        "osRelease": env.get("osRelease"), "abi": env.get("abi"), "machine": env.get("machine"),
                        "python": env.get("python"), "driver": None, "source": "partsim receipt (this machine)"},
        "sample": {"id": sample or (f"seed{seed}" if seeded else "inputs"),
                   "source": sample_set.source, "seed": seed if seeded else None,
                   "inputDigest": digest, "inputs": describe_arrays(sample_set.feeds, quant),
                   "dynamicDims": sample_set.dynamic},
        "tolerance": tol,
        "cpuBaseline": {"providers": ["CPUExecutionProvider"], "optLevel": baseline["optLevel"],
                        "threads": baseline["threads"], "runtime": runtime,
                        "invocationCompleted": (run_record(rec, "cpu").get("stages") or {}).get(
                            "invocationCompleted", "failed"),
                        "inputDigest": digest,
                        "outputs": [dict(o, head=head_values(cpu[o["name"]])) for o in describe_arrays(cpu, quant)],
                        "baselineCheck": baseline["check"]},
        "accelerator": {"requestedProviders": accel["requestedProviders"], "target": target,
                        "optLevel": accel["optLevel"], "threads": accel["threads"],
                        "runtime": runtime, "forcedFailure": accel["forcedFailure"],
                        "outputs": [dict(o, head=head_values(first[o["name"]])) for o in describe_arrays(first, quant)]
                        if first is not None else []},
        "stages": stages,
        "delegateState": dstate,
        "fallbackPolicy": fallback_policy,
        "fallbackReason": top_reason,
        "partitionSummary": partitions,
        "rawTensorResult": fr0.get("rawTensorResult"),
        "businessResult": fr0.get("businessResult"),
        "cpuAfterFallback": {"freshSession": fallback_policy == "cpu",
                             "cpuInvocationResult": cells["fallback"]["cpuInvocationResult"],
                             "rawTensorResult": cells["fallback"].get("rawTensorResult"),
                             "bitwiseEqual": cells["fallback"].get("bitwiseEqual")},
        "lifecycle": cells,
    }


def _clean(x):
    """Drop non-JSON floats (never NaN/inf in a receipt) and make everything plain JSON."""
    import math

    if isinstance(x, dict):
        return {str(k): _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    if isinstance(x, float) and not math.isfinite(x):
        return repr(x)
    return x
