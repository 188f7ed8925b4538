"""The release gate: execution receipts in, a devices × samples × lifecycle-cells matrix out.

Receipts (:mod:`partsim.numerics.receipt`, made here or on devices, same schema)
are first validated against the schema (a malformed one is an input error, exit 2),
then checked against the candidate: a receipt whose ``candidate.modelBundleId`` is
not ``--candidate`` or whose ``candidate.runtime.version`` is not ``--runtime`` is
**rejected** and listed with the reason (history cannot sign for a new candidate).

Every required cell of an accepted receipt then goes through the checks, in this
order, and stops at the first that does not pass (:data:`CHECKS`):

1. ``metadata``: the CPU baseline and the accelerator ran the same runtime, and the
   cell's accelerator input digest is the CPU side's (else ``blocked``);
2. ``cpu_baseline``: the CPU baseline was checked against authoritative expected
   outputs and agreed (else ``blocked``: a wrong baseline cannot sign for hardware);
3. ``delegate_invoked``: the delegate state is ``invoked`` with all four stages ``ok``.
   A delegate that did not run proves at most the CPU fallback: ``fallback_only``
   when the receipt's fallback cell proved the fresh CPU session (and any output the
   cell has matches the baseline), else ``failed``.  For the ``fallback`` cell: the
   failure must really have been induced (else ``blocked``);
4. ``partition_summary``: present, with at least one delegated node and partition
   (absent: ``blocked``; zero delegated nodes: the delegate did not take anything,
   ``fallback_only`` as in 3);
5. ``tensor``: ``rawTensorResult`` pass, no drift across repeated invocations, the
   original shape still right after a shape change (else ``failed``);
6. ``business``: ``businessResult`` not ``fail`` (``failed``) nor ``blocked``; with
   ``require_business`` also not ``not_checked`` (``blocked``);
7. ``fallback``: the receipt declares a fallbackPolicy and has a fallback cell
   (else ``blocked``); for the ``fallback`` cell itself: policy ``cpu`` needs a fresh
   CPU session whose outputs are bitwise equal to the baseline, the other policies
   need no outputs returned (else ``failed``).

Cell states (:data:`GATE_STATES`): ``verified``, ``failed``, ``blocked``,
``fallback_only``, ``missing`` (no accepted receipt covers it) and ``not_applicable``
(the receipt says so: a shape change on a model without a dynamic dimension).  Several
receipts for one device and sample: the worst state wins.  The gate passes only when
every required cell is ``verified`` or ``not_applicable``.
"""


from ..errors import UsageError
from .receipt_schema import CELLS, FALLBACK_POLICIES, STAGES, validate_receipt

__all__ = ["GATE_STATES", "CHECKS", "load_receipts", "load_requirements", "run_gate"]

GATE_STATES = ("verified", "failed", "blocked", "fallback_only", "missing", "not_applicable")
CHECKS = ("metadata", "cpu_baseline", "delegate_invoked", "partition_summary", "tensor", "business", "fallback")
# several receipts for one cell: the first of these wins
_SEVERITY = ("failed", "blocked", "fallback_only", "verified", "not_applicable", "missing")
MAX_REQUIREMENTS_BYTES = 1024 * 1024


def load_receipts(paths):
    """``[(path, receipt)]``; each must be a schema-valid receipt (else
    :class:`partsim.errors.ObservationError`, :class:`partsim.numerics.compare.ReceiptError` for an unreadable one)."""
    from .compare import load_receipt

    out = []
    for p in paths:
        data = load_receipt(p)
        validate_receipt(data, p)
        out.append((str(p), data))
    return out


def load_requirements(path):
    """``devices.yaml``: ``{devices: [..], samples: [..], cells: [..]}`` (every key optional)."""
    from ..io.structured import read_structured

    data = read_structured(path, "yaml", "require", MAX_REQUIREMENTS_BYTES, UsageError,
                           "the requirements file")
    if data is None:
        data = {}
    out = {}
    for key in ("devices", "samples", "cells"):
        v = data.get(key)
        if v is None:
            continue
        if not isinstance(v, list) or not v or not all(isinstance(x, str) and x for x in v):
            raise UsageError(f"{key} must be a non-empty list of names", path)
        out[key] = list(dict.fromkeys(v))
    if "cells" in out:
        _check_cells(out["cells"], path)
    return out


def _check_cells(cells, path=None):
    bad = [c for c in cells if c not in CELLS]
    if bad:
        raise UsageError(f"unknown lifecycle cell(s) {', '.join(bad)} (use {', '.join(CELLS)})", path)


def _runtime_matches(receipt, wanted):
    rt = receipt["candidate"]["runtime"]
    name, _, version = wanted.strip().rpartition(" ")
    if version != rt["version"]:
        return False
    return not name or name in (rt.get("name"), rt.get("package"))


def _reject_reason(receipt, candidate, runtime):
    got = receipt["candidate"]["modelBundleId"]
    if got != candidate:
        return "other_candidate", f"modelBundleId {got} is not the candidate {candidate}"
    if not _runtime_matches(receipt, runtime):
        rt = receipt["candidate"]["runtime"]
        return "other_runtime", f"runtime {rt['name']} {rt['version']} is not the candidate runtime {runtime}"
    return None


def _fallback_proven(receipt):
    """The receipt's fallback cell showed a fresh CPU session equal to the baseline."""
    fb = receipt.get("lifecycle", {}).get("fallback")
    return bool(fb and fb.get("failureInduced") and fb.get("fallbackPolicy", receipt.get("fallbackPolicy")) == "cpu"
                and fb.get("cpuInvocationResult") == "ok" and fb.get("bitwiseEqual") is True)


def _verdict(state, check, reason):
    return {"state": state, "check": check, "reason": reason}


def _not_invoked(receipt, cell, reason):
    if not _fallback_proven(receipt):
        return _verdict("failed", "delegate_invoked", f"{reason}; CPU fallback not proven")
    if cell.get("delegateState") == "fallback_cpu" and cell.get("rawTensorResult") != "pass":
        return _verdict("failed", "delegate_invoked", f"{reason}; CPU fallback output differs from the baseline")
    return _verdict("fallback_only", "delegate_invoked", f"{reason}; only the CPU fallback is proven")


def evaluate_cell(receipt, name, require_business=False):
    """The gate verdict ``{state, check, reason}`` of one lifecycle cell of an accepted receipt."""
    cell = receipt.get("lifecycle", {}).get(name)
    if cell is None:
        return _verdict("missing", None, "the receipt has no such cell")
    if cell.get("state") == "not_applicable":
        return _verdict("not_applicable", None, cell.get("reason") or "not applicable")
    # 1 metadata
    cpu_rt = receipt["cpuBaseline"].get("runtime")
    acc_rt = (receipt.get("accelerator") or {}).get("runtime")
    if cpu_rt and acc_rt and cpu_rt != acc_rt:
        return _verdict("blocked", "metadata", f"CPU baseline ran {cpu_rt}, the accelerator {acc_rt}")
    base_digest = receipt["cpuBaseline"].get("inputDigest")
    if base_digest and base_digest != receipt["sample"]["inputDigest"]:
        return _verdict("blocked", "metadata", "the CPU baseline's inputDigest is not the sample's")
    if cell.get("inputDigest") and cell.get("cpuInputDigest") and cell["inputDigest"] != cell["cpuInputDigest"]:
        return _verdict("blocked", "metadata", "inputDigest differs between the CPU and accelerator sides")
    # 2 CPU baseline
    bc = receipt["cpuBaseline"]["baselineCheck"]
    if not bc.get("done"):
        return _verdict("blocked", "cpu_baseline", "the CPU baseline was not checked against expected outputs")
    if bc.get("result") != "pass":
        return _verdict("blocked", "cpu_baseline", "the CPU baseline disagrees with the expected outputs")
    if name == "fallback":
        if not cell.get("failureInduced"):
            return _verdict("blocked", "delegate_invoked", "the accelerator failure was not induced")
        policy = cell.get("fallbackPolicy", receipt.get("fallbackPolicy"))
        if policy == "cpu":
            if cell.get("cpuInvocationResult") != "ok":
                return _verdict("failed", "fallback", "the fresh CPU session produced no output")
            if cell.get("bitwiseEqual") is not True:
                return _verdict("failed", "fallback", "the fresh CPU session's outputs differ from the baseline")
            return _verdict("verified", "fallback", "fresh CPU session equals the baseline")
        if cell.get("outputsReturned") is not False:
            return _verdict("failed", "fallback", f"policy {policy} but outputs were returned")
        return _verdict("verified", "fallback", f"policy {policy}: no outputs returned")
    # 3 delegate actually invoked
    stages = cell.get("stages") or receipt["stages"]
    ds = cell.get("delegateState")
    if ds != "invoked" or any(stages.get(k) != "ok" for k in STAGES):
        failed = [k for k in STAGES if stages.get(k) != "ok"]
        return _not_invoked(receipt, cell, f"delegate {ds}, stages not ok: {', '.join(failed) or 'none'}, "
                                           f"fallbackReason {cell.get('fallbackReason')}")
    # 4 partition summary
    ps = receipt.get("partitionSummary")
    if not ps:
        return _verdict("blocked", "partition_summary", "no partitionSummary in the receipt")
    if ps.get("delegatedNodeCount", 0) < 1 or ps.get("partitionCount", 0) < 1:
        return _not_invoked(receipt, cell, "the partitionSummary shows no delegated node")
    # 5 tensors
    if cell.get("rawTensorResult") != "pass":
        return _verdict("failed", "tensor", f"rawTensorResult {cell.get('rawTensorResult')}")
    if "drift" in cell and cell["drift"].get("result") != "pass":
        return _verdict("failed", "tensor", "outputs drift across repeated invocations")
    if "backToOriginal" in cell and cell["backToOriginal"].get("result") != "pass":
        return _verdict("failed", "tensor", "outputs changed after returning to the original shape")
    # 6 business
    br = cell.get("businessResult")
    if br == "fail":
        return _verdict("failed", "business", "businessResult fail")
    if br == "blocked":
        return _verdict("blocked", "business", "businessResult blocked")
    if require_business and br != "pass":
        return _verdict("blocked", "business", f"businessResult {br}, and a business check is required")
    # 7 fallback paths
    if receipt.get("fallbackPolicy") not in FALLBACK_POLICIES:
        return _verdict("blocked", "fallback", "no fallbackPolicy declared")
    if "fallback" not in receipt.get("lifecycle", {}):
        return _verdict("blocked", "fallback", "the fallback path was not tested (no fallback cell)")
    return _verdict("verified", "fallback", "all checks passed")


def run_gate(receipts, candidate, runtime, devices=None, samples=None, cells=None, require_business=False):
    """Decide.  ``receipts``: ``[(path, dict)]`` (see :func:`load_receipts`).

    Returns the gate record: ``{candidate, runtime, required, accepted, rejected,
    matrix, gaps, notVerified, counts, passed}``.
    """
    if not candidate or not runtime:
        raise UsageError("--candidate and --runtime are required: the gate decides for one candidate")
    cells = list(cells or CELLS)
    _check_cells(cells)
    accepted, rejected = [], []
    for path, r in receipts:
        why = _reject_reason(r, candidate, runtime)
        if why:
            rejected.append({"receipt": path, "device": r["environment"]["device"], "sample": r["sample"]["id"],
                             "reason": why[0], "detail": why[1]})
        else:
            accepted.append((path, r))
    devices = list(devices or sorted({r["environment"]["device"] for _, r in accepted}))
    samples = list(samples or sorted({r["sample"]["id"] for _, r in accepted}))
    by_key = {}
    for path, r in accepted:
        by_key.setdefault((r["environment"]["device"], r["sample"]["id"]), []).append((path, r))
    matrix, gaps, not_verified = [], [], []
    counts = {s: 0 for s in GATE_STATES}
    for dev in devices:
        for smp in samples:
            rs = by_key.get((dev, smp), [])
            row = {"device": dev, "sample": smp, "receipts": [p for p, _ in rs], "cells": {}}
            for cell in cells:
                verdicts = [dict(evaluate_cell(r, cell, require_business), receipt=p) for p, r in rs]
                if not verdicts:
                    v = dict(_verdict("missing", None, "no accepted receipt for this device and sample"),
                             receipt=None)
                else:
                    v = min(verdicts, key=lambda x: _SEVERITY.index(x["state"]))
                row["cells"][cell] = v
                counts[v["state"]] += 1
                if v["state"] == "missing":
                    gaps.append({"device": dev, "sample": smp, "cell": cell, "reason": v["reason"]})
                if v["state"] not in ("verified", "not_applicable"):
                    not_verified.append({"device": dev, "sample": smp, "cell": cell, "state": v["state"],
                                         "reason": v["reason"]})
            matrix.append(row)
    extra = sorted({f"{d} / {s}" for d, s in by_key if d not in devices or s not in samples})
    return {"candidate": candidate, "runtime": runtime, "checks": list(CHECKS),
            "required": {"devices": devices, "samples": samples, "cells": cells},
            "accepted": sorted(p for p, _ in accepted), "rejected": sorted(rejected, key=lambda x: x["receipt"]),
            "notRequired": extra, "matrix": matrix, "gaps": gaps, "notVerified": not_verified,
            "counts": counts, "passed": bool(matrix) and not not_verified}
