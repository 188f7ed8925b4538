"""Issue 27: the user's model is the subject — `nodes` is the graph ORT partitions, at every level; what ORT
rewrites after partitioning is a second view (`finalNodes`) that points back.

References are real ORT sessions run here (assignment info and profile, in a child process) and ONNX's own
loader; nothing is compared with partsim's own output alone.
"""

import hashlib
import json
import os
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h

from partsim.analysis.verify import compare, compare_final
from partsim.api import predict
from partsim.errors import UsageError
from partsim.io.load import load_model
from partsim.runtime.observe import observation_from_run, run_session
from partsim.sim.final_view import canonical_names
from tests.conftest import ROOT, shared_path
from tests.analysis.test_baseline_gate import symbolic_batch

CPU = "CPUExecutionProvider"


def _conv_relu_conv(path):
    """Conv -> Relu -> Conv -> Add(residual) -> Relu: Level 2/3 fold the activations and the Add into Convs
    (FusedConv or NCHWc Conv) on the CPU."""
    rng = np.random.default_rng(0)
    w1 = onnx.numpy_helper.from_array(rng.standard_normal((8, 8, 3, 3)).astype(np.float32), "w1")
    w2 = onnx.numpy_helper.from_array(rng.standard_normal((8, 8, 3, 3)).astype(np.float32), "w2")
    nodes = [h.make_node("Conv", ["x", "w1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
             h.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             h.make_node("Conv", ["r1", "w2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
             h.make_node("Add", ["c2", "x"], ["a"], name="add"),
             h.make_node("Relu", ["a"], ["y"], name="relu2")]
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", T.FLOAT, [1, 8, 16, 16])],
                     [h.make_tensor_value_info("y", T.FLOAT, [1, 8, 16, 16])], [w1, w2])
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)], ir_version=8), str(path))
    return path


def test_two_views_of_a_real_cpu_session(tmp_path):
    model = _conv_relu_conv(tmp_path / "m.onnx")
    summary, _ = predict(model, ["cpu"])
    rec = run_session(model, [CPU], "all", timeout=120)
    assert rec["state"] == "ok", rec.get("error")
    obs = observation_from_run(rec, "all")
    # the graph ORT partitions: the model's five nodes, as its placement API names them
    assert summary["view"] == "partitioning" and obs["source"] == "assignment_info"
    assert sorted(n["name"] for n in summary["nodes"]) == sorted(obs["nodes"]) == \
        ["add", "conv1", "conv2", "relu1", "relu2"]
    # the graph it runs is another one (NCHWc Convs with the Relu folded in, and Reorder nodes between them and
    # the rest): every node that ran is predicted on its provider (the profile is the judge).  How many Reorder
    # nodes depends on the host's CPU: MLAS's NCHWc block is 16 channels with AVX-512 and 8 with AVX2
    # (MlasNchwcGetBlockSize in onnxruntime/core/mlas/lib/snchwc.cpp; platform.cpp sets the block), so the Add joins the NCHWc chain on one
    # machine and stays outside it on another; the prediction reads ORT's optimized graph made on this host
    ran = obs["finalNodes"]
    assert set(ran) != set(obs["nodes"]) and any(n.startswith("ReorderOutput") for n in ran)
    assert any(n.endswith("_nchwc") for n in ran)
    final = compare_final(summary, obs)
    assert final["agreement"] == 1.0, final
    # each model node is followed to the node that ran in its place; nothing is lost or counted twice
    replaced = [r for f in summary["finalNodes"] for r in f["replaces"]]
    assert sorted(replaced) == ["add", "conv1", "conv2", "relu1", "relu2"]
    by_final = {f["name"]: set(f["replaces"]) for f in summary["finalNodes"]}
    assert any({"conv1", "relu1"} <= s for s in by_final.values())  # the activation went with its Conv
    for n in summary["nodes"]:
        assert n["endsAs"] and n["name"] in by_final[n["endsAs"][0]]
    # verify compares each view with its own and says which it compared
    result = compare(summary, _, obs)
    assert result["passed"] and result["views"] == ["partitioning", "final"]


def test_reasons_blame_and_check_speak_only_of_partitioned_nodes(tmp_path, run_cli):
    """A CNN with a symbolic batch dimension under QNN: the only cause is the dimension — no reason, blame row
    or check message names a node ORT made after partitioning (NCHWc Conv, ReorderOutput)."""
    model = symbolic_batch(shared_path("corpus", "full", "tiny_resnet.ts.onnx"), tmp_path / "m.onnx")
    summary, _ = predict(model, ["qnn"])
    assert summary["undelegatedReasons"] == {"dynamic_shape": summary["model"]["nodeCount"]}
    partitioned = {n["name"] for n in summary["nodes"]}
    assert not any(n["domain"] == "com.microsoft.nchwc" or n["opType"].startswith("Reorder")
                   for n in summary["nodes"])
    assert any(f["domain"] == "com.microsoft.nchwc" for f in summary["finalNodes"])  # they exist, apart

    code, out, _ = run_cli("blame", model, "-p", "qnn", "-f", "json")
    assert code == 0
    doc = json.loads(out)
    named = {n for r in doc["causes"] for n in r.get("movedToFirstProvider", [])}
    assert doc["undelegatedNodes"] == len(partitioned)
    assert named and named <= partitioned
    assert not any("nchwc" in str(r.get("cause", "")).lower() or str(r.get("cause", "")).startswith("Reorder")
                   for r in doc["causes"])

    (tmp_path / "partsim.toml").write_text('[[check]]\nmodels = ["m.onnx"]\nproviders = ["qnn"]\n'
                                           'min_delegated_share = 0.5\n')
    code, out, _ = run_cli("check", "--config", tmp_path / "partsim.toml", "-f", "json")
    assert code == 1
    doc = json.loads(out)
    budget = doc["results"][0]["budgets"][0]
    assert {n["reason"] for n in budget["nodes"]} == {"dynamic_shape"}
    assert {n["node"] for n in budget["nodes"]} <= partitioned
    assert "reasons: dynamic_shape" in budget["message"] and "op_not_in_table" not in budget["message"]


def test_a_loaded_model_stands_for_its_file(tmp_path):
    path = shared_path("corpus", "graph_only", "resnet18.ts.onnx")
    by_path, _ = predict(path, ["nnapi"])
    by_model, _ = predict(load_model(path), ["nnapi"])
    assert json.dumps(by_model, sort_keys=True) == json.dumps(by_path, sort_keys=True)
    assert by_path["level"] == "all" and by_path["partitionCount"] == 1
    # a graph built in memory has no file ORT could optimize: refused at ORT's levels, predicted as written
    model = load_model(_conv_relu_conv(tmp_path / "m.onnx"))
    (tmp_path / "m.onnx").write_bytes(b"changed")
    with pytest.raises(UsageError, match="level='disable'"):
        predict(model, ["nnapi"])
    as_written, _ = predict(model, ["nnapi"], level="disable")
    assert as_written["level"] == "disable" and len(as_written["nodes"]) == 5


def test_canonical_names_do_not_depend_on_the_order_ort_named_them():
    # ORT named the same two nodes in the other order in another process: the canonical names agree
    tensors = {"ReorderOutput": "a", "ReorderOutput_token_7": "b"}
    one = canonical_names(["conv", "ReorderOutput", "ReorderOutput_token_7"], {"conv"},
                          lambda i: ["", tensors["ReorderOutput"], tensors["ReorderOutput_token_7"]][i])
    other = canonical_names(["conv", "ReorderOutput_token_7", "ReorderOutput"], {"conv"},
                            lambda i: ["", "a", "b"][i])
    assert one["ReorderOutput"] == other["ReorderOutput_token_7"] == "ReorderOutput#0"
    assert one["ReorderOutput_token_7"] == other["ReorderOutput"] == "ReorderOutput#1"


@pytest.mark.parametrize("name", ["googlenet.ts.onnx", "efficientnet_b0.ts.onnx"])
def test_simulate_cpu_gives_the_same_bytes_under_three_hash_seeds(name, tmp_path):
    """Three fresh processes, each with its own string-hash seed (set, so that a failure names the seed that
    made it): the same bytes.  Six processes with random seeds checked nothing more and cost twice the CPU."""
    model = shared_path("corpus", "graph_only", name)
    outputs = {}
    for seed in ("1", "2", "3"):
        env = dict(os.environ, PARTSIM_NO_CACHE="1", PARTSIM_WORKER="0", PYTHONHASHSEED=seed)
        out = tmp_path / f"s{seed}.json"
        r = subprocess.run([sys.executable, str(ROOT / "cli.py"), "simulate", str(model), "-p", "cpu",
                            "-f", "json", "-o", str(out)], capture_output=True, text=True, env=env, cwd=ROOT)
        assert r.returncode == 0, r.stderr
        outputs[seed] = hashlib.sha256(out.read_bytes()).hexdigest()
    assert len(set(outputs.values())) == 1, outputs
    assert json.loads(out.read_text())["finalNodes"]


def test_dim_means_the_same_in_the_real_session(tmp_path, run_cli):
    """`verify --dim batch=1 --observe`: the prediction fixes the dim and so does the real session (ORT's free
    dimension overrides), so a QNN model with a symbolic batch is compared with what QNN really does."""
    pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed")
    model = symbolic_batch(shared_path("corpus", "full", "tiny_resnet.ts.onnx"), tmp_path / "m.onnx")
    code, out, _ = run_cli("verify", model, "-p", "qnn", "--dim", "batch=1", "--observe", "-f", "json")
    v = json.loads(out)["verify"]
    assert code == 0 and v["passed"], v
    assert v["agreement"] == 1.0 and v["compared"] > 10
    assert any(p == "QNNExecutionProvider" for p in v["observation"]["granted"])


@pytest.mark.parametrize("final", [["relu", "CPUExecutionProvider"], {"relu": 5}])
def test_an_observation_with_a_malformed_final_view_is_one_line(tmp_path, run_cli, final):
    """The final view an observation file carries is checked by its schema like the rest (issue 28): a
    list or a number where provider names go is exit 2 naming the file and the field, not a traceback."""
    obs = tmp_path / "obs.json"
    obs.write_text(json.dumps({"schemaVersion": "1.0", "level": "all", "nodes": {"relu": "CPUExecutionProvider"},
                               "finalNodes": final}))
    code, out, err = run_cli("verify", ROOT / "partsim" / "data" / "one_relu.onnx", "--observation", obs)
    lines = err.strip().splitlines()
    assert code == 2 and out == "" and len(lines) == 1, err
    assert "obs.json" in lines[0] and "finalNodes" in lines[0]
