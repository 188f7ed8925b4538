"""The ORT child process (partsim/runtime/process.py, ort_child.py, ort_protocol.py): typed, versioned
messages, a timeout, a kill of the whole process group, one retry in a fresh child; a session that
times out or crashes is never a prediction (exit 2, one line)."""

import json
import os
import subprocess
import sys

import pytest

from partsim.runtime import process
from partsim.runtime.ort_protocol import (PROTOCOL_VERSION, ObserveRequest, OptimizeRecord, OptimizeRequest,
                                          ProtocolError, decode, encode)
from partsim.runtime.process import ChildFailure, OrtProcess, run_request
from tests.conftest import ROOT

CHAIN = ROOT / "fixtures" / "chain.onnx"
MISBEHAVING = ROOT / "tests" / "misbehaving_child.py"


@pytest.fixture
def misbehave(monkeypatch, tmp_path):
    """Make every ORT child the test's misbehaving one: ``misbehave("crash", once=True)``."""
    def use(how, once=False):
        monkeypatch.setattr(process, "CHILD", MISBEHAVING)
        monkeypatch.setenv("PARTSIM_TEST_CHILD", how)
        if once:
            monkeypatch.setenv("PARTSIM_TEST_CHILD_ONCE", str(tmp_path / "failed-once"))
        else:
            monkeypatch.delenv("PARTSIM_TEST_CHILD_ONCE", raising=False)
    return use


def _left_after_kill(marker, grace=10.0):
    """The marked processes still there ``grace`` seconds after a kill (SIGKILL is delivered
    asynchronously: a grandchild may take a moment to die on a busy machine); a leak stays."""
    import time

    deadline = time.monotonic() + grace
    while _marked_processes(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    return _marked_processes(marker)


def _marked_processes(marker):
    """Pids of the processes whose environment holds ``marker`` (read from /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                with open(f"/proc/{entry}/environ", "rb") as f:
                    if marker.encode() in f.read():
                        found.append(int(entry))
            except OSError:
                pass
    return found


def test_messages_round_trip_and_refuse_another_version_or_field():
    req = OptimizeRequest("m.onnx", "o.onnx", "ORT_ENABLE_ALL", "w.pb", ("ConstantFolding",), lean=True)
    assert decode(encode(req), OptimizeRequest) == req
    raw = json.loads(encode(req))
    assert raw["version"] == PROTOCOL_VERSION and raw["type"] == "optimize_request"
    with pytest.raises(ProtocolError, match="version"):
        decode(json.dumps({**raw, "version": PROTOCOL_VERSION + 1}), OptimizeRequest)
    with pytest.raises(ProtocolError, match="unknown field 'hook'"):
        decode(json.dumps({**raw, "hook": "crash"}), OptimizeRequest)
    with pytest.raises(ProtocolError, match="missing field 'target'"):
        decode(json.dumps({k: v for k, v in raw.items() if k != "target"}), OptimizeRequest)
    with pytest.raises(ProtocolError, match="observe_request"):
        decode(encode(req), ObserveRequest)


def test_the_child_refuses_a_request_of_another_version():
    """The child checks the version too: a request it cannot read is refused, not guessed at."""
    with OrtProcess("optimize") as child:
        child.proc.stdin.write(json.dumps({"version": 0, "type": "optimize_request"}).encode() + b"\n")
        child.proc.stdin.close()
        child.submitted = True
        with pytest.raises(ChildFailure, match="refused its request: protocol version 0") as info:
            child.result(OptimizeRecord, 120)
    assert info.value.cause == "protocol"


def test_a_real_optimizer_session_and_a_refused_one(tmp_path):
    target = tmp_path / "opt.onnx"
    ok = run_request("optimize", OptimizeRequest(str(CHAIN), str(target), "ORT_ENABLE_ALL", "w.pb"), OptimizeRecord,
                     120)
    assert ok.state == "ok" and ok.runtime.startswith("onnxruntime ") and target.is_file()
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07garbage")
    refused = run_request("optimize", OptimizeRequest(str(bad), str(tmp_path / "o2.onnx"), "ORT_ENABLE_ALL", "w.pb"),
                          OptimizeRecord, 120)
    assert refused.state == "failed" and refused.error  # ORT's own message: an answer, not a failure


def test_a_timeout_kills_the_whole_process_group(misbehave, monkeypatch, tmp_path):
    """The child and its grandchild are killed; what the child wrote in its TMPDIR (a session's profile
    and log, a WebGPU child's mount point) is removed with it."""
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    misbehave("orphan")
    marker = f"partsim-test-{os.getpid()}-orphan"
    monkeypatch.setenv("PARTSIM_TEST_MARKER", marker)
    with OrtProcess("optimize") as child:
        child.submit(OptimizeRequest("m", "t", "ORT_ENABLE_ALL", "w"))
        import time

        deadline = time.monotonic() + 60
        session_files = lambda: list(tmp_path.glob("partsim-child-*/partsim-ort-*/ort.log"))  # noqa: E731
        while (len(_marked_processes(marker)) < 2 or not session_files()) and time.monotonic() < deadline:
            time.sleep(0.1)  # until the grandchild runs (a busy machine starts interpreters slowly)
        assert len(_marked_processes(marker)) == 2 and len(session_files()) == 1
        with pytest.raises(ChildFailure, match="no answer within 1 s") as info:
            child.result(OptimizeRecord, 1)
        assert info.value.cause == "timeout"
    assert _left_after_kill(marker) == []  # the child and its grandchild are gone
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(not os.path.exists("/proc/self/limits"), reason="reads /proc/<pid>/limits (Linux)")
@pytest.mark.parametrize("after_start", [True, False])
def test_the_child_runs_under_its_address_space_ceiling(monkeypatch, after_start):
    """The child's soft RLIMIT_AS is the ceiling asked for, set from here once it runs (``prlimit``: the child
    is then started by ``vfork``) or, where that cannot be done, by a ``preexec_fn``; a tighter limit of this
    process stays."""
    import resource

    from partsim import address_space

    monkeypatch.setattr(address_space, "can_lower_another", lambda: after_start)
    cap = 3 * 1024**3
    own = resource.getrlimit(resource.RLIMIT_AS)[0]
    with OrtProcess("optimize", memory_limit=cap) as child:
        with open(f"/proc/{child.proc.pid}/limits") as f:
            soft = next(line.split()[3] for line in f if line.startswith("Max address space"))
    assert int(soft) == (cap if own == resource.RLIM_INFINITY else min(cap, own))


@pytest.mark.parametrize("how, cause", [("crash", "crashed"), ("babble", "protocol")])
def test_a_child_that_dies_or_babbles_gives_no_record(misbehave, how, cause):
    misbehave(how)
    with pytest.raises(ChildFailure) as info:
        run_request("optimize", OptimizeRequest("m", "t", "ORT_ENABLE_ALL", "w"), OptimizeRecord, 60)
    assert info.value.cause == cause
    if how == "crash":
        assert "killed by signal 6" in info.value.message


def test_a_crash_is_retried_once_in_a_fresh_child(misbehave, tmp_path):
    misbehave("crash", once=True)
    record = run_request("optimize", OptimizeRequest(str(CHAIN), str(tmp_path / "o.onnx"), "ORT_ENABLE_ALL", "w.pb"),
                         OptimizeRecord, 120)
    assert record.state == "ok"
    misbehave("crash", once=False)
    with pytest.raises(ChildFailure):
        run_request("optimize", OptimizeRequest(str(CHAIN), str(tmp_path / "o.onnx"), "ORT_ENABLE_ALL", "w.pb"),
                    OptimizeRecord, 120, attempts=2)


@pytest.mark.parametrize("how, says", [("crash", "crashed"), ("hang", "timed out")])
def test_a_session_that_crashes_or_hangs_is_never_a_prediction(run_cli, misbehave, monkeypatch, how, says):
    """Before: ``status: session_would_fail`` and "NOT accelerated", exit 0.  Now: exit 2, one line."""
    from partsim.runtime import optimizer

    monkeypatch.setenv("PARTSIM_NO_CACHE", "1")
    monkeypatch.setattr(optimizer, "SESSION_TIMEOUT_S", 1)  # a hung child never answers: 1 s per try is a timeout
    misbehave(how)
    code, out, err = run_cli("simulate", CHAIN, "-p", "cuda")
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1, err
    assert says in err and "in a fresh process too" in err and str(CHAIN) in err
    assert "session_would_fail" not in err and "NOT accelerated" not in err


@pytest.mark.parametrize("command", [["observe", "-p", "cpu"], ["verify", "-p", "cpu", "--observe"]])
def test_an_observed_session_that_crashes_twice_is_no_observation(run_cli, misbehave, tmp_path, command):
    """observe wrote ``state: crashed`` and exited 1 before; now it exits 2 with one line, no output."""
    misbehave("crash")
    out = tmp_path / "obs.json"
    code, stdout, err = run_cli(command[0], CHAIN, *command[1:], "-o", out)
    assert code == 2 and stdout == "" and not out.exists()
    assert len(err.strip().splitlines()) == 1 and "crashed" in err, err


def test_a_crash_a_fresh_child_does_not_repeat_changes_nothing(run_cli, misbehave, monkeypatch):
    monkeypatch.setenv("PARTSIM_NO_CACHE", "1")
    code, plain, _ = run_cli("simulate", CHAIN, "-p", "cuda", "-f", "json")
    assert code == 0
    misbehave("crash", once=True)
    code, retried, err = run_cli("simulate", CHAIN, "-p", "cuda", "-f", "json")
    assert code == 0, err
    assert retried == plain


def test_an_ort_refusal_stays_a_prediction(run_cli, tmp_path, monkeypatch):
    """What ORT itself refuses (its own error message) is still ``session_would_fail``, exit 0."""
    import onnx
    from onnx import TensorProto, helper

    monkeypatch.setenv("PARTSIM_NO_CACHE", "1")
    # a Relu whose output ORT's type inference rejects: declared int64 for a float input
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="r")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                          [helper.make_tensor_value_info("y", TensorProto.INT64, [2])])
    path = tmp_path / "refused.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    code, out, err = run_cli("simulate", path, "-p", "cpu", "-f", "json")
    assert code in (0, 1), err
    assert json.loads(out)["status"] == "session_would_fail"


def _cli_argv(misbehaving=None, timeout_s=2):
    """``python -m partsim`` as a user runs it (``os._exit`` at the end); with ``misbehaving`` every ORT
    child is the test's misbehaving one (``PARTSIM_TEST_CHILD``) and ORT's optimizer gets ``timeout_s``."""
    if misbehaving is None:
        return [sys.executable, "-m", "partsim"]
    script = ("import sys; from partsim.runtime import process, optimizer; "
              f"process.CHILD = {str(MISBEHAVING)!r}; optimizer.SESSION_TIMEOUT_S = {timeout_s}; "
              "from partsim.cli import run; sys.argv[0] = 'partsim'; run()")
    return [sys.executable, "-c", script]


def _own_run(tmp_path, misbehaving=None):
    """The environment of one command run: a private TMPDIR (empty), a marker every process it starts
    carries, no cache (ORT really runs)."""
    tmpdir = tmp_path / "TMPDIR"
    tmpdir.mkdir()
    marker = f"partsim-leftover-{os.getpid()}-{tmp_path.name}"
    env = {**os.environ, "PARTSIM_NO_CACHE": "1", "PARTSIM_TEST_MARKER": marker, "PYTHONPATH": str(ROOT),
           "TMPDIR": str(tmpdir), "PARTSIM_TEST_CHILD": misbehaving or ""}
    return tmpdir, marker, env


def _webgpu_why_not():
    sys.path.insert(0, str(ROOT / "partsim" / "runtime"))
    try:
        import webgpu_host
    finally:
        sys.path.pop(0)
    import importlib.util

    if importlib.util.find_spec("onnxruntime_ep_webgpu") is None:
        return "onnxruntime-ep-webgpu is not installed (make webgpu installs it)"
    return webgpu_host.missing()


_TOL = ("--abs-tol", "1e-5", "--rel-tol", "1e-4")
_COMMANDS = {  # name: (arguments after the model, misbehaving child, expected exit statuses)
    "simulate": (("-p", "cuda"), None, (0,)),
    "observe": (("-p", "cpu", "-o", "{out}/obs.json"), None, (0,)),
    "verify --observe": (("-p", "cpu", "--observe"), None, (0,)),
    "run-compare": (("-p", "cpu", "--level", "all", *_TOL), None, (0,)),
    # exit 1: without a baseline check the lifecycle cells are blocked (a judgement; the run is the point here)
    "receipt": (("-p", "cpu", "--sample", "s1", "--device", "cpu", *_TOL, "-o", "{out}/receipt.json"), None, (0, 1)),
    "observe webgpu": (("-p", "webgpu", "--level", "disable"), None, (0,)),
    "observe qnn": (("-p", "qnn", "--level", "disable"), None, (0,)),
    # a session that hangs past its timeout (with a grandchild and files of its own), retried, then exit 2
    "simulate timeout": (("-p", "cuda"), "orphan", (2,)),
    "observe timeout": (("-p", "cpu", "--timeout", "2"), "hang", (2,)),
}


@pytest.mark.parametrize("name", list(_COMMANDS))
def test_no_process_and_no_file_outlives_a_command(tmp_path, name):
    """Each command as a user runs it, in its own process with a private TMPDIR: afterwards that folder is
    empty (the ORT children's own folders, a WebGPU child's virtual /sys/class/drm mount point, seeded
    feeds, ORT's copies of the model: all gone) and no process carries the run's marker."""
    args, misbehaving, expected = _COMMANDS[name]
    if name == "observe webgpu" and _webgpu_why_not():
        pytest.skip(f"no WebGPU sessions here: {_webgpu_why_not()}")
    if name == "observe qnn":
        import importlib.util

        if importlib.util.find_spec("onnxruntime_qnn") is None:
            pytest.skip("onnxruntime-qnn is not installed (make test installs it)")
    tmpdir, marker, env = _own_run(tmp_path, misbehaving)
    out = tmp_path / "out"
    out.mkdir()
    argv = [*_cli_argv(misbehaving), name.split()[0], str(CHAIN), *(a.format(out=out) for a in args)]
    r = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, timeout=600, env=env)
    assert r.returncode in expected, (argv, r.stderr)
    assert _left_after_kill(marker) == [], f"{name} left a process behind"
    assert sorted(p.name for p in tmpdir.iterdir()) == [], f"{name} left files in its TMPDIR"


def _wait_for(marker, count, tmpdir=None):
    import time

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if len(_marked_processes(marker)) >= count and (tmpdir is None or any(tmpdir.rglob("ort.log"))):
            return
        time.sleep(0.1)
    raise AssertionError(f"{count} processes never ran")


def test_sigterm_ends_a_command_with_its_children_and_files(tmp_path):
    """SIGTERM (``timeout``, a CI runner cancelling a job) ends the command cleanly: exit 143, one line, its
    ORT child and the child's grandchild killed, the temporary folders removed.  Before, Python's
    default ended partsim on the spot and left the session running with its files."""
    # partsim, its child, the grandchild; the child's session files
    _terminate_and_check(tmp_path, "orphan", ["simulate", str(CHAIN), "-p", "cuda"], 3)


def _terminate_and_check(tmp_path, mode, args, processes):
    """Run ``partsim ARGS`` with the ``mode`` misbehaving child, SIGTERM it once ``processes`` marked processes
    run, and check: exit 143 with one line, no marked process left, the command's temp folder empty."""
    tmpdir, marker, env = _own_run(tmp_path, mode)
    proc = subprocess.Popen([*_cli_argv(mode, timeout_s=600), *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=tmp_path, env=env)
    try:
        _wait_for(marker, processes, tmpdir)
        proc.terminate()
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 143 and err.strip() == "partsim: terminated", err
    assert _left_after_kill(marker) == []
    assert sorted(p.name for p in tmpdir.iterdir()) == []


def test_sigterm_ends_check_jobs_with_its_workers(tmp_path):
    """``check --jobs 2``: SIGTERM also ends the worker processes and their ORT children, which inherit
    the command's handler and folder (a worker leaves both to the command)."""
    (tmp_path / "models").mkdir()
    for k in range(4):
        (tmp_path / "models" / f"m{k}.onnx").write_bytes(CHAIN.read_bytes())
    (tmp_path / "partsim.toml").write_text('[[check]]\nname = "c"\nmodels = ["models/*.onnx"]\n'
                                           'providers = ["cuda"]\nlevel = "all"\n')
    # partsim, two workers, an ORT child each
    _terminate_and_check(tmp_path, "hang", ["check", "--config", str(tmp_path / "partsim.toml"), "--jobs", "2"], 5)


def test_an_ort_child_dies_with_a_parent_killed_outright(tmp_path):
    """SIGKILL leaves partsim no way to clean up; its ORT child still goes (``PR_SET_PDEATHSIG``) instead
    of running its session on to the end."""
    _, marker, env = _own_run(tmp_path, "hang")
    proc = subprocess.Popen([*_cli_argv("hang", timeout_s=600), "simulate", str(CHAIN), "-p", "cuda"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp_path, env=env)
    try:
        _wait_for(marker, 2)
    finally:
        proc.kill()
        proc.wait()
    assert _left_after_kill(marker) == []
