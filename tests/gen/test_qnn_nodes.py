"""QNN facts behind the node-test agreement (issue 19), each against a real QNN session or the recordings.

Real sessions (onnxruntime-qnn, HTP emulator, soc_model 60) are skipped with a reason where the
plugin is not installed; recorded ones read ../shared/observed/nodes.
"""

import hashlib
import json
from pathlib import Path

import pytest
from onnx import TensorProto as T
from onnx import helper as h

from tests.conftest import shared_path
from tests.modelbuild import model, save, vi
from partsim.api import predict
from partsim.analysis.verify import compare

QNN = "QNNExecutionProvider"
RECORDS = "qnn-ort1.31.1-qnn2.7.0-soc60.jsonl"

try:
    import onnxruntime_qnn  # noqa: F401
    HAVE_QNN = True
except ImportError:
    HAVE_QNN = False
needs_qnn = pytest.mark.skipif(not HAVE_QNN, reason="onnxruntime-qnn is not installed (make test installs it)")


def _records():
    base = Path(shared_path("observed/nodes"))
    for line in (base / RECORDS).read_text().splitlines():
        rec = json.loads(line)
        yield rec, base / "models" / f"{rec['case'][len('node__'):]}.onnx"


def _agreement(rec, path):
    summary, assignment = predict(str(path), ["qnn"], level="disable")
    obs = {"nodes": {m[0]: ep for ep, ms in rec["assignment"] for m in ms},
           "opTypes": {m[0]: m[1] for ep, ms in rec["assignment"] for m in ms}, "memcpy": {}, "state": "ok"}
    return compare(summary, assignment, obs, 1.0, False)


@needs_qnn
@pytest.mark.parametrize("axes_shape,fed", [([0], True), ([1], True), ([1], False)])
def test_reduce_with_empty_runtime_axes_against_real_session(axes_shape, fed, tmp_path):
    """QNN takes a ReduceSum whose ``axes`` input is fed at run time only when it is empty (the default
    axes, reduce_op_builder.cc GetAxesSet); a non-empty one must be an initializer."""
    from partsim.runtime.observe import observation_from_run, run_session

    inputs = [vi("x", [2, 3, 4])] + ([vi("axes", axes_shape, T.INT64)] if fed else [])
    inits = [] if fed else [h.make_tensor("axes", T.INT64, axes_shape, [1] * axes_shape[0])]
    out = [1, 1, 1] if axes_shape == [0] else [2, 1, 4]  # declared: a run-time axes leaves it unknown otherwise
    m = model([h.make_node("ReduceSum", ["x", "axes"], ["y"], name="rs", keepdims=1)], inputs, [vi("y", out)],
              inits, opset=13)
    path = save(m, tmp_path / "reduce.onnx")
    rec = run_session(str(path), [QNN], "disable", run=False, ep_options={"soc_model": "60"})
    obs = observation_from_run(rec, "disable")
    summary, assignment = predict(str(path), ["qnn"], level="disable")
    assert obs["nodes"]["rs"] == (QNN if axes_shape == [0] or not fed else "CPUExecutionProvider")
    assert compare(summary, assignment, obs)["agreement"] == 1.0


def test_recorded_subgraph_bodies_stay_on_cpu():
    """qnn_ep.cc GetCapabilityImpl claims nothing in a graph with a parent node: the Loop/Scan/If node
    tests agree node for node, body nodes included."""
    checked = 0
    for rec, path in _records():
        test = path.stem
        if not test.startswith(("test_loop", "test_scan", "test_if")) or "assignment" not in rec or not path.exists():
            continue
        body = [m[0] for ep, ms in rec["assignment"] for m in ms if "/" in m[0]]
        v = _agreement(rec, path)
        checked += bool(body)
        assert not v["disagreements"], (test, v["disagreements"][:3])
    assert checked >= 2


def test_attribute_vetoes_explain_each_refusal_once():
    """The recorded ArgMax/ArgMin node tests of one half (sha256 parity, as the holdout benchmark): QNN
    refused exactly the ``select_last_index=1`` ones, which also carry ``axis=-1``; the derived rule
    vetoes select_last_index and not the axis, so the other half's ``axis=-1`` nodes are predicted
    on QNN as recorded."""
    from partsim.gen.qnn_derive import _features, derive_rules, usable_evidence

    for op in ("ArgMax", "ArgMin"):
        evidence, judged = [], []
        for rec, path in _records():
            if not path.stem.startswith(f"test_{op.lower()}_") or "assignment" not in rec:
                continue
            fop, domain, dtype, rank, name, attrs = _features(str(path))
            on = [ep for ep, ms in rec["assignment"] for m in ms if m[0] == name]
            if hashlib.sha256(rec["case"].encode()).digest()[0] % 2 == 0:
                evidence.append((fop, domain, dtype, rank, on == [QNN], attrs))
            else:
                judged.append((attrs, on == [QNN]))
        rules = derive_rules(usable_evidence(evidence))[("", op)]
        vetoed = {c["name"]: c["not_in"] for r in rules for c in r.get("attrs", [])}
        assert vetoed == {"select_last_index": [1]}, (op, vetoed)
        assert judged and all(claimed == (attrs.get("select_last_index", 0) != 1) for attrs, claimed in judged)


def test_recorded_attention_with_bool_mask_left_to_cpu():
    """The shipped table learnt from the node tests that QNN refuses Attention with a bool ``attn_mask``
    (the dtype of a side input competes with the attributes for explaining a refusal): every recorded
    Attention node test agrees, but those feeding ``nonpad_kv_seqlen`` (input 6) at run time, which the
    generator cannot tell from a refusal of run-time inputs (docs/qnn.md)."""
    import onnx

    checked = bool_masks = 0
    for rec, path in _records():
        if not path.stem.startswith("test_attention_") or "_expanded" in path.stem or "assignment" not in rec:
            continue
        node = onnx.load(str(path)).graph.node[-1]
        if len(node.input) > 6 and node.input[6]:
            continue
        v = _agreement(rec, path)
        checked += 1
        bool_masks += "bool" in path.stem
        assert not v["disagreements"], (path.stem, v["disagreements"])
    assert checked >= 30 and bool_masks >= 2
