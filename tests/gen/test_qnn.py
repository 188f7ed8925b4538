"""The QNN EP for real: sessions of the onnxruntime-qnn plugin (HTP emulator, soc_model 60) against partsim.

Every check here compares partsim's prediction with a real QNN session created now (skipped with a
reason where onnxruntime-qnn is not installed) or with the recorded node tests.
"""

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
import onnx
from onnx import TensorProto as T
from onnx import helper as h

from tests.conftest import shared_path
from tests.modelbuild import const, model, save, vi
from partsim.api import predict as _predict_all
from partsim.runtime.observe import observation_from_run, run_session
from partsim.analysis.verify import compare

ROOT = Path(__file__).resolve().parents[2]
QNN = "QNNExecutionProvider"


def predict(*args, **kw):
    """These predictions are compared with sessions observed at ORT_DISABLE_ALL (``_observe``)."""
    kw.setdefault("level", "disable")
    return _predict_all(*args, **kw)

try:
    import onnxruntime_qnn  # noqa: F401
    HAVE_QNN = True
except ImportError:
    HAVE_QNN = False
needs_qnn = pytest.mark.skipif(not HAVE_QNN, reason="onnxruntime-qnn is not installed (make test installs it)")


def _cli(*args):
    return subprocess.run([sys.executable, str(ROOT / "cli.py"), *map(str, args)], capture_output=True, text=True,
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=600)


def _observe(path, level="disable"):
    rec = run_session(path, [QNN], level, run=False, ep_options={"soc_model": "60"})
    return rec, observation_from_run(rec, level)


def _conv(i, o, name):
    return h.make_node("Conv", [i, "W"], [o], name=name, pads=[1, 1, 1, 1])


def _layout_models(tmp_path):
    """Small graphs around Conv that exercise each path of the layout transformation."""
    relu, erf = (lambda i, o, n: h.make_node("Relu", [i], [o], name=n)), (lambda i, o, n: h.make_node("Erf", [i], [o], name=n))
    add = lambda a, b, o, n: h.make_node("Add", [a, b], [o], name=n)  # noqa: E731
    cases = {
        "cancel_pair": ([_conv("x", "a", "c1"), _conv("a", "b", "c2")], ["b"]),
        "output_kept": ([_conv("x", "a", "c1"), _conv("a", "b", "c2")], ["a", "b"]),
        "push_through_cpu_node": ([_conv("x", "a", "conv"), relu("a", "b", "relu"), erf("b", "c", "erf"),
                                   add("c", "b", "y", "add")], ["y"]),
        "two_consumers": ([_conv("x", "a", "c1"), _conv("a", "b", "c2"), _conv("a", "c", "c3"),
                           add("b", "c", "y", "add")], ["y"]),
        "shared_input": ([_conv("x", "b", "c2"), _conv("x", "c", "c3"), add("b", "c", "y", "add")], ["y"]),
        "blocked_by_flatten": ([_conv("x", "a", "c1"), h.make_node("Flatten", ["a"], ["y"], name="fl")], ["y"]),
        "other_input_transposed": ([relu("x", "r", "relu"), _conv("r", "a", "c1"), add("a", "x", "y", "add")], ["y"]),
        "conv_then_cpu_op": ([_conv("x", "a", "conv"), h.make_node("Acos", ["a"], ["y"], name="acos")], ["y"]),
        "reduce_keepdims0": ([_conv("x", "a", "c1"), h.make_node("ReduceMean", ["a"], ["y"], name="rm", axes=[2, 3],
                                                                 keepdims=0)], ["y"]),
    }
    out = {}
    for name, (nodes, outs) in cases.items():
        m = model(nodes, [vi("x", [1, 4, 8, 8])], [vi(o, None) for o in outs], [const("W", [4, 4, 3, 3])])
        out[name] = save(m, tmp_path / f"{name}.onnx")
    return out


@needs_qnn
def test_observe_tiny_resnet_shows_qnn_nodes():
    model_path = shared_path("corpus/full/tiny_resnet.ts.onnx")
    r = _cli("observe", model_path, "-p", "qnn", "--format", "json")
    obs = json.loads(r.stdout)
    assert r.returncode == 0, obs.get("error")
    assert obs["state"] == "ok" and obs["qnnOptions"]["soc_model"] == "60" and obs["qnn"] == "2.7.0"
    on_qnn = [n for n, ep in obs["nodes"].items() if ep == QNN]
    assert len(on_qnn) == len(obs["nodes"]) and "/stem/stem.0/Conv_token_1" in on_qnn
    v = _cli("verify", model_path, "-p", "qnn", "--observe", "--format", "json")
    assert v.returncode == 0, v.stdout[-2000:]
    res = json.loads(v.stdout)["verify"]
    assert res["agreement"] == 1.0 and res["counts"]["layoutTransposes.QNNExecutionProvider"] == {
        "predicted": 2, "observed": 2}


@needs_qnn
def test_layout_transformation_matches_real_sessions(tmp_path):
    """Converted nodes and surviving Transposes: same names, same providers as the real session."""
    for name, path in _layout_models(tmp_path).items():
        rec, obs = _observe(path)
        assert rec["state"] == "ok", (name, rec.get("error"))
        summary, _ = predict(str(path), ["qnn"])
        predicted = {n.get("ortName", n["name"]): n["provider"] for n in summary["nodes"] + summary["insertedNodes"]}
        assert predicted == obs["nodes"], name


@needs_qnn
def test_refusal_after_layout_is_predicted():
    """q_tiny_resnet.qop: the MaxPool converted to NHWC is not taken by QNN; ORT refuses the session."""
    path = shared_path("corpus/full/q_tiny_resnet.ts.qop.onnx")
    rec, obs = _observe(path)
    assert rec["state"] == "create_failed" and "MaxPool_token_1" in rec["error"]
    summary, assignment = predict(str(path), ["qnn"])
    assert summary["status"] == "session_would_fail" and "MaxPool_token_1" in summary["failure"]
    assert compare(summary, assignment, obs)["passed"]


@needs_qnn
def test_graph_io_quantization_stays_on_cpu(tmp_path):
    s, z = h.make_tensor("s", T.FLOAT, [], [0.1]), h.make_tensor("z", T.UINT8, [], [128])
    nodes = [h.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], name="q"),
             h.make_node("DequantizeLinear", ["q", "s", "z"], ["d"], name="dq"),
             h.make_node("Relu", ["d"], ["r"], name="relu"),
             h.make_node("QuantizeLinear", ["r", "s", "z"], ["q2"], name="q2"),
             h.make_node("DequantizeLinear", ["q2", "s", "z"], ["y"], name="dq2")]
    path = save(model(nodes, [vi("x", [1, 4, 8, 8])], [vi("y", None)], [s, z], opset=19), tmp_path / "qdq.onnx")
    _, obs = _observe(path)
    summary, assignment = predict(str(path), ["qnn"])
    assert obs["nodes"] == {"q": "CPUExecutionProvider", "dq": QNN, "relu": QNN, "q2": QNN,
                            "dq2": "CPUExecutionProvider"}
    assert compare(summary, assignment, obs)["agreement"] == 1.0


@needs_qnn
def test_single_op_probes_agree(tmp_path):
    """A seeded sample of 320 single-op probes (op x dtype x rank x attribute variant) through the real EP
    in one child process: the shipped table predicts every placement."""
    from partsim.gen.qnn import build_qnn_probe, probe_models, probe_specs
    import onnx

    specs = random.Random(19).sample(probe_specs(), 320)
    paths = []
    for k, (op, dtype, rank, variant) in enumerate(specs):
        p = tmp_path / f"p{k}.onnx"
        onnx.save(build_qnn_probe(op, dtype, rank, variant), str(p))
        paths.append(str(p))
    recs = probe_models(paths, {"soc_model": "60"})
    agree = compared = 0
    wrong = []
    for (op, dtype, rank, variant), p in zip(specs, paths):
        rec = recs[p]
        if "assignment" not in rec:
            continue
        obs = {m[0]: ep for ep, ms in rec["assignment"] for m in ms}
        if f"n0_{op}" not in obs:
            continue  # a function op ORT inlined: no node of that name
        summary, _ = predict(p, ["qnn"])
        compared += 1
        got = next(n["provider"] for n in summary["nodes"] if n["name"] == f"n0_{op}")
        if got == obs[f"n0_{op}"]:
            agree += 1
        else:
            wrong.append((op, dtype, rank, variant, got))
    assert compared >= 250
    assert agree == compared, wrong[:10]


def _ints(name, values):
    return h.make_tensor(name, T.INT64, [len(values)], values)


def _tr(i, o, perm, name):
    return h.make_node("Transpose", [i], [o], name=name, perm=list(perm))


def _model_transpose_cases(tmp_path):
    """Graphs whose own Transposes the layout transformation's transpose optimizer rewrites for QNN
    (no layout-sensitive op in them): each exercises one handler of partsim/sim/transpose_opt/."""
    x3, x4, x5 = vi("x", [4, 8, 16]), vi("x", [1, 4, 8, 16]), vi("x", [3, 4, 2, 8, 16])
    w = lambda n, k: h.make_tensor(n, T.FLOAT, [k, k], [0.1] * (k * k))  # noqa: E731
    node = h.make_node
    cases = {
        # the Reshape push measured on onnxruntime 1.31.1 (size-1 dims inserted)
        "reshape_inserts_one": ([_tr("x", "t", (1, 0, 2), "tr"), node("Reshape", ["t", "s"], ["r"], name="rs"),
                                 node("Relu", ["r"], ["y"], name="relu")], [x3], ["y"], [_ints("s", [1, 8, 4, 16])]),
        "reshape_inserts_one_021": ([_tr("x", "t", (0, 2, 1), "tr"), node("Reshape", ["t", "s"], ["r"], name="rs"),
                                     node("Relu", ["r"], ["y"], name="relu")], [x3], ["y"], [_ints("s", [1, 4, 16, 8])]),
        "reshape_inserts_one_between": ([_tr("x", "t", (0, 2, 1), "tr"), node("Reshape", ["t", "s"], ["r"], name="rs"),
                                         node("Relu", ["r"], ["y"], name="relu")], [x3], ["y"], [_ints("s", [4, 1, 16, 8])]),
        "reshape_appends_one": ([_tr("x", "t", (0, 2, 1), "tr"), node("Reshape", ["t", "s"], ["r"], name="rs"),
                                 node("Relu", ["r"], ["y"], name="relu")], [x3], ["y"], [_ints("s", [4, 16, 8, 1])]),
        # ... and a Reshape that splits a dim (a channel shuffle's view), with or without size-1 dims;
        # one that merges dims is not pushed
        "reshape_splits_channels": ([_tr("x", "t", (0, 3, 1, 2), "tr"), node("Reshape", ["t", "s"], ["r"], name="rs"),
                                     _tr("r", "u", (0, 2, 1, 3, 4), "tr2"), node("Relu", ["u"], ["y"], name="relu")],
                                    [x4], ["y"], [_ints("s", [1, 2, 8, 4, 8])]),
        "reshape_splits_and_inserts": ([_tr("x", "t", (0, 2, 1), "tr"), node("Reshape", ["t", "s"], ["r"], name="rs"),
                                        node("Relu", ["r"], ["y"], name="relu")], [x3], ["y"],
                                       [_ints("s", [4, 1, 4, 4, 8])]),
        "reshape_merges": ([_tr("x", "t", (0, 3, 1, 2), "tr"), node("Reshape", ["t", "s"], ["r"], name="rs"),
                            node("Relu", ["r"], ["y"], name="relu")], [x4], ["y"], [_ints("s", [1, 16, 32])]),
        "identity_perm": ([_tr("x", "t", (0, 1, 2, 3), "tr"), node("Shape", ["t"], ["sh"], name="shape"),
                           node("Cast", ["sh"], ["shf"], name="cast", to=1),
                           node("Relu", ["t"], ["y"], name="relu")], [x4], ["y", "shf"], []),
        # Shape(Transpose(x)) => Gather(Shape(x), perm)
        "shape_of_transpose": ([_tr("x", "t", (0, 2, 1, 3), "tr"), node("Shape", ["t"], ["sh"], name="shape"),
                                node("Cast", ["sh"], ["shf"], name="cast", to=1),
                                node("Relu", ["t"], ["y"], name="relu")], [x4], ["y", "shf"], []),
        "gather_scalar": ([_tr("x", "t", (2, 0, 3, 1, 4), "tr"), node("Gather", ["t", "i0"], ["g0"], name="g0", axis=0),
                           node("Gather", ["t", "i1"], ["g1"], name="g1", axis=0), _tr("g1", "g1t", (0, 1, 3, 2), "tr2"),
                           node("MatMul", ["g0", "g1t"], ["y"], name="mm")], [x5], ["y"],
                          [h.make_tensor("i0", T.INT64, [], [0]), h.make_tensor("i1", T.INT64, [], [1])]),
        # pushed only when the output's one consumer goes on to a Transpose (cost check, measured on 1.31.1)
        "push_one_consumer": ([_tr("x", "t", (3, 1, 2, 0), "tr"), node("Sigmoid", ["t"], ["s"], name="sig"),
                               _tr("s", "y", (0, 1, 3, 2), "tr2")], [x4], ["y"], []),
        "no_push_two_transposes": ([_tr("x", "t", (3, 1, 2, 0), "tr"), node("Relu", ["t"], ["s"], name="relu"),
                                    _tr("s", "y", (0, 1, 3, 2), "tr2"), _tr("s", "z", (2, 0, 3, 1), "tr3")],
                                   [x4], ["y", "z"], []),
        "no_push_dead_consumer": ([_tr("x", "t", (3, 1, 2, 0), "tr"), node("Sigmoid", ["t"], ["s"], name="sig"),
                                   _tr("s", "y", (0, 1, 3, 2), "tr2"), node("Relu", ["s"], ["unused"], name="relu")],
                                  [x4], ["y"], []),
        # ... and through an output with several consumers when some path from it ends at a Transpose that
        # cancels the pushed one (measured on 1.31.1: the rotary embedding's second Split, sim/transpose_opt)
        "push_cancel_and_other": ([_tr("x", "t", (0, 2, 1, 3), "tr"), node("Relu", ["t"], ["s"], name="relu"),
                                   _tr("s", "y", (0, 2, 1, 3), "tr2"), _tr("s", "z", (0, 1, 3, 2), "tr3")],
                                  [x4], ["y", "z"], []),
        "push_two_relus_one_cancels": ([_tr("x", "t", (0, 2, 1, 3), "tr"), node("Relu", ["t"], ["s"], name="relu"),
                                        node("Relu", ["s"], ["a"], name="ra"), node("Relu", ["s"], ["z"], name="rb"),
                                        _tr("a", "y", (0, 2, 1, 3), "tr2")], [x4], ["y", "z"], []),
        "push_two_relus_join_cancel": ([_tr("x", "t", (0, 2, 1, 3), "tr"), node("Relu", ["t"], ["s"], name="relu"),
                                        node("Relu", ["s"], ["a"], name="ra"), node("Relu", ["s"], ["b"], name="rb"),
                                        node("Add", ["a", "b"], ["c"], name="add"), _tr("c", "y", (0, 2, 1, 3), "tr2")],
                                       [x4], ["y"], []),
        "no_push_two_relus_no_cancel": ([_tr("x", "t", (0, 2, 1, 3), "tr"), node("Relu", ["t"], ["s"], name="relu"),
                                         node("Relu", ["s"], ["a"], name="ra"), node("Relu", ["s"], ["b"], name="rb"),
                                         _tr("a", "y", (0, 1, 3, 2), "tr2"), _tr("b", "z", (0, 1, 3, 2), "tr3")],
                                        [x4], ["y", "z"], []),
        "transpose_merge": ([_tr("x", "t", (0, 2, 1, 3), "tr"), _tr("t", "u", (0, 1, 3, 2), "tr2"),
                             node("Relu", ["u"], ["y"], name="relu")], [x4], ["y"], []),
        "transpose_cancel": ([_tr("x", "t", (0, 2, 1, 3), "tr"), node("Relu", ["t"], ["r"], name="relu"),
                              _tr("r", "y", (0, 2, 1, 3), "tr2")], [x4], ["y"], []),
        "squeeze_unsqueeze": ([_tr("x", "t", (0, 2, 1, 3), "tr"), node("Squeeze", ["t", "a0"], ["s"], name="sq"),
                               node("Unsqueeze", ["s", "a1"], ["u"], name="unsq"), node("Relu", ["u"], ["y"], name="relu")],
                              [x4], ["y"], [_ints("a0", [0]), _ints("a1", [0])]),
        # NormalizeInputRanks: the lower-rank run-time input gets an Unsqueeze
        "add_lower_rank_input": ([_tr("x", "t", (0, 2, 1, 3), "tr"), node("Relu", ["b"], ["br"], name="relub"),
                                  node("Add", ["t", "br"], ["a"], name="add"), node("Relu", ["a"], ["y"], name="relu")],
                                 [x4, vi("b", [4, 16])], ["y"], []),
        "softmax_axis": ([_tr("x", "t", (0, 2, 1, 3), "tr"), node("Softmax", ["t"], ["s"], name="sm", axis=-1),
                          node("MatMul", ["s", "w"], ["y"], name="mm")], [x4], ["y"], [w("w", 16)]),
        "reduce_axes_input": ([_tr("x", "t", (0, 2, 3, 1), "tr"), node("ReduceSum", ["t", "ax"], ["s"], name="rs"),
                               node("MatMul", ["s", "w"], ["y"], name="mm")], [x4], ["y"], [_ints("ax", [1]), w("w", 4)]),
        "concat_two_transposed": ([_tr("x", "t", (0, 2, 1, 3), "tr"), _tr("x", "t2", (0, 2, 1, 3), "tr2"),
                                   node("Concat", ["t", "t2"], ["c"], name="cat", axis=1),
                                   node("MatMul", ["c", "w"], ["y"], name="mm")], [x4], ["y"], [w("w", 16)]),
        "slice_axes": ([_tr("x", "t", (0, 2, 1, 3), "tr"), node("Slice", ["t", "st", "en", "ax"], ["s"], name="sl"),
                        node("MatMul", ["s", "w"], ["y"], name="mm")], [x4], ["y"],
                       [_ints("st", [0]), _ints("en", [2]), _ints("ax", [3]), w("w", 2)]),
    }
    out = {}
    for name, (nodes, ins, outs, inits) in cases.items():
        out[name] = save(model(nodes, ins, [vi(o, None) for o in outs], inits), tmp_path / f"{name}.onnx")
    return out


def _layout_nodes(summary):
    """Every node of the graph QNN is handed after the layout transformation, by ORT's name."""
    got = {n.get("ortName", n["name"]): n["provider"] for n in summary["nodes"] if not n.get("ortRemoved")}
    got.update({n["name"]: n["provider"] for n in summary["insertedNodes"] if n["origin"] == "inserted:layout"})
    return got


@needs_qnn
@pytest.mark.parametrize("level", ["disable", "all"])
def test_transpose_optimizer_on_model_transposes_matches_real_sessions(tmp_path, level):
    """The transpose optimizer runs for QNN even where nothing is converted to NHWC: the nodes it removes,
    adds (Transpose_token_<k>, Gather, Unsqueeze) and renames are those of the real session.  The 25 sessions
    are created in one child (the ``probe`` sub-command, as test_single_op_probes_agree), not one child each."""
    from partsim.gen.qnn import probe_models
    from partsim.runtime.observation import LEVELS

    cases = _model_transpose_cases(tmp_path)
    recs = probe_models([str(p) for p in cases.values()], {"soc_model": "60"}, level=LEVELS[level])
    for name, path in cases.items():
        rec = recs[str(path)]
        assert "assignment" in rec, (name, rec.get("create_error"))
        obs = observation_from_run({**rec, "state": "ok"}, level)
        summary, _ = _predict_all(str(path), ["qnn"], level=level)
        assert _layout_nodes(summary) == obs["nodes"], name


@needs_qnn
def test_transpose_read_by_a_subgraph_is_not_pushed(tmp_path):
    """A value an If branch reads is not comprehensively consumed (GetValueConsumers), so the Transpose
    making it is not expected to go away and nothing is pushed through the Relu, as in a real session."""
    node = h.make_node
    then_g = h.make_graph([node("Identity", ["t"], ["o1"], name="id_then")], "then", [], [vi("o1", None)])
    else_g = h.make_graph([node("Identity", ["x"], ["o2"], name="id_else")], "else", [], [vi("o2", None)])
    nodes = [_tr("x", "t", (0, 2, 1, 3), "t1"), node("Relu", ["t"], ["r"], name="relu"), _tr("r", "y", (0, 2, 1, 3), "t2"),
             node("If", ["c"], ["z"], name="if", then_branch=then_g, else_branch=else_g)]
    path = save(model(nodes, [vi("x", [1, 4, 4, 8]), vi("c", [], T.BOOL)], [vi("y", None), vi("z", None)]),
                tmp_path / "if.onnx")
    rec, obs = _observe(path)
    assert rec["state"] == "ok", rec.get("error")
    summary, _ = predict(str(path), ["qnn"])
    kept = {n["name"] for n in summary["nodes"] if n["opType"] == "Transpose" and not n.get("ortRemoved")}
    kept |= {n["name"] for n in summary["insertedNodes"]}
    assert kept == {k for k, op in obs["opTypes"].items() if op == "Transpose"} == {"t1", "t2"}


def test_shipped_qnn_table_is_lint_clean():
    r = _cli("lint", "--strict", ROOT / "rules" / "qnn.yaml")
    assert r.returncode == 0, r.stdout


def test_layout_conversions_ort_inserts_are_not_missing(tmp_path):
    """Conv on QNN feeding a CPU-only op: ORT's layout transformer inserts the Transposes itself (the one
    after the Conv is pushed through the unassigned Acos, as a real session shows), so the summary lists
    them (inserted:layout, on QNN) and reports no missing layout conversion."""
    nodes = [_conv("x", "a", "conv"), h.make_node("Acos", ["a"], ["y"], name="acos")]
    path = save(model(nodes, [vi("x", [1, 4, 8, 8])], [vi("y", None)], [const("W", [4, 4, 3, 3])]),
                tmp_path / "conv_acos.onnx")
    summary, _ = predict(str(path), ["qnn"])
    by_name = {n["name"]: n for n in summary["nodes"]}
    assert by_name["conv"]["ortName"] == "conv_token_1" and by_name["acos"]["provider"] == "CPUExecutionProvider"
    inserted = [n for n in summary["insertedNodes"] if n["origin"] == "inserted:layout"]
    assert [(n["name"], n["input"], n["provider"]) for n in inserted] == [
        ("Transpose", "x", QNN), ("Transpose_token_3", "acos", QNN)]
    assert not [c for c in summary["conversions"] if c["kind"] == "layout"]


@needs_qnn
def test_normalization_builder_checks_against_real_sessions(tmp_path):
    """QNN's LayerNormalization/RMSNormalization builders on HTP take one output (Y) and only the last
    axis (layernormalization_op_builder.cc, rmsnormalization_op_builder.cc): the table's max_outputs and
    last_axis predicates give the real session's placement for each variant."""
    cases = {
        "ln_last": ("LayerNormalization", {}, ["y"]), "ln_neg1": ("LayerNormalization", {"axis": -1}, ["y"]),
        "ln_axis1": ("LayerNormalization", {"axis": 1}, ["y"]),
        "ln_mean_out": ("LayerNormalization", {}, ["y", "mean", "inv"]),
        "rms_last": ("RMSNormalization", {"axis": 2}, ["y"]), "rms_axis0": ("RMSNormalization", {"axis": 0}, ["y"]),
    }
    expect = {"ln_last": QNN, "ln_neg1": QNN, "rms_last": QNN}
    for name, (op, attrs, outs) in cases.items():
        inputs = ["x", "s", "b"] if op == "LayerNormalization" else ["x", "s"]
        node = h.make_node(op, inputs, outs, name="n", **attrs)
        path = save(model([node], [vi("x", [2, 3, 8])], [vi(o, None) for o in outs],
                          [const("s", [8]), const("b", [8])][:len(inputs) - 1], opset=23), tmp_path / f"{name}.onnx")
        rec, obs = _observe(path)
        assert rec["state"] == "ok", (name, rec.get("error"))
        assert obs["nodes"]["n"] == expect.get(name, "CPUExecutionProvider"), name
        summary, assignment = predict(str(path), ["qnn"])
        assert compare(summary, assignment, obs)["agreement"] == 1.0, name


def test_recorded_node_tests_of_measured_attribute_refusals():
    """The recorded ONNX node tests of ops whose refusals depend on attributes, used outputs or constant
    inputs (measured: partsim/gen/qnn.py's usable_evidence; builder checks: Resize's modes and cubic
    with constant scales only, LayerNormalization/RMSNormalization, TopK's k, Split's split): the
    shipped table agrees with the recorded session on every node."""
    from partsim.errors import PartsimError

    base = Path(shared_path("observed/nodes"))
    ops = ("test_layer_normalization_", "test_rms_normalization_", "test_gridsample_", "test_scatter_elements_",
           "test_scatternd_", "test_resize_", "test_roialign_", "test_top_k", "test_split_",
           # builder checks from the EP's log: nonpad_kv_seqlen, one-input variadic ops, pool dilations,
           # and opset-1 models no NHWC EP is asked about
           "test_attention_", "test_max_", "test_min_", "test_sum_", "test_mean_", "test_averagepool_",
           "test_maxpool_", "test_not_")
    checked = 0
    wrong = []
    for line in (base / "qnn-ort1.31.1-qnn2.7.0-soc60.jsonl").read_text().splitlines():
        rec = json.loads(line)
        test = rec["case"][len("node__"):]
        if not test.startswith(ops) or "_expanded" in test or "assignment" not in rec:
            continue
        try:
            summary, assignment = predict(str(base / "models" / f"{test}.onnx"), ["qnn"])
        except PartsimError:
            continue
        obs = {"nodes": {m[0]: ep for ep, ms in rec["assignment"] for m in ms},
               "opTypes": {m[0]: m[1] for ep, ms in rec["assignment"] for m in ms}, "memcpy": {}, "state": "ok"}
        v = compare(summary, assignment, obs, 1.0, False)
        checked += 1
        if v["disagreements"]:
            wrong.append((test, [(d["opType"], d["observed"]) for d in v["disagreements"]]))
    assert checked >= 40 and not wrong, wrong[:10]


def _if_model(first_op, tmp_path):
    """``first_op(x)`` read only from inside an If's branches, the If's condition computed by QNN nodes
    from x (ReduceMax, Greater, Not), and an Add after the If.  With an op QNN refuses first (Sinh), the
    EP's own partition walk (which counts an If's explicit inputs only but is told of its implicit
    reads) makes the If ready before its condition: one group holds Not and the Add on both sides of
    the If."""
    then_g = h.make_graph([h.make_node("Identity", ["s"], ["o_then"], name="then_id")], "then", [],
                          [vi("o_then", [4])])
    else_g = h.make_graph([h.make_node("Sinh", ["s"], ["o_else"], name="else_sinh")], "else", [],
                          [vi("o_else", [4])])
    nodes = [h.make_node(first_op, ["x"], ["s"], name="first"),
             h.make_node("ReduceMax", ["x"], ["m"], name="rmax", keepdims=0),
             h.make_node("Greater", ["m", "zero"], ["g"], name="gt"),
             h.make_node("Not", ["g"], ["cond"], name="not"),
             h.make_node("If", ["cond"], ["o"], name="branch", then_branch=then_g, else_branch=else_g),
             h.make_node("Add", ["o", "x"], ["y"], name="add")]
    return save(model(nodes, [vi("x", [4])], [vi("y", [4])], [const("zero", [], 0.0)], opset=17),
                tmp_path / f"if_{first_op}.onnx")


@needs_qnn
@pytest.mark.parametrize("first_op", ["Sinh", "Relu"])
def test_plugin_group_check_against_real_sessions(tmp_path, first_op):
    """ORT drops every QNN group when one of the groups the plugin EP formed is not one partition
    (ep_plugin_provider_interfaces.cc); with Relu first the If is on the group border and the groups hold."""
    path = _if_model(first_op, tmp_path)
    _, obs = _observe(path)
    summary, assignment = predict(str(path), ["qnn"])
    main = {k: v for k, v in obs["nodes"].items() if k in ("first", "rmax", "gt", "not", "branch", "add")}
    if first_op == "Sinh":
        assert set(main.values()) == {"CPUExecutionProvider"}  # the real EP got nothing
    else:
        assert main["add"] == QNN and main["gt"] == QNN
    v = compare(summary, assignment, obs)
    assert v["agreement"] == 1.0, v["disagreements"]
    reasons = {n["name"]: n.get("reasonDetail", "") for n in summary["nodes"]}
    if first_op == "Sinh":
        assert "not one partition" in reasons["not"]


@needs_qnn
def test_untaken_function_node_is_inlined_and_partitioned_again(tmp_path):
    """HardSwish with a symbolic dimension: QNN's table has HardSwish but QNN refuses the dynamic
    shape, the CPU has no HardSwish kernel, so ORT inlines it (HardSigmoid + Mul) in its next
    partitioning round and the session runs (graph_partitioner.cc InlineNodes)."""
    nodes = [h.make_node("HardSwish", ["x"], ["y"], name="hs")]
    path = save(model(nodes, [vi("x", ["n", 8])], [vi("y", ["n", 8])], opset=17), tmp_path / "hs.onnx")
    rec, obs = _observe(path)
    assert rec.get("state") == "ok"
    summary, _ = predict(str(path), ["qnn"])
    assert summary["status"] == "ok", summary.get("failure")
    ops = sorted(n["opType"] for n in summary["nodes"])
    assert ops == sorted(obs["opTypes"].values()) == ["HardSigmoid", "Mul"]
    assert {n["provider"] for n in summary["nodes"]} == set(obs["nodes"].values())


def _qlinear_chain(tmp_path):
    """QOperator data between QLinearMatMuls: a Transpose of the quantized product (QNN takes it on the
    quantized type its builder passes on), a Reshape after it (plain output from a quantized input:
    refused), a DequantizeLinear after the Transpose (quantized input: taken), one after the Reshape and
    one after a Gather of a uint8 initializer (plain inputs: refused)."""
    f, u8 = T.FLOAT, T.UINT8
    inits = [h.make_tensor("s", f, [], [0.05]), h.make_tensor("z", u8, [], [128]),
             h.make_tensor("W", u8, [8, 8], [130] * 64), h.make_tensor("shape", T.INT64, [2], [8, 4]),
             h.make_tensor("emb", u8, [10, 8], [129] * 80)]
    q = ["s", "z"]
    nodes = [h.make_node("QLinearMatMul", ["x", *q, "W", *q, *q], ["m"], name="qmm"),
             h.make_node("Transpose", ["m"], ["t"], name="tr", perm=[0, 2, 1]),
             h.make_node("DequantizeLinear", ["t", *q], ["dt"], name="dq_t"),
             h.make_node("Relu", ["dt"], ["y"], name="relu"),
             h.make_node("Reshape", ["t", "shape"], ["r"], name="reshape"),
             h.make_node("DequantizeLinear", ["r", *q], ["dr"], name="dq_r"),
             h.make_node("Sigmoid", ["dr"], ["y2"], name="sig"),
             h.make_node("Gather", ["emb", "idx"], ["g"], name="gather"),
             h.make_node("DequantizeLinear", ["g", *q], ["dg"], name="dq_g"),
             h.make_node("Tanh", ["dg"], ["y3"], name="tanh")]
    m = model(nodes, [vi("x", [1, 4, 8], u8), vi("idx", [1, 4], T.INT64)],
              [vi("y", None), vi("y2", None), vi("y3", None)], inits, opset=19)
    return save(m, tmp_path / "qlinear_chain.onnx")


@needs_qnn
def test_quantized_tensor_registration_against_real_qnn(tmp_path):
    """sim/qnn_tensors.py: the first node unit that meets an 8/16-bit tensor makes it quantized or plain;
    the real session places every node as predicted, and the rules are what decides them."""
    path = _qlinear_chain(tmp_path)
    _, obs = _observe(path)
    summary, assignment = predict(str(path), ["qnn"])
    v = compare(summary, assignment, obs, 1.0, True)
    assert v["agreement"] == 1.0, v["disagreements"]
    on = obs["nodes"]
    assert on["qmm"] == on["tr"] == on["dq_t"] == QNN  # QLinearMatMul probed; Transpose on the quantized type
    assert on["reshape"] != QNN and on["dq_r"] != QNN and on["dq_g"] != QNN  # plain tensors
    why = {n["name"]: n.get("reasonDetail", "") for n in summary["nodes"]}
    assert "plain" in why["reshape"] and "plain" in why["dq_g"], why


def _qdq_layernorm(tmp_path, w_dtype, b_dtype):
    f, u8 = T.FLOAT, T.UINT8
    tp = {"int8": T.INT8, "uint8": T.UINT8, "int32": T.INT32}
    inits = [h.make_tensor("s", f, [], [0.05]), h.make_tensor("z", u8, [], [128]),
             h.make_tensor("wq", tp[w_dtype], [8], [1] * 8), h.make_tensor("ws", f, [], [0.01]),
             h.make_tensor("wz", tp[w_dtype], [], [0]),
             h.make_tensor("bq", tp[b_dtype], [8], [1] * 8), h.make_tensor("bs", f, [], [0.001]),
             h.make_tensor("bz", tp[b_dtype], [], [0])]
    nodes = [h.make_node("Relu", ["x"], ["r"], name="relu"),
             h.make_node("QuantizeLinear", ["r", "s", "z"], ["rq"], name="q_in"),
             h.make_node("DequantizeLinear", ["rq", "s", "z"], ["rd"], name="dq_in"),
             h.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["w"], name="dq_w"),
             h.make_node("DequantizeLinear", ["bq", "bs", "bz"], ["b"], name="dq_b"),
             h.make_node("LayerNormalization", ["rd", "w", "b"], ["ln"], name="ln", axis=-1),
             h.make_node("QuantizeLinear", ["ln", "s", "z"], ["lq"], name="q_out"),
             h.make_node("DequantizeLinear", ["lq", "s", "z"], ["ld"], name="dq_out"),
             h.make_node("Sigmoid", ["ld"], ["y"], name="sig")]
    m = model(nodes, [vi("x", [1, 4, 8])], [vi("y", None)], inits, opset=19)
    return save(m, tmp_path / f"ln_{w_dtype}_{b_dtype}.onnx")


@needs_qnn
@pytest.mark.parametrize("w_dtype,b_dtype,taken", [("int8", "int32", False), ("uint8", "int32", True),
                                                    ("int8", "int8", True)])
def test_qdq_unit_types_against_real_qnn(tmp_path, w_dtype, b_dtype, taken):
    """The table's qdq_unit_types (probed QDQ units): the HTP backend refuses a LayerNormalization unit with
    uint8 activations, an int8 scale and an int32 bias, with its DQs and Q, and takes the other two."""
    path = _qdq_layernorm(tmp_path, w_dtype, b_dtype)
    _, obs = _observe(path)
    summary, assignment = predict(str(path), ["qnn"])
    v = compare(summary, assignment, obs, 1.0, True)
    assert v["agreement"] == 1.0, v["disagreements"]
    unit = ("dq_in", "dq_w", "dq_b", "ln", "q_out")
    assert all((obs["nodes"][n] == QNN) == taken for n in unit), obs["nodes"]

@needs_qnn
def test_one_node_partitions_are_counted_as_compiled_partitions(tmp_path):
    """Two one-node QNN partitions around a node QNN refuses: verify counts both on each side."""
    node = h.make_node
    path = save(model([node("Relu", ["x"], ["a"], name="relu1"), node("Hardmax", ["a"], ["b"], name="hm"),
                       node("Relu", ["b"], ["y"], name="relu2")], [vi("x", [2, 8])], [vi("y", None)]),
                tmp_path / "one_node_parts.onnx")
    proc = _cli("verify", str(path), "-p", "qnn", "--observe", "--level", "disable", "-f", "json")
    v = json.loads(proc.stdout)["verify"]
    assert v["counts"]["compiledPartitions"] == {"predicted": 2, "observed": 2}, v["counts"]
    assert proc.returncode == 0 and v["agreeing"] == 3


def _gelu_nodes(order):
    """The erf Gelu of x in the three orders QNN fuses (gelu_fusion.cc patterns 1 and 2, and the
    torch.export order), or a lone Erf."""
    node = h.make_node
    head = [node("Div", ["x", "sq2"], ["d"], name="div"), node("Erf", ["d"], ["e"], name="erf"),
            node("Add", ["e", "one"], ["a"], name="add")]
    if order == "half_x_first":  # pattern 1: Mul(x, 0.5) * (1 + erf)
        return head + [node("Mul", ["x", "half"], ["xh"], name="mulx"), node("Mul", ["xh", "a"], ["y"], name="mul")]
    if order == "x_times_first":  # pattern 2: (x * (1 + erf)) * 0.5
        return head + [node("Mul", ["x", "a"], ["xa"], name="mulx"), node("Mul", ["xa", "half"], ["y"], name="mul")]
    if order == "export":  # torch.export: x * ((1 + erf) * 0.5)
        return head + [node("Mul", ["a", "half"], ["ah"], name="mulh"), node("Mul", ["x", "ah"], ["y"], name="mul")]
    return [node("Erf", ["x"], ["e"], name="erf"), node("Add", ["e", "one"], ["y"], name="add")]


@needs_qnn
@pytest.mark.parametrize("order", ["half_x_first", "x_times_first", "export", "lone_erf"])
def test_gelu_groups_against_real_sessions(tmp_path, order):
    """QNN takes an Erf only inside a Gelu it fuses (qnn_node_group/gelu_fusion.cc; the torch.export
    order measured on 2.7.0): node for node against a real session."""
    consts = [h.make_tensor("sq2", T.FLOAT, [], [1.4142135]), h.make_tensor("one", T.FLOAT, [], [1.0]),
              h.make_tensor("half", T.FLOAT, [], [0.5])]
    path = save(model(_gelu_nodes(order), [vi("x", [1, 16, 32])], [vi("y", None)], consts),
                tmp_path / f"gelu_{order}.onnx")
    rec, obs = _observe(path)
    assert rec["state"] == "ok", rec.get("error")
    summary, assignment = predict(str(path), ["qnn"])
    v = compare(summary, assignment, obs, 1.0, True)
    assert v["passed"] and v["agreeing"] == v["compared"] == len(_gelu_nodes(order)), v["disagreements"]
    assert obs["nodes"]["erf"] == (QNN if order != "lone_erf" else "CPUExecutionProvider")


@needs_qnn
def test_a_rank_6_tensor_is_refused_whatever_the_op(tmp_path):
    """The HTP takes no tensor of rank 6: a Reshape to rank 6 between two Convs (and the Relu on it) stay
    on the CPU, the layout Transposes follow; node for node and in Transpose count against a real session."""
    node = h.make_node
    nodes = [node("Conv", ["x", "w1"], ["a"], name="conv1", pads=[1, 1, 1, 1]),
             node("Reshape", ["a", "s6"], ["b"], name="rs6"), node("Relu", ["b"], ["c"], name="relu6"),
             node("Reshape", ["c", "s4"], ["d"], name="rs4"),
             node("Conv", ["d", "w2"], ["y"], name="conv2", pads=[1, 1, 1, 1])]
    path = save(model(nodes, [vi("x", [1, 8, 16, 16])], [vi("y", None)],
                      [const("w1", [8, 8, 3, 3]), const("w2", [8, 8, 3, 3]), _ints("s6", [1, 2, 1, 4, 16, 16]),
                       _ints("s4", [1, 8, 16, 16])]), tmp_path / "rank6.onnx")
    rec, obs = _observe(path)
    assert rec["state"] == "ok", rec.get("error")
    summary, assignment = predict(str(path), ["qnn"])
    v = compare(summary, assignment, obs, 1.0, True)
    assert v["passed"] and v["agreeing"] == v["compared"] == 5, (v["disagreements"], v["counts"])
    assert obs["nodes"]["relu6"] == "CPUExecutionProvider"


@needs_qnn
def test_contrib_domain_qdq_units_are_taken(tmp_path):
    """16-bit QDQ models from ORT's quantization tools (get_qnn_qdq_config) use com.microsoft
    QuantizeLinear/DequantizeLinear; QNN takes their units as it takes ONNX's (a real session)."""
    ms, node = "com.microsoft", h.make_node
    nodes = [node("QuantizeLinear", ["x", "s", "z"], ["xq"], name="q_in", domain=ms),
             node("DequantizeLinear", ["xq", "s", "z"], ["xd"], name="dq_in", domain=ms),
             node("DequantizeLinear", ["wq", "ws", "wz"], ["wd"], name="dq_w", domain=ms),
             node("Conv", ["xd", "wd"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             node("QuantizeLinear", ["c", "s", "z"], ["cq"], name="q_c", domain=ms),
             node("DequantizeLinear", ["cq", "s", "z"], ["cd"], name="dq_c", domain=ms),
             node("Relu", ["cd"], ["y"], name="relu")]
    inits = [h.make_tensor("s", T.FLOAT, [], [0.01]), h.make_tensor("z", T.UINT16, [], [32768]),
             h.make_tensor("wq", T.UINT8, [8, 8, 3, 3], [128] * 576), h.make_tensor("ws", T.FLOAT, [], [0.02]),
             h.make_tensor("wz", T.UINT8, [], [128])]
    m = model(nodes, [vi("x", [1, 8, 16, 16])], [vi("y", None)], inits)
    m.opset_import.append(h.make_opsetid(ms, 1))
    path = save(m, tmp_path / "contrib_qdq.onnx")
    rec, obs = _observe(path)
    assert rec["state"] == "ok", rec.get("error")
    summary, assignment = predict(str(path), ["qnn"])
    v = compare(summary, assignment, obs, 1.0, True)
    assert v["passed"] and v["agreeing"] == v["compared"], (v["disagreements"], v["counts"])
    assert obs["nodes"]["conv" if "conv" in obs["nodes"] else "conv_token_1"] == QNN


def _same_as_real_qnn(model, path):
    """Save ``model`` to ``path``, observe a real QNN session on it (ORT_DISABLE_ALL) and check that
    partsim names the same nodes on the same providers (converted nodes by ORT's name, inserted
    nodes included); returns ``(summary, observation)``."""
    onnx.save(model, str(path))
    rec, obs = _observe(path)
    assert rec["state"] == "ok", rec.get("error")
    summary, _ = predict(str(path), ["qnn"])
    predicted = {n.get("ortName", n["name"]): n["provider"] for n in summary["nodes"] + summary["insertedNodes"]}
    assert predicted == obs["nodes"]
    return summary, obs


@needs_qnn
@pytest.mark.parametrize("opset", [6, 24, 26])
def test_layout_transformer_opset_range_decides_whether_qnn_is_asked(opset, tmp_path):
    # graph_partitioner.cc: an NHWC EP gets no capability when the layout transformation does not
    # support the model's ai.onnx opset; 1.31.1 converts a Conv at opsets 24 and 26, and gives QNN
    # nothing of an opset-6 model (the same model otherwise)
    w = h.make_tensor("W", T.FLOAT, [4, 3, 3, 3], [0.1] * 108)
    g = h.make_graph([_conv("x", "c", "C"), h.make_node("Relu", ["c"], ["y"], name="R")], "g",
                     [h.make_tensor_value_info("x", T.FLOAT, [1, 3, 8, 8])],
                     [h.make_tensor_value_info("y", T.FLOAT, [1, 4, 8, 8])], [w])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 3 if opset < 7 else 10
    summary, obs = _same_as_real_qnn(m, tmp_path / f"conv{opset}.onnx")
    on_qnn = {k for k, v in obs["nodes"].items() if v == QNN}
    if opset == 6:
        assert not on_qnn and not summary["insertedNodes"]
        assert {n["reason"] for n in summary["nodes"]} == {"opset_version"}
    else:
        assert "R" in on_qnn and len(summary["insertedNodes"]) == 2  # the Conv's two layout Transposes


@needs_qnn
@pytest.mark.parametrize("op", ["Max", "Min", "Sum", "Mean"])
def test_variadic_ops_need_two_inputs_on_qnn(op, tmp_path):
    # "QNN EP requires Max to have at least 2 inputs" (measured on 2.7.0): one input -> CPU, two -> QNN
    for n_in in (1, 2):
        ins = [h.make_tensor_value_info(f"x{k}", T.FLOAT, [2, 3]) for k in range(n_in)]
        g = h.make_graph([h.make_node(op, [i.name for i in ins], ["y"], name="N")], "g", ins,
                         [h.make_tensor_value_info("y", T.FLOAT, [2, 3])])
        m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
        m.ir_version = 8
        path = tmp_path / f"{op}{n_in}.onnx"
        onnx.save(m, str(path))
        rec, obs = _observe(path)
        summary, _ = predict(str(path), ["qnn"])
        assert {n["name"]: n["provider"] for n in summary["nodes"]} == obs["nodes"]
        assert obs["nodes"]["N"] == (QNN if n_in == 2 else "CPUExecutionProvider")


@needs_qnn
@pytest.mark.parametrize("case", ["same", "other_zero_point", "other_scale"])
def test_drop_qdq_units_need_equal_scales_as_the_plugins_selector(case, tmp_path):
    # the plugin's DropQDQNodeGroupSelector (qnn_ep_utils.cc): DQ -> Transpose -> Q is one node unit when
    # Q and DQ share their scale (zero points are not compared); the Transpose's input comes from a
    # Squeeze QNN registers as a plain uint8 tensor, so that unit is refused whole ("Input and output data
    # types do not match"); with another scale there is no unit and the float Transpose goes alone
    zp_out = 100 if case == "other_zero_point" else 128
    scale_out = 0.1 if case == "other_scale" else 0.05
    nodes = [h.make_node("Squeeze", ["x", "ax"], ["s"], name="S"),
             h.make_node("DequantizeLinear", ["s", "sc", "zp"], ["d"], name="DQ"),
             h.make_node("Transpose", ["d"], ["t"], name="T", perm=[1, 0]),
             h.make_node("QuantizeLinear", ["t", "sq", "zq"], ["q"], name="Q"),
             h.make_node("DequantizeLinear", ["q", "sq", "zq"], ["y"], name="DQ2")]
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", T.UINT8, [1, 4, 8])],
                     [h.make_tensor_value_info("y", T.FLOAT, [8, 4])],
                     [h.make_tensor("ax", T.INT64, [1], [0]), h.make_tensor("sc", T.FLOAT, [], [0.05]),
                      h.make_tensor("sq", T.FLOAT, [], [scale_out]),
                      h.make_tensor("zp", T.UINT8, [], [128]), h.make_tensor("zq", T.UINT8, [], [zp_out])])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    summary, obs = _same_as_real_qnn(m, tmp_path / f"drop_qdq_{case}.onnx")
    assert obs["nodes"]["T"] == (QNN if case == "other_scale" else "CPUExecutionProvider")
