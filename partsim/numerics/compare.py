"""CPU-vs-delegate receipt comparison (docs/contract.md §6 "compare", JSON per §6a).

A receipt is ``{projectAbsTolerance, projectRelTolerance, cases: [{cpu: {…},
delegate: {…}}]}``; each side carries ``modelBundleId, inputDigest, shape, dtype,
values, delegateState`` (and ``scale, zeroPoint`` for quantized outputs).  The
semantics are those of the seed checker (``shared/seeds/000_*.txt``), case by
case and position by position in receipt order:

1. the delegate side's ``delegateState`` must be ``"invoked"``;
2. ``modelBundleId, inputDigest, shape, dtype`` must be equal on both sides
   (plus ``scale`` and ``zeroPoint`` when either side has them: a quantized
   output is only comparable under the same interpretation);
3. both ``values`` lists must have the same length;
4. every position: both values finite, and ``|d − c| <= max(abs, rel·|c|)``
   with the CPU value ``c`` as the reference.  One position over the limit fails
   the case, however many others are close.

Where the seed checker stops with exit 2 on the first problem, this module
reports every case and sorts problems into two kinds: a malformed receipt
(missing or unreadable file, missing/invalid tolerance, no cases, a value that
is not a number, missing metadata field) raises :class:`ReceiptError` (exit 2);
a receipt that is well formed but does not match (gate failed, lengths differ,
NaN/inf produced, tolerance exceeded, business rule broken) is a result with
``rawTensorResult``/``businessResult`` other than ``pass`` (exit 1).
Deliberately stricter than the seed: booleans, NaN and infinite tolerances are
refused (the seed accepts them, and a NaN tolerance passes everything), and the
four metadata fields must be present (the seed treats "absent on both sides" as equal).

Optional receipt fields (top level, or per case to override):

- ``quantizedCompare``: ``"dequantized"`` (default; values become
  ``(q − zeroPoint)·scale`` and the tolerances are in real units) or
  ``"integer"`` (stored integers, tolerances in quantization steps).  Scale and
  zero point are scalars (per-channel is not supported).
- ``topK``: classification; the indices of the k largest values (ties: lower
  index first) must be the same set in the same order.
- ``decisionThresholds`` (list) / ``decisionThreshold`` (number): a value on one
  side ``>= t`` and on the other ``< t`` is a business mismatch even inside the
  numeric tolerance.

``minAbsTolerance`` / ``minRelTolerance`` per case: the smallest absolute
tolerance (with rel = 0) and the smallest relative tolerance (with abs = 0) that
would have passed that case's values; ``minRelTolerance`` is null when a CPU value
is 0 and differs from the delegate's (no relative tolerance can pass it).
"""

import math

from ..errors import ObservationError

__all__ = ["ReceiptError", "load_receipt", "compare_receipt", "META_FIELDS", "QUANT_RANGES"]

META_FIELDS = ("modelBundleId", "inputDigest", "shape", "dtype")
QUANT_FIELDS = ("scale", "zeroPoint")
QUANT_RANGES = {"int8": (-128, 127), "uint8": (0, 255), "int16": (-32768, 32767), "uint16": (0, 65535),
                "int32": (-2 ** 31, 2 ** 31 - 1), "int4": (-8, 7), "uint4": (0, 15)}
MAX_RECEIPT_BYTES = 512 * 1024 * 1024


class ReceiptError(ObservationError):
    """The receipt is missing, unreadable or malformed (exit 2)."""


def load_receipt(path):
    """Read and parse a receipt file; :class:`ReceiptError` if missing or not JSON."""
    from ..io.structured import read_structured

    # the outputs a device recorded may hold NaN and infinity (a non_finite result, not a malformed file)
    return read_structured(path, "json", None, MAX_RECEIPT_BYTES, ReceiptError, "the receipt", finite=False)


def _is_number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _tolerance(data, key, path):
    v = data.get(key)
    if v is None:
        raise ReceiptError(f"{key} is missing: compare has no built-in tolerance, the project must give one", path)
    if not _is_number(v) or not math.isfinite(v) or v < 0:
        raise ReceiptError(f"{key} is invalid ({v!r}): a finite number >= 0 is required", path)
    return float(v)


def _opt(case, data, key):
    return case[key] if key in case else data.get(key)


def _options(case, data, index, path):
    mode = _opt(case, data, "quantizedCompare") or "dequantized"
    if mode not in ("dequantized", "integer"):
        raise ReceiptError(f"case {index}: quantizedCompare must be 'dequantized' or 'integer'", path)
    k = _opt(case, data, "topK")
    if k is not None and (not isinstance(k, int) or isinstance(k, bool) or k < 1):
        raise ReceiptError(f"case {index}: topK must be an integer >= 1", path)
    th = _opt(case, data, "decisionThresholds")
    one = _opt(case, data, "decisionThreshold")
    ths = list(th) if isinstance(th, list) else ([] if th is None else None)
    if ths is None:
        raise ReceiptError(f"case {index}: decisionThresholds must be a list of numbers", path)
    if one is not None:
        ths.append(one)
    if not all(_is_number(t) and math.isfinite(t) for t in ths):
        raise ReceiptError(f"case {index}: decision thresholds must be finite numbers", path)
    return mode, k, sorted(set(float(t) for t in ths))


def _values(side, name, index, path):
    v = side.get("values")
    if not isinstance(v, list) or not v:
        raise ReceiptError(f"case {index}: {name} values must be a non-empty list", path)
    for pos, x in enumerate(v):
        if not _is_number(x):
            raise ReceiptError(f"case {index} position {pos}: {name} value {x!r} is not a number", path)
    return v


def _quant(cpu, dlg, index, path):
    """(scale, zero_point, (lo, hi)) when the output is quantized, else None."""
    if not any(k in s for s in (cpu, dlg) for k in QUANT_FIELDS):
        return None
    for name, s in (("cpu", cpu), ("delegate", dlg)):
        for k in QUANT_FIELDS:
            if k not in s:
                raise ReceiptError(f"case {index}: quantized output but {name} lacks {k}", path)
        if not (_is_number(s["scale"]) and math.isfinite(s["scale"]) and s["scale"] > 0):
            raise ReceiptError(f"case {index}: {name} scale must be a positive number (per-channel unsupported)",
                               path)
        if not isinstance(s["zeroPoint"], int) or isinstance(s["zeroPoint"], bool):
            raise ReceiptError(f"case {index}: {name} zeroPoint must be an integer (per-channel unsupported)", path)
    return cpu["scale"], cpu["zeroPoint"], QUANT_RANGES.get(cpu.get("dtype"))


def _unravel(position, shape, n):
    if isinstance(shape, list) and shape and all(isinstance(d, int) and d > 0 for d in shape) \
            and math.prod(shape) == n:
        out = []
        for d in reversed(shape):
            out.append(position % d)
            position //= d
        return list(reversed(out))
    return None


def _num(x):
    return float(x) if math.isfinite(x) else None


def _gate(index, case, path):
    """The metadata gate; returns (cpu, delegate, failure-dict or None)."""
    if not isinstance(case, dict):
        raise ReceiptError(f"case {index} is not an object", path)
    cpu, dlg = case.get("cpu"), case.get("delegate")
    if not isinstance(cpu, dict) or not isinstance(dlg, dict):
        raise ReceiptError(f"case {index} needs 'cpu' and 'delegate' objects", path)
    if dlg.get("delegateState") != "invoked":
        return cpu, dlg, {"result": "delegate_not_invoked", "delegateState": dlg.get("delegateState")}
    for name, side in (("cpu", cpu), ("delegate", dlg)):
        for f in META_FIELDS:
            if f not in side:
                raise ReceiptError(f"case {index}: {name} lacks {f}", path)
    bad = [f for f in META_FIELDS if cpu[f] != dlg[f]]
    if bad:
        return cpu, dlg, {"result": "metadata_mismatch", "mismatchedFields": bad}
    q = _quant(cpu, dlg, index, path)
    if q is not None:
        badq = [f for f in QUANT_FIELDS if cpu[f] != dlg[f]]
        if badq:
            return cpu, dlg, {"result": "quant_params_mismatch", "mismatchedFields": badq}
    return cpu, dlg, None


def _space(vals, q, mode, name, index, path):
    """Values in the space they are compared in (float64 array)."""
    import numpy as np

    a = np.asarray(vals, dtype=np.float64)
    if q is None:
        return a
    scale, zp, rng = q
    fin = np.isfinite(a)
    if not np.all(np.equal(np.floor(a[fin]), a[fin])) or (rng and (np.any(a[fin] < rng[0]) or
                                                                   np.any(a[fin] > rng[1]))):
        raise ReceiptError(f"case {index}: {name} values are not integers of the quantized dtype", path)
    return a if mode == "integer" else (a - zp) * float(scale)


def _business(c, d, k, thresholds):
    import numpy as np

    out = {}
    if k is not None:
        n = min(k, c.size)
        tc = [int(i) for i in np.lexsort((np.arange(c.size), -c))[:n]]
        td = [int(i) for i in np.lexsort((np.arange(d.size), -d))[:n]]
        out["topK"] = {"k": k, "cpu": tc, "delegate": td, "setEqual": sorted(tc) == sorted(td),
                       "orderEqual": tc == td}
    if thresholds:
        crossings = []
        for t in thresholds:
            diff = np.nonzero((c >= t) != (d >= t))[0]
            if diff.size:
                p = int(diff[0])
                crossings.append({"threshold": t, "position": p, "cpu": float(c[p]), "delegate": float(d[p]),
                                  "count": int(diff.size)})
        out["thresholdCrossings"] = crossings
    if not out:
        return "not_checked", out, None
    if "topK" in out and not out["topK"]["orderEqual"]:
        return "fail", out, "topk_mismatch"
    if out.get("thresholdCrossings"):
        return "fail", out, "threshold_crossed"
    return "pass", out, None


def _case(index, case, data, absolute, relative, path):
    import numpy as np

    mode, k, thresholds = _options(case if isinstance(case, dict) else {}, data, index, path)
    cpu, dlg, gate = _gate(index, case, path)
    rec = {"index": index, "firstFailure": None, "minAbsTolerance": None, "minRelTolerance": None}
    business_rules = k is not None or bool(thresholds)
    if gate is not None:
        rec.update(gate)
        rec.update(rawResult="blocked", businessResult="blocked" if business_rules else "not_checked")
        return rec
    left = _values(cpu, "cpu", index, path)
    right = _values(dlg, "delegate", index, path)
    if len(left) != len(right):
        rec.update(result="length_mismatch", rawResult="fail", cpuLength=len(left), delegateLength=len(right),
                   businessResult="blocked" if business_rules else "not_checked")
        return rec
    q = _quant(cpu, dlg, index, path)
    c = _space(left, q, mode, "cpu", index, path)
    d = _space(right, q, mode, "delegate", index, path)
    if q is not None:
        rec["compareSpace"] = mode
    finite = np.isfinite(c) & np.isfinite(d)
    diff = np.abs(d - c)
    limit = np.maximum(absolute, relative * np.abs(c))
    bad = ~finite | ~(diff <= limit)
    if np.any(bad):
        p = int(np.nonzero(bad)[0][0])
        kind = "non_finite" if not finite[p] else "tolerance_exceeded"
        ff = {"position": p, "cpu": _num(left[p]), "delegate": _num(right[p]),
              "limit": _num(float(limit[p])), "reason": kind, "failingCount": int(np.count_nonzero(bad))}
        if kind == "non_finite":
            ff["values"] = {"cpu": repr(float(left[p])), "delegate": repr(float(right[p]))}
        idx = _unravel(p, cpu.get("shape"), len(left))
        if idx is not None:
            ff["index"] = idx
        rec.update(result=kind, rawResult="fail", firstFailure=ff)
    else:
        rec.update(result="pass", rawResult="pass")
    if np.all(finite):
        rec["minAbsTolerance"] = float(diff.max())
        rel = np.zeros_like(diff)
        nz = c != 0
        rel[nz] = diff[nz] / np.abs(c[nz])
        rec["minRelTolerance"] = None if np.any(~nz & (diff > 0)) else float(rel.max())
        bres, detail, why = _business(c, d, k, thresholds)
        rec["businessResult"] = bres
        rec.update(detail)
        if why and rec["result"] == "pass":
            rec["result"] = why
    else:
        rec["businessResult"] = "blocked" if business_rules else "not_checked"
    return rec


def _overall(states, rules):
    if all(s == "pass" for s in states):
        return "pass"
    if "fail" in states:
        return "fail"
    if "blocked" in states:
        return "blocked"
    return "not_checked" if not rules else "pass"


def compare_receipt(data, path=None):
    """Compare a parsed receipt; returns the docs/contract.md §6a ``compare`` record.

    Raises
    ------
    ReceiptError
        Malformed receipt (exit 2).

    Examples
    --------
    >>> r = compare_receipt({"projectAbsTolerance": 1e-3, "projectRelTolerance": 0, "cases": [
    ...     {"cpu": {"modelBundleId": "m", "inputDigest": "i", "shape": [2], "dtype": "float32",
    ...              "values": [1.0, 2.0]},
    ...      "delegate": {"modelBundleId": "m", "inputDigest": "i", "shape": [2], "dtype": "float32",
    ...                   "values": [1.0, 2.01], "delegateState": "invoked"}}]})
    >>> r["rawTensorResult"], r["cases"][0]["firstFailure"]["position"]
    ('fail', 1)
    """
    if not isinstance(data, dict):
        raise ReceiptError("the receipt must be a JSON object", path)
    absolute = _tolerance(data, "projectAbsTolerance", path)
    relative = _tolerance(data, "projectRelTolerance", path)
    cases = data.get("cases")
    if not isinstance(cases, list) or not cases:
        raise ReceiptError("cases must be a non-empty list", path)
    recs = [_case(i, c, data, absolute, relative, path) for i, c in enumerate(cases)]
    raw = _overall([r["rawResult"] for r in recs], True)
    bstates = [r["businessResult"] for r in recs]
    business = "not_checked" if all(s == "not_checked" for s in bstates) else \
        _overall([s for s in bstates if s != "not_checked"], True)
    return {"rawTensorResult": raw, "businessResult": business, "projectAbsTolerance": absolute,
            "projectRelTolerance": relative, "caseCount": len(recs),
            "passed": raw == "pass" and business in ("pass", "not_checked"), "cases": recs}
