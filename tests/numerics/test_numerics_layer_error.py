"""layer-error on the shared corpus (FP32 vs dyn/qdq/qop), relError recomputed with plain ORT."""

import json
import math
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from partsim.cli import main
from partsim.numerics.inputs import graph_input_specs, seeded_inputs
from partsim.numerics.layer_error import boundary_metrics, find_fp32_boundaries, find_quant_boundaries

FULL = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "full"


def _need(*names):
    for n in names:
        if not (FULL / n).is_file():
            pytest.skip(f"shared corpus model {n} absent ({FULL})")


def _fetch(path, names, feeds):
    m = onnx.load(str(path))
    for n in names:
        m.graph.output.append(onnx.ValueInfoProto(name=n))
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    s = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return dict(zip(names, s.run(names, feeds)))


def _run(tmp_path, fp, q, *extra):
    out = tmp_path / "le.json"
    assert main(["layer-error", str(FULL / fp), str(FULL / q), "--seed", "3", "-f", "json", "-o", str(out),
                 *extra]) == 0
    text = out.read_text()
    assert "NaN" not in text and "Infinity" not in text
    return json.loads(text)


@pytest.mark.parametrize("variant", ["dyn", "qdq", "qop"])
def test_resnet_boundaries(tmp_path, variant):
    fp, q = "tiny_resnet.ts.onnx", f"q_tiny_resnet.ts.{variant}.onnx"
    _need(fp, q)
    res = _run(tmp_path, fp, q, "--svg", str(tmp_path / "p.svg"))
    b = res["boundaries"]
    assert len(b) == 13  # 12 Conv + 1 Gemm in the FP32 graph
    assert [x["consumerOp"] for x in b] == ["Conv"] * 12 + ["Gemm"]
    assert all(x["relError"] is not None and x["relError"] < 0.1 for x in b)
    if variant == "dyn":  # dynamic quantization feeds the first Conv the untouched float input
        assert b[0]["relError"] == 0.0 and b[0]["growthVsFirst"] is None and b[0]["stepRatio"] is None
        assert b[1]["growthVsFirst"] == 1.0
    assert (tmp_path / "p.svg").read_text().startswith("<svg")


def test_resnet_qdq_relerror_recomputed(tmp_path):
    """Boundary 2 (input of layers.0 c2): FP32 Relu output vs the QDQ model's DequantizeLinear output."""
    fp, q = "tiny_resnet.ts.onnx", "q_tiny_resnet.ts.qdq.onnx"
    _need(fp, q)
    res = _run(tmp_path, fp, q)
    row = res["boundaries"][2]
    feeds = seeded_inputs(graph_input_specs(onnx.load(str(FULL / fp))), 3)
    f = _fetch(FULL / fp, [row["tensor"]], feeds)[row["tensor"]].astype(np.float64)
    qv = _fetch(FULL / q, [row["quantTensor"]], feeds)[row["quantTensor"]].astype(np.float64)
    assert row["quantTensor"].endswith("DequantizeLinear_Output")
    assert row["relError"] == pytest.approx(np.linalg.norm(qv - f) / np.linalg.norm(f), rel=1e-12)
    assert row["sqnrDb"] == pytest.approx(10 * math.log10(np.sum(f ** 2) / np.sum((qv - f) ** 2)), rel=1e-9)


def test_qop_dequantizes_with_consumer_scale(tmp_path):
    fp, q = "tiny_resnet.ts.onnx", "q_tiny_resnet.ts.qop.onnx"
    _need(fp, q)
    qb = find_quant_boundaries(onnx.load(str(FULL / q)))
    assert all(x["dequant"] for x in qb)  # every QLinearConv/QGemm input is an integer tensor


@pytest.mark.parametrize("variant", ["dyn", "qdq", "qop"])
def test_transformer_structural_match(variant):
    fp, q = "tiny_transformer.dynamo.onnx", f"q_tiny_transformer.dynamo.{variant}.onnx"
    _need(fp, q)
    fb = find_fp32_boundaries(onnx.load(str(FULL / fp)))
    qb = find_quant_boundaries(onnx.load(str(FULL / q)))
    assert len(fb) == len(qb) == 17  # 7 weight MatMuls + 2 Gemm, 4 attention MatMuls with two inputs each
    assert [x["family"] for x in fb] == [x["family"] for x in qb]


def test_boundary_metrics_nulls():
    got = boundary_metrics([None, 0.0, 0.2, 0.0, 0.8])
    assert got == [(None, None, False), (None, None, False), (1.0, None, False), (0.0, 0.0, False),
                   (4.0, 4.0, True)]


def test_mismatched_models_refused(tmp_path):
    _need("tiny_resnet.ts.onnx", "q_tiny_transformer.dynamo.dyn.onnx")
    assert main(["layer-error", str(FULL / "tiny_resnet.ts.onnx"), str(FULL / "q_tiny_transformer.dynamo.dyn.onnx"),
                 "-o", str(tmp_path / "x.json")]) == 2
    assert not (tmp_path / "x.json").exists()
