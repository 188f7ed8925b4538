"""partsim.io.load: what the loader takes from its caller instead of reading it again (issue 32)."""

import numpy as np
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

import partsim.io.shape_inference as shape_inference
from partsim.io.load import model_from_proto


def _model(dim=3):
    """Reshape(x2, Shape(x)) at opset 13: a shape ORT's propagation (not ONNX's inference) resolves."""
    nodes = [h.make_node("Shape", ["x"], ["s"], name="shape"), h.make_node("Reshape", ["x2", "s"], ["y"], name="r"),
             h.make_node("Add", ["y", "one"], ["z"], name="add")]
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", T.FLOAT, [dim, 4]),
                                  h.make_tensor_value_info("x2", T.FLOAT, [12])],
                     [h.make_tensor_value_info("z", T.FLOAT, None)],
                     [nh.from_array(np.array([1.0], dtype=np.float32), "one")])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
    m.ir_version = 8
    return m


def _inferred_from(monkeypatch):
    seen = []
    real = shape_inference._onnx_inference
    monkeypatch.setattr(shape_inference, "_onnx_inference", lambda data: seen.append(data) or real(data))
    return seen


def test_the_files_bytes_go_to_onnx_inference(monkeypatch):
    """Given the proto's bytes, ONNX's inference reads them (no new serialization) and the IR is the same."""
    m = _model()
    data = m.SerializeToString()
    seen = _inferred_from(monkeypatch)
    given = model_from_proto(m, serialized=data)
    assert len(seen) == 1 and seen[0] is data
    assert given == model_from_proto(m)
    assert given.value("y").shape == (3, 4)


def test_a_cleared_dimension_makes_the_bytes_stale(monkeypatch):
    """A declared -1 is cleared in memory before the inference: the bytes are not that proto's any more."""
    m = _model(dim=-1)
    data = m.SerializeToString()
    seen = _inferred_from(monkeypatch)
    model = model_from_proto(m, serialized=data)
    assert len(seen) == 1 and seen[0] is not data
    assert model.value("x").shape == (None, 4)


def _if_model():
    """An If whose branches ONNX's inference types (it adds value infos inside them) after a Reshape of a Shape."""
    then = h.make_graph([h.make_node("Relu", ["y"], ["r1"], name="inner_relu"),
                         h.make_node("Neg", ["r1"], ["t"], name="inner_neg2")], "then", [],
                        [h.make_tensor_value_info("t", T.FLOAT, None)])
    other = h.make_graph([h.make_node("Neg", ["y"], ["e"], name="inner_neg")], "else", [],
                         [h.make_tensor_value_info("e", T.FLOAT, None)])
    m = _model()
    m.graph.node.extend([h.make_node("If", ["c"], ["w"], name="if", then_branch=then, else_branch=other),
                         h.make_node("Constant", [], ["k"], name="k", value_ints=[12])])
    m.graph.input.extend([h.make_tensor_value_info("c", T.BOOL, [])])
    return m


def test_nodes_read_by_the_caller_make_the_same_ir():
    """``rows`` (the nodes as the pipeline's walk of the model as written read them) give the IR the loader makes
    reading them itself; the If's bodies are read from ONNX's answer (their inferred value infos)."""
    from partsim.runtime.pipeline import _Written

    m = _if_model()
    written = _Written(m)
    written.read_nodes(rows=True)
    assert written.body_at == [3] and [r[1] for r in written.rows] == ["Shape", "Reshape", "Add", "If", "Constant"]
    given = model_from_proto(m, rows=(written.rows, written.body_at))
    plain = model_from_proto(_if_model())
    assert given == plain and given.int_consts == plain.int_consts
    assert given.value("y").shape == (3, 4)
    assert given.value("r1").dtype == "float"  # a value info ONNX's inference added inside the branch


def test_nodes_read_by_the_caller_when_onnx_inference_fails():
    """ONNX's inference refusing the model (an op of a domain no opset imports) leaves the builder to read the
    nodes itself: the same IR as without the caller's rows."""
    from partsim.runtime.pipeline import _Written

    def odd():
        g = h.make_graph([h.make_node("Frobnicate", ["x"], ["y"], name="frob", domain="org.nowhere")], "g",
                         [h.make_tensor_value_info("x", T.FLOAT, [2])], [h.make_tensor_value_info("y", T.FLOAT, None)])
        return h.make_model(g, opset_imports=[h.make_opsetid("", 13)])

    m = odd()
    written = _Written(m)
    written.read_nodes(rows=True)
    given = model_from_proto(m, rows=(written.rows, written.body_at))
    assert given == model_from_proto(odd()) and given.warnings and "shape inference failed" in given.warnings[0]
