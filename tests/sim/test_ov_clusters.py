"""OpenVINO-style clusters over ORT's partitioning rounds (partsim/sim/ov_clusters.py), against a real session."""

import json

from partsim.api import predict
from tests.conftest import shared_path


def _record(recording, case):
    with open(shared_path("observed", "nodes", recording)) as f:
        return next(r for r in map(json.loads, f) if r["case"] == case)


def test_a_body_inlined_in_a_later_round_is_a_partition_of_its_own_on_openvino_1_24():
    """relu_expanded_ver18 is a CastLike (no OpenVINO 1.24.1 or CPU kernel) and a Max.  The first round's
    GetCapability sees the CastLike, which it does not take: the Max alone is claimed, not through the
    every-node-supported path (whose small-graph rule would leave a graph of two nodes starting with a Cast to
    the CPU).  ORT then inlines the CastLike into a Cast, which the second round claims as a partition of its
    own: the real onnxruntime-openvino 1.24.1 session reports the two groups."""
    rec = _record("openvino-ort1.24.1.jsonl", "node__test_relu_expanded_ver18")
    observed = sorted(sorted(op for _, op, _ in nodes) for ep, nodes in rec["assignment"])
    assert {ep for ep, _ in rec["assignment"]} == {"OpenVINOExecutionProvider"} and observed == [["Cast"], ["Max"]]
    model = shared_path("observed", "nodes", "models", "test_relu_expanded_ver18.onnx")
    summary, _ = predict(str(model), ["openvino:1.24"], level="disable")
    ops = {n["name"]: n["opType"] for n in summary["nodes"]}
    assert summary["status"] == "ok"
    assert {p["provider"] for p in summary["partitions"]} == {"OpenVINOExecutionProvider"}
    assert sorted(sorted(ops[n] for n in p["nodes"]) for p in summary["partitions"]) == observed
