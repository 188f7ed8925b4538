"""Models partsim used to refuse although ORT runs them (issue 20), checked against real ORT."""

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto as T
from onnx import helper

from partsim.api import predict
from partsim.errors import ModelError
from partsim.io.load import load_model


def _ort_runs(path, feeds):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    s = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    return s.run(None, feeds)


def _save(m, path):
    path.write_bytes(m.SerializeToString())
    return path


def test_model_with_only_an_ai_onnx_ml_opset_import(tmp_path):
    x = helper.make_tensor_value_info("x", T.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", T.FLOAT, [2, 3])
    node = helper.make_node("Binarizer", ["x"], ["y"], name="bin", domain="ai.onnx.ml", threshold=0.5)
    m = helper.make_model(helper.make_graph([node], "g", [x], [y]),
                          opset_imports=[helper.make_opsetid("ai.onnx.ml", 1)], ir_version=9)
    p = _save(m, tmp_path / "ml_only.onnx")
    out = _ort_runs(p, {"x": np.array([[0.1, 0.7, 0.5], [1, 0, 2]], np.float32)})
    assert out[0].tolist() == [[0, 1, 0], [1, 0, 1]]
    summary, _ = predict(p, providers=["cpu"])
    assert [(n["name"], n["provider"]) for n in summary["nodes"]] == [("bin", "CPUExecutionProvider")]
    assert summary["status"] == "ok"


def test_default_domain_node_without_its_import_gets_ort_default_opset(tmp_path):
    """ORT 1.31.1 runs a Relu with no ai.onnx import (it adds ai.onnx 26 itself): so does partsim."""
    x = helper.make_tensor_value_info("x", T.FLOAT, [2])
    y = helper.make_tensor_value_info("y", T.FLOAT, [2])
    m = helper.make_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="r")], "g", [x], [y]),
                          opset_imports=[helper.make_opsetid("ai.onnx.ml", 3)], ir_version=9)
    p = _save(m, tmp_path / "no_default.onnx")
    so = ort.SessionOptions()
    so.optimized_model_filepath = str(tmp_path / "written.onnx")
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    ort.InferenceSession(str(p), so, providers=["CPUExecutionProvider"])
    import onnx

    ort_opset = {o.domain: o.version for o in onnx.load(so.optimized_model_filepath).opset_import}[""]
    model = load_model(p)
    assert model.opsets[""] == ort_opset
    assert model.nodes[0].since_version == 14  # Relu-14 is the newest Relu at ai.onnx 26
    assert any("no opset import" in w for w in model.warnings)


def test_minus_one_dimension_is_dynamic(tmp_path):
    """paddle2onnx declares a dynamic batch as dim_value -1; ORT runs such models."""
    x = helper.make_tensor_value_info("x", T.FLOAT, [-1, 3, 4])
    y = helper.make_tensor_value_info("y", T.FLOAT, [-1, 3, 4])
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("Shape", ["r"], ["s"], name="shape"),
             helper.make_node("Reshape", ["r", "s"], ["y"], name="reshape")]
    m = helper.make_model(helper.make_graph(nodes, "g", [x], [y]),
                          opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
    p = _save(m, tmp_path / "paddle_like.onnx")
    for batch in (1, 5):  # ORT takes any batch size there
        assert _ort_runs(p, {"x": np.ones((batch, 3, 4), np.float32)})[0].shape == (batch, 3, 4)
    model = load_model(p)
    v = model.value("x")
    assert v.shape == (None, 3, 4) and not v.is_static
    assert p.read_bytes() == m.SerializeToString()  # the user's file is untouched
    summary, _ = predict(p, providers=["cuda"])
    assert summary["status"] == "ok"
    # Shape of a dynamic tensor is a runtime shape computation: CPU-preferred under CUDA
    by = {n["name"]: n for n in summary["nodes"]}
    assert by["relu"]["provider"] == "CUDAExecutionProvider"


def test_other_negative_dimensions_stay_impossible(tmp_path):
    x = helper.make_tensor_value_info("x", T.FLOAT, [-2, 3])
    y = helper.make_tensor_value_info("y", T.FLOAT, [-2, 3])
    m = helper.make_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="r")], "g", [x], [y]),
                          opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
    with pytest.raises(ModelError, match="impossible dimension -2"):
        load_model(_save(m, tmp_path / "neg2.onnx"))
