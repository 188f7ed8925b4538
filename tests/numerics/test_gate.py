"""Execution receipts (lifecycle matrix in real ORT) and the release gate.

Receipts are made once per module (a fixture) and reused: on three corpus models
with onnxruntime-openvino (`.venv-openvino`, built by `make openvino`) and on a
small synthetic model with a dynamic batch dimension with plain CPU ORT.  The
expected outputs are computed independently: by this process's own onnxruntime
(another build and version than the OpenVINO venv's) for the corpus models, by
numpy in float64 for the synthetic one.  The gate rules are checked on these
receipts and on copies changed the way a faulty device report would be.
"""

import copy
import hashlib
import json
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from partsim.cli import main

REPO = Path(__file__).resolve().parents[2]
SHARED = Path(__file__).resolve().parents[3] / "shared"
CORPUS = SHARED / "corpus" / "full"
OV_PY = REPO / ".venv-openvino" / "bin" / "python"
OV_MODELS = ("tiny_resnet.ts", "tiny_unet.ts", "tiny_mobilenetv2.ts")
SCHEMA = json.loads((REPO / "partsim" / "data" / "receipt.schema.json").read_text())
EMPTY = hashlib.sha256(b"").hexdigest()
CELLS = ["first", "repeat", "shape_change", "rebuild", "fallback"]


def _bundle(path):
    """modelBundleId of a model file alone, straight from the definition (docs/contract.md §6)."""
    model = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    text = f"model:{model}\n" + "".join(f"{p}:{EMPTY}\n" for p in ("metadata", "labels", "tokenizer",
                                                                     "preprocessing", "postprocessing"))
    return hashlib.sha256(text.encode()).hexdigest()


def _tensor_sha(a):
    a = np.ascontiguousarray(a)
    return hashlib.sha256(f"{a.dtype.name}:{','.join(map(str, a.shape))}\n".encode() + a.tobytes()).hexdigest()


def _gate(tmp, receipts, candidate, runtime, *extra, fmt="json"):
    out = tmp / f"gate-{len(list(tmp.glob('gate-*')))}.{fmt}"
    rc = main(["gate", *map(str, receipts), "--candidate", candidate, "--runtime", runtime, "-f", fmt,
               "-o", str(out), *extra])
    text = out.read_text() if out.exists() else ""
    return rc, (json.loads(text) if fmt == "json" and text else text)


def _cell(res, device, sample, cell):
    row = next(r for r in res["matrix"] if r["device"] == device and r["sample"] == sample)
    return row["cells"][cell]


# ---------------------------------------------------------------- fixtures

def _dyn_model(path):
    rng = np.random.default_rng(5)
    w = rng.standard_normal((16, 5)).astype(np.float32)
    b = rng.standard_normal(5).astype(np.float32)
    g = helper.make_graph([helper.make_node("MatMul", ["x", "W"], ["m"]), helper.make_node("Add", ["m", "B"], ["a"]),
                           helper.make_node("Softmax", ["a"], ["y"], axis=-1)], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 5])],
                          [numpy_helper.from_array(w, "W"), numpy_helper.from_array(b, "B")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, str(path))
    return w, b


def _softmax64(x, w, b):
    z = x.astype(np.float64) @ w.astype(np.float64) + b.astype(np.float64)
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)).astype(np.float32)


@pytest.fixture(scope="module")
def cpu_set(tmp_path_factory):
    """CPU-vs-CPU receipts (ORT at `all` vs the `disable` baseline) on a model with a dynamic batch."""
    tmp = tmp_path_factory.mktemp("cpu")
    model = tmp / "dyn.onnx"
    w, b = _dyn_model(model)
    x = np.random.default_rng(1).standard_normal((2, 16)).astype(np.float32)
    np.savez(tmp / "x.npz", x=x)
    y = _softmax64(x, w, b)
    np.savez(tmp / "good.npz", y=y)
    np.savez(tmp / "bad.npz", y=y + np.float32(0.05))
    common = [str(model), "-p", "cpu", "--level", "all", "--inputs", str(tmp / "x.npz"), "--abs-tol", "1e-5",
              "--rel-tol", "1e-4", "--top-k", "2"]
    runs = {"good": ["--expected", str(tmp / "good.npz"), "--sample", "s1"],
            "bad": ["--expected", str(tmp / "bad.npz"), "--sample", "s2"],
            "none": ["--sample", "s3"],
            "broken": ["--expected", str(tmp / "good.npz"), "--sample", "s1", "--device", "cpu-broken",
                       "--force-failure"]}
    out, rcs = {}, {}
    for k, extra in runs.items():
        out[k] = tmp / f"{k}.json"
        rcs[k] = main(["receipt", *common, *extra, "-o", str(out[k])])
    return {"tmp": tmp, "model": model, "x": x, "y": y, "w": w, "b": b, "files": out, "rc": rcs,
            "r": {k: json.loads(v.read_text()) for k, v in out.items()}, "bundle": _bundle(model),
            "runtime": json.loads(out["good"].read_text())["candidate"]["runtime"]["version"]}


@pytest.fixture(scope="module")
def ov_set(tmp_path_factory):
    if not OV_PY.exists():
        pytest.skip("no .venv-openvino (run `make openvino`): the OpenVINO receipts cannot be made")
    if not CORPUS.is_dir():
        pytest.skip(f"corpus not found at {CORPUS}")
    import onnxruntime as ort

    tmp = tmp_path_factory.mktemp("ov")
    version = subprocess.run([str(OV_PY), "-c", "import onnxruntime; print(onnxruntime.__version__)"],
                             capture_output=True, text=True, check=True).stdout.strip()
    data = {"tmp": tmp, "version": version, "files": {}, "r": {}, "rc": {}, "expected": {}}
    for i, name in enumerate(OV_MODELS):
        model = CORPUS / f"{name}.onnx"
        # independent reference: this process's onnxruntime (not the OpenVINO build), default options
        sess = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
        x = np.random.default_rng(10 + i).standard_normal((1, 3, 64, 64)).astype(np.float32)
        ref = {o.name: v for o, v in zip(sess.get_outputs(), sess.run(None, {"input": x}))}
        np.savez(tmp / f"{name}.in.npz", input=x)
        np.savez(tmp / f"{name}.exp.npz", **ref)
        data["expected"][name] = (x, ref)
        runs = {name: [], f"{name}.broken": ["--device", "ov-broken", "--force-failure"]} if i == 0 else {name: []}
        for key, extra in runs.items():
            f = tmp / f"{key}.json"
            data["rc"][key] = main(["receipt", str(model), "-p", "openvino:1.24", "--python", str(OV_PY), "--sample", "s1",
                                    "--inputs", str(tmp / f"{name}.in.npz"), "--expected",
                                    str(tmp / f"{name}.exp.npz"), "--abs-tol", "1e-4", "--rel-tol", "1e-3",
                                    *extra, "-o", str(f)])
            data["files"][key] = f
            data["r"][key] = json.loads(f.read_text())
    return data


# ---------------------------------------------------------------- receipts made here with OpenVINO

def test_openvino_receipts_full_lifecycle(ov_set):
    for name in OV_MODELS:
        r = ov_set["r"][name]
        jsonschema.validate(r, SCHEMA)
        assert ov_set["rc"][name] == 0
        cand = r["candidate"]
        assert cand["modelBundleId"] == _bundle(CORPUS / f"{name}.onnx")
        assert cand["runtime"]["version"] == ov_set["version"]
        assert cand["executionProvider"] == {"name": "OpenVINOExecutionProvider",
                                             "implementation": "onnxruntime-openvino", "version": ov_set["version"]}
        assert r["environment"]["os"] and r["environment"]["abi"]
        # the delegate really ran: every stage ok, the EP holds nodes in a partition
        assert r["delegateState"] == "invoked" and set(r["stages"].values()) == {"ok"}
        ps = r["partitionSummary"]
        assert ps["delegatedNodeCount"] > 0 and ps["partitionCount"] >= 1
        assert ps["delegatedNodeCount"] == ps["nodesPerProvider"]["OpenVINOExecutionProvider"]
        # the full lifecycle matrix, each with its own terminal state
        lc = r["lifecycle"]
        assert sorted(lc) == sorted(CELLS)
        assert {k: v["state"] for k, v in lc.items()} == {"first": "passed", "repeat": "passed", "rebuild": "passed",
                                                          "fallback": "passed", "shape_change": "not_applicable"}
        assert lc["repeat"]["invocations"] == 3 and lc["repeat"]["drift"]["result"] == "pass"
        fb = lc["fallback"]
        assert fb["failureInduced"] and fb["fallbackReason"] not in ("none", None)
        assert fb["failedStages"]["delegateCreated"] == "failed" and fb["freshSession"] and fb["bitwiseEqual"]
        # CPU baseline checked against the independent reference, and close to it here too
        x, ref = ov_set["expected"][name]
        assert r["cpuBaseline"]["baselineCheck"] == dict(r["cpuBaseline"]["baselineCheck"], done=True, result="pass")
        for out in r["cpuBaseline"]["outputs"]:
            assert np.allclose(out["head"], ref[out["name"]].ravel()[:8], atol=1e-4, rtol=1e-3)
        # no user content: the input is only digested
        assert r["sample"]["inputs"] == [{"name": "input", "shape": [1, 3, 64, 64], "dtype": "float32",
                                          "sha256": _tensor_sha(x)}]
        assert repr(float(x.ravel()[0]))[:10] not in ov_set["files"][name].read_text()


def test_openvino_gate_one_matrix(ov_set, tmp_path):
    files = [ov_set["files"][n] for n in OV_MODELS]
    for name in OV_MODELS:
        cand = _bundle(CORPUS / f"{name}.onnx")
        rc, res = _gate(tmp_path, files, cand, ov_set["version"])
        assert rc == 0 and res["passed"]
        dev = ov_set["r"][name]["environment"]["device"]
        assert {c: v["state"] for c, v in res["matrix"][0]["cells"].items()} == {
            "first": "verified", "repeat": "verified", "shape_change": "not_applicable", "rebuild": "verified",
            "fallback": "verified"}
        assert res["matrix"][0]["device"] == dev
        # the two receipts of the other models are another candidate: rejected, with the reason
        assert sorted(x["receipt"] for x in res["rejected"]) == sorted(str(f) for f in files
                                                                        if f != ov_set["files"][name])
        assert {x["reason"] for x in res["rejected"]} == {"other_candidate"}
    rc, xml = _gate(tmp_path, files, _bundle(CORPUS / "tiny_unet.ts.onnx"), ov_set["version"], fmt="junit")
    root = ET.fromstring(xml)
    assert rc == 0 and root.get("failures") == "0" and root.get("errors") == "2" and root.get("skipped") == "1"


def test_openvino_forced_failure_is_fallback_only(ov_set, tmp_path):
    r = ov_set["r"]["tiny_resnet.ts.broken"]
    assert ov_set["rc"]["tiny_resnet.ts.broken"] == 1
    assert r["delegateState"] != "invoked" and r["stages"]["delegateCreated"] == "failed"
    assert r["partitionSummary"]["delegatedNodeCount"] == 0
    assert r["cpuAfterFallback"] == {"freshSession": True, "cpuInvocationResult": "ok", "rawTensorResult": "pass",
                                     "bitwiseEqual": True}
    files = [ov_set["files"]["tiny_resnet.ts"], ov_set["files"]["tiny_resnet.ts.broken"]]
    good_dev = ov_set["r"]["tiny_resnet.ts"]["environment"]["device"]
    rc, res = _gate(tmp_path, files, _bundle(CORPUS / "tiny_resnet.ts.onnx"), ov_set["version"])
    assert rc == 1 and not res["passed"]
    for cell in ("first", "repeat", "rebuild"):
        v = _cell(res, "ov-broken", "s1", cell)
        assert (v["state"], v["check"]) == ("fallback_only", "delegate_invoked")
        assert _cell(res, good_dev, "s1", cell)["state"] == "verified"
    assert _cell(res, "ov-broken", "s1", "fallback")["state"] == "verified"


# ---------------------------------------------------------------- CPU receipts and the gate rules

def test_cpu_receipt_shape_change_and_business(cpu_set):
    r = cpu_set["r"]["good"]
    jsonschema.validate(r, SCHEMA)
    assert cpu_set["rc"]["good"] == 0
    sc = r["lifecycle"]["shape_change"]
    assert sc["state"] == "passed" and sc["dims"] == {"N": 3}
    assert sc["inputDigest"] == sc["cpuInputDigest"] != r["sample"]["inputDigest"]
    assert sc["backToOriginal"]["result"] == "pass"
    assert r["sample"]["dynamicDims"] == ["N"]
    # baseline outputs are numpy's float64 softmax within the tolerance
    head = np.array(r["cpuBaseline"]["outputs"][0]["head"])
    assert np.all(np.abs(head - cpu_set["y"].ravel()[:8]) <= np.maximum(1e-5, 1e-4 * np.abs(cpu_set["y"].ravel()[:8])))
    assert r["businessResult"] == "pass" and r["tolerance"]["topK"] == 2
    for cell in ("first", "repeat", "rebuild", "fallback"):
        assert r["lifecycle"][cell]["state"] == "passed", cell


def test_gate_all_verified_and_outputs(cpu_set, tmp_path):
    dev = cpu_set["r"]["good"]["environment"]["device"]
    rc, res = _gate(tmp_path, [cpu_set["files"]["good"]], cpu_set["bundle"], cpu_set["runtime"])
    assert rc == 0 and res["required"] == {"devices": [dev], "samples": ["s1"], "cells": CELLS}
    assert all(v["state"] == "verified" for v in res["matrix"][0]["cells"].values())
    rc, table = _gate(tmp_path, [cpu_set["files"]["good"]], cpu_set["bundle"], f"onnxruntime {cpu_set['runtime']}",
                      fmt="table")
    assert rc == 0 and "gate: PASS" in table and "5 verified" in table


def test_gate_rejects_other_candidate_and_runtime(cpu_set, tmp_path):
    good = cpu_set["r"]["good"]
    other = copy.deepcopy(good)
    other["candidate"]["modelBundleId"] = hashlib.sha256(b"another model").hexdigest()
    f = tmp_path / "other.json"
    f.write_text(json.dumps(other))
    rc, res = _gate(tmp_path, [cpu_set["files"]["good"], f], cpu_set["bundle"], cpu_set["runtime"])
    assert rc == 0 and res["accepted"] == [str(cpu_set["files"]["good"])]
    assert [(x["receipt"], x["reason"]) for x in res["rejected"]] == [(str(f), "other_candidate")]
    # wrong runtime: everything rejected, and the required cells are missing
    dev = good["environment"]["device"]
    rc, res = _gate(tmp_path, [cpu_set["files"]["good"]], cpu_set["bundle"], "0.0.1", "--devices", dev,
                    "--samples", "s1")
    assert rc == 1 and [x["reason"] for x in res["rejected"]] == ["other_runtime"]
    assert {v["state"] for v in res["matrix"][0]["cells"].values()} == {"missing"}
    assert len(res["gaps"]) == 5


def test_gate_blocks_on_cpu_baseline(cpu_set, tmp_path):
    bad, none = cpu_set["r"]["bad"], cpu_set["r"]["none"]
    assert bad["cpuBaseline"]["baselineCheck"]["done"] and bad["cpuBaseline"]["baselineCheck"]["result"] == "fail"
    assert none["cpuBaseline"]["baselineCheck"] == {"done": False, "source": None, "result": "not_done",
                                                    "outputs": []}
    for r in (bad, none):
        assert {c["state"] for k, c in r["lifecycle"].items()} == {"blocked"}
        assert r["lifecycle"]["first"]["observedState"] == "passed"  # the delegate itself matched the CPU
    assert cpu_set["rc"]["bad"] == cpu_set["rc"]["none"] == 1
    rc, res = _gate(tmp_path, [cpu_set["files"]["bad"], cpu_set["files"]["none"]], cpu_set["bundle"],
                    cpu_set["runtime"])
    assert rc == 1
    for smp in ("s2", "s3"):
        row = next(r for r in res["matrix"] if r["sample"] == smp)
        assert {(v["state"], v["check"]) for v in row["cells"].values()} == {("blocked", "cpu_baseline")}


def test_gate_lists_missing_cells(cpu_set, tmp_path):
    r = copy.deepcopy(cpu_set["r"]["good"])
    del r["lifecycle"]["rebuild"]
    f = tmp_path / "partial.json"
    f.write_text(json.dumps(r))
    dev = r["environment"]["device"]
    req = tmp_path / "devices.yaml"
    req.write_text(f"devices: [{dev}, pixel8-nnapi]\nsamples: [s1]\ncells: [first, rebuild, fallback]\n")
    rc, res = _gate(tmp_path, [f], cpu_set["bundle"], cpu_set["runtime"], "--require", str(req))
    assert rc == 1
    assert sorted((g["device"], g["cell"]) for g in res["gaps"]) == [
        (dev, "rebuild"), ("pixel8-nnapi", "fallback"), ("pixel8-nnapi", "first"), ("pixel8-nnapi", "rebuild")]
    assert _cell(res, dev, "s1", "first")["state"] == "verified"
    rc, xml = _gate(tmp_path, [f], cpu_set["bundle"], cpu_set["runtime"], "--require", str(req), fmt="junit")
    assert ET.fromstring(xml).get("errors") == "4"
    assert main(["gate", str(f), "--candidate", cpu_set["bundle"], "--runtime", "1", "--cells", "first,boot"]) == 2


def test_gate_forced_failure_cpu_is_fallback_only(cpu_set, tmp_path):
    r = cpu_set["r"]["broken"]
    assert r["lifecycle"]["fallback"]["state"] == "passed" and r["lifecycle"]["fallback"]["bitwiseEqual"]
    rc, res = _gate(tmp_path, [cpu_set["files"]["broken"]], cpu_set["bundle"], cpu_set["runtime"])
    assert rc == 1
    assert {c: v["state"] for c, v in res["matrix"][0]["cells"].items()} == {
        "first": "fallback_only", "repeat": "fallback_only", "shape_change": "fallback_only",
        "rebuild": "fallback_only", "fallback": "verified"}


@pytest.mark.parametrize("change,cell,state,check", [
    (lambda r: r["lifecycle"]["first"].update(rawTensorResult="fail"), "first", "failed", "tensor"),
    (lambda r: r["lifecycle"]["first"].update(businessResult="fail"), "first", "failed", "business"),
    (lambda r: r["lifecycle"]["repeat"]["drift"].update(result="fail"), "repeat", "failed", "tensor"),
    (lambda r: r.pop("partitionSummary"), "first", "blocked", "partition_summary"),
    (lambda r: r["lifecycle"]["rebuild"].update(inputDigest="0" * 64), "rebuild", "blocked", "metadata"),
    (lambda r: r["lifecycle"]["first"]["stages"].update(prepareCompleted="failed"), "first", "fallback_only",
     "delegate_invoked"),
    (lambda r: r["lifecycle"]["fallback"].update(bitwiseEqual=False), "fallback", "failed", "fallback"),
    (lambda r: r["lifecycle"]["fallback"].update(failureInduced=False), "fallback", "blocked", "delegate_invoked"),
    (lambda r: r["lifecycle"].pop("fallback"), "first", "failed", "delegate_invoked"),
])
def test_gate_rules_on_altered_receipts(cpu_set, tmp_path, change, cell, state, check):
    r = copy.deepcopy(cpu_set["r"]["good"])
    change(r)
    if cell == "first" and "fallback" not in r["lifecycle"]:  # no fallback cell and a delegate that did not run
        r["lifecycle"]["first"].update(delegateState="fallback_cpu")
    jsonschema.validate(r, SCHEMA)
    f = tmp_path / "altered.json"
    f.write_text(json.dumps(r))
    rc, res = _gate(tmp_path, [f], cpu_set["bundle"], cpu_set["runtime"])
    v = _cell(res, r["environment"]["device"], "s1", cell)
    assert rc == 1 and (v["state"], v["check"]) == (state, check)


def test_malformed_inputs_exit_2(cpu_set, tmp_path):
    r = copy.deepcopy(cpu_set["r"]["good"])
    r["lifecycle"]["first"]["state"] = "looks_fine"
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(r))
    assert main(["gate", str(f), "--candidate", cpu_set["bundle"], "--runtime", cpu_set["runtime"]]) == 2
    assert main(["gate", str(tmp_path / "absent.json"), "--candidate", "x", "--runtime", "1"]) == 2
    assert main(["receipt", str(cpu_set["model"]), "-p", "cpu", "--abs-tol", "1e-5"]) == 2  # no rel tolerance
    y = tmp_path / "d.yaml"
    y.write_text("devices: &a [x]\nsamples: *a\n")
    assert main(["gate", str(cpu_set["files"]["good"]), "--candidate", "x", "--runtime", "1", "--require", str(y)]) == 2


def test_run_compare_lifecycle(cpu_set, tmp_path):
    out, rec = tmp_path / "res.json", tmp_path / "receipt.json"
    rc = main(["run-compare", str(cpu_set["model"]), "-p", "cpu", "--level", "all", "--inputs",
               str(cpu_set["tmp"] / "x.npz"), "--abs-tol", "1e-5", "--rel-tol", "1e-4", "--lifecycle",
               "--expected", str(cpu_set["tmp"] / "good.npz"), "--receipt", str(rec), "-f", "json", "-o", str(out)])
    res = json.loads(out.read_text())
    assert rc == 0 and res["baselineCheck"]["result"] == "pass"
    assert res["lifecycle"] == {c: "passed" for c in CELLS}
    assert json.loads(rec.read_text())["lifecycle"]["shape_change"]["dims"] == {"N": 3}
    rc = main(["run-compare", str(cpu_set["model"]), "-p", "cpu", "--inputs", str(cpu_set["tmp"] / "x.npz"),
               "--abs-tol", "1e-5", "--rel-tol", "1e-4", "--expected", str(cpu_set["tmp"] / "bad.npz"), "-f", "json",
               "-o", str(out)])
    assert rc == 1 and json.loads(out.read_text())["rawTensorResult"] == "blocked"


def test_receipt_reads_onnx_test_data(cpu_set, tmp_path):
    """``--expected DIR`` with ONNX test data: input_0.pb is the sample, output_0.pb the reference."""
    d = tmp_path / "test_data_set_0"
    d.mkdir()
    x = np.random.default_rng(3).standard_normal((4, 16)).astype(np.float32)
    (d / "input_0.pb").write_bytes(numpy_helper.from_array(x, "x").SerializeToString())
    y = _softmax64(x, cpu_set["w"], cpu_set["b"])
    (d / "output_0.pb").write_bytes(numpy_helper.from_array(y).SerializeToString())  # unnamed: model output 0
    out = tmp_path / "r.json"
    rc = main(["receipt", str(cpu_set["model"]), "-p", "cpu", "--expected", str(d), "--abs-tol", "1e-5",
               "--rel-tol", "1e-4", "--repeat", "2", "-o", str(out)])
    r = json.loads(out.read_text())
    assert rc == 0 and r["sample"]["source"] == "onnx-test-data"
    assert r["sample"]["inputs"][0]["sha256"] == _tensor_sha(x)
    assert r["cpuBaseline"]["baselineCheck"]["source"] == "onnx-test-data"
    assert r["cpuBaseline"]["baselineCheck"]["result"] == "pass"
    assert r["lifecycle"]["shape_change"]["dims"] == {"N": 5}
