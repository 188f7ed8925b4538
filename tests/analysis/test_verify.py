"""`partsim verify`: observations, agreement, JUnit, baselines."""

import json
import xml.etree.ElementTree as ET

import pytest

from partsim.runtime.observation import import_observation
from tests.conftest import ROOT, shared_path, as_written_cli


# These tests describe the graph as written (an ORT_DISABLE_ALL session): level disable unless asked
@pytest.fixture
def run_cli(run_cli):
    return as_written_cli(run_cli)


CHAIN = ROOT / "fixtures" / "chain.onnx"
EXPECTED = {"n0_MatMul": "EP", "n1_Add": "CPUExecutionProvider", "n2_Relu": "CPUExecutionProvider",
            "n3_MatMul": "EP", "n4_Add": "CPUExecutionProvider", "n5_Relu": "CPUExecutionProvider",
            "n6_MatMul": "EP"}


def _obs(tmp_path, nodes, memcpy=(2, 2)):
    p = tmp_path / "obs.json"
    p.write_text(json.dumps({"schemaVersion": "1.0", "level": "disable", "nodes": nodes,
                             "memcpy": {"fromHost": memcpy[0], "toHost": memcpy[1]}}))
    return p


def test_exact_agreement_passes(tmp_path, run_cli):
    code, out, err = run_cli("verify", CHAIN, "--support", "MatMul", "--observation", _obs(tmp_path, EXPECTED),
                             "-f", "json")
    assert code == 0, err
    r = json.loads(out)["verify"]
    assert r["agreement"] == 1.0 and r["compared"] == 7 and r["disagreements"] == []
    assert r["counts"]["fragments"] == {"predicted": 5, "observed": 5}


def test_one_disagreeing_node_fails_and_is_named(tmp_path, run_cli):
    nodes = dict(EXPECTED, n2_Relu="EP")
    code, out, _ = run_cli("verify", CHAIN, "--support", "MatMul", "--observation", _obs(tmp_path, nodes),
                           "-f", "json")
    assert code == 1
    r = json.loads(out)["verify"]
    assert [d["node"] for d in r["disagreements"]] == ["n2_Relu"]
    assert r["disagreements"][0]["predictedReason"] == "op_not_in_table"
    assert r["agreement"] == pytest.approx(6 / 7, abs=1e-6)
    # observed: EP | CPU(Add) | EP(Relu, MatMul) | CPU CPU | EP, still 5 fragments, one CPU node fewer
    assert r["counts"]["fragments"]["observed"] == 5
    # a lower threshold lets it pass
    code, _, _ = run_cli("verify", CHAIN, "--support", "MatMul", "--observation", _obs(tmp_path, nodes),
                         "--min-agreement", "0.8")
    assert code == 0


def test_memcpy_count_mismatch_fails(tmp_path, run_cli):
    code, _, _ = run_cli("verify", CHAIN, "--support", "MatMul", "--observation",
                         _obs(tmp_path, EXPECTED, memcpy=(0, 0)))
    assert code == 1
    code, _, _ = run_cli("verify", CHAIN, "--support", "MatMul", "--observation",
                         _obs(tmp_path, EXPECTED, memcpy=(0, 0)), "--ignore-counts")
    assert code == 0


def test_junit_output(tmp_path, run_cli):
    nodes = dict(EXPECTED, n2_Relu="EP")
    code, out, _ = run_cli("verify", CHAIN, "--support", "MatMul", "--observation", _obs(tmp_path, nodes),
                           "-f", "junit")
    assert code == 1
    suite = ET.fromstring(out)
    assert suite.tag == "testsuite" and suite.get("failures") == "1"
    failing = [c.get("name") for c in suite.iter("testcase") if c.find("failure") is not None]
    assert failing == ["n2_Relu"]


def test_baseline_gate(tmp_path, run_cli):
    """A model change that fragments the graph fails the gate (more cases: tests/analysis/test_baseline_gate.py)."""
    model, base = tmp_path / "m.onnx", tmp_path / "baseline.json"
    model.write_bytes(CHAIN.read_bytes())
    code, _, _ = run_cli("verify", model, "--support", "MatMul,Add", "--baseline", base, "--update-baseline")
    assert code == 0 and json.loads(base.read_text())["counts"]["fragments"] == 5
    code, _, _ = run_cli("verify", model, "--support", "MatMul,Add", "--baseline", base)
    assert code == 0
    # EP | CPU | EP | CPU | EP.  The chain with n2 Relu -> Add: one node more on EP, 3 fragments: passes
    import onnx

    m = onnx.load(str(model))
    m.graph.node[2].op_type = "Add"
    m.graph.node[2].input.append(m.graph.node[2].input[0])
    onnx.save(m, str(model))
    code, out, _ = run_cli("verify", model, "--support", "MatMul,Add", "--baseline", base, "-f", "json")
    assert code == 0, out
    # then n3 MatMul -> Relu: EP EP EP CPU EP CPU EP, 5 nodes on EP and 5 fragments as in the baseline,
    # yet n3 left the EP: the gate fails, naming it (a counts-only gate passed this)
    m.graph.node[3].op_type = "Relu"
    del m.graph.node[3].input[1:]
    onnx.save(m, str(model))
    code, out, _ = run_cli("verify", model, "--support", "MatMul,Add", "--baseline", base, "-f", "json")
    assert code == 1
    b = json.loads(out)["baseline"]
    assert [x["node"] for x in b["moved"]] == ["n3_MatMul"] and b["moved"][0]["opType"] == "Relu"
    assert [f["rule"] for f in b["failures"]] == ["firstProviderNodes"]
    assert b["now"]["counts"]["fragments"] == 5 and b["now"]["counts"]["firstProviderNodes"] == 5


@pytest.mark.parametrize("text", ["{", "[]", '{"records": []}', '{"schemaVersion": "1.0", "nodes": [1]}', '42'])
def test_malformed_observation_exit_2(tmp_path, run_cli, text):
    p = tmp_path / "bad.json"
    p.write_text(text)
    code, out, err = run_cli("verify", CHAIN, "--support", "MatMul", "--observation", p)
    assert code == 2 and out == ""
    assert str(p) in err and len(err.strip().splitlines()) == 1


def test_import_shared_cuda_observation():
    d = shared_path("observed", "cuda", "tiny_transformer.ts")
    raw = json.loads((d / "observed.json").read_text())
    rec = next(r for r in raw["records"] if r["level"] == "ORT_DISABLE_ALL")
    obs = import_observation(d / "observed.json", "disable")
    n_assigned = sum(len(m) for _, m in rec["assignment"])
    assert len(obs["nodes"]) == n_assigned
    assert obs["memcpy"]["fromHost"] == sum(1 for o in rec["optimized_ops"] if o[1] == "MemcpyFromHost")
    assert obs["level"] == "disable" and obs["runtime"].startswith("onnxruntime-gpu")
    all_level = import_observation(d / "observed.json", "ORT_ENABLE_ALL")
    assert all_level["level"] == "all" and len(all_level["nodes"]) < len(obs["nodes"])


@pytest.mark.parametrize("case", ["bert_tiny.ts", "fasterrcnn_mobilenet_v3_large_320_fpn.ts", "gpt2_tiny.ts",
                                  "q_tiny_resnet.ts.qop", "tiny_transformer.ts"])
def test_verify_passes_on_recorded_cuda_observations(run_cli, case):
    # the CLI gate itself (exact node agreement and equal Memcpy counts) on every GPU recording
    d = shared_path("observed", "cuda", case)
    code, out, err = run_cli("verify", d / "model.onnx", "-p", "cuda", "--observation", d / "observed.json",
                             "--level", "disable", "-f", "json")
    assert code == 0, (out[-2000:], err)
    v = json.loads(out)["verify"]
    assert v["agreement"] == 1.0 and v["disagreements"] == []
