"""Real ORT sessions in a child process: observe, providers, verify --observe."""

import json

import pytest

from partsim.ortrun import run_session
from tests.conftest import ROOT, shared_path

CHAIN = ROOT / "fixtures" / "chain.onnx"


def test_observe_records_every_node(run_cli, tmp_path):
    out = tmp_path / "obs.json"
    code, _, err = run_cli("observe", CHAIN, "-p", "CPUExecutionProvider", "-o", out)
    assert code == 0, err
    obs = json.loads(out.read_text())
    assert obs["state"] == "ok" and obs["source"] == "assignment_info"
    assert obs["nodes"] == {f"n{k}_{op}": "CPUExecutionProvider" for k, op in
                            enumerate(["MatMul", "Add", "Relu", "MatMul", "Add", "Relu", "MatMul"])}
    # the recorded observation verifies the CPU prediction exactly
    code, _, _ = run_cli("verify", CHAIN, "-p", "cpu", "--observation", out)
    assert code == 0


def test_providers_strict_names_both_dropped(run_cli):
    code, out, _ = run_cli("providers", "--request",
                           "CUDAExecutionProvider,FooExecutionProvider,CPUExecutionProvider", "--strict", "-f", "json")
    assert code == 1
    r = json.loads(out)
    assert r["granted"] == ["CPUExecutionProvider"]
    assert r["dropped"] == [{"name": "CUDAExecutionProvider", "reason": "not_available"},
                            {"name": "FooExecutionProvider", "reason": "unknown_provider"}]
    assert any("FooExecutionProvider" in w for w in r["warnings"])
    code, _, _ = run_cli("providers", "--request", "CPUExecutionProvider", "--strict")
    assert code == 0


def test_crash_and_timeout_are_reported_and_batch_goes_on():
    crashed = run_session(CHAIN, ["CPUExecutionProvider"], hook="crash")
    assert crashed["state"] == "crashed" and crashed["returncode"] != 0
    hung = run_session(CHAIN, ["CPUExecutionProvider"], hook="hang", timeout=3)
    assert hung["state"] == "timeout"
    after = run_session(CHAIN, ["CPUExecutionProvider"])  # the next session of the batch still runs
    assert after["state"] == "ok" and len(after["assignment"]) > 0


@pytest.mark.parametrize("name", ["full/tiny_resnet.ts.onnx", "full/tiny_transformer.ts.onnx",
                                  "graph_only/resnet18.ts.onnx"])
def test_verify_observe_cpu_exact(run_cli, name):
    model = shared_path("corpus", *name.split("/"))
    code, out, err = run_cli("verify", model, "-p", "cpu", "--observe", "-f", "json")
    assert code == 0, (out, err)
    v = json.loads(out)["verify"]
    assert v["agreement"] == 1.0 and v["compared"] > 0
