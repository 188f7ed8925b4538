"""Execution receipts: one candidate, one device, one sample, the whole lifecycle matrix.

A receipt (schema ``partsim/data/receipt.schema.json``, version :data:`RECEIPT_SCHEMA_VERSION`)
is what the release gate (:mod:`partsim.numerics.gate`) reads.  ``partsim receipt``
makes one on this machine; a device makes one in the same format and it is imported
as it is.  It holds no user content: input digests, shapes, dtypes and quantization
parameters only (outputs: digests plus the first :data:`HEAD` values).

Everything runs in **one** child process (:mod:`partsim.numerics.sessions`, the
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

Cell states (:data:`CELL_STATES`): ``passed`` (delegate invoked, outputs within
tolerance, no drift), ``failed`` (delegate invoked, outputs out of tolerance or
drifting; for ``fallback``: fresh CPU outputs differ or did not come), ``fallback_cpu``
(the delegate did not run; the CPU did), ``error`` (no output, or the failure could
not be induced), ``not_applicable`` (``shape_change`` on a model without a dynamic
dimension), ``blocked`` (CPU baseline not verified).
"""

import hashlib
from pathlib import Path

from ..errors import ObservationError, UsageError
from .run_compare import resolve_providers
from .sessions import FALLBACK_REASONS

__all__ = ["RECEIPT_SCHEMA_VERSION", "CELLS", "CELL_STATES", "STAGE_STATES", "FALLBACK_POLICIES",
           "RECEIPT_FALLBACK_REASONS", "make_receipt", "load_expected", "validate_receipt", "receipt_schema",
           "summarize"]

RECEIPT_SCHEMA_VERSION = "1.0"
CELLS = ("first", "repeat", "shape_change", "rebuild", "fallback")
CELL_STATES = ("passed", "failed", "fallback_cpu", "error", "not_applicable", "blocked")
STAGE_STATES = ("ok", "failed", "skipped")
STAGES = ("availabilityChecked", "delegateCreated", "prepareCompleted", "invocationCompleted")
FALLBACK_POLICIES = ("cpu", "disable_feature", "reject_device")
# the finite reasons of sessions.py, plus a delegate whose outputs were out of tolerance
RECEIPT_FALLBACK_REASONS = tuple(FALLBACK_REASONS) + ("output_out_of_tolerance",)
FAILURE_METHODS = ("invalid_option", "unknown_provider")
FAILING_PROVIDER = "PartsimInducedFailureExecutionProvider"
# provider options that make the EP factory fail (checked: onnxruntime-openvino 1.24.1 logs
# "Failed to create OpenVINOExecutionProvider" and builds a CPU-only session)
INVALID_OPTIONS = {"OpenVINOExecutionProvider": {"device_type": "PARTSIM_INVALID"},
                   "CUDAExecutionProvider": {"device_id": "9999"},
                   "TensorrtExecutionProvider": {"device_id": "9999"}}
HEAD = 8


def receipt_schema():
    """The receipt JSON Schema shipped in ``partsim/data``."""
    import json
    from importlib import resources

    return json.loads(resources.files("partsim.data").joinpath("receipt.schema.json").read_text(encoding="utf-8"))


def validate_receipt(data, path=None):
    """Validate against the schema; :class:`ObservationError` naming the first problem."""
    import jsonschema

    v = jsonschema.Draft7Validator(receipt_schema())
    errors = sorted(v.iter_errors(data), key=lambda e: (list(map(str, e.absolute_path)), e.message))
    if errors:
        e = errors[0]
        where = "/".join(map(str, e.absolute_path)) or "(top)"
        raise ObservationError(f"not a partsim execution receipt {RECEIPT_SCHEMA_VERSION}: at {where}: "
                               f"{e.message[:200]}", path)
    return data


# ---------------------------------------------------------------- inputs, expected outputs

def _read_pb(path):
    import onnx
    from onnx import numpy_helper

    t = onnx.TensorProto()
    try:
        t.ParseFromString(Path(path).read_bytes())
        return t.name, numpy_helper.to_array(t)
    except Exception as exc:  # protobuf DecodeError and friends
        raise UsageError(f"not a readable ONNX TensorProto: {type(exc).__name__}", path) from None


def _pb_set(folder, prefix, names):
    import re

    files = sorted((int(m.group(1)), f) for f in Path(folder).glob(f"{prefix}_*.pb")
                   if (m := re.fullmatch(rf"{prefix}_(\d+)\.pb", f.name)))
    out = {}
    for n, f in files:
        tname, arr = _read_pb(f)
        name = tname or (names[n] if n < len(names) else None)
        if name is None:
            raise UsageError(f"{f.name}: no tensor name and no model {prefix} number {n}", f)
        out[name] = arr
    return out


def load_expected(path, output_names, sample=None):
    """Authoritative outputs: ``(arrays, source, inputs-or-None)``.

    ``path`` is an ``.npz`` file, or a folder holding ``<sample>.npz``, a single
    ``.npz``, or ONNX test data (``output_<n>.pb``, and ``input_<n>.pb`` which then
    are the sample's inputs unless ``--inputs`` is given).
    """
    from .inputs import load_npz

    p = Path(path)
    if p.is_file():
        return load_npz(p), "npz", None
    if not p.is_dir():
        raise UsageError("no such expected-outputs file or folder", path)
    if sample and (p / f"{sample}.npz").is_file():
        return load_npz(p / f"{sample}.npz"), "npz", None
    npzs = sorted(p.glob("*.npz"))
    if len(npzs) == 1:
        return load_npz(npzs[0]), "npz", None
    if list(p.glob("output_*.pb")):
        return _pb_set(p, "output", output_names), "onnx-test-data", p
    raise UsageError("expected outputs: need one .npz (keyed by output name) or output_<n>.pb files", path)


def _digest_array(a):
    import numpy as np

    from .inputs import tensor_header

    a = np.ascontiguousarray(np.asarray(a))
    a = a.astype(a.dtype.newbyteorder("<"), copy=False)
    return hashlib.sha256(tensor_header(a) + a.tobytes(order="C")).hexdigest()


def _head(a):
    import numpy as np

    flat = np.asarray(a).ravel()[:HEAD]
    return [float(x) if np.isfinite(x) else repr(float(x)) for x in flat.astype(np.float64)] \
        if flat.dtype.kind in "fiub" else []


def _describe(arrays, quant=None):
    quant = quant or {}
    out = []
    for name, a in arrays.items():
        item = {"name": name, "shape": list(map(int, a.shape)), "dtype": str(a.dtype), "sha256": _digest_array(a)}
        item.update(quant.get(name, {}))
        out.append(item)
    return out


def _quant_params(proto):
    """Scalar scale / zeroPoint of graph inputs fed to DequantizeLinear and outputs of QuantizeLinear."""
    from onnx import numpy_helper

    inits = {i.name: i for i in proto.graph.initializer}
    consts = {n.output[0]: n for n in proto.graph.node if n.op_type == "Constant" and n.output}

    def scalar(name):
        t = inits.get(name)
        if t is None and name in consts:
            attrs = [a for a in consts[name].attribute if a.name == "value"]
            t = attrs[0].t if attrs else None
        if t is None:
            return None
        a = numpy_helper.to_array(t)
        return a.item() if a.size == 1 else None

    out = {}
    ins = {i.name for i in proto.graph.input}
    outs = {o.name for o in proto.graph.output}
    for n in proto.graph.node:
        if n.op_type not in ("QuantizeLinear", "DequantizeLinear") or len(n.input) < 2:
            continue
        tensor = n.input[0] if n.op_type == "DequantizeLinear" else n.output[0]
        if tensor not in (ins if n.op_type == "DequantizeLinear" else outs):
            continue
        scale = scalar(n.input[1])
        zp = scalar(n.input[2]) if len(n.input) > 2 and n.input[2] else 0
        if scale is not None and zp is not None:
            out[tensor] = {"scale": float(scale), "zeroPoint": int(zp)}
    return out


def _dynamic_dims(specs):
    return sorted({str(d) for _, _, shape in specs for d in shape if not (isinstance(d, int) and d >= 0)})


# ---------------------------------------------------------------- comparison helpers

def _numeric(cpu, other, abs_tol, rel_tol, top_k=None, thresholds=None):
    """compare_receipt over two output dicts (every output one case); the numbers only."""
    from .compare import compare_receipt

    cases = []
    for name, c in cpu.items():
        o = other.get(name)
        if o is None:
            return {"rawTensorResult": "fail", "businessResult": "blocked" if (top_k or thresholds) else
                    "not_checked", "outputs": [{"output": name, "result": "missing_output"}]}
        side = {"modelBundleId": "-", "inputDigest": "-"}
        cases.append({"cpu": dict(side, shape=list(c.shape), dtype=str(c.dtype), values=c.ravel().tolist()),
                      "delegate": dict(side, shape=list(o.shape), dtype=str(o.dtype), values=o.ravel().tolist(),
                                       delegateState="invoked")})
    rec = {"projectAbsTolerance": abs_tol, "projectRelTolerance": rel_tol, "cases": cases}
    if top_k:
        rec["topK"] = top_k
    if thresholds:
        rec["decisionThresholds"] = list(thresholds)
    res = compare_receipt(rec)
    outs = []
    for name, r in zip(cpu, res["cases"]):
        item = {"output": name, "result": r["result"], "minAbsTolerance": r["minAbsTolerance"],
                "minRelTolerance": r["minRelTolerance"], "bitwiseEqual": _digest_array(cpu[name]) ==
                _digest_array(other[name])}
        if r.get("firstFailure"):
            item["firstFailure"] = {k: r["firstFailure"][k] for k in ("position", "cpu", "delegate", "limit",
                                                                        "reason")}
        outs.append(item)
    return {"rawTensorResult": res["rawTensorResult"], "businessResult": res["businessResult"], "outputs": outs}


def _baseline_check(cpu, expected, source, abs_tol, rel_tol):
    if expected is None:
        return {"done": False, "source": None, "result": "not_done", "outputs": []}
    missing = [n for n in cpu if n not in expected]
    if missing:
        return {"done": True, "source": source, "result": "fail",
                "outputs": [{"output": n, "result": "missing_expected"} for n in missing]}
    import numpy as np

    exp = {n: np.asarray(expected[n]) for n in cpu}
    bad_shape = [n for n in cpu if tuple(exp[n].shape) != tuple(cpu[n].shape)]
    if bad_shape:
        return {"done": True, "source": source, "result": "fail",
                "outputs": [{"output": n, "result": "shape_mismatch", "expectedShape": list(exp[n].shape),
                             "cpuShape": list(cpu[n].shape)} for n in bad_shape]}
    # the expected outputs are the reference here: "cpu" side = expected, "delegate" side = our CPU
    exp = {n: exp[n].astype(cpu[n].dtype, copy=False) for n in cpu}
    r = _numeric(exp, cpu, abs_tol, rel_tol)
    return {"done": True, "source": source, "result": "pass" if r["rawTensorResult"] == "pass" else "fail",
            "outputs": r["outputs"]}


def _worst(results):
    order = ("fail", "blocked", "not_checked", "pass")
    return min(results, key=order.index) if results else "not_checked"


# ---------------------------------------------------------------- the run

def _run_record(rec, tag):
    for r in rec.get("runs") or ():
        if r.get("tag") == tag:
            return r
    return {}


def _delegate(run, child_state, target):
    from ..rules.providers import KNOWN_PROVIDERS
    from .sessions import fallback_reason

    reason = fallback_reason(run, child_state, known_provider=target in KNOWN_PROVIDERS)
    st = run.get("stages") or {}
    if reason == "none":
        state = "invoked"
    elif st.get("invocationCompleted") == "ok":
        state = "fallback_cpu"
    else:
        state = "failed"
    stages = {k: st.get(k, "skipped") for k in STAGES}
    return stages, state, reason


def _partition_summary(model, run, target):
    """Observed counts (from the session) plus the predicted undelegated reason categories."""
    nodes = run.get("nodesPerProvider") or {}
    total = sum(nodes.values())
    out = {"delegatedNodeCount": int(nodes.get(target, 0)),
           "partitionCount": int((run.get("groupsPerProvider") or {}).get(target, 0)),
           "nodesPerProvider": dict(sorted((k, int(v)) for k, v in nodes.items())),
           "undelegatedNodeCount": int(total - nodes.get(target, 0)),
           "observed": bool(nodes)}
    try:
        from ..api import predict

        summary, _ = predict(str(model), [target])
        out["undelegatedReasons"] = dict(sorted(summary.get("undelegatedReasons", {}).items()))
        out["undelegatedReasonsSource"] = "partsim prediction on the graph as written"
    except Exception as exc:  # noqa: BLE001 - a provider without a table, an unreadable graph: no categories
        out["undelegatedReasons"] = {}
        out["undelegatedReasonsSource"] = f"unavailable ({type(exc).__name__})"
    return out


def _accel_cell_state(delegate_state, outputs_present, raw, business, drift_ok=True):
    if not outputs_present:
        return "error"
    if delegate_state != "invoked":
        return "fallback_cpu"
    if raw != "pass" or business == "fail" or not drift_ok:
        return "failed"
    return "passed"


def make_receipt(model, providers, abs_tol, rel_tol, *, python=None, sample=None, device=None, seed=0,
                 inputs=None, dims=None, shape_dims=None, expected=None, level="all", threads=1,
                 cpu_level="disable", cpu_threads=1, repeat=3, force_failure=False, failure_method=None,
                 fallback_policy="cpu", top_k=None, thresholds=None, bundle=None, timeout=300.0):
    """Run the lifecycle matrix of ``model`` and return the receipt (a dict, schema-valid).

    ``inputs``: arrays keyed by input name (else seeded by ``seed``); ``expected``: path
    of authoritative outputs (see :func:`load_expected`); ``bundle``: a
    :func:`partsim.numerics.bundle.bundle_id` result (else the model file's alone).
    """
    import platform

    from .. import __version__
    from ..io.read import read_model_proto
    from .bundle import bundle_id
    from .inputs import graph_input_specs, input_digest, seeded_inputs
    from .inputs import prepare_feeds
    from .sessions import run_configs

    if repeat < 2:
        raise UsageError(f"--repeat must be at least 2 (first invocation + repeats), got {repeat}")
    if fallback_policy not in FALLBACK_POLICIES:
        raise UsageError(f"--fallback-policy must be one of {', '.join(FALLBACK_POLICIES)}")
    providers = resolve_providers(providers)
    target = providers[0]
    method = failure_method or ("invalid_option" if target in INVALID_OPTIONS else "unknown_provider")
    if method not in FAILURE_METHODS:
        raise UsageError(f"--failure-method must be one of {', '.join(FAILURE_METHODS)}")
    if method == "invalid_option" and target not in INVALID_OPTIONS:
        raise UsageError(f"no known invalid provider option for {target}; use --failure-method unknown_provider")
    if method == "invalid_option":
        fail_cfg = {"providers": providers,
                    "provider_options": [INVALID_OPTIONS[target] if p == target else {} for p in providers]}
    else:
        fail_cfg = {"providers": [FAILING_PROVIDER] + providers[1:]}
    bundle = bundle or bundle_id(model)
    proto, _ = read_model_proto(model)
    specs = graph_input_specs(proto)
    output_names = [o.name for o in proto.graph.output]
    quant = _quant_params(proto)

    exp_arrays, exp_source = None, None
    input_source = "npz" if inputs is not None else "seeded"
    if expected is not None:
        exp_arrays, exp_source, pb_dir = load_expected(expected, output_names, sample)
        if pb_dir is not None and inputs is None and list(Path(pb_dir).glob("input_*.pb")):
            inputs = _pb_set(pb_dir, "input", [s[0] for s in specs])
            input_source = "onnx-test-data"
    feeds = prepare_feeds(model, seed, inputs, dims)
    dyn = _dynamic_dims(specs)
    extra = {}
    shape_dims_used = None
    if dyn:
        base = {k: int(v) for k, v in (dims or {}).items()}
        for name, _, shape in specs:  # the values the sample really has (from --inputs, or seeded)
            for d, actual in zip(shape, feeds[name].shape):
                if not (isinstance(d, int) and d >= 0):
                    base[str(d)] = int(actual)
        shape_dims_used = {d: int((shape_dims or {}).get(d, base.get(d, 1) + 1)) for d in dyn}
        extra["shape"] = seeded_inputs(specs, seed + 1, shape_dims_used)
        if all(tuple(extra["shape"][n].shape) == tuple(feeds[n].shape) for n in feeds):
            raise UsageError("--shape-dim leaves every input shape unchanged; the shape-change cell needs a change")

    cpu_run = {"level": cpu_level, "threads": cpu_threads}
    acc_run = {"level": level, "threads": threads}
    main_inv = [{"name": "main"}]
    acc_invs = [{"name": f"r{i}"} for i in range(repeat)]
    if dyn:
        acc_invs += [{"name": "shape", "feeds": "shape"}, {"name": "back"}]
    acc_cfg = fail_cfg if force_failure else {"providers": providers}
    configs = [dict(cpu_run, tag="cpu", providers=["CPUExecutionProvider"],
                    invocations=main_inv + ([{"name": "shape", "feeds": "shape"}] if dyn else [])),
               dict(acc_run, tag="accel", invocations=acc_invs, **acc_cfg),
               dict(acc_run, tag="rebuild", invocations=main_inv, **acc_cfg),
               dict(acc_run, tag="induced", invocations=[], **fail_cfg)]
    if fallback_policy == "cpu":
        configs.append(dict(cpu_run, tag="fresh_cpu", providers=["CPUExecutionProvider"], invocations=main_inv))
    rec, arrays = run_configs(model, configs, feeds, python=python, timeout=timeout, seed=seed, extra_feeds=extra)
    state = rec.get("state", "crashed")
    if "cpu~main" not in arrays:
        run = _run_record(rec, "cpu")
        raise ObservationError(f"the CPU baseline did not run ({state}): "
                               f"{run.get('error') or rec.get('error', '')}"[:500], model)
    cpu = arrays["cpu~main"]
    runtime = str(rec.get("runtime") or "")
    rt_name, _, rt_version = runtime.partition(" ")
    package = rec.get("package") or [rt_name, rt_version]
    env = rec.get("environment") or {}
    short = target.replace("ExecutionProvider", "").lower() or target
    device = device or f"{(env.get('os') or platform.system()).lower()}-{env.get('machine') or platform.machine()}" \
                       f"-{short}"
    digest = input_digest(feeds)
    tol = {"projectAbsTolerance": abs_tol, "projectRelTolerance": rel_tol}
    if top_k:
        tol["topK"] = top_k
    if thresholds:
        tol["decisionThresholds"] = sorted(set(float(t) for t in thresholds))

    def num(a, b, business=True):
        return _numeric(a, b, abs_tol, rel_tol, top_k if business else None, thresholds if business else None)

    base_check = _baseline_check(cpu, exp_arrays, exp_source, abs_tol, rel_tol)
    cpu_run_rec = _run_record(rec, "cpu")
    acc = _run_record(rec, "accel")
    stages, dstate, reason = _delegate(acc, state, acc_cfg["providers"][0])
    cells = {}

    def common(run, dstate_, reason_, inv="main"):
        invs = {i["name"]: i for i in run.get("invocations") or ()}
        return {"stages": {k: (run.get("stages") or {}).get(k, "skipped") for k in STAGES},
                "delegateState": dstate_, "fallbackReason": reason_,
                "grantedProviders": list(run.get("granted") or []),
                "inputDigest": (invs.get(inv) or {}).get("inputDigest")}

    # first
    c = common(acc, dstate, reason, "r0")
    c["cpuInputDigest"] = digest
    first = arrays.get("accel~r0")
    if first is not None:
        r = num(cpu, first)
        c.update(r)
    else:
        c.update(rawTensorResult="blocked", businessResult="blocked", outputs=[])
    c["state"] = _accel_cell_state(dstate, first is not None, c["rawTensorResult"], c["businessResult"])
    cells["first"] = c

    # repeat
    c = common(acc, dstate, reason, "r0")
    c.update(cpuInputDigest=digest, invocations=repeat)
    reps = [arrays.get(f"accel~r{i}") for i in range(1, repeat)]
    if first is not None and all(x is not None for x in reps):
        vs_cpu = [num(cpu, x) for x in reps]
        drift = [num(first, x, business=False) for x in reps]
        c.update(rawTensorResult=_worst([v["rawTensorResult"] for v in vs_cpu]),
                 businessResult=_worst([v["businessResult"] for v in vs_cpu]),
                 outputs=vs_cpu[-1]["outputs"],
                 drift={"result": _worst([d["rawTensorResult"] for d in drift]),
                        "bitwiseEqual": all(o["bitwiseEqual"] for d in drift for o in d["outputs"]),
                        "maxAbs": max((o["minAbsTolerance"] or 0.0) for d in drift for o in d["outputs"])})
        c["state"] = _accel_cell_state(dstate, True, c["rawTensorResult"], c["businessResult"],
                                       c["drift"]["result"] == "pass")
    else:
        c.update(rawTensorResult="blocked", businessResult="blocked", outputs=[], state="error")
    cells["repeat"] = c

    # shape change
    if not dyn:
        cells["shape_change"] = {"state": "not_applicable", "reason": "no_dynamic_dimension"}
    else:
        c = common(acc, dstate, reason, "shape")
        c.update(cpuInputDigest=input_digest(extra["shape"]), dims=shape_dims_used)
        sh, cpu_sh, back = arrays.get("accel~shape"), arrays.get("cpu~shape"), arrays.get("accel~back")
        if cpu_sh is None:
            c.update(state="error", reason="cpu_rejected_shape", rawTensorResult="blocked",
                     businessResult="blocked", outputs=[])
        elif sh is None or back is None or first is None:
            c.update(state="error", reason="no_output", rawTensorResult="blocked", businessResult="blocked",
                     outputs=[])
        else:
            r = num(cpu_sh, sh)
            b = num(first, back, business=False)
            c.update(r, backToOriginal={"result": b["rawTensorResult"],
                                        "bitwiseEqual": all(o["bitwiseEqual"] for o in b["outputs"])})
            c["state"] = _accel_cell_state(dstate, True, r["rawTensorResult"], r["businessResult"],
                                           b["rawTensorResult"] == "pass")
        cells["shape_change"] = c

    # rebuild
    rb = _run_record(rec, "rebuild")
    rb_stages, rb_state, rb_reason = _delegate(rb, state, acc_cfg["providers"][0])
    c = common(rb, rb_state, rb_reason)
    c["cpuInputDigest"] = digest
    x = arrays.get("rebuild~main")
    if x is not None:
        c.update(num(cpu, x))
        if first is not None:
            c["vsFirst"] = {"bitwiseEqual": all(o["bitwiseEqual"] for o in num(first, x, False)["outputs"])}
    else:
        c.update(rawTensorResult="blocked", businessResult="blocked", outputs=[])
    c["state"] = _accel_cell_state(rb_state, x is not None, c["rawTensorResult"], c["businessResult"])
    cells["rebuild"] = c

    # fallback: induced failure, then a fresh CPU session
    ind = _run_record(rec, "induced")
    ind_stages, ind_state, ind_reason = _delegate(ind, state, fail_cfg["providers"][0])
    induced = ind_reason != "none" and (ind.get("stages") or {}).get("delegateCreated") != "ok"
    c = {"failureMethod": method, "failureTarget": fail_cfg["providers"][0],
         "failedStages": ind_stages, "fallbackReason": ind_reason if induced else "none",
         "failureInduced": induced, "fallbackPolicy": fallback_policy, "failedSessionReused": False,
         "freshSession": fallback_policy == "cpu", "cpuInputDigest": digest}
    if fallback_policy == "cpu":
        fresh = arrays.get("fresh_cpu~main")
        fr = _run_record(rec, "fresh_cpu")
        c["cpuInvocationResult"] = "ok" if fresh is not None else "failed"
        c["inputDigest"] = ((fr.get("invocations") or [{}])[0]).get("inputDigest")
        if fresh is not None:
            r = num(cpu, fresh)
            c.update(r)
            c["bitwiseEqual"] = all(o["bitwiseEqual"] for o in r["outputs"])
        else:
            c.update(rawTensorResult="blocked", businessResult="blocked", outputs=[], bitwiseEqual=False)
        c["state"] = "error" if not induced else ("passed" if c["bitwiseEqual"] else "failed")
    else:
        c["cpuInvocationResult"] = "not_run"
        c["outputsReturned"] = False
        c.update(rawTensorResult="not_checked", businessResult="not_checked", outputs=[])
        c["state"] = "passed" if induced else "error"
    cells["fallback"] = c

    if base_check["result"] != "pass":
        for name, cell in cells.items():
            if cell["state"] != "not_applicable":
                cell["observedState"] = cell["state"]
                cell["state"] = "blocked"

    fr0 = cells["first"]
    top_reason = reason
    if reason == "none" and fr0.get("rawTensorResult") == "fail":
        top_reason = "output_out_of_tolerance"
    receipt = {
        "schemaVersion": RECEIPT_SCHEMA_VERSION,
        "kind": "partsim.executionReceipt",
        "candidate": {"modelBundleId": bundle["modelBundleId"],
                      "bundleParts": {p: v["sha256"] for p, v in bundle["parts"].items()},
                      "runtime": {"name": rt_name or "onnxruntime", "version": rt_version,
                                  "package": package[0], "packageVersion": package[1]},
                      "executionProvider": {"name": target, "implementation": package[0],
                                            "version": package[1]},
                      "partsimVersion": __version__},
        "environment": {"device": device, "deviceModel": env.get("cpu"), "os": env.get("os"),
                        "osRelease": env.get("osRelease"), "abi": env.get("abi"), "machine": env.get("machine"),
                        "python": env.get("python"), "driver": None, "source": "partsim receipt (this machine)"},
        "sample": {"id": sample or (f"seed{seed}" if input_source == "seeded" else "inputs"),
                   "source": input_source, "seed": seed if input_source == "seeded" else None,
                   "inputDigest": digest, "inputs": _describe(feeds, quant),
                   "dynamicDims": dyn},
        "tolerance": tol,
        "cpuBaseline": {"providers": ["CPUExecutionProvider"], "optLevel": cpu_level, "threads": cpu_threads,
                        "runtime": runtime, "invocationCompleted": (cpu_run_rec.get("stages") or {}).get(
                            "invocationCompleted", "failed"),
                        "inputDigest": digest,
                        "outputs": [dict(o, head=_head(cpu[o["name"]])) for o in _describe(cpu, quant)],
                        "baselineCheck": base_check},
        "accelerator": {"requestedProviders": providers, "target": target, "optLevel": level, "threads": threads,
                        "runtime": runtime, "forcedFailure": bool(force_failure),
                        "outputs": [dict(o, head=_head(first[o["name"]])) for o in _describe(first, quant)]
                        if first is not None else []},
        "stages": stages,
        "delegateState": dstate,
        "fallbackPolicy": fallback_policy,
        "fallbackReason": top_reason,
        "partitionSummary": _partition_summary(model, acc, acc_cfg["providers"][0]),
        "rawTensorResult": fr0.get("rawTensorResult"),
        "businessResult": fr0.get("businessResult"),
        "cpuAfterFallback": {"freshSession": fallback_policy == "cpu",
                             "cpuInvocationResult": cells["fallback"]["cpuInvocationResult"],
                             "rawTensorResult": cells["fallback"].get("rawTensorResult"),
                             "bitwiseEqual": cells["fallback"].get("bitwiseEqual")},
        "lifecycle": cells,
    }
    return _clean(receipt)


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


def summarize(receipt):
    """One line per cell: ``cell state (observed) raw/business``."""
    lines = [f"device {receipt['environment']['device']}  sample {receipt['sample']['id']}  "
             f"modelBundleId {receipt['candidate']['modelBundleId'][:16]}…  runtime "
             f"{receipt['candidate']['runtime']['name']} {receipt['candidate']['runtime']['version']}",
             f"baseline check: {receipt['cpuBaseline']['baselineCheck']['result']}"
             f"  delegate {receipt['delegateState']}  fallbackReason {receipt['fallbackReason']}  stages "
             + " ".join(f"{k}={receipt['stages'][k]}" for k in STAGES),
             f"partitionSummary delegated {receipt['partitionSummary']['delegatedNodeCount']} nodes in "
             f"{receipt['partitionSummary']['partitionCount']} partition(s), undelegated "
             f"{receipt['partitionSummary']['undelegatedNodeCount']}"]
    for name in CELLS:
        c = receipt["lifecycle"].get(name)
        if c is None:
            continue
        extra = f" (observed {c['observedState']})" if "observedState" in c else ""
        lines.append(f"  {name:<13} {c['state']}{extra}  raw={c.get('rawTensorResult', '-')} "
                     f"business={c.get('businessResult', '-')}")
    return "\n".join(lines) + "\n"
