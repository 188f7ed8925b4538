"""Two optimizer sessions in one ORT child (partsim/runtime/process.SharedChild, ort_pipeline.start_children):
answers in the order the requests went, whichever ticket asks first; a ticket closed unread leaves the
others theirs; a crash fails every waiting ticket and each request is retried in a fresh child of its own;
the prediction is the same byte for byte whether the two sessions run side by side or in turn."""

import json
import os

import pytest

from partsim.runtime import ort_pipeline, process
from partsim.runtime.ort_protocol import OptimizeRecord, OptimizeRequest
from partsim.runtime.process import ChildFailure, OrtProcess, SharedChild, run_request
from tests.conftest import ROOT, shared_path

CHAIN = ROOT / "fixtures" / "chain.onnx"
DEMO = ROOT / "fixtures" / "demo.onnx"
MISBEHAVING = ROOT / "tests" / "misbehaving_child.py"


def _request(model, target, level):
    target.parent.mkdir(parents=True, exist_ok=True)
    return OptimizeRequest(str(model), str(target), level, "w.pb")


def _alone(model, tmp_path, level):
    """The optimized graph's bytes from a child of its own (the reference)."""
    target = tmp_path / f"alone-{model.stem}-{level}" / "o.onnx"
    assert run_request("optimize", _request(model, target, level), OptimizeRecord, 120).state == "ok"
    return target.read_bytes()


def test_two_sessions_in_one_child_answer_in_the_order_sent(tmp_path):
    shared = SharedChild(OrtProcess("optimize"), 2)
    first, second = shared.tickets()
    a, b = tmp_path / "a" / "o.onnx", tmp_path / "b" / "o.onnx"
    # Level 1 only: ORT's NCHWc names at Level 3 vary from run to run (ReorderOutput vs ReorderOutput_token_11)
    second.submit(_request(DEMO, a, "ORT_ENABLE_BASIC"))  # the second ticket's request goes first
    first.submit(_request(CHAIN, b, "ORT_ENABLE_BASIC"))
    pid = shared.process.proc.pid
    assert first.result(OptimizeRecord, 120).state == "ok"  # read past the other ticket's answer
    assert b.read_bytes() == _alone(CHAIN, tmp_path, "ORT_ENABLE_BASIC")
    first.close()
    assert os.path.exists(f"/proc/{pid}")  # one ticket still open: the child stays
    assert second.result(OptimizeRecord, 120).state == "ok"
    # both requests sent: stdin was closed, so the child ends by itself after its last answer
    assert shared.process.proc.wait(timeout=60) == 0
    assert a.read_bytes() == _alone(DEMO, tmp_path, "ORT_ENABLE_BASIC")
    second.close()
    assert shared.process.proc is None and not os.path.exists(f"/proc/{pid}/exe")  # killed and reaped


def test_a_ticket_closed_unread_leaves_the_other_its_answer(tmp_path):
    shared = SharedChild(OrtProcess("optimize"), 2)
    first, second = shared.tickets()
    first.submit(_request(CHAIN, tmp_path / "a" / "o.onnx", "ORT_ENABLE_ALL"))
    second.submit(_request(DEMO, tmp_path / "b" / "o.onnx", "ORT_ENABLE_BASIC"))
    first.close()  # abandoned: its answer is read and dropped
    record = second.result(OptimizeRecord, 120)
    assert record.state == "ok" and (tmp_path / "b" / "o.onnx").read_bytes() == _alone(DEMO, tmp_path, "ORT_ENABLE_BASIC")
    second.close()
    assert shared.process.proc is None


def test_a_crash_fails_every_ticket_and_each_request_is_retried_alone(monkeypatch, tmp_path):
    monkeypatch.setattr(process, "CHILD", MISBEHAVING)
    monkeypatch.setenv("PARTSIM_TEST_CHILD", "crash")
    monkeypatch.setenv("PARTSIM_TEST_CHILD_ONCE", str(tmp_path / "failed-once"))
    started = []
    real_init = OrtProcess.__init__
    monkeypatch.setattr(OrtProcess, "__init__", lambda self, *a, **k: started.append(a) or real_init(self, *a, **k))
    first, second = SharedChild(OrtProcess("optimize"), 2).tickets()
    with pytest.raises(ChildFailure) as info:  # the shared child died: no retry without run_request
        with first:
            first.submit(_request(CHAIN, tmp_path / "x.onnx", "ORT_ENABLE_ALL"))
            first.result(OptimizeRecord, 60)
    assert info.value.cause == "crashed" and "killed by signal 6" in info.value.message
    # run_request retries in a fresh child (the real one now: the failure happened once)
    record = run_request("optimize", _request(DEMO, tmp_path / "y.onnx", "ORT_ENABLE_ALL"), OptimizeRecord, 120,
                         child=second)
    assert record.state == "ok" and (tmp_path / "y.onnx").is_file()
    assert len(started) == 2  # the shared child and one fresh child for the retried request


@pytest.mark.parametrize("cpus", [1, 2])
def test_start_children_shares_one_child_below_three_cpus(monkeypatch, cpus):
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: set(range(cpus)))
    children = ort_pipeline.start_children(2)
    try:
        assert len({id(c.shared) for c in children}) == 1 and all(isinstance(c, process.Ticket) for c in children)
    finally:
        for c in children:
            c.close()
    assert children[0].shared.process.proc is None


def test_start_children_side_by_side_with_three_cpus_or_more(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: set(range(3)))
    children = ort_pipeline.start_children(2)
    try:
        assert all(isinstance(c, OrtProcess) for c in children) and children[0] is not children[1]
    finally:
        for c in children:
            c.close()


@pytest.mark.parametrize("name, providers", [("googlenet.ts.onnx", ["cuda"]), ("bert_tiny.ts.onnx", ["cuda"]),
                                             ("bert_tiny.ts.onnx", ["openvino"])])
def test_the_prediction_is_the_same_side_by_side_or_in_turn(monkeypatch, name, providers):
    """At level all the partitioning session (Level 1) and the final view's (Level 2/3) begin together:
    in one child on a two-core machine, in two on a larger one.  The summary is the same bytes."""
    from partsim.api import predict

    model = shared_path("corpus", "graph_only", name)
    monkeypatch.setenv("PARTSIM_NO_CACHE", "1")
    started, real_init = [], OrtProcess.__init__
    monkeypatch.setattr(OrtProcess, "__init__", lambda self, *a, **k: started.append(a) or real_init(self, *a, **k))
    out = {}
    for cpus in (2, 8):
        monkeypatch.setattr(os, "sched_getaffinity", lambda _pid, n=cpus: set(range(n)))
        started.clear()
        summary, _ = predict(str(model), providers, level="all")
        out[cpus] = (json.dumps(summary, sort_keys=True), len(started))
    assert out[2][0] == out[8][0]
    assert out[2][1] < out[8][1]  # one child fewer
