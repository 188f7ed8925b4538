"""Real ORT sessions in a child process: observe, providers, verify --observe."""

import json

import pytest

from partsim.runtime.observe import run_session
from tests.conftest import ROOT, shared_path

CHAIN = ROOT / "fixtures" / "chain.onnx"


def test_observe_records_every_node(run_cli, tmp_path):
    out = tmp_path / "obs.json"
    code, _, err = run_cli("observe", CHAIN, "-p", "CPUExecutionProvider", "--level", "disable", "-o", out)
    assert code == 0, err
    obs = json.loads(out.read_text())
    assert obs["state"] == "ok" and obs["source"] == "assignment_info"
    assert obs["nodes"] == {f"n{k}_{op}": "CPUExecutionProvider" for k, op in
                            enumerate(["MatMul", "Add", "Relu", "MatMul", "Add", "Relu", "MatMul"])}
    # the recorded observation verifies the CPU prediction exactly
    code, _, _ = run_cli("verify", CHAIN, "-p", "cpu", "--level", "disable", "--observation", out)
    assert code == 0
    # verify compares at one level: the default (all) against a disable observation is refused
    code, _, err = run_cli("verify", CHAIN, "-p", "cpu", "--observation", out)
    assert code == 2 and "across levels" in err


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


@pytest.mark.parametrize("name", ["full/tiny_transformer.ts.onnx", "graph_only/bert_tiny.ts.onnx"])
def test_optimize_basic_matches_a_real_basic_session(run_cli, name):
    # the prediction is made on ORT's own BASIC rewrite; the session runs at BASIC too
    model = shared_path("corpus", *name.split("/"))
    code, out, err = run_cli("verify", model, "-p", "cpu", "--level", "basic", "--observe", "-f", "json")
    assert code == 0, (out, err)
    v = json.loads(out)["verify"]
    assert v["agreement"] == 1.0 and v["unobserved"] == [] and v["unpredicted"] == []


def test_optimize_basic_folds_cuda_shape_subgraphs(run_cli):
    # SPEC section 5: swin_t has many CPU-preferred shape nodes and Memcpy at DISABLE_ALL, none after BASIC
    model = shared_path("corpus", "graph_only", "swin_t.ts.onnx")
    _, raw, _ = run_cli("simulate", model, "-p", "cuda", "--level", "disable", "-f", "json")
    _, basic, _ = run_cli("simulate", model, "-p", "cuda", "--optimize", "basic", "-f", "json")
    raw, basic = json.loads(raw), json.loads(basic)
    assert raw["memcpy"]["fromHost"] + raw["memcpy"]["toHost"] > 100
    assert raw["undelegatedReasons"].get("cpu_preferred", 0) > 100
    assert basic["memcpy"] == {"fromHost": 0, "toHost": 0, "tensors": []}
    assert basic["perProvider"]["CPUExecutionProvider"]["nodes"] == 0
    assert basic["model"]["sha256"] == raw["model"]["sha256"]  # still names the user's file


def test_verbose_placement_log_is_recorded():
    rec = run_session(CHAIN, ["CPUExecutionProvider"])
    assert rec["placement"] == {"CPUExecutionProvider": {"count": 7, "nodes": "all"}}


def test_parse_placement_of_a_split_graph():
    from partsim.runtime.ort_child import parse_placement

    text = ("2026-11-29 [V:onnxruntime:, session_state.cc:1234 VerifyEachNodeIsAssignedToAnEp] "
            "Node(s) placed on [CUDAExecutionProvider]. Number of nodes: 2\n"
            " MatMul (n0_MatMul)\n Relu (n2_Relu)\n"
            "2026-11-29 [V:onnxruntime:, session_state.cc:1234 VerifyEachNodeIsAssignedToAnEp] "
            "Node(s) placed on [CPUExecutionProvider]. Number of nodes: 1\n"
            " Add (n1_Add)\n"
            "2026-11-29 [V:onnxruntime:, other.cc:1] something else\n")
    assert parse_placement(text) == {
        "CUDAExecutionProvider": {"count": 2, "nodes": [["MatMul", "n0_MatMul"], ["Relu", "n2_Relu"]]},
        "CPUExecutionProvider": {"count": 1, "nodes": [["Add", "n1_Add"]]}}


def test_memory_ceiling_stops_a_runaway_session():
    hog = run_session(CHAIN, ["CPUExecutionProvider"], hook="hog", memory_limit=2 * 1024**3, timeout=60)
    assert hog["state"] == "crashed" and "MemoryError" in hog["error"]
    assert run_session(CHAIN, ["CPUExecutionProvider"])["state"] == "ok"
