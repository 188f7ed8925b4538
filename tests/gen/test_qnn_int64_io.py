"""An int64 Transpose on QNN, from a graph input to a graph output: real sessions (onnxruntime-qnn 2.7.0, HTP
emulator, soc_model 60; skipped without onnxruntime-qnn) against partsim's prediction.

The QNN EP keeps int64 only on graph inputs and outputs, casts an int64 graph input to int32 for the node that
reads it, and its Transpose builder then plans a Cast back to int64 from a tensor no node writes when the output is
a graph output too (onnxruntime/onnxruntime-qnn ``transpose_op_builder.cc``).  On the model's graph I/O GetCapability
refuses the node; on a partition's I/O (a CPU node makes the input) the node is claimed and the graph does not
compose.  The table's ``int64_io_passthrough_ops`` says so (``partsim/sim/graph_inputs.py``); the int64 Transpose
probes of the generator read an ``Add``'s output (``partsim/gen/qnn_probes.py`` ``build_qnn_probe``).
"""

import pytest
from onnx import TensorProto as T
from onnx import helper as h

from tests.modelbuild import model, save, vi
from tests.gen.test_qnn import QNN, _observe, needs_qnn, predict
from partsim.analysis.verify import compare

CPU = "CPUExecutionProvider"


def _tr(i, o, perm=(1, 0)):
    return h.make_node("Transpose", [i], [o], name="tr", perm=list(perm))


def _add(a, o, name="add"):
    return h.make_node("Add", [a, a], [o], name=name)


def _shape(i, o):
    return h.make_node("Shape", [i], [o], name="shp")


def _i64(name, shape):
    return vi(name, shape, T.INT64)


# name -> (nodes, inputs, outputs, the real placement or the real error)
CASES = {
    # graph input -> Transpose -> graph output: refused in GetCapability
    "input_to_output": ([_tr("x", "y")], [_i64("x", [2, 3])], [_i64("y", [3, 2])], {"tr": CPU}),
    # Add (QNN) -> Transpose -> graph output: its input is a native tensor (int32 in QNN), claimed
    "made_inside_to_output": ([_add("x", "a"), _tr("a", "y")], [_i64("x", [2, 3])], [_i64("y", [3, 2])],
                              {"add": QNN, "tr": QNN}),
    # Shape (CPU) -> Transpose -> graph output: claimed on the model's I/O, the partition's graph does not compose
    "partition_input_to_output": ([_shape("x", "s"), _tr("s", "y", perm=[0])], [vi("x", [2, 3, 4])], [_i64("y", [3])],
                                  "Failed to compose Qnn graph"),
    # Shape (CPU) -> Add -> Transpose -> graph output: the Transpose's input is made inside the partition
    "partition_input_through_add": ([_shape("x", "s"), _add("s", "a"), _tr("a", "y", perm=[0])], [vi("x", [2, 3, 4])],
                                    [_i64("y", [3])], {"shp": CPU, "add": QNN, "tr": QNN}),
}


@needs_qnn
@pytest.mark.parametrize("name", sorted(CASES))
def test_int64_transpose_on_graph_io_predicted_as_real_qnn_does(name, tmp_path):
    nodes, ins, outs, real = CASES[name]
    path = save(model(nodes, ins, outs, opset=17), tmp_path / f"{name}.onnx")
    rec, obs = _observe(path)
    summary, assignment = predict(str(path), ["qnn"])
    if isinstance(real, str):
        assert rec["state"] == "create_failed" and real in rec.get("error", ""), rec
        assert summary["status"] == "session_would_fail", summary["nodes"]
        assert "int64 partition input" in summary.get("failure", ""), summary.get("failure")
        return
    assert rec["state"] == "ok" and obs["nodes"] == real, rec
    assert summary["status"] == "ok", summary.get("failure")
    assert compare(summary, assignment, obs)["agreement"] == 1.0


@needs_qnn
@pytest.mark.parametrize("rank", [2, 3, 4])
def test_int64_transpose_made_inside_is_claimed_at_the_int32_ranks(rank, tmp_path):
    """Add -> Transpose of rank 2-4, int64, the Transpose writing the graph output: both on QNN, as the table's
    int64 Transpose (derived from the generator's probes of this form) predicts."""
    shape = [2, 3, 4, 5][:rank]
    perm = list(reversed(range(rank)))
    nodes = [_add("x", "a"), _tr("a", "y", perm)]
    path = save(model(nodes, [_i64("x", shape)], [_i64("y", [shape[p] for p in perm])], opset=17),
                tmp_path / f"r{rank}.onnx")
    rec, obs = _observe(path)
    assert rec["state"] == "ok" and obs["nodes"] == {"add": QNN, "tr": QNN}, rec
    summary, assignment = predict(str(path), ["qnn"])
    assert compare(summary, assignment, obs)["agreement"] == 1.0


def test_int64_io_rule_reads_the_model_and_the_partition_io():
    """The pure rule: a Transpose from an int64 graph input to a graph output is refused; from a tensor made
    outside the partition to one leaving it, the partition fails; a float one, or one whose input is made
    inside, neither."""
    from partsim.io.load import model_from_proto
    from partsim.sim.graph_inputs import int64_io_failure, int64_io_nodes

    proto = model([_tr("x", "t"), _add("t", "y"), _tr("z", "w")], [_i64("x", [2, 3]), vi("z", [2, 3])],
                  [_i64("y", [3, 2]), _i64("t", [3, 2]), vi("w", [3, 2])], opset=17)
    proto.graph.node[2].name = "tr_float"
    m = model_from_proto(proto, "<memory>")
    assert int64_io_nodes(m, ["Transpose"]) == {0: ("x", "t")}
    assert int64_io_nodes(m, []) == {}
    assert "int64 partition input 'x'" in int64_io_failure(m, [0], ["Transpose"])
    assert int64_io_failure(m, [2], ["Transpose"]) is None  # float
    chain = model([_add("x", "a"), _tr("a", "y")], [_i64("x", [2, 3])], [_i64("y", [3, 2])], opset=17)
    m2 = model_from_proto(chain, "<memory>")
    assert int64_io_nodes(m2, ["Transpose"]) == {}
    assert int64_io_failure(m2, [0, 1], ["Transpose"]) is None
    assert int64_io_failure(m2, [1], ["Transpose"]) is not None  # the Add left to the CPU: 'a' comes from outside
