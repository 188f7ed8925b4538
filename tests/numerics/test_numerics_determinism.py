"""determinism: MatMul+Add fuses to Gemm from ORT_ENABLE_BASIC on; cross-checked with in-process ORT."""

import json

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from partsim.cli import main
from partsim.numerics.inputs import seeded_inputs


def _mm_add(path):
    """x[8,1024] @ W[1024,64] + b: K is large enough that MLAS accumulates in blocks, so the bias
    added first (Gemm) or last (MatMul then Add) rounds differently."""
    rng = np.random.default_rng(1)
    inits = [numpy_helper.from_array(rng.standard_normal((1024, 64)).astype(np.float32), "W"),
             numpy_helper.from_array(rng.standard_normal(64).astype(np.float32), "B")]
    g = helper.make_graph([helper.make_node("MatMul", ["x", "W"], ["m"]), helper.make_node("Add", ["m", "B"], ["y"])],
                          "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 1024])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [8, 64])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, str(path))
    return path


def _ort(path, level, feeds):
    so = ort.SessionOptions()
    so.graph_optimization_level = level
    so.intra_op_num_threads = 1
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"]).run(None, feeds)[0]


def test_fusion_splits_levels(tmp_path):
    model = _mm_add(tmp_path / "mm_add.onnx")
    out = tmp_path / "d.json"
    rc = main(["determinism", str(model), "--seed", "5", "--threads", "1,2", "--levels", "disable,basic,all",
               "-f", "json", "-o", str(out)])
    assert rc == 0
    res = json.loads(out.read_text())
    cells = res["cells"]
    assert [(c["optLevel"], c["threads"]) for c in cells] == [("disable", 1), ("disable", 2), ("basic", 1),
                                                              ("basic", 2), ("all", 1), ("all", 2)]
    assert cells[0]["bitwiseEqual"] and cells[0]["maxAbs"] == 0.0
    # independent: in-process ORT on the same seeded input
    feeds = seeded_inputs([("x", 1, [8, 1024])], seed=5)
    ref = _ort(model, ort.GraphOptimizationLevel.ORT_DISABLE_ALL, feeds).astype(np.float64)
    fused = _ort(model, ort.GraphOptimizationLevel.ORT_ENABLE_BASIC, feeds).astype(np.float64)
    expect_abs = float(np.abs(fused - ref).max())
    assert expect_abs > 0  # the premise: fusion changes the last bits
    by = {(c["optLevel"], c["threads"]): c for c in cells}
    assert by[("disable", 2)]["bitwiseEqual"] is True
    for key in (("basic", 1), ("all", 1)):
        assert by[key]["bitwiseEqual"] is False
        assert by[key]["maxAbs"] == expect_abs
        assert by[key]["maxRel"] == float((np.abs(fused - ref) / np.abs(ref)).max())
    assert main(["determinism", str(model), "--threads", "1", "--levels", "disable,basic", "--strict"]) == 1
    assert main(["determinism", str(model), "--threads", "0"]) == 2
