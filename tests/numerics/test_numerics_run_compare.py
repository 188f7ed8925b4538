"""run-compare: real ORT child runs -> receipt -> compare (CPU vs CPU here; a missing accelerator)."""

import json

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from partsim.cli import main


def _model(path):
    rng = np.random.default_rng(2)
    inits = [numpy_helper.from_array(rng.standard_normal((1024, 10)).astype(np.float32), "W"),
             numpy_helper.from_array(rng.standard_normal(10).astype(np.float32), "B")]
    g = helper.make_graph([helper.make_node("MatMul", ["x", "W"], ["m"]), helper.make_node("Add", ["m", "B"], ["a"]),
                           helper.make_node("Softmax", ["a"], ["y"], axis=-1)], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 1024])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 10])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, str(path))
    return path


def test_cpu_vs_cpu_receipt_roundtrip(tmp_path):
    model = _model(tmp_path / "m.onnx")
    receipt, out = tmp_path / "receipt.json", tmp_path / "res.json"
    rc = main(["run-compare", str(model), "-p", "cpu", "--level", "all", "--threads", "2", "--abs-tol", "1e-6",
               "--rel-tol", "1e-5", "--top-k", "3", "--receipt", str(receipt), "-f", "json", "-o", str(out)])
    res = json.loads(out.read_text())
    rec = json.loads(receipt.read_text())
    case = rec["cases"][0]
    d = case["delegate"]
    assert d["delegateState"] == "invoked" and d["fallbackReason"] == "none"
    assert set(d["stages"].values()) == {"ok"}
    assert d["inputDigest"] == case["cpu"]["inputDigest"] and d["modelBundleId"] == case["cpu"]["modelBundleId"]
    assert case["cpu"]["shape"] == [4, 10] and len(case["cpu"]["values"]) == 40
    # the comparison is the one `partsim compare` makes of the written receipt
    out2 = tmp_path / "res2.json"
    rc2 = main(["compare", str(receipt), "-f", "json", "-o", str(out2)])
    res2 = json.loads(out2.read_text())
    assert rc2 == rc and res2["cases"] == res["cases"]
    c, dv = np.array(case["cpu"]["values"]), np.array(d["values"])
    assert res["cases"][0]["minAbsTolerance"] == float(np.abs(dv - c).max())
    assert rc == (0 if np.all(np.abs(dv - c) <= np.maximum(1e-6, 1e-5 * np.abs(c))) else 1)
    # tolerances are required
    assert main(["run-compare", str(model), "-p", "cpu", "--abs-tol", "1e-6"]) == 2


def test_unavailable_accelerator_is_not_invoked(tmp_path):
    model = _model(tmp_path / "m.onnx")
    receipt, out = tmp_path / "receipt.json", tmp_path / "res.json"
    rc = main(["run-compare", str(model), "-p", "FooExecutionProvider", "--abs-tol", "1", "--rel-tol", "1",
               "--receipt", str(receipt), "-f", "json", "-o", str(out)])
    d = json.loads(receipt.read_text())["cases"][0]["delegate"]
    assert rc == 1
    assert d["stages"]["availabilityChecked"] == "failed"
    assert d["fallbackReason"] in ("ep_unknown", "session_create_failed")
    assert d["delegateState"] in ("fallback_cpu", "failed")
    assert json.loads(out.read_text())["cases"][0]["result"] == "delegate_not_invoked"
