"""Session refusals of the real QNN EP, predicted: each rule on a small graph the real EP refuses and a
close one it runs (onnxruntime-qnn 2.7.0, HTP emulator, soc_model 60; skipped without onnxruntime-qnn).

The sessions run in partsim's session child (``run_session``): a crash of the emulator is recorded
as ``crashed``, not raised.  Each case asserts the real outcome first, then partsim's prediction.
"""

import numpy as np
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

from tests.modelbuild import model, save, vi
from tests.gen.test_qnn import QNN, _observe, needs_qnn, predict
from partsim.analysis.verify import compare


def _i64(name, values):
    return nh.from_array(np.array(values, np.int64), name)


def _f32(name, values):
    return nh.from_array(np.array(values, np.float32), name)


def _castlike_round_two(first_input):
    """A CastLike QNN refuses (its type input has a symbolic dimension) and the CPU has no kernel for:
    ORT inlines it into a Cast after the first partitioning round; QNN claims that Cast as a partition
    of its own, apart from the Relu's.  Cast of a constant: the partition has no graph input."""
    nodes = [h.make_node("CastLike", [first_input, "d"], ["y"], name="castlike"),
             h.make_node("Relu", ["x"], ["z"], name="relu")]
    return model(nodes, [vi("x", [4]), vi("v", [1]), vi("d", ["n"])], [vi("y", [1]), vi("z", [4])],
                 [_f32("k", [1.0])], opset=21)


def _castlike_first_input(order):
    """CastLike(k, x) reads x for its type only; with Relu(w) in the same partition the fused inputs are
    x, w in the model's input order: x first -> QNN stops collecting inputs at once."""
    ins = {"x": vi("x", [4]), "w": vi("w", [4])}
    nodes = [h.make_node("CastLike", ["k", "x"], ["y"], name="castlike"), h.make_node("Relu", ["w"], ["z"], name="relu")]
    return model(nodes, [ins[n] for n in order], [vi("y", [1]), vi("z", [4])], [_f32("k", [1.0])], opset=21)


def _pool(op, size, kernel, stride, pad, out):
    node = h.make_node(op, ["x"], ["y"], name="pool", kernel_shape=[kernel] * 2, strides=[stride] * 2,
                       pads=[pad] * 4, ceil_mode=1)
    return model([node], [vi("x", [1, 2, size, size])], [vi("y", [1, 2, out, out])], opset=19)


def _grid_sample(rank):
    x, grid, y = ([1, 2, 3, 4, 5], [1, 2, 3, 4, 3], [1, 2, 2, 3, 4]) if rank == 5 else \
        ([1, 2, 4, 5], [1, 3, 4, 2], [1, 2, 3, 4])
    node = h.make_node("GridSample", ["x", "g"], ["y"], name="gs", mode="linear")
    return model([node], [vi("x", x), vi("g", grid)], [vi("y", y)], opset=20)


def _zero_size(op):
    if op == "Slice":  # an empty output: QNN's Slice builder refuses it
        nodes = [h.make_node("Slice", ["x", "s", "e"], ["y"], name="n")]
        return model(nodes, [vi("x", [2, 3, 4])], [vi("y", [0, 3, 4])], [_i64("s", [1]), _i64("e", [1])])
    return model([h.make_node(op, ["x"], ["y"], name="n")], [vi("x", [2, 0, 4])], [vi("y", [2, 0, 4])])


def _random_like(cast_first):
    """RandomUniformLike of a double tensor: a double graph input of the partition, or made inside it."""
    if cast_first:
        nodes = [h.make_node("Cast", ["w"], ["x"], name="cast", to=T.DOUBLE),
                 h.make_node("RandomUniformLike", ["x"], ["y"], name="rnd", dtype=T.FLOAT)]
        return model(nodes, [vi("w", [10])], [vi("y", [10])])
    nodes = [h.make_node("RandomUniformLike", ["x"], ["y"], name="rnd", dtype=T.FLOAT)]
    return model(nodes, [vi("x", [10], T.DOUBLE)], [vi("y", [10])])


def _cast_to_double_output():
    """A Cast to double writing a graph output: QNN takes no node that writes or reads one."""
    node = h.make_node("Cast", ["x"], ["t"], name="cast", to=T.DOUBLE)
    return model([node], [vi("x", [4], T.BOOL)], [vi("t", [4], T.DOUBLE)], opset=21)


def _stft(step_at_run_time):
    ins = [vi("x", [1, 128, 1])]
    inits = [_i64("l", 16)]
    if step_at_run_time:
        ins.append(vi("s", [], T.INT64))
    else:
        inits.append(_i64("s", 8))
    node = h.make_node("STFT", ["x", "s", "", "l"], ["y"], name="stft")
    return model([node], ins, [vi("y", [1, 15, 9, 2])], inits, opset=17)


# name -> (graph, real outcome: a text of the real error, or None: the session is created)
CASES = {
    "castlike_of_constant_inlined_in_round_two": (lambda: _castlike_round_two("k"), "zero graph inputs"),
    "castlike_of_input_inlined_in_round_two": (lambda: _castlike_round_two("v"), None),
    "type_only_input_first": (lambda: _castlike_first_input(["x", "w"]), "zero graph inputs"),
    "type_only_input_second": (lambda: _castlike_first_input(["w", "x"]), None),
    "maxpool_ceil_last_window_dropped": (lambda: _pool("MaxPool", 2, 1, 2, 0, 1), "was not selected by that EP"),
    "maxpool_ceil_same_size": (lambda: _pool("MaxPool", 4, 3, 2, 0, 2), None),
    "averagepool_ceil_window_on_pad": (lambda: _pool("AveragePool", 2, 3, 3, 1, 1), "was not selected by that EP"),
    "averagepool_ceil_same_size": (lambda: _pool("AveragePool", 6, 3, 3, 1, 3), None),
    "gridsample_5d": (lambda: _grid_sample(5), "was not selected by that EP"),
    "gridsample_4d": (lambda: _grid_sample(4), None),
    "abs_of_zero_size": (lambda: _zero_size("Abs"), "Failed to compose Qnn graph"),
    "slice_to_zero_size": (lambda: _zero_size("Slice"), None),
    "double_graph_input": (lambda: _random_like(False), "Failed to compose Qnn graph"),
    "double_made_inside": (lambda: _random_like(True), None),
    "stft_frame_step_at_run_time": (lambda: _stft(True), ""),  # the emulator crashes: no message
    "stft_constant_frame_step": (lambda: _stft(False), None),
}


@needs_qnn
@pytest.mark.parametrize("name", sorted(CASES))
def test_refusal_predicted_as_real_qnn_does(name, tmp_path):
    build, error = CASES[name]
    path = save(build(), tmp_path / f"{name}.onnx")
    rec, obs = _observe(path)
    summary, assignment = predict(str(path), ["qnn"])
    if error is None:
        assert rec["state"] == "ok", rec.get("error")
        assert summary["status"] == "ok", summary.get("failure")
        # node for node as the real session placed them (on QNN, but the empty Slice on the CPU)
        assert (QNN in obs["nodes"].values()) == (name != "slice_to_zero_size"), obs["nodes"]
        assert compare(summary, assignment, obs)["agreement"] == 1.0
    else:
        assert rec["state"] in ("create_failed", "crashed") and error in rec.get("error", ""), rec
        assert summary["status"] == "session_would_fail", summary["nodes"]


@needs_qnn
def test_cast_to_bfloat16_stays_on_cpu(tmp_path):
    """QNN leaves a Cast to bfloat16 to the CPU (no bfloat16 on this HTP); the table's Cast has no
    bfloat16 output (partsim/gen/qnn.py)."""
    node = h.make_node("Cast", ["x"], ["y"], name="cast", to=T.BFLOAT16)
    path = save(model([node], [vi("x", [4])], [vi("y", [4], T.BFLOAT16)], opset=21), tmp_path / "bf16.onnx")
    rec, obs = _observe(path)
    assert rec["state"] == "ok" and obs["nodes"] == {"cast": "CPUExecutionProvider"}
    summary, assignment = predict(str(path), ["qnn"])
    assert compare(summary, assignment, obs)["agreement"] == 1.0


def test_generator_bounds_claimed_ranks_by_refusals_after_layout():
    """A rank refused after the NHWC conversion bounds the claimed ranks, so the layout-refusal rule
    matches it (GridSample: 4-D taken, 5-D refused; before, the 4-D rule had no bound and took 5-D)."""
    from partsim.gen.qnn import derive_rules, usable_evidence

    evidence = [("GridSample", "", "float", 4, True, {}), ("GridSample", "", "float", 5, "layout_refusal", {})]
    rules = derive_rules(usable_evidence(evidence))[("", "GridSample")]
    taken = [r for r in rules if not r.get("layout_refusal")]
    refused = [r for r in rules if r.get("layout_refusal")]
    assert [r.get("max_rank") for r in taken] == [4]
    assert [(r["min_rank"], r["max_rank"]) for r in refused] == [(5, 5)]


def test_generator_reads_ceil_pool_refusals_as_the_layout_check(tmp_path):
    """The ceil-mode pools refused after the conversion are the ``pool_ceil_output`` check's, not a
    refusal of MaxPool/AveragePool as such: the generator counts them as claimed (sim/layout_checks.py)."""
    from partsim.gen.qnn_derive import _explained_after_layout

    dropped = save(_pool("MaxPool", 2, 1, 2, 0, 1), tmp_path / "dropped.onnx")
    same = save(_pool("MaxPool", 4, 3, 2, 0, 2), tmp_path / "same.onnx")
    assert _explained_after_layout(str(dropped), "pool") and not _explained_after_layout(str(same), "pool")


def test_layout_refusal_ranks_leave_out_the_claimed_ones():
    """Refused after the conversion at ranks 3, 5 and 6, claimed at 4: the layout-refusal rules cover 3 and
    5-6, so a 4-D node the claiming rule refuses for an attribute stays on the CPU (GridSample cubic)."""
    from partsim.gen.qnn import derive_rules, usable_evidence

    evidence = [("GridSample", "", "float", 4, True, {}), ("GridSample", "", "float", 3, "layout_refusal", {}),
                ("GridSample", "", "float", 5, "layout_refusal", {}), ("GridSample", "", "float", 6, "layout_refusal", {})]
    rules = derive_rules(usable_evidence(evidence))[("", "GridSample")]
    assert sorted((r["min_rank"], r["max_rank"]) for r in rules if r.get("layout_refusal")) == [(3, 3), (5, 6)]


@needs_qnn
@pytest.mark.parametrize("variant", ["alone", "read_by_cast", "after_relu"])
def test_double_graph_output_stays_on_cpu(variant, tmp_path):
    """QNN leaves a node writing a double graph output to the CPU, and a node reading one, while the
    node before it stays on QNN (test_bernoulli_double_expanded's last Cast); the table says so
    (``refused_graph_output_dtypes``)."""
    cpu = "CPUExecutionProvider"
    m, expected = _cast_to_double_output(), {"cast": cpu}
    if variant == "read_by_cast":  # the graph output is also read by a Cast back to float
        m.graph.node.append(h.make_node("Cast", ["t"], ["y"], name="back", to=T.FLOAT))
        m.graph.output.append(vi("y", [4]))
        expected["back"] = cpu
    elif variant == "after_relu":  # a float Relu on QNN makes the Cast's input
        nodes = [h.make_node("Relu", ["x"], ["r"], name="relu"), h.make_node("Cast", ["r"], ["t"], name="cast", to=T.DOUBLE)]
        m = model(nodes, [vi("x", [4])], [vi("t", [4], T.DOUBLE)], opset=21)
        expected["relu"] = QNN
    path = save(m, tmp_path / "double_out.onnx")
    rec, obs = _observe(path)
    assert rec["state"] == "ok" and obs["nodes"] == expected, rec
    summary, assignment = predict(str(path), ["qnn"])
    assert summary["status"] == "ok" and compare(summary, assignment, obs)["agreement"] == 1.0


@needs_qnn
@pytest.mark.parametrize("to", ["int8", "int16", "uint16"])
def test_cast_to_small_int_stays_on_cpu(to, tmp_path):
    """QNN leaves a Cast to int8, int16 or uint16 to the CPU even when a QNN Cast reads its output (the table's
    Cast lists none of them as an output, qnn_derive.CAST_REFUSED_OUTPUTS), and then the Cast back to float too
    (no Cast of those inputs on QNN)."""
    dtype = getattr(T, to.upper())
    nodes = [h.make_node("Cast", ["x"], ["t"], name="cast", to=dtype),
             h.make_node("Cast", ["t"], ["y"], name="back", to=T.FLOAT), h.make_node("Relu", ["x"], ["z"], name="relu")]
    path = save(model(nodes, [vi("x", [4])], [vi("y", [4]), vi("z", [4])], opset=21), tmp_path / f"{to}.onnx")
    rec, obs = _observe(path)
    cpu = "CPUExecutionProvider"
    assert rec["state"] == "ok" and obs["nodes"] == {"cast": cpu, "back": cpu, "relu": QNN}, rec
    summary, assignment = predict(str(path), ["qnn"])
    assert summary["status"] == "ok" and compare(summary, assignment, obs)["agreement"] == 1.0


def test_generator_lists_the_cast_outputs_qnn_takes():
    """The derived Cast rule keeps double (claimed inside a partition) and drops the small ints QNN refused."""
    from partsim.gen.qnn import derive_rules, usable_evidence

    rules = derive_rules(usable_evidence([("Cast", "", "float", 2, True, {}), ("Cast", "", "int32", 2, True, {})]))
    outs = {tuple(r["types"]["o0"]) for r in rules[("", "Cast")]}
    assert outs == {("float", "float16", "double", "uint8", "int32", "uint32", "int64", "bool")}


@needs_qnn
@pytest.mark.parametrize("source,reader", [("float", None), ("float16", None), ("uint8", None), ("bool", None),
                                           ("int32", None), ("float", "Shape")])
def test_cast_to_int64_graph_output_from_int32_only(source, reader, tmp_path):
    """A Cast to int64 writing a graph output of the model: QNN takes it from int32 (and int64), leaves it to the CPU
    from float, float16, uint8 or bool; read by a CPU node instead (a partition output) it takes it from float too
    (``int64_graph_output_casts_from``)."""
    dtype = getattr(T, source.upper())
    nodes, outs = [h.make_node("Cast", ["x"], ["c"], name="cast", to=T.INT64)], [vi("c", [2, 3], T.INT64)]
    if reader:
        nodes.append(h.make_node(reader, ["c"], ["s"], name="shp"))
        outs = [vi("s", [2], T.INT64)]
    path = save(model(nodes, [vi("x", [2, 3], dtype)], outs, opset=17), tmp_path / f"{source}.onnx")
    rec, obs = _observe(path)
    taken = source == "int32" or reader is not None
    assert rec["state"] == "ok" and obs["nodes"]["cast"] == (QNN if taken else "CPUExecutionProvider"), rec
    summary, assignment = predict(str(path), ["qnn"])
    assert summary["status"] == "ok" and compare(summary, assignment, obs)["agreement"] == 1.0
