"""The transpose optimizer's output cost (``partsim/sim/transpose_opt/optimize.py``: ``_leads``) against
recorded sessions of onnxruntime 1.31.1: ONNX's expanded RotaryEmbedding tests, where the layout
transformation of QNN 2.7.0 and of the WebGPU plugin 0.4.0 pushes the model's own Transpose through the
Shape, the first Split and the second Split (whose outputs feed two Muls each, on paths that end at the
model's cancelling output Transpose), and stops at the Muls.

The recordings are read from ../shared/observed/nodes (skipped with a reason where it is absent); the rule's
single-op cases are checked against real QNN sessions in tests/gen/test_qnn.py.
"""

import json

import pytest

from tests.conftest import shared_path
from partsim.api import predict
from partsim.analysis.verify import compare

RECORDS = {"qnn": "qnn-ort1.31.1-qnn2.7.0-soc60.jsonl", "webgpu": "webgpu-ort1.31.1-plugin0.4.0.jsonl"}
CASES = ("node__test_rotary_embedding_expanded", "node__test_rotary_embedding_no_position_ids_rotary_dim_expanded",
         "node__test_rotary_embedding_with_rotary_dim_expanded")


def _recorded(provider):
    base = shared_path("observed/nodes")
    recs = {}
    for line in (base / RECORDS[provider]).read_text().splitlines():
        rec = json.loads(line)
        if rec["case"] in CASES:
            recs[rec["case"]] = rec
    return base, recs


@pytest.mark.parametrize("provider", ["qnn", "webgpu"])
def test_rotary_transpose_pushed_through_both_splits_as_recorded(provider):
    base, recs = _recorded(provider)
    assert sorted(recs) == sorted(CASES)
    for case in CASES:
        rec = recs[case]
        path = base / "models" / f"{case[len('node__'):]}.onnx"
        observed = {m[0]: ep for ep, ms in rec["assignment"] for m in ms}
        op_types = {m[0]: m[1] for ep, ms in rec["assignment"] for m in ms}
        # what the recording shows: the model's Transpose is gone, the optimizer's three remain (one after
        # each output of the second Split, one on the first Split's unrotated part) with the Shape's Gather
        assert "n3_Transpose" not in observed
        assert {n for n, op in op_types.items() if op == "Transpose" and n.startswith("Transpose")} == {
            "Transpose_token_0", "Transpose_token_2", "Transpose_token_3"}, case
        summary, assignment = predict(str(path), [provider], level="disable")
        verdict = compare(summary, assignment, {"nodes": observed, "opTypes": op_types, "memcpy": {}, "state": "ok"},
                          1.0, False)
        assert not verdict["disagreements"], (case, verdict["disagreements"][:4])
        inserted = {n["name"]: n["provider"] for n in summary["insertedNodes"] if n["origin"] == "inserted:layout"}
        assert inserted == {n: observed[n] for n in ("Transpose_token_0", "Transpose_token_2", "Transpose_token_3",
                                                     "Gather")}, case
