"""QDQ models on the QNN EP for real: small built graphs, each against a real onnxruntime-qnn session
(HTP emulator, soc_model 60), node for node including the nodes ORT's layout transformation inserts.

- the HTP takes a QDQ HardSigmoid (and LeakyRelu, Neg, LogSoftmax) unit only with unsigned types: an
  int8 MobileNetV3 HardSwish block (HardSigmoid unit, then a Mul unit on the same input) leaves its
  HardSigmoid unit on the CPU, the uint8 one runs on QNN (table ``qdq_unit_types``, probed);
- a graph-output DequantizeLinear that the transpose optimizer moves inside (its last unit converted to
  NHWC) goes to QNN, and the new DequantizeLinear after the output Transpose to the CPU
  (``partsim/sim/graph_io.py``).
"""

import numpy as np
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

from tests.modelbuild import model, save, vi
from tests.gen.test_qnn import QNN, _observe, needs_qnn, predict

CPU = "CPUExecutionProvider"


def _qdq_conv_head(qtype):
    """x -> Q -> DQ -> Conv (a quantized weight) -> Q -> DQ, activations of ``qtype``; returns nodes, initializers
    and the name of the dequantized Conv output."""
    node, np_t = h.make_node, {T.UINT8: np.uint8, T.INT8: np.int8}[qtype]
    zero = 128 if qtype == T.UINT8 else 0
    inits = [h.make_tensor("s", T.FLOAT, [], [0.05]), h.make_tensor("z", qtype, [], [zero]),
             h.make_tensor("hs_s", T.FLOAT, [], [1 / 255]), h.make_tensor("hs_z", qtype, [], [0 if zero else -128]),
             nh.from_array(np.full([8, 8, 3, 3], 1, np_t), "wq"), h.make_tensor("ws", T.FLOAT, [], [0.02]),
             h.make_tensor("wz", qtype, [], [0])]
    nodes = [node("QuantizeLinear", ["x", "s", "z"], ["xq"], name="q_in"),
             node("DequantizeLinear", ["xq", "s", "z"], ["xd"], name="dq_in"),
             node("DequantizeLinear", ["wq", "ws", "wz"], ["wd"], name="dq_w"),
             node("Conv", ["xd", "wd"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             node("QuantizeLinear", ["c", "s", "z"], ["cq"], name="q_c")]
    return nodes, inits


def _hardswish_block(tmp_path, qtype):
    """MobileNetV3's QDQ HardSwish as ORT's quantizer writes it: DQ(x) read by a HardSigmoid unit
    (alpha 1/6) and by the Mul unit after it, then a Relu unit."""
    node = h.make_node
    nodes, inits = _qdq_conv_head(qtype)
    nodes += [node("DequantizeLinear", ["cq", "s", "z"], ["cd"], name="dq_c"),
              node("HardSigmoid", ["cd"], ["hs"], name="hs", alpha=1 / 6, beta=0.5),
              node("QuantizeLinear", ["hs", "hs_s", "hs_z"], ["hq"], name="q_hs"),
              node("DequantizeLinear", ["hq", "hs_s", "hs_z"], ["hd"], name="dq_hs"),
              node("Mul", ["cd", "hd"], ["m"], name="mul"),
              node("QuantizeLinear", ["m", "s", "z"], ["mq"], name="q_m"),
              node("DequantizeLinear", ["mq", "s", "z"], ["md"], name="dq_m"),
              node("Relu", ["md"], ["y"], name="relu")]
    name = {T.UINT8: "uint8", T.INT8: "int8"}[qtype]
    return save(model(nodes, [vi("x", [1, 8, 16, 16])], [vi("y", None)], inits, opset=19),
                tmp_path / f"hardswish_{name}.onnx")


def _output_dq(tmp_path, variant):
    """A QDQ Conv whose last unit is converted to NHWC: its DequantizeLinear writes the graph output
    (``plain``), after a Relu unit (``relu``), or also read by a Relu that writes a second output (``two``)."""
    node = h.make_node
    nodes, inits = _qdq_conv_head(T.UINT8)
    outs = [vi("y", None)]
    if variant == "relu":
        nodes += [node("DequantizeLinear", ["cq", "s", "z"], ["cd"], name="dq_c"), node("Relu", ["cd"], ["r"], name="relu"),
                  node("QuantizeLinear", ["r", "s", "z"], ["rq"], name="q_r"),
                  node("DequantizeLinear", ["rq", "s", "z"], ["y"], name="dq_out")]
    else:
        nodes.append(node("DequantizeLinear", ["cq", "s", "z"], ["y"], name="dq_out"))
    if variant == "two":
        nodes.append(node("Relu", ["y"], ["y2"], name="relu"))
        outs.append(vi("y2", None))
    return save(model(nodes, [vi("x", [1, 8, 16, 16])], outs, inits, opset=19), tmp_path / f"output_dq_{variant}.onnx")


def _against_real_session(path, level="disable"):
    """``(predicted, observed)`` providers by ORT's node name: model nodes (a converted one by its new name,
    removed ones left out) and the nodes the layout transformation inserted."""
    rec, obs = _observe(path, level)
    assert rec["state"] == "ok", rec.get("error")
    summary, _ = predict(str(path), ["qnn"], level=level)
    predicted = {n.get("ortName", n["name"]): n["provider"] for n in summary["nodes"] + summary["insertedNodes"]
                 if not n.get("ortRemoved")}
    return predicted, obs["nodes"]


@needs_qnn
@pytest.mark.parametrize("qtype,on", [(T.INT8, CPU), (T.UINT8, QNN)], ids=["int8", "uint8"])
def test_signed_qdq_hardsigmoid_unit_stays_on_the_cpu(tmp_path, qtype, on):
    predicted, observed = _against_real_session(_hardswish_block(tmp_path, qtype))
    assert predicted == observed
    assert observed["hs"] == observed["q_hs"] == on and observed["mul"] == QNN


@needs_qnn
@pytest.mark.parametrize("level", ["disable", "all"])
@pytest.mark.parametrize("variant", ["plain", "relu", "two"])
def test_graph_output_dq_moved_inside_by_the_layout_transformation(tmp_path, variant, level):
    predicted, observed = _against_real_session(_output_dq(tmp_path, variant), level)
    assert predicted == observed
    assert observed["dq_out"] == QNN and observed["q_in"] == CPU
    moved = [n for n, ep in observed.items() if n.startswith("DequantizeLinear_token_") and ep == CPU]
    assert len(moved) == 1  # the new DequantizeLinear after the output Transpose writes the graph output
