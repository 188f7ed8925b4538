"""QNN and symbolic dims, against real sessions (onnxruntime-qnn 2.7.0, HTP emulator, soc_model 60; skipped
without onnxruntime-qnn).

Most QNN builders refuse a node with a dimension of no value in GetCapability (it stays on the CPU).  The
Reciprocal, Tan and GRU builders look at no shape: QNN claims the node, and composing its graph then fails the
whole session, "Dynamic shape is not supported yet, for input: <name>" (onnxruntime-qnn
``builder/qnn_model.cc`` SetGraphInputOutputInfo; partsim/sim/graph_inputs.py ``dynamic_input``).  Seen on
real models: magika's LayerNorm Reciprocal and a GRU text encoder fail at both levels.
"""

import numpy as np
import pytest
from onnx import helper as h
from onnx import numpy_helper as nh

from tests.modelbuild import model, save, vi
from tests.gen.test_qnn import QNN, _observe, needs_qnn, predict
from partsim.analysis.verify import compare


def _unary(op, shape):
    return model([h.make_node(op, ["x"], ["y"], name="n")], [vi("x", shape)], [vi("y", shape)])


def _relu_then_reciprocal(batch):
    """A CPU Relu (its input is symbolic) feeding a Reciprocal: QNN's partition input is the Relu's output."""
    nodes = [h.make_node("Relu", ["x"], ["r"], name="relu"), h.make_node("Reciprocal", ["r"], ["y"], name="rec")]
    return model(nodes, [vi("x", [batch, 4])], [vi("y", [batch, 4])])


def _rnn(op, batch):
    gates = {"GRU": 3, "LSTM": 4}[op]
    w = nh.from_array(np.full((1, gates * 4, 3), 0.1, np.float32), "W")
    r = nh.from_array(np.full((1, gates * 4, 4), 0.1, np.float32), "R")
    node = h.make_node(op, ["x", "W", "R"], ["y"], name="rnn", hidden_size=4)
    return model([node], [vi("x", [5, batch, 3])], [vi("y", [5, 1, batch, 4])], [w, r])


# name -> (graph, the input named in the real refusal, or None: the session is created)
CASES = {
    "reciprocal_symbolic_batch": (lambda: _unary("Reciprocal", ["N", 4]), "x"),
    "tan_symbolic_batch": (lambda: _unary("Tan", ["N", 4]), "x"),
    "reciprocal_after_cpu_relu": (lambda: _relu_then_reciprocal("N"), "r"),
    "gru_symbolic_batch": (lambda: _rnn("GRU", "N"), "x"),
    "reciprocal_static": (lambda: _unary("Reciprocal", [2, 4]), None),
    "reciprocal_after_relu_static": (lambda: _relu_then_reciprocal(2), None),
    "relu_symbolic_batch": (lambda: _unary("Relu", ["N", 4]), None),  # refused by its builder: on the CPU
    "lstm_symbolic_batch": (lambda: _rnn("LSTM", "N"), None),  # the LSTM builder refuses it too
    "gru_static": (lambda: _rnn("GRU", 2), None),
}


@needs_qnn
@pytest.mark.parametrize("level", ["disable", "all"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_dynamic_input_of_a_claimed_partition_fails_the_session(name, level, tmp_path):
    build, refused_input = CASES[name]
    path = save(build(), tmp_path / f"{name}.onnx")
    rec, obs = _observe(path, level)
    summary, assignment = predict(str(path), ["qnn"], level=level)
    if refused_input is None:
        assert rec["state"] == "ok", rec.get("error")
        assert summary["status"] == "ok", summary.get("failure")
        symbolic = name.endswith("symbolic_batch")
        assert (QNN in obs["nodes"].values()) == (not symbolic), obs["nodes"]
        assert compare(summary, assignment, obs)["agreement"] == 1.0
    else:
        message = f"Dynamic shape is not supported yet, for input: {refused_input}"
        assert rec["state"] == "create_failed" and message in rec.get("error", ""), rec
        assert summary["status"] == "session_would_fail" and message in summary["failure"], summary["failure"]
        assert compare(summary, assignment, obs)["passed"]
