"""float16 models with accelerators: the CPU-only optimizer session's InsertCast casts are taken back out
(partsim/runtime/fp16_casts.py) and come back only around the float16 nodes left on the CPU, as a real
OpenVINO session (.venv-openvino) shows, cast names included."""

import json
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import helper as h
from onnx import numpy_helper as nh

from tests.conftest import ROOT
from partsim.api import predict

OV_PY = ROOT / ".venv-openvino" / "bin" / "python"
needs_ov = pytest.mark.skipif(not OV_PY.exists(), reason=".venv-openvino/bin/python is absent (make test builds it)")
F16 = onnx.TensorProto.FLOAT16


def _det_model(tmp_path):
    """Relu -> Det -> Unsqueeze -> Add in float16: the CPU has Det (and Relu) in float32 only."""
    nodes = [h.make_node("Relu", ["x"], ["r"], name="relu"), h.make_node("Det", ["r"], ["d"], name="det"),
             h.make_node("Unsqueeze", ["d", "ax"], ["u"], name="unsq"), h.make_node("Add", ["u", "u"], ["y"], name="add")]
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", F16, [2, 3, 3])], [h.make_tensor_value_info("y", F16, None)],
                     [nh.from_array(np.array([1], dtype=np.int64), "ax")])
    path = tmp_path / "det16.onnx"
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)], ir_version=8), str(path))
    return path


def _conv_model(tmp_path):
    w = nh.from_array(np.full((4, 4, 3, 3), 0.1, dtype=np.float16), "W")
    nodes = [h.make_node("Conv", ["x", "W"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             h.make_node("Relu", ["c"], ["r"], name="relu"), h.make_node("Add", ["r", "x"], ["y"], name="add")]
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", F16, [1, 4, 8, 8])],
                     [h.make_tensor_value_info("y", F16, [1, 4, 8, 8])], [w])
    path = tmp_path / "conv16.onnx"
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)], ir_version=8), str(path))
    return path


@needs_ov
def test_float16_casts_against_a_real_openvino_session(tmp_path):
    path = _det_model(tmp_path)
    r = subprocess.run([sys.executable, str(ROOT / "cli.py"), "verify", str(path), "-p", "openvino:1.24", "--observe",
                        "--python", str(OV_PY), "--format", "json"], capture_output=True, text=True, cwd=ROOT)
    v = json.loads(r.stdout)["verify"]
    assert r.returncode == 0 and v["agreement"] == 1.0, v["disagreements"]
    summary, _ = predict(str(path), ["openvino:1.24"])
    casts = sorted((n["name"], n["provider"], n["origin"]) for n in summary["nodes"] if n["opType"] == "Cast")
    assert casts == [("InsertedPrecisionFreeCast_d", "CPUExecutionProvider", "inserted:cast"),
                     ("InsertedPrecisionFreeCast_x", "CPUExecutionProvider", "inserted:cast")]


def test_no_casts_where_cuda_takes_every_float16_node(tmp_path):
    """CUDA has float16 Conv, Relu and Add kernels: ORT inserts no cast, and the nodes keep their names,
    their float16 tensors and the float16 weight (not the CPU session's FusedBack_W float32 copy)."""
    summary, assignment = predict(str(_conv_model(tmp_path)), ["cuda"])
    assert [(n["name"], n["provider"]) for n in summary["nodes"]] == [
        ("conv", "CUDAExecutionProvider"), ("relu", "CUDAExecutionProvider"), ("add", "CUDAExecutionProvider")]
    m = assignment.model
    assert m.value("W").dtype == "float16" and m.value("r").dtype == "float16"
    assert summary["status"] == "ok"


def test_cpu_only_keeps_orts_casts(tmp_path):
    """CPU only: the graph is ORT's own, casts and float32 interior included."""
    summary, _ = predict(str(_conv_model(tmp_path)), ["cpu"])
    assert any(n["opType"] == "Cast" and n["origin"] == "inserted:cast" for n in summary["nodes"])


@pytest.mark.parametrize("level", ["disable", "all"])
def test_float16_nodes_without_a_cpu_kernel_still_run(tmp_path, level):
    """Relu/Det/Add have no float16 CPU kernel, yet a real CPU session runs the model at every level
    (InsertCastTransformer): partsim predicts the session, not a failure."""
    from partsim.analysis.verify import compare
    from partsim.runtime.observe import observation_from_run, run_session

    path = _det_model(tmp_path)
    rec = run_session(path, ["CPUExecutionProvider"], level, run=False)
    obs = observation_from_run(rec, level)
    assert obs["state"] == "ok"
    summary, assignment = predict(str(path), ["cpu"], level=level)
    assert summary["status"] == "ok", summary.get("failure")
    assert compare(summary, assignment, obs)["agreement"] == 1.0
