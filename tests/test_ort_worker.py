"""The warm ORT worker (partsim.runtime.ort_worker): real workers in a folder of the test, real ORT
sessions, compared with the plain child they stand in for."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from partsim.runtime import ort_worker

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(not hasattr(os, "fork") or sys.platform == "win32", reason="workers need fork")


def _worker_pids(sock):
    """Processes whose command line names ``sock`` (the worker and nothing else)."""
    pids = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                if str(sock).encode() in (p / "cmdline").read_bytes():
                    pids.append(int(p.name))
            except OSError:
                pass
    return pids


def _parent(pid):
    """The parent pid of ``pid`` (``None`` once it is gone)."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def _gone(pid):
    """Whether ``pid`` has ended (gone, or a zombie its parent has not reaped yet)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


def _wait(cond, timeout=30.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def short_dir():
    """A private folder with a short path: a Unix socket's path must fit in ~100 bytes, and pytest's
    own temporary folders (with the test's name in them) can be longer on a CI machine."""
    import shutil
    import tempfile

    d = Path(tempfile.mkdtemp(prefix="psw-"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def worker(short_dir, monkeypatch):
    """A running worker in a private folder of the test; stopped (its socket removed) afterwards."""
    folder = short_dir / "w"
    monkeypatch.setenv("PARTSIM_WORKER", "1")
    monkeypatch.setenv("PARTSIM_WORKER_DIR", str(folder))
    monkeypatch.setenv("PARTSIM_WORKER_IDLE", "60")
    ort_worker.autostart()
    try:
        assert ort_worker.connect() is None  # none yet
        ort_worker.start_wanted()
        assert not _wait(lambda: folder.exists() and any(folder.glob("*.sock")), 1.5)  # no session ran: none
        ort_worker.cold_session_ran()  # a session ran in a new child: the run wants a worker
        ort_worker.start_wanted()
    finally:
        ort_worker.autostart(False)
    sock = ort_worker.socket_path()
    assert _wait(lambda: ort_worker.connect() is not None), "the worker never answered"
    yield sock
    if sock.exists():
        sock.unlink()
    assert _wait(lambda: not _worker_pids(sock), 10), "the worker outlived its socket"


def _request(tmp_path, model, level="ORT_ENABLE_ALL"):
    from partsim.io.materialize import materialize_weights

    copy = materialize_weights(model, tmp_path / "m")
    out = tmp_path / "o"
    out.mkdir(exist_ok=True)
    return {"model": str(copy), "target": str(out / "opt.onnx"), "level": level, "external": "opt.weights.pb",
            "disabled": [], "lean": True, "sink_weights": True}


def test_worker_session_saves_the_graph_a_child_saves(worker, tmp_path):
    import onnx

    req = _request(tmp_path, ROOT / "fixtures" / "demo.onnx")
    pids = _worker_pids(worker)
    # the worker itself: the one whose parent is not a worker (the fixture's probes fork short-lived ones)
    main = [p for p in pids if _parent(p) not in pids]
    assert len(main) == 1
    w = ort_worker.connect()
    assert isinstance(w, ort_worker.WorkerChild)
    r = w.run(req, timeout=120)
    assert r.state == "ok" and r.record["state"] == "ok", r.error
    assert w.pid and w.pid != main[0] and _parent(w.pid) in (main[0], None)  # a process it forked answered
    by_worker = onnx.load(req["target"], load_external_data=False)
    child = subprocess.run([sys.executable, str(ROOT / "partsim" / "runtime" / "optimize_child.py")],
                           input=json.dumps(req), capture_output=True, text=True, timeout=120)
    assert json.loads(child.stdout.strip().splitlines()[-1])["state"] == "ok"
    by_child = onnx.load(req["target"], load_external_data=False)
    assert [(n.op_type, list(n.input), list(n.output)) for n in by_worker.graph.node] == \
        [(n.op_type, list(n.input), list(n.output)) for n in by_child.graph.node]


def test_prediction_through_the_worker_is_the_childs(worker, monkeypatch):
    from tests.conftest import shared_path
    from partsim import predict
    from partsim.report.output import to_json

    model = shared_path("corpus", "full", "tiny_resnet.ts.onnx")
    used = []
    real = ort_worker.connect

    def counting():
        w = real()
        used.append(w)
        return w

    monkeypatch.setattr(ort_worker, "connect", counting)
    monkeypatch.setenv("PARTSIM_NO_CACHE", "1")
    with_worker, _ = predict(str(model), ["cuda"])
    assert used and all(isinstance(w, ort_worker.WorkerChild) for w in used)
    monkeypatch.setenv("PARTSIM_WORKER", "0")
    used.clear()
    plain, _ = predict(str(model), ["cuda"])
    assert used == [None]
    assert to_json(with_worker) == to_json(plain)


def test_timeout_kills_the_session_and_a_dead_session_is_a_crash(worker, tmp_path):
    from tests.conftest import shared_path

    req = _request(tmp_path, shared_path("corpus", "graph_only", "swin_t.ts.onnx"))
    w = ort_worker.connect()
    r = w.run(req, timeout=0.05)
    assert r.state == "timeout"
    pid = w.pid
    assert pid  # learnt, if need be, while closing: the forked session was killed, not left running
    assert _wait(lambda: _gone(pid), 10)
    bad = dict(req, level="NO_SUCH_LEVEL")  # the session's code raises: the process ends without an answer
    r = ort_worker.connect().run(bad, timeout=60)
    assert r.state == "crashed"
    assert ort_worker.connect() is not None  # the worker itself is still there


def test_idle_worker_ends_and_cli_leaves_one(short_dir):
    from tests.conftest import shared_path

    folder = short_dir / "cli"
    env = {**os.environ, "PARTSIM_WORKER": "1", "PARTSIM_WORKER_DIR": str(folder), "PARTSIM_WORKER_IDLE": "2",
           "PARTSIM_NO_CACHE": "1"}
    model = shared_path("corpus", "full", "tiny_resnet.ts.onnx")
    cmd = [sys.executable, str(ROOT / "cli.py"), "simulate", str(model), "-p", "cuda", "-f", "json"]
    first = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert first.returncode == 0, first.stderr
    assert _wait(lambda: any(folder.glob("*.sock"))), "the command line left no worker"
    sock = next(folder.glob("*.sock"))
    assert _worker_pids(sock)
    second = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert second.returncode == 0 and second.stdout == first.stdout
    assert _wait(lambda: not _worker_pids(sock), 20), "an idle worker did not end"
    assert not sock.exists()
    off = subprocess.run(cmd, capture_output=True, text=True, env={**env, "PARTSIM_WORKER": "0"}, timeout=300)
    assert off.stdout == first.stdout
    time.sleep(0.5)
    assert not any(folder.glob("*.sock"))  # switched off: none left behind


def test_no_worker_in_a_folder_others_may_enter(short_dir, monkeypatch):
    folder = short_dir / "open"
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    monkeypatch.setenv("PARTSIM_WORKER", "1")
    monkeypatch.setenv("PARTSIM_WORKER_DIR", str(folder))
    assert ort_worker.socket_path() is None
    folder.chmod(0o700)
    assert ort_worker.socket_path() is not None
    monkeypatch.setenv("PARTSIM_WORKER", "0")
    assert ort_worker.socket_path() is None


def test_the_command_line_starts_the_optimizer_process_only_where_one_runs():
    from partsim.cli import _runs_ort_optimizer

    assert _runs_ort_optimizer(["simulate", "m.onnx", "-p", "cuda"])
    assert _runs_ort_optimizer(["--no-cache", "render", "m.onnx", "--level", "basic"])
    for argv in (["simulate", "m.onnx", "--level", "disable"], ["simulate", "m.onnx", "--level=disable"],
                 ["blame", "m.onnx", "--optimize", "none"], ["simulate", "--help"], ["lint", "rules"],
                 ["observe", "m.onnx"], []):
        assert not _runs_ort_optimizer(argv), argv


def test_a_prestarted_process_nobody_takes_is_ended(monkeypatch):
    monkeypatch.setenv("PARTSIM_WORKER", "0")
    ort_worker.prestart()
    child = ort_worker._PRESTARTED[-1]
    proc = child.proc
    ort_worker.end_prestarted()
    assert ort_worker.take_prestarted() is None
    assert proc.poll() is not None  # killed and reaped, not left running
    ort_worker.prestart()
    taken = ort_worker.take_prestarted()
    assert taken is not None and ort_worker.take_prestarted() is None
    taken.close()


def test_quick_child_imports_onnxruntime_and_falls_back_to_site(tmp_path):
    from partsim.runtime.child import EarlyChild, quick_start_env

    env = quick_start_env()
    assert env["OPENBLAS_NUM_THREADS"] == "1" and env["PYTHONPATH"]
    req = _request(tmp_path, ROOT / "fixtures" / "demo.onnx")
    child = EarlyChild(ort_worker.SESSION_CODE, quick=True)
    assert child.argv[1] == "-S"
    r = child.run(req, timeout=120)
    assert r.state == "ok" and r.record["state"] == "ok", r.error
    # no import path handed over: the child reads site's .pth files itself and still answers
    bare = {k: v for k, v in env.items() if k != "PYTHONPATH"}
    p = subprocess.run([sys.executable, "-S", str(ort_worker.SESSION_CODE)], input=json.dumps(req), env=bare,
                       capture_output=True, text=True, timeout=120)
    assert json.loads(p.stdout.strip().splitlines()[-1])["state"] == "ok", p.stderr


def test_help_names_the_switches(run_cli):
    code, out, _ = run_cli("--help")
    assert code == 0
    for name in ("PARTSIM_WORKER=0", "PARTSIM_WORKER_IDLE", "PARTSIM_WORKER_DIR", "PARTSIM_NO_CACHE"):
        assert name in out
