"""partsim compare: the seed checker's semantics (shared/seeds/000_*.txt), plus quantized/top-k/threshold."""

import copy
import json
import math

import pytest

from partsim.cli import main
from partsim.numerics.compare import ReceiptError, compare_receipt


def seed_verdict(data):
    """Independent oracle written from the seed document's prose and checker: returns
    ('ok', None) or ('reject', (case, position or None, why))."""
    a, r, cases = data.get("projectAbsTolerance"), data.get("projectRelTolerance"), data.get("cases")
    for t in (a, r):
        if not isinstance(t, (int, float)) or t < 0:
            return "reject", (None, None, "tolerance")
    if not isinstance(cases, list) or not cases:
        return "reject", (None, None, "cases")
    for i, case in enumerate(cases):
        cpu, dlg = case.get("cpu", {}), case.get("delegate", {})
        if dlg.get("delegateState") != "invoked":
            return "reject", (i, None, "not_invoked")
        if any(cpu.get(f) != dlg.get(f) for f in ("modelBundleId", "inputDigest", "shape", "dtype")):
            return "reject", (i, None, "metadata")
        x, y = cpu.get("values"), dlg.get("values")
        if not isinstance(x, list) or not x or len(x) != len(y or []):
            return "reject", (i, None, "length")
        for p, (c, d) in enumerate(zip(x, y)):
            if not all(isinstance(v, (int, float)) and math.isfinite(v) for v in (c, d)):
                return "reject", (i, p, "non_finite")
            if abs(c - d) > max(a, r * abs(c)):
                return "reject", (i, p, "tolerance")
    return "ok", None


def side(values, **kw):
    s = {"modelBundleId": "b" * 64, "inputDigest": "i" * 64, "shape": [len(values)], "dtype": "float32",
         "values": values}
    s.update(kw)
    return s


def receipt(cpu_vals, dlg_vals, abs_tol=1e-3, rel_tol=1e-2, **dkw):
    dlg = side(dlg_vals, delegateState="invoked")
    dlg.update(dkw)
    return {"projectAbsTolerance": abs_tol, "projectRelTolerance": rel_tol,
            "cases": [{"cpu": side(cpu_vals), "delegate": dlg}]}


def run_cli(tmp_path, data, raw=None):
    p = tmp_path / "r.json"
    p.write_text(raw if raw is not None else json.dumps(data))
    out = tmp_path / "out.json"
    rc = main(["compare", str(p), "-f", "json", "-o", str(out)])
    return rc, (json.loads(out.read_text()) if out.exists() else None)


def test_missing_file_exits_2(tmp_path):
    assert main(["compare", str(tmp_path / "nope.json")]) == 2


def test_unparseable_file_exits_2(tmp_path):
    assert run_cli(tmp_path, None, raw="{not json")[0] == 2


@pytest.mark.parametrize("bad", [None, -1, "0.1", True, float("nan"), float("inf")])
def test_bad_or_missing_tolerance_exits_2(tmp_path, bad):
    data = receipt([1.0], [1.0])
    if bad is None:
        del data["projectRelTolerance"]
    else:
        data["projectAbsTolerance"] = bad
    assert run_cli(tmp_path, data)[0] == 2


def test_empty_cases_exits_2(tmp_path):
    data = receipt([1.0], [1.0])
    data["cases"] = []
    assert seed_verdict(data)[0] == "reject"
    assert run_cli(tmp_path, data)[0] == 2


def test_all_within_passes_like_seed(tmp_path):
    data = receipt([0.0, 1.0, 100.0], [0.0009, 1.009, 100.9])
    assert seed_verdict(data)[0] == "ok"
    rc, res = run_cli(tmp_path, data)
    assert rc == 0 and res["rawTensorResult"] == "pass" and res["businessResult"] == "not_checked"


def test_length_mismatch(tmp_path):
    data = receipt([1.0, 2.0], [1.0], shape=[2])  # a value sample: same metadata, fewer values
    assert seed_verdict(data)[1][2] == "length"
    rc, res = run_cli(tmp_path, data)
    assert rc == 1 and res["cases"][0]["result"] == "length_mismatch"


@pytest.mark.parametrize("field,value", [("modelBundleId", "c" * 64), ("inputDigest", "x"), ("shape", [1, 3]),
                                         ("dtype", "float16")])
def test_metadata_mismatch_blocks_before_values(tmp_path, field, value):
    data = receipt([1.0, 2.0, 3.0], [1.0, 2.0, 3.0], **{field: value})
    assert seed_verdict(data)[1][2] == "metadata"
    rc, res = run_cli(tmp_path, data)
    assert rc == 1 and res["rawTensorResult"] == "blocked"
    assert res["cases"][0]["result"] == "metadata_mismatch" and res["cases"][0]["mismatchedFields"] == [field]


@pytest.mark.parametrize("state", ["fallback_cpu", "failed", None])
def test_delegate_not_invoked(tmp_path, state):
    data = receipt([1.0], [1.0], delegateState=state)
    assert seed_verdict(data)[1][2] == "not_invoked"
    rc, res = run_cli(tmp_path, data)
    assert rc == 1 and res["cases"][0]["result"] == "delegate_not_invoked"


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
@pytest.mark.parametrize("where", ["cpu", "delegate"])
def test_non_finite_rejected(tmp_path, bad, where):
    c, d = [1.0, 2.0, 3.0], [1.0, 2.0, 3.0]
    (c if where == "cpu" else d)[1] = bad
    data = receipt(c, d)
    assert seed_verdict(data)[1] == (0, 1, "non_finite")
    rc, res = run_cli(tmp_path, data)  # the receipt holds NaN/Infinity literals, as Python's json writes them
    assert rc == 1
    ff = res["cases"][0]["firstFailure"]
    assert res["cases"][0]["result"] == "non_finite" and ff["position"] == 1


def test_one_element_over_tolerance_among_many(tmp_path):
    n = 1000
    c = [math.sin(k + 1) * 10 for k in range(n)]
    d = [v + 0.0005 for v in c]  # all inside abs 1e-3
    d[637] = c[637] + 0.2 + 0.02 * abs(c[637])  # this one is over max(abs, rel*|c|)
    data = receipt(c, d)
    assert seed_verdict(data)[1] == (0, 637, "tolerance")
    rc, res = run_cli(tmp_path, data)
    case = res["cases"][0]
    assert rc == 1 and case["result"] == "tolerance_exceeded"
    ff = case["firstFailure"]
    assert ff["position"] == 637 and ff["failingCount"] == 1
    assert ff["cpu"] == c[637] and ff["delegate"] == d[637]
    assert ff["limit"] == max(1e-3, 1e-2 * abs(c[637]))
    # smallest tolerances that would have passed, recomputed independently
    assert case["minAbsTolerance"] == max(abs(x - y) for x, y in zip(c, d))
    assert case["minRelTolerance"] == pytest.approx(max(abs(x - y) / abs(x) for x, y in zip(c, d) if x != 0))
    # and they do pass when used
    for tol in ({"projectAbsTolerance": case["minAbsTolerance"], "projectRelTolerance": 0},
                {"projectAbsTolerance": 0, "projectRelTolerance": case["minRelTolerance"]}):
        data2 = copy.deepcopy(data)
        data2.update(tol)
        assert seed_verdict(data2)[0] == "ok"
        assert compare_receipt(data2)["rawTensorResult"] == "pass"


def test_limit_is_inclusive_and_cpu_is_reference():
    # |d - c| == limit passes; the relative part scales with |c| (CPU), not |d|
    assert compare_receipt(receipt([100.0], [101.0], abs_tol=0, rel_tol=0.01))["rawTensorResult"] == "pass"
    assert compare_receipt(receipt([101.0], [100.0], abs_tol=0, rel_tol=0.0099))["rawTensorResult"] == "fail"


def test_non_number_value_is_a_bad_receipt():
    with pytest.raises(ReceiptError):
        compare_receipt(receipt([1.0, "2"], [1.0, 2.0]))


def test_quantized_params_must_match_first(tmp_path):
    q = dict(dtype="uint8", scale=0.1, zeroPoint=128)
    data = receipt([130, 140], [130, 140])
    data["cases"][0]["cpu"].update(q)
    data["cases"][0]["delegate"].update(q, zeroPoint=127)
    data["cases"][0]["delegate"]["dtype"] = "uint8"
    rc, res = run_cli(tmp_path, data)
    assert rc == 1 and res["cases"][0]["result"] == "quant_params_mismatch"
    assert res["cases"][0]["mismatchedFields"] == ["zeroPoint"]


def test_quantized_dequantized_space():
    q = dict(dtype="uint8", scale=0.1, zeroPoint=128)
    data = receipt([130, 140], [131, 140], abs_tol=0.05, rel_tol=0)  # 1 step = 0.1 > 0.05
    for s in ("cpu", "delegate"):
        data["cases"][0][s].update(q)
    res = compare_receipt(data)
    assert res["rawTensorResult"] == "fail" and res["cases"][0]["firstFailure"]["position"] == 0
    assert res["cases"][0]["minAbsTolerance"] == pytest.approx(0.1)
    data["projectAbsTolerance"] = 0.1 + 1e-9
    assert compare_receipt(data)["rawTensorResult"] == "pass"
    data["quantizedCompare"] = "integer"
    data["projectAbsTolerance"] = 1
    assert compare_receipt(data)["rawTensorResult"] == "pass"
    data["cases"][0]["delegate"]["values"] = [300, 140]  # not a uint8
    with pytest.raises(ReceiptError):
        compare_receipt(data)


def test_topk_order_is_business_layer(tmp_path):
    c = [0.10, 0.50, 0.499, 0.01]
    d = [0.10, 0.499, 0.50, 0.01]  # inside tolerance, but classes 1 and 2 swap
    data = receipt(c, d, abs_tol=0.01, rel_tol=0)
    assert compare_receipt(data)["passed"]
    data["topK"] = 2
    rc, res = run_cli(tmp_path, data)
    case = res["cases"][0]
    assert rc == 1 and res["rawTensorResult"] == "pass" and res["businessResult"] == "fail"
    assert case["topK"]["cpu"] == [1, 2] and case["topK"]["delegate"] == [2, 1]
    assert case["topK"]["setEqual"] and not case["topK"]["orderEqual"]
    data["topK"] = 1
    assert compare_receipt(data)["businessResult"] == "fail"
    data["cases"][0]["delegate"]["values"] = [0.10, 0.50, 0.495, 0.01]
    assert compare_receipt(data)["businessResult"] == "pass"


def test_threshold_crossed_inside_tolerance(tmp_path):
    data = receipt([0.2, 0.501], [0.2, 0.499], abs_tol=0.01, rel_tol=0)
    data["decisionThresholds"] = [0.5]
    rc, res = run_cli(tmp_path, data)
    assert rc == 1 and res["rawTensorResult"] == "pass" and res["businessResult"] == "fail"
    cross = res["cases"][0]["thresholdCrossings"][0]
    assert cross["position"] == 1 and cross["threshold"] == 0.5
    data["decisionThresholds"] = [0.9]
    assert compare_receipt(data)["passed"]


def test_multi_case_reports_each(tmp_path):
    data = receipt([1.0], [1.0])
    bad = copy.deepcopy(data["cases"][0])
    bad["delegate"]["values"] = [2.0]
    data["cases"].append(bad)
    rc, res = run_cli(tmp_path, data)
    assert rc == 1 and [c["result"] for c in res["cases"]] == ["pass", "tolerance_exceeded"]
