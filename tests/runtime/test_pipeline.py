"""ORT's pipeline (issue 18): levels, EP-aware inlining, DQ duplication, Level 2/3, provider order.

The references are real ONNX Runtime sessions run here through partsim's observe machinery
(``partsim.runtime.observe.run_session``, a child process) and the GPU recordings in
``shared/observed/cuda``; nothing is compared with partsim's own output.
"""

import collections
import json
import re

import numpy as np
import pytest

from partsim.analysis.verify import compare_final, pair_unnamed
from partsim.api import predict
from partsim.runtime.observe import observation_from_run, run_session
from tests.conftest import ROOT, materialized, shared_path

CPU = "CPUExecutionProvider"
CUDA = "CUDAExecutionProvider"
# partsim's and ORT's profiler's name for an unnamed node, and the observation's for ORT's empty name
_GENERATED = re.compile(r"^(.+)_(\d+)$|^<unnamed .+>#\d+$")


def _corpus():
    try:
        root = shared_path("corpus")
    except pytest.skip.Exception:
        return []
    return sorted(str(p.relative_to(root)) for p in root.glob("*/*.onnx"))


CORPUS = _corpus() or ["(no corpus)"]


def _zero_feeds(model, path):
    """Zeros for every graph input (symbolic dims = 1): valid indices for embeddings, so the
    session runs to the end and its profile lists every node."""
    import onnx

    proto = onnx.load(str(model), load_external_data=False)
    inits = {t.name for t in proto.graph.initializer}
    feeds = {}
    for vi in proto.graph.input:
        if vi.name in inits:
            continue
        tt = vi.type.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else 1 for d in tt.shape.dim]
        feeds[vi.name] = np.zeros(dims, dtype=onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type))
    np.savez(path, **feeds)
    return path


def _real(model, providers, level, tmp_path):
    runnable = materialized(model)
    rec = run_session(runnable, providers, level, inputs_npz=_zero_feeds(runnable, tmp_path / "feeds.npz"),
                      timeout=300)
    assert rec["state"] == "ok", rec.get("error")
    assert not rec.get("run_error"), rec["run_error"]
    return observation_from_run(rec, level)


def _assert_same_nodes(summary, obs):
    """Every node the real session ran is predicted, on its provider, under ORT's name (an unnamed
    node under the name ORT's profiler gives it, ``<op>_<node index>``); what is predicted and not
    observed is a node inside a subgraph that did not run."""
    pred = {n["name"]: n for n in summary["nodes"]}
    # a node ORT reports without a name (an inlined body's node Level 2/3 fused away, so the profile
    # cannot name it) is compared by op type and provider (verify.pair_unnamed)
    observed = pair_unnamed(obs["nodes"], obs.get("opTypes") or {}, pred)
    wrong = {k: (pred[k]["provider"], v) for k, v in observed.items() if k in pred and pred[k]["provider"] != v}
    assert not wrong, wrong
    only_obs = sorted(k for k in observed if k not in pred)
    only_pred = sorted(k for k, n in pred.items() if k not in observed and not n.get("scope"))
    assert not only_obs and not only_pred, (only_pred[:8], only_obs[:8])


@pytest.mark.parametrize("name", CORPUS)
def test_cpu_default_level_equals_a_real_enable_all_session(name, tmp_path):
    model = shared_path("corpus", *name.split("/"))
    summary, _ = predict(model, ["cpu"])  # no level: ORT's default, ORT_ENABLE_ALL
    assert summary["level"] == "all" and summary["status"] == "ok", summary.get("failure")
    obs = _real(model, [CPU], "all", tmp_path)
    # the graph ORT partitions: what its assignment info reports, node for node
    assert obs["source"] == "assignment_info" and summary["view"] == "partitioning"
    _assert_same_nodes(summary, obs)
    # the graph it runs after Level 2/3: every node that ran, under its provider
    final = compare_final(summary, obs)
    assert final is not None and final["agreement"] == 1.0, (final["unpredicted"][:8], final["unobserved"][:8],
                                                             final["disagreements"][:4])
    # every partitioned node can be followed to where it ended up, every final node to what it replaced
    ends = {e for n in summary["nodes"] for e in n["endsAs"]}
    replaced = {r for f in summary["finalNodes"] for r in f["replaces"]}
    assert replaced == {n["name"] for n in summary["nodes"] if n["endsAs"]}
    assert ends <= {f["name"] for f in summary["finalNodes"]}


@pytest.mark.parametrize("name", ["graph_only/mobilenet_v3_small.ts.onnx", "full/q_tiny_resnet.ts.qdq.onnx",
                                  "full/q_tiny_transformer.dynamo.qdq.onnx", "full/q_tiny_transformer.dynamo.qop.onnx",
                                  "graph_only/bert_tiny.ts.onnx"])
def test_disable_level_inlines_and_duplicates_dq_with_orts_names(name, tmp_path):
    # ORT_DISABLE_ALL still inlines the functions no provider claims and duplicates shared DQ nodes
    model = shared_path("corpus", *name.split("/"))
    summary, _ = predict(model, ["cpu"], level="disable")
    assert summary["level"] == "disable" and summary["status"] == "ok", summary.get("failure")
    _assert_same_nodes(summary, _real(model, [CPU], "disable", tmp_path))
    origins = collections.Counter(n["origin"] for n in summary["nodes"])
    if "qdq" in name:
        dup = [n["name"] for n in summary["nodes"] if n["origin"] == "duplicated:dq"]
        assert dup and all(re.search(r"/duplicated(_token_\d+)?$", d) for d in dup)
    if "mobilenet_v3" in name:
        assert origins["inlined:HardSwish"] > 0


def test_mobilenet_v3_runs_on_cpu_and_keeps_hardswish_whole_on_cuda_and_openvino():
    model = shared_path("corpus", "graph_only", "mobilenet_v3_small.ts.onnx")
    cpu, _ = predict(model, ["cpu"])
    assert cpu["status"] == "ok"
    assert not any(n["opType"] == "HardSwish" for n in cpu["nodes"])  # no CPU kernel: ORT inlines it
    for ep, name in (("cuda", CUDA), ("openvino", "OpenVINOExecutionProvider")):
        s, _ = predict(model, [ep])
        hs = [n for n in s["nodes"] if n["opType"] == "HardSwish"]
        assert s["status"] == "ok" and len(hs) == 19
        assert all(n["provider"] == name and n["origin"] == "model" for n in hs)
        assert not any(n["origin"].startswith("inlined:") for n in s["nodes"])


def test_cpu_asked_first_takes_every_node():
    # ORT keeps the user's order: CPU first has a kernel for every node of tiny_resnet
    model = shared_path("corpus", "full", "tiny_resnet.ts.onnx")
    s, _ = predict(model, ["cpu", "cuda"])
    assert s["effectiveProviders"] == [CPU, CUDA]
    assert {n["provider"] for n in s["nodes"]} == {CPU}
    s2, _ = predict(model, ["cuda"])
    assert s2["effectiveProviders"] == [CUDA, CPU]
    assert any(n["provider"] == CUDA for n in s2["nodes"])


CUDA_CASES = ["bert_tiny.ts", "fasterrcnn_mobilenet_v3_large_320_fpn.ts", "gpt2_tiny.ts", "tiny_transformer.ts",
              "q_tiny_resnet.ts.qop"]


@pytest.mark.parametrize("case", CUDA_CASES)
def test_cuda_default_level_matches_the_gpu_at_enable_all(run_cli, case):
    d = shared_path("observed", "cuda", case)
    code, out, err = run_cli("verify", d / "model.onnx", "-p", "cuda", "--observation", d / "observed.json",
                             "-f", "json")
    v = json.loads(out)["verify"]
    assert v["observation"]["level"] == "all"
    assert code == 0, (err, v["disagreements"][:5], v["unpredicted"][:5], v["counts"])
    assert v["agreement"] == 1.0 and v["unpredicted"] == []
    # what is predicted and unobserved sits in an If branch the recorded run did not take
    s, _ = predict(d / "model.onnx", ["cuda"])
    scoped = {n["name"] for n in s["nodes"] if n.get("scope")}
    assert set(v["unobserved"]) <= scoped


def test_every_node_has_an_origin_and_the_summary_its_level(run_cli):
    import jsonschema

    model = shared_path("corpus", "graph_only", "bert_tiny.ts.onnx")
    code, out, err = run_cli("simulate", model, "-p", "cuda", "-f", "json")
    assert code == 0, err
    s = json.loads(out)
    jsonschema.validate(s, json.loads((ROOT / "partsim" / "data" / "summary.schema.json").read_text()))
    assert s["level"] == "all"
    # bert_tiny on CUDA: after partitioning ORT fuses the GELU pattern (BiasGelu), the scaled MatMul
    # (MatMulScaleFusion) ...: nodes of the final view, each pointing at the partitioned nodes it replaced
    final = collections.Counter(f["origin"] for f in s["finalNodes"] if f["replaces"])
    assert final["fused:BiasGeluFusion"] >= 1 and final["fused:MatMulScaleFusion"] >= 1
    # the graph ORT partitions has no Level 2/3 fusion: every node a provider was asked about
    level2 = {"fused:BiasGeluFusion", "fused:MatMulScaleFusion", "fused:SkipLayerNormFusion"}
    origins = collections.Counter(n["origin"] for n in s["nodes"])
    assert origins["model"] > 0 and not level2 & set(origins)
    # the same call twice gives the same bytes
    assert run_cli("simulate", model, "-p", "cuda", "-f", "json")[1] == out


def test_optimize_is_an_alias_of_level(run_cli):
    model = ROOT / "fixtures" / "chain.onnx"
    a = run_cli("simulate", model, "--support", "MatMul", "--optimize", "basic", "-f", "json")
    b = run_cli("simulate", model, "--support", "MatMul", "--level", "basic", "-f", "json")
    assert a[0] == b[0] == 0 and a[1] == b[1]
    code, _, err = run_cli("simulate", model, "--optimize", "none", "--level", "all")
    assert code == 2 and "different levels" in err


def _bad_reshape(tmp_path):
    """A graph ORT refuses while it optimizes (a constant 2x3 tensor reshaped to 4 elements)."""
    import onnx
    from onnx import TensorProto, helper

    w = helper.make_tensor("w", TensorProto.FLOAT, [2, 3], [1.0] * 6)
    shape = helper.make_tensor("s", TensorProto.INT64, [1], [4])
    nodes = [helper.make_node("Reshape", ["w", "s"], ["r"], name="reshape"),
             helper.make_node("Add", ["x", "r"], ["y"], name="add")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])], [w, shape])
    path = tmp_path / "bad_reshape.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def test_ort_failing_is_a_prediction_not_a_usage_error(run_cli, tmp_path):
    path = _bad_reshape(tmp_path)
    real = run_session(path, [CPU], "all", run=False)
    assert real["state"] == "create_failed"  # the independent reference: ORT itself refuses it
    code, out, err = run_cli("simulate", path, "-p", "cpu", "-f", "json")
    assert code == 0, err
    s = json.loads(out)
    assert s["status"] == "session_would_fail" and "ONNX Runtime" in s["failure"]
    # verify --observe: both failed, the prediction holds
    code, out, err = run_cli("verify", path, "-p", "cpu", "--observe", "-f", "json")
    assert code == 0, (out, err)


def test_verify_fails_when_predicted_and_observed_status_differ(run_cli, tmp_path):
    chain = ROOT / "fixtures" / "chain.onnx"
    obs = tmp_path / "obs.json"
    code, _, err = run_cli("observe", chain, "-p", "cpu", "-o", obs)  # the real session runs
    assert code == 0, err
    # the whole-graph policy predicts a failed session (a node would need the CPU fallback)
    code, out, _ = run_cli("verify", chain, "--support", "MatMul", "--policy", "whole-graph",
                           "--observation", obs, "--min-agreement", "0", "--ignore-counts", "-f", "json")
    r = json.loads(out)
    assert r["verify"]["status"] == {"predicted": "session_would_fail", "observed": "ok"}
    assert code == 1 and not r["passed"]


def test_context_dependent_functions_are_inlined_as_ort_does(tmp_path):
    """CastLike and SoftmaxCrossEntropyLoss have no CPU kernel in an inference build; ORT expands
    their context-dependent function bodies (built from the node's input types) and the session
    runs.  partsim builds the same bodies with ONNX and predicts the session, node for node against
    a real CPU session at ORT_DISABLE_ALL."""
    from onnx import TensorProto as T
    from onnx import helper as h

    from partsim.api import predict
    from partsim.runtime.observe import observation_from_run, run_session

    nodes = [h.make_node("CastLike", ["x", "like"], ["c"], name="castlike"),
             h.make_node("SoftmaxCrossEntropyLoss", ["c", "labels"], ["loss"], name="sce", reduction="mean")]
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", T.DOUBLE, [3, 5]),
                                  h.make_tensor_value_info("like", T.FLOAT, [1]),
                                  h.make_tensor_value_info("labels", T.INT64, [3])],
                     [h.make_tensor_value_info("loss", T.FLOAT, [])])
    path = tmp_path / "cd.onnx"
    path.write_bytes(h.make_model(g, opset_imports=[h.make_opsetid("", 18)], ir_version=8).SerializeToString())
    rec = run_session(path, ["CPUExecutionProvider"], "disable", run=False)
    obs = observation_from_run(rec, "disable")
    assert obs["state"] == "ok"
    summary, assignment = predict(str(path), ["cpu"], level="disable")
    assert summary["status"] == "ok", summary.get("failure")
    ops = sorted(n["opType"] for n in summary["nodes"])
    assert "CastLike" not in ops and "SoftmaxCrossEntropyLoss" not in ops
    assert ops == sorted(obs["opTypes"].values())
    assert {n["origin"] for n in summary["nodes"]} == {"inlined:CastLike", "inlined:SoftmaxCrossEntropyLoss"}
    # ORT reports the inlined body's nodes without names: compared by op and provider
    assert {n["provider"] for n in summary["nodes"]} == set(obs["nodes"].values()) == {"CPUExecutionProvider"}


def test_orts_session_starts_on_the_model_as_written_and_restarts_only_for_kept_functions(monkeypatch):
    """The optimizer's session gets the model as written before partsim has looked for function nodes a
    requested provider claims; only where there are some (HardSwish on CUDA) is it ended and started
    again on the copy with placeholders, and the prediction is the same as with the placeholders first."""
    from partsim.runtime.process import OptimizerSlot, OrtProcess

    monkeypatch.setenv("PARTSIM_NO_CACHE", "1")
    calls = collections.Counter()
    real_slot_result, real_result, real_close = OptimizerSlot.result, OrtProcess.result, OptimizerSlot.close

    def slot_result(me, *a, **k):  # a session of the child started early
        me.collected = True
        calls["early"] += 1
        return real_slot_result(me, *a, **k)

    def result(me, *a, **k):  # a session in a fresh child of its own
        calls["fresh"] += 1
        return real_result(me, *a, **k)

    def close(me):
        calls["abandoned"] += me.target is not None and not getattr(me, "collected", False)
        return real_close(me)

    monkeypatch.setattr(OptimizerSlot, "result", slot_result)
    monkeypatch.setattr(OrtProcess, "result", result)
    monkeypatch.setattr(OptimizerSlot, "close", close)
    # one session per view (the graph ORT partitions, Level 1; the final graph, Level 2/3), each begun early
    s, _ = predict(shared_path("corpus", "full", "tiny_resnet.ts.onnx"), ["cuda"])
    assert s["status"] == "ok" and +calls == {"early": 2}
    calls.clear()
    s, _ = predict(shared_path("corpus", "graph_only", "mobilenet_v3_small.ts.onnx"), ["cuda"])
    assert calls["early"] == 0 and calls["abandoned"] == 2 and calls["fresh"] >= 2
    assert sum(n["opType"] == "HardSwish" for n in s["nodes"]) == 19


def _unnamed_model(path):
    """A graph of unnamed nodes as old converters wrote them: a Constant (no node in ORT), a
    Transpose of a weight that Level 1 folds away, two HardSwish functions the CPU inlines into
    unnamed body nodes, and a shared DequantizeLinear."""
    import onnx
    from onnx import TensorProto as T
    from onnx import helper as h

    w = h.make_tensor("w", T.FLOAT, [4, 4], [float(k) for k in range(16)])
    nodes = [
        h.make_node("Constant", [], ["c"], value=h.make_tensor("v", T.FLOAT, [1], [1.0])),
        h.make_node("Transpose", ["w"], ["wt"]),
        h.make_node("Relu", ["x"], ["r"]),
        h.make_node("HardSwish", ["r"], ["hs"]),
        h.make_node("Add", ["hs", "c"], ["a"]),
        h.make_node("MatMul", ["a", "wt"], ["m"]),
        h.make_node("HardSwish", ["m"], ["hs2"]),
        h.make_node("QuantizeLinear", ["hs2", "s", "z"], ["q"]),
        h.make_node("DequantizeLinear", ["q", "s", "z"], ["dq"]),
        h.make_node("Neg", ["dq"], ["y1"]),
        h.make_node("Abs", ["dq"], ["y2"]),
    ]
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", T.FLOAT, [2, 4])],
                     [h.make_tensor_value_info("y1", T.FLOAT, [2, 4]), h.make_tensor_value_info("y2", T.FLOAT, [2, 4])],
                     [w, h.make_tensor("s", T.FLOAT, [], [0.1]), h.make_tensor("z", T.UINT8, [], [128])])
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)], ir_version=8), str(path))
    return path


@pytest.mark.parametrize("level", ["disable", "all"])
def test_unnamed_nodes_get_the_names_orts_profiler_gives_them(level, tmp_path):
    # ORT's profiler calls an unnamed node <op>_<node index>: its index when the graph was loaded
    # (Constant nodes not counted), nodes made later numbered after those; the assignment
    # info reports them unnamed, and the observation names them from the profile
    model = _unnamed_model(tmp_path / "unnamed.onnx")
    summary, _ = predict(model, ["cpu"], level=level)
    obs = _real(model, [CPU], level, tmp_path)
    assert not [k for k in obs["nodes"] if k.startswith("<unnamed")], obs["nodes"]
    _assert_same_nodes(summary, obs)
    names = {n["name"] for n in summary["nodes"]}
    assert {"Relu_1", "Add_3", "MatMul_4"} <= names  # as loaded: the Constant has no index
    # the 10 loaded nodes, then the DQ's copy (EnsureUniqueDQForNodeUnit, named from the empty name),
    # then the HardSwish bodies, inlined after the first partitioning round
    assert {"/duplicated", "HardSigmoid_11", "Mul_12", "HardSigmoid_13", "Mul_14"} <= names
    if level == "disable":
        assert "Transpose_0" in names


def test_observation_names_unnamed_members_from_the_profile():
    rec = {"level": "ORT_DISABLE_ALL", "requested": [CPU], "granted": [CPU],
           "assignment": [[CPU, [["", "Relu", ""], ["Add_1", "Add", ""], ["", "Relu", ""], ["", "Abs", ""]]]],
           "profile_nodes": [["Relu_0", "Relu", CPU], ["Add_1", "Add", CPU], ["Relu_2", "Relu", CPU]]}
    obs = observation_from_run(rec, "disable")
    # the Abs did not run (no profiled name): it stays unnamed, never matched to a model node by accident
    assert obs["nodes"] == {"<unnamed Abs>#1": CPU, "Add_1": CPU, "Relu_0": CPU, "Relu_2": CPU}


def test_observation_names_unnamed_compiled_members_only_when_certain():
    OV = "OpenVINOExecutionProvider"
    rec = {"level": "ORT_DISABLE_ALL", "requested": [OV, CPU], "granted": [OV, CPU],
           "assignment": [[OV, [["", "Relu", ""], ["", "Relu", ""], ["", "Abs", ""]]], [CPU, [["", "Abs", ""]]]],
           "profile_nodes": [["OpenVINOExecutionProvider_OpenVINO-EP-subgraph_1_0", "OpenVINO-EP-subgraph_1", OV]],
           "unnamed_loaded": [["Relu", 0], ["Abs", 1], ["Relu", 2], ["Abs", 3]]}
    obs = observation_from_run(rec, "disable")
    # two unnamed Relus, both on OpenVINO: which is which changes nothing; the two Abs nodes sit on
    # two providers and nothing says which is which: they stay unnamed
    assert {k for k in obs["nodes"] if k.startswith("Relu")} == {"Relu_0", "Relu_2"}
    assert sorted(k for k in obs["nodes"] if "Abs" in k) == ["<unnamed Abs>#1", "<unnamed Abs>#2"]


def _branch_functions_model(path):
    """Function nodes in an If's branches and in the main graph: CastLike and HardSwish (no CPU kernel; CUDA has a
    HardSwish one), the main graph's two HardSwish nodes taking its name generator's ``_inlfunc_HardSwish`` and
    ``_inlfunc_HardSwish_token_0``."""
    from onnx import TensorProto as T
    from onnx import helper as h

    vi = h.make_tensor_value_info
    then = h.make_graph([h.make_node("CastLike", ["x", "like"], ["c"], name="castlike"),
                         h.make_node("HardSwish", ["c"], ["t_out"], name="hs_in_branch")],
                        "then", [], [vi("t_out", T.FLOAT, [3])])
    other = h.make_graph([h.make_node("HardSwish", ["y"], ["e_out"], name="hs_else")], "else", [],
                         [vi("e_out", T.FLOAT, [3])])
    nodes = [h.make_node("HardSwish", ["y"], ["y1"], name="hs_main"),
             h.make_node("HardSwish", ["y1"], ["y2"], name="hs_main2"),
             h.make_node("If", ["cond"], ["z"], name="if", then_branch=then, else_branch=other),
             h.make_node("Add", ["z", "y2"], ["out"], name="add")]
    g = h.make_graph(nodes, "g", [vi("cond", T.BOOL, []), vi("x", T.DOUBLE, [3]), vi("like", T.FLOAT, [1]),
                                  vi("y", T.FLOAT, [3])], [vi("out", T.FLOAT, [3])])
    path.write_bytes(h.make_model(g, opset_imports=[h.make_opsetid("", 18)], ir_version=8).SerializeToString())
    return path


def _bodies(graph):
    """{body name: [(op, inputs, outputs)]} of every If/Loop/Scan body of a GraphProto."""
    from partsim.io.subgraphs import all_graphs

    return {g.name: [(n.op_type, list(n.input), list(n.output)) for n in g.node]
            for g in list(all_graphs(graph))[1:]}


def test_function_nodes_in_if_branches_are_inlined_as_ort_does(tmp_path):
    """ORT inlines the function nodes of If/Loop/Scan bodies too (graph_partitioner.cc InlineNodes recurses into
    subgraphs), each body with its own name generator (graph.cc Graph::InlineFunction on the subgraph's Graph):
    the branches' HardSwish bodies are ``_inlfunc_HardSwish`` again where the main graph's second one is
    ``_token_0``.  Checked against the graph a real CPU session at ORT_DISABLE_ALL saves (its bodies node for node,
    tensor names included) and its placement; on CUDA the HardSwish nodes stay whole and the CastLike is inlined."""
    import onnx
    import onnxruntime as ort

    from partsim.sim.inline import inline_in_bodies

    path = _branch_functions_model(tmp_path / "branches.onnx")
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.optimized_model_filepath = str(tmp_path / "saved.onnx")
    ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    saved = onnx.load(str(tmp_path / "saved.onnx"))
    proto = onnx.load(str(path))
    made, replaced, kept = inline_in_bodies(proto, lambda n: n.op_type not in ("CastLike", "HardSwish"))
    assert _bodies(proto.graph) == _bodies(saved.graph)
    assert "_inlfunc_HardSwish_HS_X" in {t for _, ins, _ in _bodies(saved.graph)["else"] for t in ins}
    assert sorted(n.name for n in replaced) == ["castlike", "hs_else", "hs_in_branch"] and kept == []
    assert sorted(op for op, _ in made.values()) == ["CastLike", "HardSwish", "HardSwish", "HardSwish", "HardSwish"]

    rec = run_session(path, ["CPUExecutionProvider"], "disable", run=False)
    obs = observation_from_run(rec, "disable")
    summary, _ = predict(str(path), ["cpu"], level="disable")
    assert obs["state"] == "ok" and summary["status"] == "ok", summary.get("failure")
    assert sorted(n["opType"] for n in summary["nodes"]) == sorted(obs["opTypes"].values())
    origins = collections.Counter(n["origin"] for n in summary["nodes"] if n.get("scope"))
    assert origins == {"inlined:HardSwish": 4, "inlined:CastLike": 1}
    cuda, _ = predict(str(path), ["cuda"], level="disable")
    ops = collections.Counter(n["opType"] for n in cuda["nodes"])
    assert cuda["status"] == "ok" and ops["HardSwish"] == 4 and ops["Cast"] == 1 and "CastLike" not in ops


@pytest.mark.parametrize("provider,recording", [("cuda", "cuda-ort1.31.1.jsonl"),
                                                ("webgpu", "webgpu-ort1.31.1-plugin0.4.0.jsonl")])
def test_the_castlike_in_affine_grids_if_branch_is_inlined_as_the_recorded_sessions_show(provider, recording):
    """The ``affine_grid_*_expanded`` node tests hold a CastLike in an If branch, which no provider has a kernel
    for: the recorded CUDA and WebGPU sessions ran, with one Cast more than the main graph's CastLike nodes make."""
    from partsim.analysis.cases import read_node_records

    cases = [c for c in read_node_records(shared_path("observed", "nodes", recording))
             if c.name.startswith("node__test_affine_grid") and c.name.endswith("_expanded")]
    assert len(cases) == 3 and not any(c.refused for c in cases)
    for case in cases:
        summary, _ = predict(str(case.model), [provider], level="disable")
        assert summary["status"] == "ok", (case.name, summary.get("failure"))
        casts = [n for n in summary["nodes"] if n["opType"] == "Cast"]
        assert sum(1 for n in casts if n.get("scope")) == 1 and len(casts) == 14


def test_function_nodes_a_provider_claims_in_if_branches_stay_whole_above_disable(tmp_path):
    """At level ``all`` the CPU-only session stands for the requested providers: a function node in an If branch
    that CUDA claims (HardSwish) goes in as a placeholder and comes back whole, as ORT's inlining keeps it
    (graph_partitioner.cc InlineNodes recurses into subgraphs and inlines only what no provider claimed).  A real
    CPU-only session at ORT_ENABLE_ALL inlines every HardSwish, branches included, as partsim predicts for the CPU;
    for CUDA the four HardSwish nodes stay whole (two in the branches) and the CastLike is inlined."""
    import onnx
    import onnxruntime as ort

    from partsim.io.subgraphs import all_nodes
    from partsim.runtime.ort_pipeline import pipeline_graph

    path = _branch_functions_model(tmp_path / "branches.onnx")
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.optimized_model_filepath = str(tmp_path / "saved.onnx")
    ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    saved = [n.op_type for n in all_nodes(onnx.load(str(tmp_path / "saved.onnx")).graph)]
    cpu, _ = predict(str(path), ["cpu"], level="all")
    assert "HardSwish" not in saved and sorted(n["opType"] for n in cpu["nodes"]) == sorted(saved)

    branch = ["hs_else", "hs_in_branch"]
    kept = pipeline_graph(path, "all", [("CUDAExecutionProvider", False), ("CPUExecutionProvider", False)], branch)
    assert sorted(kept.kept) == branch
    assert {op for body in _bodies(kept.proto.graph).values() for op, _, _ in body} >= {"HardSwish", "Cast"}
    cuda, _ = predict(str(path), ["cuda"], level="all")
    whole = {n["name"]: n for n in cuda["nodes"] if n["opType"] == "HardSwish"}
    assert cuda["status"] == "ok" and sorted(whole) == ["hs_else", "hs_in_branch", "hs_main", "hs_main2"]
    assert all(whole[b]["provider"] == "CUDAExecutionProvider" and whole[b].get("scope") for b in branch)
    assert "CastLike" not in {n["opType"] for n in cuda["nodes"]}
