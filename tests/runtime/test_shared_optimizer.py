"""One ``optimize`` child making several sessions side by side (partsim/runtime/process.SharedOptimizer,
ort_child.py's ``optimize``): the same graphs as one child per session, one process, and no process left
whichever way its slots end."""

import os
import signal

import pytest

from partsim.runtime.ort_protocol import OptimizeRecord, OptimizeRequest
from partsim.runtime.process import ChildFailure, OrtProcess, optimizer_children, run_request
from tests.conftest import ROOT

CHAIN = ROOT / "fixtures" / "chain.onnx"
DEMO = ROOT / "fixtures" / "demo.onnx"


def _request(model, tmp_path, level, name):
    return OptimizeRequest(str(model), str(tmp_path / f"{name}.onnx"), level, f"{name}.pb")


def _alone(request):
    """The same request in a child of its own."""
    with OrtProcess("optimize") as child:
        child.submit(request)
        return child.result(OptimizeRecord, 120)


@pytest.fixture
def started(monkeypatch):
    log, real_init = [], OrtProcess.__init__
    monkeypatch.setattr(OrtProcess, "__init__", lambda self, *a, **k: log.append(self) or real_init(self, *a, **k))
    return log


def _gone(children):
    return all(c.proc is None for c in children)


@pytest.mark.parametrize("lazy", [False, True])
def test_two_sessions_in_one_child_save_what_two_children_save(tmp_path, started, lazy):
    """Level 1 and Level 3 of two models at once: one process, each record the request's, each saved graph
    byte-identical to a session made in a child of its own."""
    slots = optimizer_children(2, lazy=lazy)
    assert len(started) == (0 if lazy else 1)
    requests = [_request(DEMO, tmp_path, "ORT_ENABLE_BASIC", "a"), _request(CHAIN, tmp_path, "ORT_ENABLE_ALL", "b")]
    for slot, req in zip(slots, requests):
        slot.submit(req)
    # collected in the other order than they were asked for
    records = [run_request("optimize", req, OptimizeRecord, 120, child=slot)
               for slot, req in reversed(list(zip(slots, requests)))][::-1]
    assert len(started) == 1 and _gone(started)
    for req, record in zip(requests, records):
        assert record.state == "ok" and record.target == ""
        saved = open(req.target, "rb").read()
        os.rename(req.target, req.target + ".shared")
        assert _alone(req).state == "ok" and open(req.target, "rb").read() == saved


def test_a_refused_session_beside_an_accepted_one(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07garbage")
    first, second = optimizer_children(2)
    with first, second:
        first.submit(_request(bad, tmp_path, "ORT_ENABLE_ALL", "bad"))
        second.submit(_request(CHAIN, tmp_path, "ORT_ENABLE_ALL", "good"))
        assert second.result(OptimizeRecord, 120).state == "ok"
        refused = first.result(OptimizeRecord, 120)
    assert refused.state == "failed" and refused.error  # ORT's message: an answer, not a failure


def test_an_abandoned_session_stops_at_once_and_the_other_slot_starts_afresh(tmp_path, started):
    """A slot closed while its session runs, no other slot waiting: the child is killed then; the other slot's
    later request starts a fresh child."""
    first, second = optimizer_children(2)
    first.submit(_request(CHAIN, tmp_path, "ORT_ENABLE_ALL", "a"))
    first.close()
    assert len(started) == 1 and _gone(started)
    with second:
        second.submit(_request(CHAIN, tmp_path, "ORT_ENABLE_BASIC", "b"))
        assert second.result(OptimizeRecord, 120).state == "ok"
    assert len(started) == 2 and _gone(started)


def test_unused_slots_leave_no_process(started):
    for slot in optimizer_children(2):
        slot.close()
    assert len(started) == 1 and _gone(started)


def test_a_child_killed_under_both_sessions_fails_both_and_a_fresh_one_answers(tmp_path, started):
    """A crash is no answer for either session; run_request then makes each in a fresh child."""
    slots = optimizer_children(2)
    requests = [_request(CHAIN, tmp_path, "ORT_ENABLE_ALL", name) for name in ("a", "b")]
    for slot, req in zip(slots, requests):
        slot.submit(req)
    os.killpg(started[0].proc.pid, signal.SIGKILL)
    with pytest.raises(ChildFailure):
        slots[0].result(OptimizeRecord, 120)
    with pytest.raises(ChildFailure):
        slots[1].result(OptimizeRecord, 120)
    for slot in slots:
        slot.close()
    slots = optimizer_children(2)
    records = [run_request("optimize", req, OptimizeRecord, 120, child=slot) for slot, req in zip(slots, requests)]
    assert [r.state for r in records] == ["ok", "ok"] and _gone(started)
