"""``simulate`` starts its ORT optimizer children before it parses the command line and imports the rest of
partsim (partsim/cli/__init__._prestart): the prediction is the same bytes, no second child is started when
the guess holds, none is started where no session begins at once, and none outlives a command that ends on
a usage error."""


import pytest

from partsim.cli import _prestart, main
from partsim.runtime import process
from partsim.runtime.process import OrtProcess
from tests.conftest import ROOT

DEMO = ROOT / "fixtures" / "demo.onnx"


@pytest.fixture
def started(monkeypatch):
    """The ORT children started, as (command,) tuples (one ``optimize`` child makes both views' sessions);
    every one must be closed by the end of the command."""
    log, real_init = [], OrtProcess.__init__
    monkeypatch.setattr(OrtProcess, "__init__", lambda self, *a, **k: log.append(a) or real_init(self, *a, **k))
    monkeypatch.setenv("PARTSIM_NO_CACHE", "1")
    return log


def test_the_prestarted_children_make_the_sessions(monkeypatch, started, tmp_path):
    out = tmp_path / "with.json"
    assert main(["simulate", str(DEMO), "-p", "cuda", "--format", "json", "-o", str(out)]) == 0
    assert len(started) == 1  # one child for both sessions; the guess held: nothing started again
    assert not process._LIVE  # and every child is gone
    # the same run with the children started where predict begins its sessions
    monkeypatch.setattr("partsim.cli._prestart", lambda argv: [])
    started.clear()
    late = tmp_path / "late.json"
    assert main(["simulate", str(DEMO), "-p", "cuda", "--format", "json", "-o", str(late)]) == 0
    assert len(started) == 1 and late.read_bytes() == out.read_bytes()


@pytest.mark.parametrize("argv, count", [
    (["simulate", "m.onnx"], 2), (["--progress", "never", "simulate", "m.onnx", "--level", "extended"], 2),
    (["simulate", "m.onnx", "--level=basic"], 1), (["simulate", "m.onnx", "--level", "disable"], 0),
    (["simulate", "m.onnx", "--dim", "batch=1"], 0), (["simulate", "m.onnx", "--ort", "1.24.1"], 0),
    (["simulate", "--help"], 0), (["check", "m.onnx"], 0), (["verify", "m.onnx", "-p", "qnn"], 0)])
def test_children_are_started_early_only_where_a_session_begins_at_once(monkeypatch, argv, count):
    monkeypatch.setattr("partsim.runtime.process.optimizer_children", lambda n, python=None, lazy=False: ["child"] * n)
    assert len(_prestart(argv)) == count


def test_a_usage_error_after_the_prestart_leaves_no_child(started):
    assert main(["simulate", str(DEMO), "--no-such-option"]) == 2
    assert len(started) == 1 and not process._LIVE


def test_a_guess_the_command_does_not_confirm_is_closed(monkeypatch, started, tmp_path):
    """``--lev disable`` (argparse's abbreviation) is level disable: the children started for level all
    are closed unused, and the graph as written is predicted."""
    assert main(["simulate", str(DEMO), "--lev", "disable", "-o", str(tmp_path / "t.txt")]) == 0
    assert len(started) == 1 and not process._LIVE
