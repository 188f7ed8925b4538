"""Model-side remedies (issue 29): an op a provider refuses replaced by the ops that define it,
measured before it is suggested.

The decompositions are checked numerically against ONNX Runtime running the original op; the
predicted effect against `predict()` on a model decomposed by hand; a lifted `dynamic_shape` at
level all against fixing the dims.
"""

import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from partsim import predict
from partsim.io.variants import decompose_in_proto, decomposable
from tests.conftest import shared_path
from tests.analysis.test_baseline_gate import symbolic_batch

NNAPI = "NnapiExecutionProvider"


def one_op_model(op, attrs=None, extra_inputs=(), shape=(2, 3, 4, 5), opset=17):
    rng = np.random.default_rng(1)
    inits = [numpy_helper.from_array(rng.standard_normal(s).astype(np.float32), n) for n, s in extra_inputs]
    node = helper.make_node(op, ["x"] + [n for n, _ in extra_inputs], ["y"], name="the_op", **(attrs or {}))
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(shape))], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def run_ort(model, x):
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0]


@pytest.mark.parametrize("op, attrs, extra, opset", [
    ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}, (), 17),
    ("HardSigmoid", {}, (), 17),
    ("HardSwish", {}, (), 17),
    ("Mish", {}, (), 18),
    ("Gelu", {}, (), 20),
    ("Gelu", {"approximate": "tanh"}, (), 20),
    ("LayerNormalization", {"epsilon": 1e-3}, (("scale", (5,)), ("bias", (5,))), 17),
    ("LayerNormalization", {}, (("scale", (5,)),), 18),
    ("Softsign", {}, (), 18),  # from the schema's function body (written for opset 18)
    ("ThresholdedRelu", {"alpha": 0.5}, (), 18),
    ("Selu", {}, (), 18),
])
def test_decomposition_computes_what_the_op_computes(op, attrs, extra, opset):
    model = one_op_model(op, attrs, extra, opset=opset)
    x = np.random.default_rng(2).standard_normal((2, 3, 4, 5)).astype(np.float32) * 3
    want = run_ort(model, x)
    assert decomposable(op, opset)
    if op not in ("HardSigmoid", "HardSwish", "Gelu", "Mish", "LayerNormalization"):
        assert not decomposable(op, 17)  # its function body needs opset 18 ops
    decomposed = onnx.ModelProto()
    decomposed.CopyFrom(model)
    assert decompose_in_proto(decomposed, {op}) == {op: 1}
    assert op not in {n.op_type for n in decomposed.graph.node}
    onnx.checker.check_model(decomposed, full_check=True)
    np.testing.assert_allclose(run_ort(decomposed, x), want, rtol=1e-5, atol=1e-5)


def hsig_chain(path, by_hand=False, batch=1):
    """Conv, HardSigmoid, Conv, HardSigmoid, Conv; ``by_hand``: each HardSigmoid written as
    Mul(x, alpha), Add(beta), Clip(0, 1) here, independently of partsim's decomposition."""
    rng = np.random.default_rng(0)
    inits, nodes, x = [], [], "x"
    for i in range(3):
        inits.append(numpy_helper.from_array(rng.standard_normal((4, 3 if i == 0 else 4, 3, 3)).astype(np.float32),
                                             f"w{i}"))
        nodes.append(helper.make_node("Conv", [x, f"w{i}"], [f"c{i}"], name=f"conv{i}", pads=[1, 1, 1, 1]))
        x = f"c{i}"
        if i < 2:
            if by_hand:
                for name, v in (("a", 0.2), ("b", 0.5), ("lo", 0.0), ("hi", 1.0)):
                    inits.append(numpy_helper.from_array(np.array(v, np.float32), f"{name}{i}"))
                nodes += [helper.make_node("Mul", [x, f"a{i}"], [f"m{i}"], name=f"mul{i}"),
                          helper.make_node("Add", [f"m{i}", f"b{i}"], [f"s{i}"], name=f"add{i}"),
                          helper.make_node("Clip", [f"s{i}", f"lo{i}", f"hi{i}"], [f"h{i}"], name=f"clip{i}")]
            else:
                nodes.append(helper.make_node("HardSigmoid", [x], [f"h{i}"], name=f"hsig{i}", alpha=0.2, beta=0.5))
            x = f"h{i}"
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 3, 8, 8])],
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT, [batch, 4, 8, 8])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def test_whatif_decompose_hardsigmoid_on_nnapi(tmp_path, run_cli):
    model = hsig_chain(tmp_path / "hsig.onnx")
    hand, _ = predict(hsig_chain(tmp_path / "by_hand.onnx", by_hand=True), ["nnapi"])
    before, _ = predict(model, ["nnapi"])
    code, out, err = run_cli("whatif", model, "-p", "nnapi", "--decompose", "HardSigmoid", "-f", "json")
    assert code == 0, err
    r = json.loads(out)
    assert r["changes"] == [{"change": "decompose", "value": "HardSigmoid"}]
    assert r["before"]["acceleratorPartitions"] == before["perProvider"][NNAPI]["partitions"] == 3
    assert r["before"]["transfers"] == before["transfers"] == 4
    assert r["after"]["acceleratorPartitions"] == hand["perProvider"][NNAPI]["partitions"] == 1
    assert r["after"]["transfers"] == hand["transfers"] == 0
    assert r["after"]["delegatedNodes"] == hand["delegatedNodeCount"]


def test_blame_and_simulate_suggest_the_decomposition_with_its_effect(tmp_path, run_cli):
    model = hsig_chain(tmp_path / "hsig.onnx")
    code, out, err = run_cli("blame", model, "-p", "nnapi", "-f", "json")
    assert code == 0, err
    top = json.loads(out)["causes"][0]
    assert (top["kind"], top["cause"], top["actionBy"]) == ("decompose", "decompose HardSigmoid", "model")
    assert top["saved"]["acceleratorPartitions"] == 2 and top["saved"]["transfers"] == 4
    code, out, _ = run_cli("blame", model, "-p", "nnapi")
    assert "nothing you can change" not in out
    assert f"  partsim whatif {model} -p nnapi --decompose HardSigmoid" in out.splitlines()
    hand, _ = predict(hsig_chain(tmp_path / "by_hand.onnx", by_hand=True), ["nnapi"])
    code, out, _ = run_cli("simulate", model, "-p", "nnapi")
    steps = out[out.index("next steps:"):]
    assert ("replace every HardSigmoid by the ops that define it: measured: accelerator partitions 3 -> 1, "
            f"transfers 4 -> 0, nodes off the CPU 3 -> {hand['delegatedNodeCount']}; compare:") in steps
    assert f"partsim whatif {model} -p nnapi --decompose HardSigmoid" in steps


def test_the_effect_is_measured_from_the_prediction_shown(tmp_path, run_cli):
    """With --dim, the whatif line keeps the dims in both runs (--base-dim): the effect printed under the
    prediction is what that whatif command reports."""
    model = hsig_chain(tmp_path / "hsig.onnx", batch="N")
    shown, _ = predict(model, ["nnapi"], dims={"N": 1})
    hand, _ = predict(hsig_chain(tmp_path / "by_hand.onnx", by_hand=True), ["nnapi"])
    code, out, _ = run_cli("simulate", model, "-p", "nnapi", "--dim", "N=1")
    want = (f"measured: accelerator partitions {shown['partitionCount']} -> {hand['partitionCount']}, "
            f"transfers {shown['transfers']} -> {hand['transfers']}, "
            f"nodes off the CPU {shown['delegatedNodeCount']} -> {hand['delegatedNodeCount']}; compare:")
    assert want in out, out[out.index("next steps"):]
    assert f"partsim whatif {model} -p nnapi --base-dim N=1 --decompose HardSigmoid" in out
    code, out, err = run_cli("whatif", model, "-p", "nnapi", "--base-dim", "N=1", "--decompose", "HardSigmoid",
                             "-f", "json")
    assert code == 0, err
    w = json.loads(out)
    assert (w["before"]["acceleratorPartitions"], w["after"]["acceleratorPartitions"]) == (
        shown["partitionCount"], hand["partitionCount"])


def test_a_change_that_changes_nothing_is_not_suggested(tmp_path):
    from partsim.analysis.advice import next_steps

    summary, _ = predict(hsig_chain(tmp_path / "hsig.onnx"), ["nnapi"])
    tried = []

    def measure(words):
        tried.append(words)
        return None  # as if the change moved nothing

    steps = next_steps(summary, [str(tmp_path / "hsig.onnx"), "-p", "nnapi"], measure=measure)
    assert tried and all(st["command"] is None or st["command"][0] == "blame" for st in steps)
    assert "changes no count (measured), so it is not suggested" in steps[0]["text"]


def test_lifting_dynamic_shape_at_level_all_moves_what_fixing_the_dims_moves(tmp_path, run_cli):
    model = symbolic_batch(shared_path("corpus", "full", "tiny_unet.ts.onnx"), tmp_path / "unet.onnx")
    code, out, err = run_cli("blame", model, "-p", "nnapi", "-f", "json")
    assert code == 0, err
    rows = {r["cause"]: r for r in json.loads(out)["causes"]}
    fixed, _ = predict(model, ["nnapi"], dims={"batch": 1})
    on = sum(n["provider"] == NNAPI for n in fixed["nodes"])
    assert rows["batch=1"]["coverage"]["after"]["firstProviderNodes"] == on
    lifted = rows["dynamic_shape"]["coverage"]
    # the lifted table takes every node the fixed dims bring (ORT's CPU layout rewrite no longer runs)
    assert lifted["after"]["percent"] >= 90.0 and lifted["gainPoints"] > 90.0


def test_a_cause_inside_control_flow_is_named(tmp_path):
    from partsim.analysis.advice import next_steps

    rng = np.random.default_rng(0)

    def branch(name):
        nodes = [helper.make_node("Erf", ["h"], [f"{name}_e"], name=f"{name}_erf"),
                 helper.make_node("Erf", [f"{name}_e"], [f"{name}_y"], name=f"{name}_erf2")]
        return helper.make_graph(nodes, name, [], [helper.make_tensor_value_info(f"{name}_y", TensorProto.FLOAT,
                                                                                 [1, 8])])
    w = numpy_helper.from_array(rng.standard_normal((8, 8)).astype(np.float32), "w")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
             helper.make_node("If", ["cond"], ["y"], name="gate", then_branch=branch("then"),
                              else_branch=branch("else"))]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8]),
                                           helper.make_tensor_value_info("cond", TensorProto.BOOL, [])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])], [w])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, str(tmp_path / "if.onnx"))
    summary, _ = predict(tmp_path / "if.onnx", ["nnapi"], level="disable")
    erf = [n for n in summary["nodes"] if n["opType"] == "Erf"]
    assert erf and all(n["provider"] != NNAPI and n.get("scope") for n in erf)
    steps = next_steps(summary, [str(tmp_path / "if.onnx"), "-p", "nnapi"])
    assert "4 Erf nodes inside control flow (the body gate/else_branch, gate/then_branch)" in steps[0]["text"]
