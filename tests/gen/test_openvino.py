"""The OpenVINO EP table and cluster rules, checked against real onnxruntime-openvino 1.24.1 sessions.

The reference is ORT itself: each model is run in ``.venv-openvino`` (``make test`` builds it)
and ``partsim verify --observe`` must agree on every node.  Small models built here cover what
OpenVINO leaves to the CPU (Hardmax, Unique, float64 arithmetic, string ops) and its one-node
cluster rule; corpus models from ``../shared/corpus`` cover real networks.
"""

import json
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h

from tests.modelbuild import UNEVEN_SPLITS, save, split18

ROOT = Path(__file__).resolve().parents[2]
OV_PY = ROOT / ".venv-openvino" / "bin" / "python"
SHARED = Path(__file__).resolve().parents[3] / "shared"
CORPUS = SHARED / "corpus"

needs_ov = pytest.mark.skipif(not OV_PY.exists(), reason=".venv-openvino/bin/python is absent "
                              "(make test installs onnxruntime-openvino 1.24.1 there)")


def _vi(name, dtype=T.FLOAT, shape=(2, 4)):
    return h.make_tensor_value_info(name, dtype, ["n"] if shape is None else list(shape))


def _save(tmp_path, name, nodes, inputs, outputs, inits=(), opset=17):
    graph = h.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    path = tmp_path / f"{name}.onnx"
    onnx.save(model, path)
    return path


def _relu(x, y, name):
    return h.make_node("Relu", [x], [y], name=name)


def _partsim(*argv):
    """``partsim ARGV`` in this process (the CLI's own entry point; the OpenVINO session still runs in its child
    process under .venv-openvino): ``(exit code, stdout, stderr)``."""
    import contextlib
    import io

    from partsim.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()


def _verify(model, tmp_path, level="all"):
    out = tmp_path / (Path(model).stem + f".{level}.verify.json")
    code, _, err = _partsim("verify", model, "-p", "openvino:1.24", "--observe", "--python", OV_PY, "--format", "json",
                            "--level", level, "-o", out)
    assert out.exists(), err
    return code, json.loads(out.read_text())["verify"]


def _assert_exact(model, tmp_path, expect_ov=None):
    rc, rep = _verify(model, tmp_path)
    assert rep["disagreements"] == [] and rep["agreeing"] == rep["compared"] > 0, rep["disagreements"]
    assert rc == 0
    if expect_ov is not None:  # sanity: the session really used OpenVINO for these many nodes
        obs = rep["counts"]
        assert obs["fragments"]["observed"] >= 1
    return rep


# --- small models ------------------------------------------------------------------------

def _models(tmp_path):
    """name -> (path, ops OpenVINO must leave to the CPU in the real session)."""
    m = {}
    # unsupported op in the middle: two clusters of two
    m["hardmax_mid"] = _save(tmp_path, "hardmax_mid", [
        _relu("x", "a", "A"), _relu("a", "b", "B"), h.make_node("Hardmax", ["b"], ["c"], name="H"),
        _relu("c", "d", "C"), _relu("d", "y", "D")], [_vi("x")], [_vi("y")])
    # a one-node cluster that is not the last one and does not feed the next: CPU
    m["single_first"] = _save(tmp_path, "single_first", [
        _relu("x", "a", "A"), h.make_node("Hardmax", ["a"], ["c"], name="H"),
        _relu("c", "d", "C"), _relu("d", "y", "D")], [_vi("x")], [_vi("y")])
    # the last cluster may have one node
    m["single_last"] = _save(tmp_path, "single_last", [
        _relu("x", "a", "A"), _relu("a", "b", "B"), h.make_node("Hardmax", ["b"], ["c"], name="H"),
        _relu("c", "y", "C")], [_vi("x")], [_vi("y")])
    # float64 arithmetic between casts
    m["float64"] = _save(tmp_path, "float64", [
        h.make_node("Cast", ["x"], ["xd"], to=T.DOUBLE, name="CastD"), _relu("xd", "a", "A"),
        h.make_node("Cast", ["a"], ["b"], to=T.FLOAT, name="CastF"), _relu("b", "c", "C"),
        _relu("c", "y", "D")], [_vi("x")], [_vi("y")])
    # Unique (not in data_ops.cc) between two supported runs
    m["unique"] = _save(tmp_path, "unique", [
        _relu("x", "a", "A"), h.make_node("Abs", ["a"], ["b"], name="B"),
        h.make_node("Unique", ["b"], ["u"], name="U", sorted=1), _relu("u", "c", "C"),
        h.make_node("Abs", ["c"], ["y"], name="D")], [_vi("x", shape=(8,))], [_vi("y", shape=None)])
    # string ops: an unsupported string branch next to a supported float chain
    m["strings"] = _save(tmp_path, "strings", [
        h.make_node("StringNormalizer", ["s"], ["sn"], name="SN", case_change_action="LOWER", locale="C"),
        _relu("x", "a", "A"), h.make_node("Sigmoid", ["a"], ["b"], name="B"), _relu("b", "y", "C")],
        [_vi("s", T.STRING, (3,)), _vi("x")], [_vi("sn", T.STRING, (3,)), _vi("y")])
    # a whole graph OpenVINO takes (Upsample rank 4: data_ops.cc's special case is not active for 2025.4)
    m["upsample"] = _save(tmp_path, "upsample", [
        _relu("x", "a", "A"), h.make_node("Upsample", ["a", "sc"], ["b"], name="U"), _relu("b", "y", "B")],
        [_vi("x", shape=(1, 1, 2, 2))], [_vi("y", shape=(1, 1, 4, 4))],
        [h.make_tensor("sc", T.FLOAT, [4], [1, 1, 2, 2])], opset=9)
    # the Conv rule: a Conv whose output leaves its cluster drops the cluster
    w = h.make_tensor("w", T.FLOAT, [1, 1, 1, 1], [1.0])
    m["conv_escape"] = _save(tmp_path, "conv_escape", [
        _relu("x", "a", "A"), h.make_node("Conv", ["a", "w"], ["c"], name="Conv"),
        h.make_node("Hardmax", ["c"], ["hm"], name="H"), _relu("hm", "d", "C"), _relu("d", "y", "D")],
        [_vi("x", shape=(1, 1, 2, 2))], [_vi("y", shape=(1, 1, 2, 2))], [w])
    # rank-0 tensors: DynamicQuantizeLinear may produce them (no_dimension_supported_), ConvInteger may not
    # read a non-constant one (its x_zero_point), so it stays on the CPU
    m["dyn_quant_conv"] = _save(tmp_path, "dyn_quant_conv", [
        _relu("x", "a", "A"), h.make_node("DynamicQuantizeLinear", ["a"], ["q", "qs", "qz"], name="DQL"),
        h.make_node("ConvInteger", ["q", "wq", "qz", "wz"], ["ci"], name="CI"),
        h.make_node("Cast", ["ci"], ["cf"], to=T.FLOAT, name="Cast"), h.make_node("Mul", ["cf", "qs"], ["m"], name="M"),
        _relu("m", "y", "D")], [_vi("x", shape=(1, 1, 2, 2))], [_vi("y", shape=(1, 1, 2, 2))],
        [h.make_tensor("wq", T.UINT8, [1, 1, 1, 1], [3]), h.make_tensor("wz", T.UINT8, [], [0])])
    # QLinearMatMul is commented out of the 1.24 data_ops.cc: CPU even between claimed nodes
    sc, zp = h.make_tensor("s", T.FLOAT, [], [0.1]), h.make_tensor("z", T.UINT8, [], [128])
    m["qlinear_matmul"] = _save(tmp_path, "qlinear_matmul", [
        _relu("x", "a", "A"), h.make_node("QuantizeLinear", ["a", "s", "z"], ["q"], name="Q"),
        h.make_node("QLinearMatMul", ["q", "s", "z", "B", "s", "z", "s", "z"], ["qm"], name="QMM"),
        h.make_node("DequantizeLinear", ["qm", "s", "z"], ["d"], name="DQ"), _relu("d", "y", "D")],
        [_vi("x")], [_vi("y")], [sc, zp, h.make_tensor("B", T.UINT8, [4, 4], [130] * 16)])
    # a fully supported graph of two nodes: Add first is claimed, Slice first is not (1.24 list)
    m["small_add"] = _save(tmp_path, "small_add", [h.make_node("Add", ["x", "c"], ["a"], name="A"), _relu("a", "y", "B")],
                           [_vi("x")], [_vi("y")], [h.make_tensor("c", T.FLOAT, [4], [1, 2, 3, 4])])
    m["small_slice"] = _save(tmp_path, "small_slice", [
        h.make_node("Slice", ["x", "st", "en"], ["a"], name="S"), _relu("a", "y", "B")], [_vi("x")], [_vi("y")],
        [h.make_tensor("st", T.INT64, [1], [0]), h.make_tensor("en", T.INT64, [1], [4])])
    # uint32 is a CPU dtype of the 1.24 data_ops.cc
    m["uint32"] = _save(tmp_path, "uint32", [
        _relu("x", "a", "A"), h.make_node("Cast", ["a"], ["b"], to=T.UINT32, name="CU"),
        h.make_node("Cast", ["b"], ["c"], to=T.FLOAT, name="CF"), _relu("c", "y", "D")], [_vi("x")], [_vi("y")])
    # a one-node cluster (S, explored first: the largest producer index goes first) that does not touch the
    # next cluster (B, B2) joins a later one it feeds (C, D)
    m["single_later"] = _save(tmp_path, "single_later", [
        h.make_node("Hardmax", ["x"], ["h1"], name="H1"), _relu("h1", "b", "B"), _relu("b", "b2", "B2"),
        h.make_node("Hardmax", ["b2"], ["h2"], name="H2"), _relu("x", "s", "S"),
        h.make_node("Add", ["h2", "s"], ["c"], name="C"), _relu("c", "y", "D")], [_vi("x")], [_vi("y")])
    return m


@needs_ov
@pytest.mark.parametrize("name", ["hardmax_mid", "single_first", "single_last", "float64", "unique", "strings",
                                  "upsample", "conv_escape", "dyn_quant_conv", "qlinear_matmul", "small_add",
                                  "small_slice", "uint32", "single_later"])
def test_small_models_agree_exactly(tmp_path, name):
    _assert_exact(_models(tmp_path)[name], tmp_path)


@needs_ov
def test_small_models_exercise_cpu_fallback(tmp_path):
    """The small models really leave nodes on the CPU and really split into several clusters (per ORT)."""
    from partsim.runtime.observe import run_session

    models = _models(tmp_path)
    rec = run_session(models["hardmax_mid"], ["OpenVINOExecutionProvider", "CPUExecutionProvider"], python=str(OV_PY))
    groups = [(ep, sorted(n[0] for n in ms)) for ep, ms in rec["assignment"]]
    assert ("CPUExecutionProvider", ["H"]) in groups
    assert sum(ep == "OpenVINOExecutionProvider" for ep, _ in groups) == 2
    rec = run_session(models["single_first"], ["OpenVINOExecutionProvider", "CPUExecutionProvider"],
                      python=str(OV_PY))
    where = {n[0]: ep for ep, ms in rec["assignment"] for n in ms}
    assert where["A"] == "CPUExecutionProvider" and where["C"] == "OpenVINOExecutionProvider"


def _cpu_only_ops(tmp_path):
    """One-node models whose op (or type) has a CPU kernel in onnxruntime 1.31.1 but not in 1.24.1, and
    which OpenVINO 1.24 does not claim: ORT 1.24.1's CPU EP must take them (rules/cpu-1.24.yaml)."""
    deform = h.make_node("DeformConv", ["x", "w", "off"], ["y"], kernel_shape=[2, 2], name="D")
    return [
        (_save(tmp_path, "deformconv22", [deform], [_vi("x", shape=(1, 1, 3, 3)), _vi("w", shape=(1, 1, 2, 2)),
                                                     _vi("off", shape=(1, 8, 2, 2))], [_vi("y", shape=(1, 1, 2, 2))],
               opset=22), "DeformConv"),
        (_save(tmp_path, "tensorscatter24", [h.make_node("TensorScatter", ["c", "u"], ["y"], name="S")],
               [_vi("c", shape=(1, 4, 3)), _vi("u", shape=(1, 1, 3))], [_vi("y", shape=(1, 4, 3))], opset=24),
         "TensorScatter"),
        (_save(tmp_path, "cos_double", [h.make_node("Cos", ["x"], ["y"], name="C")], [_vi("x", T.DOUBLE)],
               [_vi("y", T.DOUBLE)]), "Cos"),
    ]


@needs_ov
def test_cpu_kernels_are_those_of_ort_1_24_1(tmp_path):
    """openvino:1.24 falls back to ORT 1.24.1's CPU kernels, not the installed ORT's: real onnxruntime-openvino
    1.24.1 sessions refuse these models ("Could not find an implementation"), the installed ORT runs them on
    its CPU EP, and partsim predicts each (session_would_fail naming the op; ok for the CPU alone)."""
    from partsim.api import predict
    from partsim.runtime.observe import run_session

    for path, op in _cpu_only_ops(tmp_path):
        rec = run_session(path, ["OpenVINOExecutionProvider", "CPUExecutionProvider"], python=str(OV_PY))
        assert rec["state"] == "create_failed" and f"implementation for {op}" in rec["error"], (op, rec)
        summary, _ = predict(str(path), ["openvino:1.24"], level="disable")
        assert summary["status"] == "session_would_fail" and op in summary["failure"], (op, summary)
        assert run_session(path, ["CPUExecutionProvider"])["state"] != "create_failed", op
        assert predict(str(path), ["cpu"], level="disable")[0]["status"] == "ok", op


@needs_ov
def test_merged_single_node_cluster_makes_session_fail(tmp_path):
    """A one-node cluster feeding the next cluster is appended to it; the fused partition is cyclic."""
    from partsim.api import predict
    from partsim.runtime.observe import run_session

    path = _save(tmp_path, "cyclic", [
        _relu("x", "a", "A"), h.make_node("Hardmax", ["a"], ["c"], name="H"),
        h.make_node("Add", ["c", "a"], ["d"], name="C"), _relu("d", "y", "D")], [_vi("x")], [_vi("y")])
    rec = run_session(path, ["OpenVINOExecutionProvider", "CPUExecutionProvider"], python=str(OV_PY))
    assert rec["state"] == "create_failed" and "not acyclic" in rec["error"]
    summary, _ = predict(str(path), ["openvino:1.24"])
    assert summary["status"] == "session_would_fail"
    assert "cyclic" in summary["failure"]


@needs_ov
def test_new_rules_are_exercised_by_real_sessions(tmp_path):
    """ORT itself: the small models above really split where the new rules say (not vacuous agreement)."""
    from partsim.runtime.observe import run_session

    models = _models(tmp_path)
    where = {}
    for name in ("dyn_quant_conv", "qlinear_matmul", "small_slice", "single_later"):
        rec = run_session(models[name], ["OpenVINOExecutionProvider", "CPUExecutionProvider"], python=str(OV_PY))
        assert rec["state"] == "ok", rec
        where[name] = {n[0]: ep[:3] for ep, ms in rec["assignment"] for n in ms}
    assert where["dyn_quant_conv"]["CI"] == "CPU" and where["dyn_quant_conv"]["DQL"] == "Ope"
    assert where["qlinear_matmul"]["QMM"] == "CPU" and where["qlinear_matmul"]["Q"] == "Ope"
    assert where["small_slice"]["S"] == "CPU"
    assert where["single_later"]["S"] == "Ope" and where["single_later"]["B"] == "Ope"


@needs_ov
def test_dynamic_quantization_cyclic_partition_is_predicted(tmp_path):
    """ConvInteger stays on the CPU (scalar zero point); ORT's default order puts the Cast branch (larger
    index) before the Mul of the scales, so DynamicQuantizeLinear + Mul join the Cast cluster: cyclic."""
    from partsim.api import predict
    from partsim.runtime.observe import run_session

    path = _save(tmp_path, "dyn_cycle", [
        h.make_node("DynamicQuantizeLinear", ["x"], ["q", "qs", "qz"], name="DQL"),
        h.make_node("Mul", ["qs", "ws"], ["sm"], name="ScaleMul"),
        h.make_node("ConvInteger", ["q", "wq", "qz", "wz"], ["ci"], name="CI"),
        h.make_node("Cast", ["ci"], ["cf"], to=T.FLOAT, name="Cast"),
        h.make_node("Mul", ["cf", "sm"], ["y"], name="OutMul")],
        [_vi("x", shape=(1, 1, 2, 2))], [_vi("y", shape=(1, 1, 2, 2))],
        [h.make_tensor("wq", T.UINT8, [1, 1, 1, 1], [3]), h.make_tensor("wz", T.UINT8, [], [0]),
         h.make_tensor("ws", T.FLOAT, [], [0.5])])
    rec = run_session(path, ["OpenVINOExecutionProvider", "CPUExecutionProvider"], python=str(OV_PY))
    assert rec["state"] == "create_failed" and "not acyclic" in rec["error"]
    summary, _ = predict(str(path), ["openvino:1.24"])
    assert summary["status"] == "session_would_fail" and "cyclic" in summary["failure"]
    # verify --observe compares the refusal (OpenVINO exists here: the failed session is no dropped provider)
    rc, rep = _verify(path, tmp_path)
    assert rc == 0 and rep["passed"] and rep["observation"]["state"] == "create_failed"


@needs_ov
def test_dynamically_quantized_resnet_session_fails_as_predicted():
    from partsim.api import predict
    from partsim.runtime.observe import run_session

    path = CORPUS / "full" / "q_tiny_resnet.ts.dyn.onnx"
    if not path.exists():
        pytest.skip(f"{path} is absent (../shared/corpus not mounted)")
    rec = run_session(path, ["OpenVINOExecutionProvider", "CPUExecutionProvider"], python=str(OV_PY))
    assert rec["state"] == "create_failed" and "not acyclic" in rec["error"]
    summary, _ = predict(str(path), ["openvino:1.24"])
    assert summary["status"] == "session_would_fail" and "cyclic" in summary["failure"]


# --- corpus models ----------------------------------------------------------------------

CORPUS_EXACT = ["full/tiny_resnet.ts.onnx", "full/tiny_unet.ts.onnx", "full/tiny_mobilenetv2.ts.onnx",
                "full/q_tiny_resnet.ts.qdq.onnx", "full/q_tiny_resnet.ts.qop.onnx",
                "full/q_tiny_transformer.dynamo.dyn.onnx", "full/tiny_transformer.dynamo.onnx",
                "full/q_tiny_transformer.dynamo.qop.onnx", "full/q_tiny_transformer.dynamo.qdq.onnx",
                "full/tiny_transformer.ts.onnx"]


@needs_ov
@pytest.mark.parametrize("rel", CORPUS_EXACT)
def test_corpus_models_agree_exactly(tmp_path, rel):
    path = CORPUS / rel
    if not path.exists():
        pytest.skip(f"{path} is absent (../shared/corpus not mounted)")
    _assert_exact(path, tmp_path)


def test_generator_is_deterministic_and_matches_table():
    from partsim.gen.openvino import openvino_table

    text = openvino_table()
    assert text == openvino_table()
    assert text == (ROOT / "rules" / "openvino-1.24.yaml").read_text()
    from partsim.rules.load import load_table

    table = load_table(ROOT / "rules" / "openvino-1.24.yaml")
    assert table.provider == "OpenVINOExecutionProvider" and table.is_compiling and table.cpu_based
    assert not table.rules_for("", "Hardmax") and not table.rules_for("", "TopK")
    assert not table.rules_for("", "QLinearMatMul") and "DynamicQuantizeLinear" in table.option("no_dimension_ops")
    assert table.rules_for("", "Conv") and table.rules_for("com.microsoft", "FusedConv")


@needs_ov
def test_contrib_domain_qdq_nodes_are_taken(tmp_path):
    """16-bit QDQ models from ORT's quantization tools use com.microsoft QuantizeLinear/DequantizeLinear;
    the EP compares op types only, so it takes them as it takes ONNX's (a real session, exact)."""
    ms = "com.microsoft"
    graph = h.make_graph([
        h.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"], name="q_in", domain=ms),
        h.make_node("DequantizeLinear", ["xq", "s", "z"], ["xd"], name="dq_in", domain=ms),
        h.make_node("Relu", ["xd"], ["r"], name="relu"),
        h.make_node("QuantizeLinear", ["r", "s", "z"], ["rq"], name="q_out", domain=ms),
        h.make_node("DequantizeLinear", ["rq", "s", "z"], ["y"], name="dq_out", domain=ms)],
        "contrib_qdq", [_vi("x", shape=(1, 4, 8, 8))], [_vi("y", shape=(1, 4, 8, 8))],
        [h.make_tensor("s", T.FLOAT, [], [0.01]), h.make_tensor("z", T.UINT16, [], [32768])])
    m = h.make_model(graph, opset_imports=[h.make_opsetid("", 17), h.make_opsetid(ms, 1)])
    m.ir_version = 8
    path = tmp_path / "contrib_qdq.onnx"
    onnx.save(m, path)
    rep = _assert_exact(path, tmp_path)
    assert rep["agreeing"] == 5


@needs_ov
def test_unnamed_nodes_of_a_compiled_partition_are_matched_by_their_load_index(tmp_path):
    # ORT's assignment info lists the members of OpenVINO's partition without names, and the
    # profile shows only the fused node: the observation names them from the model (ORT's
    # <op>_<node index>, the name partsim predicts), so verify compares every node
    w = h.make_tensor("w", T.FLOAT, [4, 4], [0.5] * 16)
    nodes = [h.make_node("Relu", ["x"], ["a"]), h.make_node("MatMul", ["a", "w"], ["b"]),
             h.make_node("Relu", ["b"], ["c"]), h.make_node("Hardmax", ["c"], ["d"]), h.make_node("Sigmoid", ["d"], ["y"])]
    model = _save(tmp_path, "unnamed", nodes, [_vi("x")], [_vi("y")], inits=[w])
    rep = _assert_exact(model, tmp_path)
    assert rep["compared"] == 5


def _save_inferred(tmp_path, name, nodes, inputs, inits, opset):
    """``_save`` with the output's type filled in by ONNX shape inference."""
    graph = h.make_graph(nodes, name, inputs, [h.make_value_info("y", onnx.TypeProto())], initializer=list(inits))
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", opset)])
    model.ir_version = 8
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    known = {v.name: v for v in list(inferred.graph.value_info) + list(inferred.graph.output)}
    y = known["y"]
    if not y.type.tensor_type.HasField("shape"):  # a run-time shape: rank known from the case (3, 20)
        y = h.make_tensor_value_info("y", y.type.tensor_type.elem_type, ["a", "b"])
    return _save(tmp_path, name, nodes, inputs, [y], inits, opset)


@needs_ov
@pytest.mark.parametrize("case", ["unsqueeze_axes_name", "reducemax_int8", "one_node_reshape", "one_node_expand",
                                  "resize_modes"])
def test_op_modes_and_one_node_graphs_follow_the_real_ep(case, tmp_path):
    # each case: a graph the real EP leaves (partly) to the CPU, next to a close one it takes
    x = _vi("x", shape=(3, 4, 5))
    if case == "unsqueeze_axes_name":  # data_ops.cc compares the input's *name* with "axes"
        graphs = [(name, [h.make_node("Unsqueeze", ["x", name], ["u"], name="U"), _relu("u", "y", "R")], [x],
                   [h.make_tensor(name, T.INT64, [1], [2])]) for name in ("axes", "where")]
        expect = [{"U": "CPU"}, {"U": "OpenVINO"}]
    elif case == "reducemax_int8":
        graphs = [(str(dt), [h.make_node("ReduceMax", ["x"], ["m"], name="M", axes=[1]),
                             h.make_node("Cast", ["m"], ["c"], name="C", to=T.FLOAT), _relu("c", "y", "R")],
                   [_vi("x", dt, (3, 4))], []) for dt in (T.INT8, T.INT32)]
        expect = [{"M": "CPU"}, {"M": "OpenVINO"}]
    elif case == "one_node_reshape":  # capability.cc SpecialConditionForClusterSizeOne
        graphs = [("runtime", [h.make_node("Reshape", ["x", "s"], ["y"], name="N")],
                   [x, _vi("s", T.INT64, (2,))], []),
                  ("initializer", [h.make_node("Reshape", ["x", "s"], ["y"], name="N")], [x],
                   [h.make_tensor("s", T.INT64, [2], [3, 20])])]
        expect = [{"N": "CPU"}, {"N": "OpenVINO"}]
    elif case == "one_node_expand":
        shape = h.make_tensor("s", T.INT64, [3], [2, 4, 5])
        x1 = _vi("x", shape=(1, 4, 5))
        graphs = [("alone", [h.make_node("Expand", ["x", "s"], ["y"], name="N")], [x1], [shape]),
                  ("in_a_model", [h.make_node("Expand", ["x", "s"], ["e"], name="N"), _relu("e", "y", "R")], [x1],
                   [shape])]
        expect = [{"N": "CPU"}, {"N": "OpenVINO"}]
    else:
        scales = h.make_tensor("sc", T.FLOAT, [4], [1.0, 1.0, 2.0, 2.0])
        x4 = _vi("x", shape=(1, 2, 4, 4))
        graphs = [(mode, [_relu("x", "r", "R0"), h.make_node("Resize", ["r", "", "sc"], ["z"], name="N", mode="linear",
                                                            **kw), _relu("z", "y", "R")], [x4], [scales])
                  for mode, kw in (("antialias", {"antialias": 1}),
                                   ("symmetric", {"coordinate_transformation_mode": "half_pixel_symmetric"}),
                                   ("plain", {}))]
        expect = [{"N": "CPU"}, {"N": "CPU"}, {"N": "OpenVINO"}]
    for (tag, nodes, inputs, inits), want in zip(graphs, expect):
        model = _save_inferred(tmp_path, f"{case}_{tag}", nodes, inputs, inits, 13 if case != "resize_modes" else 19)
        rep = _assert_exact(model, tmp_path)  # partsim agrees with the real session on every node
        summary = json.loads(_partsim("simulate", model, "-p", "openvino:1.24", "-f", "json")[1])
        got = {n["name"]: n["provider"] for n in summary["nodes"]}
        for node, provider in want.items():  # and the real session did leave these where the case says
            assert got[node].startswith(provider), (tag, got)
        assert rep["compared"] == len(nodes)


@needs_ov
@pytest.mark.parametrize("case", ["scatternd_add", "onnx_attention"])
def test_nodes_openvino_claims_but_cannot_compile_fail_the_session(case, tmp_path):
    # the EP claims them (data_ops.cc lists the op) and its ONNX frontend then throws: the real
    # session fails; partsim predicts that refusal, with the frontend's reason, and verify agrees.
    # The close graph (ScatterND without a reduction; the same model without Attention) runs.
    if case == "scatternd_add":
        graphs = []
        for red in ("add", "none"):
            nodes = [h.make_node("ScatterND", ["x", "i", "u"], ["s"], name="S", **({"reduction": red} if red != "none"
                                                                                    else {})), _relu("s", "y", "R")]
            graphs.append(_save(tmp_path, f"snd_{red}", nodes, [_vi("x", shape=(4, 4, 4)), _vi("u", shape=(2, 4, 4))],
                                [_vi("y", shape=(4, 4, 4))], [h.make_tensor("i", T.INT64, [2, 1], [0, 2])], opset=18))
    else:
        q = [_vi(t, shape=(1, 2, 4, 8)) for t in "qkv"]
        attention = [h.make_node("Attention", ["q", "k", "v"], ["o"], name="A"), _relu("o", "y", "R")]
        plain = [h.make_node("Add", ["q", "k"], ["o"], name="A"), h.make_node("Mul", ["o", "v"], ["p"], name="M"),
                 _relu("p", "y", "R")]
        graphs = [_save(tmp_path, f"attn_{tag}", nodes, q, [_vi("y", shape=(1, 2, 4, 8))], opset=23)
                  for tag, nodes in (("onnx", attention), ("none", plain))]
    failing, running = graphs
    rc, rep = _verify(failing, tmp_path)
    # verify compares the two refusals: both sides refused, so it passes
    assert rc == 0 and rep["passed"] and rep["refusal"]["observed"] and rep["refusal"]["predicted"], rep
    summary = json.loads(_partsim("simulate", failing, "-p", "openvino:1.24", "-f", "json")[1])
    assert ("reduction" if case == "scatternd_add" else "Attention") in summary["failure"]
    _assert_exact(running, tmp_path)


@needs_ov
def test_the_ort_build_openvino_ships_refuses_opset_26(tmp_path):
    from partsim.api import predict

    # onnxruntime-openvino 1.24.1 carries its own ORT, which loads ai.onnx opsets up to 25 (1.31.1: 26)
    for opset in (26, 25):
        model = _save(tmp_path, f"relu_{opset}", [_relu("x", "y", "R")], [_vi("x")], [_vi("y")], opset=opset)
        rc, rep = _verify(model, tmp_path)
        assert rc == 0 and rep["passed"], rep
        summary, _ = predict(str(model), ["openvino:1.24"])
        if opset == 26:
            assert rep["refusal"]["observed"] and "opset 26" in summary["failure"]
        else:
            assert summary["status"] == "ok" and rep["agreeing"] == rep["compared"] == 1
        cpu_only, _ = predict(str(model), ["cpu"])
        assert cpu_only["status"] == "ok"  # ORT 1.31.1 itself loads both


def _reduce_axes_graphs(tmp_path):
    """ReduceMean-18 of x*x over axes that are (a) a Range from 1 to Size(Shape(x)) (RMSNormalization's function
    body), (b) a Constant, (c) computed to a known length (Shape(x)[1:]*0+1); and an Unsqueeze of run-time axes."""
    x, y = _vi("x", shape=(2, 3, 4)), _vi("y", shape=("a", "b", "c"))
    scalar = lambda name, v: h.make_node("Constant", [], [name], name=f"K_{name}",  # noqa: E731
                                         value=h.make_tensor(name, T.INT64, [], [v]))
    tail = [h.make_node("Mul", ["x", "x"], ["sq"], name="M"), h.make_node("ReduceMean", ["sq", "axes"], ["m"], name="RM"),
            h.make_node("Sqrt", ["m"], ["y"], name="Q")]
    from_range = [h.make_node("Shape", ["x"], ["s"], name="S"), h.make_node("Size", ["s"], ["r"], name="Z"),
                  scalar("one", 1), scalar("start", 1), h.make_node("Range", ["start", "r", "one"], ["axes"], name="R")]
    constant = [h.make_node("Constant", [], ["axes"], name="KA", value=h.make_tensor("axes", T.INT64, [2], [1, 2]))]
    known_length = [h.make_node("Shape", ["x"], ["s"], name="S", start=1), scalar("zero", 0), scalar("one", 1),
                    h.make_node("Mul", ["s", "zero"], ["z"], name="MZ"), h.make_node("Add", ["z", "one"], ["axes"], name="AD")]
    unsqueeze = [h.make_node("Unsqueeze", ["x", "ax"], ["u"], name="U"), _relu("u", "a", "A"), _relu("a", "b", "B"),
                 h.make_node("Abs", ["b"], ["y"], name="C")]
    y4 = _vi("y", shape=("a", "b", "c", "d"))
    return {name: _save(tmp_path, name, nodes, ins, [out], opset=18) for name, nodes, ins, out in (
        ("axes_from_range", from_range + tail, [x], y), ("axes_constant", constant + tail, [x], y),
        ("axes_known_length", known_length + tail, [x], y),
        ("unsqueeze_runtime_axes", unsqueeze, [x, _vi("ax", T.INT64, (1,))], y4))}


@needs_ov
def test_compile_failures_of_claimed_nodes_follow_real_sessions(tmp_path):
    """OpenVINO 1.24.1 claims a ReduceMean whose axes a Range of run-time bounds makes, and an Unsqueeze of run-time
    axes, then fails to compile them (table options dynamic_reduce_axes_fails, dynamic_rank_fails): the session
    fails and partsim predicts it; the same ReduceMean over constant axes or axes of a known length runs."""
    failing = {"axes_from_range": "Range", "unsqueeze_runtime_axes": "run time"}
    for name, path in _reduce_axes_graphs(tmp_path).items():
        summary = json.loads(_partsim("simulate", path, "-p", "openvino:1.24", "--level", "disable", "-f", "json")[1])
        rc, rep = _verify(path, tmp_path, "disable")
        assert rc == 0 and rep["passed"], (name, rep)
        if name in failing:
            assert rep["refusal"]["observed"] and summary["status"] == "session_would_fail", name
            assert failing[name] in summary["failure"], summary["failure"]
        else:
            assert summary["status"] == "ok" and rep["agreeing"] == rep["compared"] > 0, name
    # at ORT's default level, Level 1 folds Shape -> Size -> Range of the static input into constant axes: it runs
    rc, rep = _verify(tmp_path / "axes_from_range.onnx", tmp_path)
    assert rc == 0 and not rep.get("refusal") and rep["agreeing"] == rep["compared"] > 0


def _unknown_rank_graphs(tmp_path):
    """Graphs around tensors of no known rank: (a) a graph input of no shape beside a second input's chain of
    known shapes; (b) a ReduceSum on the CPU (its axes an empty graph input, a zero-sized dimension OpenVINO
    refuses) writing a tensor of no known rank into an OpenVINO chain; (c) the same ReduceSum claimed, its
    output of no known rank inside the partition."""
    chain = [_relu("s", "a", "A"), _relu("a", "b", "B"), h.make_node("Abs", ["b"], ["y"], name="C")]
    y, x = _vi("y", shape=("a", "b", "c")), _vi("x", shape=(3, 2, 2))
    unknown = h.make_tensor_value_info("u", T.FLOAT, None)
    z_chain = [_relu("z", "za", "ZA"), _relu("za", "zb", "ZB"), h.make_node("Abs", ["zb"], ["w"], name="ZC")]
    no_shape = h.make_model(h.make_graph([_relu("u", "v", "UA")] + z_chain, "graph_input_unknown_rank",
                                         [unknown, _vi("z", shape=(2, 3))], [h.make_tensor_value_info("v", T.FLOAT, None),
                                                                              _vi("w", shape=(2, 3))]),
                            opset_imports=[h.make_opsetid("", 18)], ir_version=8)  # the checker wants shapes
    onnx.save(no_shape, tmp_path / "graph_input_unknown_rank.onnx")
    return {
        "graph_input_unknown_rank": tmp_path / "graph_input_unknown_rank.onnx",
        "cpu_output_unknown_rank": _save(tmp_path, "cpu_output_unknown_rank", [
            h.make_node("ReduceSum", ["x", "axes"], ["s"], name="RS", keepdims=1)] + chain,
            [x, _vi("axes", T.INT64, (0,))], [y], opset=18),
        "claimed_output_unknown_rank": _save(tmp_path, "claimed_output_unknown_rank", [
            h.make_node("ReduceSum", ["x", "axes"], ["s"], name="RS", keepdims=0)] + chain,
            [x, _vi("axes", T.INT64, (1,))], [_vi("y", shape=("a", "b"))], opset=18)}


@needs_ov
def test_tensors_of_no_known_rank_follow_real_sessions(tmp_path):
    """OpenVINO 1.24.1 and tensors of no known rank (table options unknown_rank_input_refuses_model,
    unknown_rank_partition_input_fails): a graph input of no shape leaves every node on the CPU, also the other
    input's chain; a partition input of no known rank made on the CPU fails the session; made inside the
    partition, it runs."""
    graphs = _unknown_rank_graphs(tmp_path)
    rc, rep = _verify(graphs["graph_input_unknown_rank"], tmp_path, "disable")
    assert rc == 0 and rep["agreeing"] == rep["compared"] == 4 and not rep.get("refusal"), rep
    summary = json.loads(_partsim("simulate", graphs["graph_input_unknown_rank"], "-p", "openvino:1.24", "--level",
                                  "disable", "-f", "json")[1])
    assert {n["provider"] for n in summary["nodes"]} == {"CPUExecutionProvider"}
    assert "no known rank" in summary["nodes"][0]["reasonDetail"]
    rc, rep = _verify(graphs["cpu_output_unknown_rank"], tmp_path, "disable")
    assert rc == 0 and rep["refusal"]["observed"] and "no known rank" in rep["refusal"]["predicted"], rep
    rc, rep = _verify(graphs["claimed_output_unknown_rank"], tmp_path, "disable")
    assert rc == 0 and rep["agreeing"] == rep["compared"] == 4 and not rep.get("refusal"), rep


@needs_ov
def test_simulate_with_the_openvino_builds_interpreter(tmp_path):
    """``--python`` of an onnxruntime-openvino 1.24.1 environment predicts that ORT (its optimizer, its load
    limits): reading that build's CPU kernel registry kills the process (get_all_opkernel_def segfaults), so
    the shipped CPU table of 1.24.1 (rules/cpu-1.24.yaml) is taken, with or without OpenVINO asked for, and
    nothing is called stale, instead of the command failing."""
    model = _save(tmp_path, "relu", [_relu("x", "y", "R")], [_vi("x")], [_vi("y")])
    for providers in ("openvino:1.24", "cpu"):
        code, out, err = _partsim("simulate", model, "-p", providers, "--python", OV_PY, "-f", "json")
        assert code == 0, err
        summary = json.loads(out)
        assert summary["ort"]["predicted"] == "1.24.1" and summary["status"] == "ok"
        assert summary["ort"]["tables"][-1] == {"provider": "CPUExecutionProvider",
                                                "describes": {"onnxruntime": "1.24.1"}}
        assert "mayBeStale" not in summary["ort"], summary["ort"]


@needs_ov
@pytest.mark.parametrize("case", sorted(UNEVEN_SPLITS))
def test_uneven_splits_follow_real_sessions(case, tmp_path):
    """OpenVINO's ONNX frontend cuts a Split-18 by num_outputs of an uneven static length as ONNX does only along a
    non-negative axis and while the last chunk keeps an element (table option uneven_split_fails); it converts both
    branches of an If, so an If whose untaken branch holds such a Split fails too (AffineGrid's function body)."""
    args, fails, _ = UNEVEN_SPLITS[case]
    path = save(split18(*args), tmp_path / f"{case}.onnx")
    summary = json.loads(_partsim("simulate", path, "-p", "openvino:1.24", "--level", "disable", "-f", "json")[1])
    rc, rep = _verify(path, tmp_path, "disable")
    assert rc == 0 and rep["passed"], rep
    assert bool((rep.get("refusal") or {}).get("observed")) == fails == (summary["status"] == "session_would_fail")
