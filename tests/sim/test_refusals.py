"""Sessions ORT refuses although every node has a provider (partsim/sim/refusals.py):
at load (IR version, opset) and at kernel creation (rule tables' kernel_requires)."""

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto as T
from onnx import helper, numpy_helper

from tests.conftest import shared_path
from tests.modelbuild import UNEVEN_SPLITS, empty_subgraph_reads, split18
from partsim.api import load_tables, predict
from partsim.analysis.calibrate import agreement, read_node_records
from partsim.io.load import model_from_proto

vi = helper.make_tensor_value_info


def _model(nodes, inputs, outputs, inits=(), opset=17, ir=9, extra=()):
    return helper.make_model(helper.make_graph(nodes, "g", inputs, outputs, list(inits)),
                             opset_imports=[helper.make_opsetid("", opset), *extra], ir_version=ir)


def _ort_refuses(m):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    try:
        ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    except Exception as exc:  # noqa: BLE001 - ORT's own exception types
        return str(exc)
    return None


def _status(m, providers):
    summary, _ = predict(model_from_proto(m), providers=providers, level="disable")  # the graph as built
    return summary["status"], summary.get("failure") or ""


def _rnn(op, layout):
    gates = {"RNN": 1, "GRU": 3, "LSTM": 4}[op]
    x = vi("X", T.FLOAT, [2, 5, 3] if layout else [5, 2, 3])
    w = numpy_helper.from_array(np.ones((1, gates * 4, 3), np.float32), "W")
    r = numpy_helper.from_array(np.ones((1, gates * 4, 4), np.float32), "R")
    node = helper.make_node(op, ["X", "W", "R"], ["Y"], hidden_size=4, layout=layout, name="rnn")
    return _model([node], [x], [vi("Y", T.FLOAT, None)], [w, r], opset=14)


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
def test_batchwise_recurrent_ops_are_refused_on_cpu_as_ort_does(op):
    refused = _ort_refuses(_rnn(op, 1))
    assert refused and "layout == 1" in refused
    status, failure = _status(_rnn(op, 1), ["cpu"])
    assert status == "session_would_fail" and "layout" in failure and "CPUExecutionProvider" in failure
    assert _ort_refuses(_rnn(op, 0)) is None
    assert _status(_rnn(op, 0), ["cpu"])[0] == "ok"


def test_cuda_refusals_of_the_node_tests_are_all_predicted():
    """Every session onnxruntime-gpu 1.31.1 refused in the public node tests (unknown ops, no
    kernel, IR version 14, opset 27, batchwise LSTM/RNN on cuDNN, …) is predicted
    session_would_fail."""
    cases = read_node_records(shared_path("observed", "nodes", "cuda-ort1.31.1.jsonl"))
    # a record with neither an assignment nor an error says nothing of the session (benchmarks/session_agreement.py)
    refused = [r for r in agreement(cases, ["cuda", "cpu"], load_tables())["refused"] if r["observed"] != "no placement"]
    assert len(refused) > 100
    # a model partsim does not load is refused either way
    assert [r for r in refused if r["predicted"] != "session_would_fail" and not r["predicted"].startswith("load error")
            ] == []
    by = {r["case"]: r for r in refused}
    assert "cudnn_rnn_base.h" in by["node__test_lstm_batchwise"]["observed"]


def test_ir_version_and_opset_newer_than_ort_are_refused_at_load():
    relu = [helper.make_node("Relu", ["x"], ["y"], name="r")]
    io = ([vi("x", T.FLOAT, [2])], [vi("y", T.FLOAT, [2])])
    for m, word in ((_model(relu, *io, ir=14), "IR version"), (_model(relu, *io, opset=27, ir=13), "opset 27")):
        refused = _ort_refuses(m)
        assert refused and ("IR version" in refused or "opset" in refused.lower())
        status, failure = _status(m, ["cpu"])
        assert status == "session_would_fail" and word in failure
    ok = _model(relu, *io, opset=26, ir=13)
    assert _ort_refuses(ok) is None and _status(ok, ["cpu"])[0] == "ok"


def test_cuda_kernel_constructor_refusals():
    """BatchNormalization-14 with training_mode=1 (cuda/nn/batch_norm.h) and FusedConv with a
    non-Relu activation (contrib_ops/cuda/fused_conv.cc) are claimed by CUDA and then refused;
    BatchNormalization-15 in training mode and FusedConv(Relu) are not."""
    x = vi("x", T.FLOAT, [2, 3, 4, 4])
    consts = [numpy_helper.from_array(np.ones(3, np.float32), n) for n in ("s", "b", "m", "v")]

    def bn(opset, training):
        outs = ["y", "rm", "rv"] if training else ["y"]
        n = helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], outs, training_mode=training, name="bn")
        return _model([n], [x], [vi(o, T.FLOAT, None) for o in outs], consts, opset=opset)

    status, failure = _status(bn(14, 1), ["cuda"])
    assert status == "session_would_fail" and "training_mode" in failure
    assert _status(bn(14, 0), ["cuda"])[0] == "ok"
    assert _status(bn(15, 1), ["cuda"])[0] == "ok"
    w = numpy_helper.from_array(np.ones((2, 3, 3, 3), np.float32), "w")

    def fused(act):
        n = helper.make_node("FusedConv", ["x", "w"], ["y"], name="fc", domain="com.microsoft", activation=act)
        return _model([n], [x], [vi("y", T.FLOAT, None)], [w], extra=[helper.make_opsetid("com.microsoft", 1)])

    status, failure = _status(fused("HardSigmoid"), ["cuda"])
    assert status == "session_would_fail" and "HardSigmoid" in failure
    summary, _ = predict(model_from_proto(fused("Relu")), providers=["cuda"], level="disable")
    assert summary["status"] == "ok" and summary["nodes"][0]["provider"] == "CUDAExecutionProvider"


def test_lint_checks_kernel_requires_attribute_names(tmp_path, run_cli):
    p = tmp_path / "t.yaml"
    p.write_text("provider: CPUExecutionProvider\nkind: kernel\nsource: {description: d, version: '1'}\nops:\n"
                 "- op: LSTM\n  versions: [14, 21]\n  kernel_requires: [{name: layuot, in: [0]}]\n")
    code, out, _ = run_cli("lint", p)
    assert code == 1 and "unknown-attribute" in out and "layuot" in out and ":7:" in out


def _attention(**attrs):
    q = vi("Q", T.FLOAT, [1, 2, 4, 8])
    k, v = vi("K", T.FLOAT, [1, 2, 4, 8]), vi("V", T.FLOAT, [1, 2, 4, 8])
    node = helper.make_node("Attention", ["Q", "K", "V"], ["Y"], name="att", **attrs)
    return _model([node], [q, k, v], [vi("Y", T.FLOAT, None)], opset=25, ir=11)


@pytest.mark.parametrize("providers", [["cpu"], ["qnn"], ["webgpu"]])
def test_an_attribute_orts_schema_lacks_is_refused_at_load(providers):
    """onnx 1.23 has Attention-25 with ``left_window_size``; onnxruntime 1.31.1's registry stops at
    Attention-24, which a node at opset 25 resolves to, and ORT's node check refuses the attribute. The same
    node without it loads."""
    windowed = _attention(is_causal=1, left_window_size=2)
    refused = _ort_refuses(windowed)
    assert refused and "Unrecognized attribute: left_window_size for operator Attention" in refused
    status, failure = _status(windowed, providers)
    assert status == "session_would_fail"
    assert "'left_window_size'" in failure and "Attention-24" in failure and "at load" in failure
    plain = _attention(is_causal=1)
    assert _ort_refuses(plain) is None and _status(plain, providers)[0] == "ok"


def test_a_function_node_partsim_inlines_is_checked_as_written(tmp_path):
    """At level disable partsim inlines the function nodes no provider claims before it builds the graph ORT
    partitions (the windowed Attention at opset 25: no table covers Attention-25), but ORT refuses the node as
    written at load, before it inlines anything: the refusal is predicted from the file too."""
    import onnx

    path = tmp_path / "windowed.onnx"
    onnx.save(_attention(is_causal=1, left_window_size=2), path)
    assert "left_window_size" in _ort_refuses(onnx.load(path))
    summary, _ = predict(str(path), providers=["cuda"], level="disable")
    assert summary["status"] == "session_would_fail" and "'left_window_size'" in summary["failure"]
    assert len(summary["nodes"]) > 1  # the graph was inlined all the same


def test_the_attribute_snapshot_is_the_installed_orts_registry():
    """partsim/data/contrib_schemas.json's attribute lists are what ORT's own registry says, schema by schema,
    ONNX's and ORT's own domains (the snapshot is regenerated by `partsim rules refresh`)."""
    import json

    from onnxruntime.capi import _pybind_state as C

    from partsim.data import data_path

    snapshot = json.loads(data_path("contrib_schemas.json").read_text())
    assert snapshot["release"] == ort.__version__
    registry = {}
    for s in C.get_all_operator_schema():
        key = f"{'' if s.domain == 'ai.onnx' else s.domain}:{s.name}"
        registry.setdefault(key, {})[str(s.since_version)] = sorted(s.attributes)
    assert snapshot["attributes"] == registry and len(registry) > 300


def test_an_unknown_attribute_of_a_schema_that_allows_them_loads():
    """LayerNormalization-17 declares AllowUncheckedAttributes (onnx/defs/nn/defs.cc): ORT loads a node with an
    attribute it does not know, and partsim does not refuse it either."""
    x = vi("x", T.FLOAT, [2, 4])
    inits = [numpy_helper.from_array(np.ones(4, np.float32), "s")]
    node = helper.make_node("LayerNormalization", ["x", "s"], ["y"], name="ln", axis=-1, partsim_extra=1)
    m = _model([node], [x], [vi("y", T.FLOAT, [2, 4])], inits, opset=17)
    assert _ort_refuses(m) is None
    assert _status(m, ["cpu"])[0] == "ok"
    relu = helper.make_node("Relu", ["x"], ["y"], name="r", partsim_extra=1)
    m = _model([relu], [x], [vi("y", T.FLOAT, [2, 4])])
    refused = _ort_refuses(m)
    assert refused and "Unrecognized attribute: partsim_extra" in refused
    status, failure = _status(m, ["cpu"])
    assert status == "session_would_fail" and "'partsim_extra'" in failure and "Relu-14" in failure


def _probe_node_model(schema):
    """A model of one node of ``schema`` (ORT's registry) with its fewest inputs and outputs and an attribute no
    schema has."""
    ins = [f"i{k}" for k in range(schema.min_input)]
    outs = [f"o{k}" for k in range(max(schema.min_output, 1))]
    node = helper.make_node(schema.name, ins, outs, domain=schema.domain, name="probe", partsim_probe=1)
    g = helper.make_graph([node], "g", [vi(i, T.FLOAT, [1]) for i in ins], [vi(o, T.FLOAT, None) for o in outs])
    opsets = [helper.make_opsetid(schema.domain, schema.since_version)]
    if schema.domain not in ("", "ai.onnx"):
        opsets.append(helper.make_opsetid("", 21))
    return helper.make_model(g, opset_imports=opsets, ir_version=10)


def test_which_schemas_refuse_an_unknown_attribute_is_what_ort_does():
    """Every schema of the installed ORT's registry, probed with a real session on a node carrying an unknown
    attribute: the ones ORT refuses at load ("Unrecognized attribute") are exactly the ones partsim checks; the
    others (accepted, or refused for another reason first) are sim/refusals.py's _NOT_CHECKED.  A sample of the
    refused ones is predicted session_would_fail naming the attribute."""
    import random

    from onnxruntime.capi import _pybind_state as C

    from partsim.sim.refusals import _NOT_CHECKED

    refused, other = [], set()
    for s in C.get_all_operator_schema():
        text = _ort_refuses(_probe_node_model(s)) or ""
        domain = "" if s.domain == "ai.onnx" else s.domain
        if "Unrecognized attribute: partsim_probe" in text:
            refused.append(s)
        elif s.name != "Constant":  # Constant becomes an initializer before any check
            other.add((domain, s.name, s.since_version))
    assert len(refused) > 700 and other == set(_NOT_CHECKED)
    for s in random.Random(32).sample(refused, 40):
        if s.since_version > 26 and s.domain in ("", "ai.onnx"):
            continue  # opset 27: refused at load for the opset already
        status, failure = _status(_probe_node_model(s), ["cpu"])
        assert status == "session_would_fail" and "'partsim_probe'" in failure, (s.domain, s.name, failure)


@pytest.mark.parametrize("case, ran", [("reduce_l2_empty_set", True), ("tril_zero", True), ("triu_zero", True),
                                       ("split_zero_size_splits_opset18", False)])
def test_zero_sized_graph_inputs_on_the_openvino_plugin_as_recorded(case, ran):
    """The plugin's zero_size_input_fails (its probe: an empty axes vector) holds for an empty vector input; the
    recorded sessions with a zero among other dimensions ([2, 0, 4], [3, 0, 5]) were created."""
    path = shared_path("observed", "nodes", "models", f"test_{case}.onnx")
    summary, _ = predict(str(path), ["openvino"], level="disable")
    assert (summary["status"] != "session_would_fail") == ran, summary.get("failure")


def test_a_file_without_an_ai_onnx_import_loads_on_the_bundled_ort():
    """onnxruntime-openvino 1.24.1 loads ai.onnx up to opset 25; a file importing only ai.onnx.ml gets that ORT's
    own newest ai.onnx (recorded: the ai.onnx.ml node tests ran), one importing ai.onnx 26 is refused."""
    ml_only = helper.make_model(helper.make_graph(
        [helper.make_node("Binarizer", ["x"], ["y"], domain="ai.onnx.ml", threshold=1.0)], "g",
        [vi("x", T.FLOAT, [3, 4])], [vi("y", T.FLOAT, [3, 4])]), opset_imports=[helper.make_opsetid("ai.onnx.ml", 1)],
        ir_version=9)
    assert _ort_refuses(ml_only) is None
    assert _status(ml_only, ["openvino:1.24"])[0] == "ok"
    relu26 = _model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", T.FLOAT, [2])], [vi("y", T.FLOAT, [2])],
                    opset=26, ir=11)
    status, failure = _status(relu26, ["openvino:1.24"])
    assert status == "session_would_fail" and "opset 26" in failure


def test_only_a_tensor_input_of_no_known_rank_leaves_openvino_124_without_nodes():
    """unknown_rank_input_refuses_model is about tensors: a sequence or optional graph input has no shape by its
    type, and the Relu chain beside it is still claimed; a tensor input of no shape leaves it to the CPU."""
    relu = [helper.make_node("Relu", ["x"], ["a"], name="A"), helper.make_node("Relu", ["a"], ["y"], name="B")]
    x, y = vi("x", T.FLOAT, [2, 3]), vi("y", T.FLOAT, [2, 3])
    seq = helper.make_tensor_sequence_value_info("s", T.FLOAT, None)
    opt = helper.make_value_info("o", helper.make_optional_type_proto(helper.make_tensor_type_proto(T.FLOAT, [2])))
    for other in (seq, opt):
        summary, _ = predict(model_from_proto(_model(relu, [x, other], [y], opset=18)), ["openvino:1.24"],
                             level="disable")
        assert {n["provider"] for n in summary["nodes"]} == {"OpenVINOExecutionProvider"}, other.name
    unknown = helper.make_tensor_value_info("u", T.FLOAT, None)
    summary, _ = predict(model_from_proto(_model(relu, [x, unknown], [y], opset=18)), ["openvino:1.24"],
                         level="disable")
    assert {n["provider"] for n in summary["nodes"]} == {"CPUExecutionProvider"}
    assert "no known rank" in summary["nodes"][0]["reasonDetail"]


@pytest.mark.parametrize("case", sorted(UNEVEN_SPLITS))
def test_uneven_splits_openvino_cannot_convert_fail_the_session(case):
    """uneven_split_fails (both OpenVINO tables): the fates measured on real sessions of these graphs
    (tests/gen/test_openvino.py, tests/gen/test_openvino_plugin.py check them again where the builds are)."""
    args, fails_124, fails_plugin = UNEVEN_SPLITS[case]
    for table, fails in (("openvino:1.24", fails_124), ("openvino", fails_plugin)):
        summary, _ = predict(model_from_proto(split18(*args)), [table], level="disable")
        assert (summary["status"] == "session_would_fail") == fails, (table, summary.get("failure"))
        if fails:
            assert "SP splits length" in summary["failure"], summary["failure"]


def test_a_split_in_a_nested_branch_is_found():
    """An If inside the then branch of another If: the outer If is what OpenVINO claims, the Split two levels down."""
    inner = split18(4, 5, in_if=True).graph.node[0]
    inner_g = helper.make_graph([inner], "then", [], [vi("b", T.INT64, ["B"])])
    else_g = helper.make_graph([helper.make_node("Identity", ["x"], ["e"], name="ID2")], "else", [],
                               [vi("e2", T.INT64, ["E"])])
    else_g.node[0].output[0] = "e2"
    outer = helper.make_node("If", ["c"], ["y"], name="OUT", then_branch=inner_g, else_branch=else_g)
    m = _model([outer], [vi("x", T.INT64, [4]), vi("c", T.BOOL, [])], [vi("y", T.INT64, ["M"])], opset=18)
    summary, _ = predict(model_from_proto(m), ["openvino"], level="disable")
    assert summary["status"] == "session_would_fail" and "OUT" in summary["failure"], summary.get("failure")


@pytest.mark.parametrize("case", sorted(empty_subgraph_reads()))
def test_a_subgraph_reading_an_empty_graph_input_fails_the_plugin_session(case):
    """zero_size_subgraph_input_fails (the plugin table): an If, Loop or Scan, or an If two levels up, whose
    subgraph reads an empty vector graph input fails as measured; a graph input of two elements, an empty
    vector a Slice makes or an empty initializer (not empty_constant_branch_fails: it is the outer graph's), read
    the same way, ran."""
    build, fails = empty_subgraph_reads()[case]
    summary, _ = predict(model_from_proto(build()), ["openvino"], level="disable")
    assert (summary["status"] == "session_would_fail") == fails, summary.get("failure")
    if fails:
        assert "its subgraph reads graph input 'e'" in summary["failure"], summary["failure"]
