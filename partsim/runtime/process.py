"""The parent side of the ORT child process: start, submit, wait with a timeout, always kill.

Every real ONNX Runtime session partsim runs (ORT's optimizer, observed sessions, numeric runs,
QNN probes) goes through :class:`OrtProcess`, a context manager over one child
(:mod:`partsim.runtime.ort_child`) in a process group of its own, under an address-space
ceiling.  Leaving the ``with`` block kills the group, whatever happened, and removes the child's own
temporary folder (its ``TMPDIR``: what a killed session or a WebGPU host left there), so no process
and no file outlives the call.  A child that dies, hangs past its timeout or answers out of protocol raises
:class:`ChildFailure`; what ORT itself answers (a refused session) is a record.

>>> from partsim.runtime.ort_protocol import OptimizeRequest
>>> with OrtProcess("optimize") as child:   # doctest: +SKIP
...     child.submit(OptimizeRequest("m.onnx", "out/m.onnx", "ORT_ENABLE_ALL", "w.pb"))
...     record = child.result(timeout=600)
"""

import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from .ort_protocol import ErrorRecord, OptimizeRecord, ProtocolError, decode, encode

__all__ = ["OrtProcess", "SharedOptimizer", "OptimizerSlot", "optimizer_children", "ChildFailure", "run_request", "memory_ceiling",
           "kill_all", "DEFAULT_MEMORY_LIMIT", "CHILD"]

CHILD = Path(__file__).with_name("ort_child.py")
# Generous, because EPs reserve address space they never touch.
DEFAULT_MEMORY_LIMIT = 32 * 1024**3
_MAX_RECORD_BYTES = 1 << 28  # an observed record of a million-node graph is ~100 MB


#: the children not closed yet (:func:`kill_all`: a command ended by a signal)
_LIVE: set["OrtProcess"] = set()


def kill_all():
    """Kill every ORT child this process started that still runs, and remove its folder (a command
    ended by SIGTERM; a forked worker's copies of its parent's children are not its own)."""
    for child in list(_LIVE):
        if child.owner == os.getpid():
            child.close()


class ChildFailure(Exception):
    """The child gave no record: ``cause`` is ``timeout``, ``crashed`` or ``protocol``."""

    def __init__(self, cause, message):
        super().__init__(message)
        self.cause = cause
        self.message = message


def memory_ceiling(limit):
    """A ``preexec_fn`` that caps the child's address space at ``limit`` bytes (where the OS can: elsewhere
    the timeout still bounds the run).  Used only where this process cannot cap the child once it runs
    (:func:`partsim.address_space.can_lower_another`): a ``preexec_fn`` makes Python ``fork()`` this whole
    process instead of ``vfork()``-ing it, and every page this process writes afterwards faults once more
    (65 ms of system time per child of a 200 MB process, 280 ms of a 1 GB one; benchmarks/README.md, "Test
    suite time (issue 32)")."""
    from ..address_space import lower_address_space

    return lambda: lower_address_space(limit)


def _child_env(tmp, quick):
    """The child's environment: ``TMPDIR`` its own folder (removed with it), this process's id (the
    child dies with it: ``ort_child.py``), one OpenBLAS thread unless the user chose a number (numpy, which
    onnxruntime imports, starts one per core otherwise: ~0.05 s of CPU per child on two cores; no child
    multiplies a matrix with numpy, ORT computes with its own MLAS), and for a quick start (this interpreter
    with ``-S``) its import path handed over (``PYTHONPATH``; ``site`` and the ``.pth`` files it reads took
    ~10 ms)."""
    env = {"OPENBLAS_NUM_THREADS": "1", **os.environ, "TMPDIR": tmp, "PARTSIM_ORT_PARENT": str(os.getpid())}
    if quick:
        paths = [p for p in sys.path if isinstance(p, str) and p and os.path.isdir(p)]
        env["PYTHONPATH"] = os.pathsep.join(paths)
    return env


class OrtProcess:
    """One ORT child running ``command`` (``optimize``, ``observe``, ``outputs``, ``probe``).

    The child starts at once (it imports onnxruntime while the caller prepares the request);
    :meth:`submit` hands it the request, :meth:`result` or :meth:`records` collect its answer,
    :meth:`close` (or leaving the ``with`` block) kills its process group.

    Parameters
    ----------
    command : str
    python : str, optional
        Another interpreter to run the child (another ORT build); this one by default.
    memory_limit : int
        The child's address-space ceiling in bytes (``0``: none).
    quick : bool
        Start this interpreter without ``site`` and with one BLAS thread (ignored with ``python``).
    script : path, optional
        Another child script speaking the same protocol (the tests' misbehaving children).
    """

    def __init__(self, command, python=None, memory_limit=DEFAULT_MEMORY_LIMIT, quick=False, script=None):
        quick = quick and python is None
        self.argv = [str(python) if python else sys.executable, *(("-S",) if quick else ()),
                     str(script or CHILD), command]
        self.proc, self.error, self.submitted = None, "", False
        self._stderr = tempfile.TemporaryFile()  # a file, not a pipe: a chatty child never blocks on it
        self.owner = os.getpid()
        self._tmp = tempfile.mkdtemp(prefix="partsim-child-")  # the child's TMPDIR, removed by close()
        _LIVE.add(self)
        from ..address_space import can_lower_another, lower_address_space

        cap_after = bool(memory_limit) and can_lower_another()  # before the child is handed its request
        try:
            self.proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=self._stderr, env=_child_env(self._tmp, quick),
                                         start_new_session=True,
                                         preexec_fn=memory_ceiling(memory_limit) if memory_limit and not cap_after
                                         else None)
            if cap_after:
                lower_address_space(memory_limit, self.proc.pid)
        except BaseException as exc:
            self.close()
            if not isinstance(exc, OSError):
                raise
            self.error = f"cannot start {self.argv[0]}: {exc.strerror or exc}"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def submit(self, request, last=True):
        """Hand the child its request (one of :mod:`partsim.runtime.ort_protocol`'s) and return at once.
        ``last=False``: more may follow (an ``optimize`` child makes one session per request line), until
        :meth:`end_input`."""
        if self.proc is None or self.submitted:
            return
        try:
            self.proc.stdin.write(encode(request).encode() + b"\n")  # small: never blocks on the pipe
            self.proc.stdin.flush()
        except OSError:
            pass  # the child died: result() says how
        if last:
            self.end_input()

    def end_input(self):
        """No more requests: the child's stdin ends."""
        if self.proc is None or self.submitted:
            return
        self.submitted = True
        try:
            self.proc.stdin.close()
        except OSError:
            pass

    def records(self, record_types, timeout):
        """Each record the child prints, as it comes; ``timeout`` seconds for each.
        :class:`ChildFailure` on a timeout, a death or a message out of protocol."""
        if self.proc is None:
            raise ChildFailure("crashed", self.error)
        for line in self._lines(timeout):
            try:
                record = decode(line, *record_types, ErrorRecord)
            except ProtocolError as exc:
                raise ChildFailure("protocol", f"the ORT child answered out of protocol: {exc}") from None
            if isinstance(record, ErrorRecord):
                raise ChildFailure("protocol", f"the ORT child refused its request: {record.error}")
            yield record
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise ChildFailure("timeout", f"the ORT child did not end within {timeout:g} s of its answer") from None
        if code != 0:
            raise ChildFailure("crashed", self._death(code))

    def result(self, record_type, timeout):
        """The child's one record of ``record_type``, within ``timeout`` seconds."""
        found = list(self.records((record_type,), timeout))
        if len(found) != 1:
            raise ChildFailure("protocol", f"the ORT child answered {len(found)} records, expected 1")
        return found[0]

    def _lines(self, timeout):
        """The child's stdout lines that look like messages; the clock restarts on each."""
        fd = self.proc.stdout.fileno()
        buf = b""
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            deadline = time.monotonic() + timeout
            while True:
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(left):
                    raise ChildFailure("timeout", f"no answer within {timeout:g} s")
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    break
                buf += chunk
                if len(buf) > _MAX_RECORD_BYTES:
                    raise ChildFailure("protocol", "the ORT child's answer is larger than any record")
                while b"\n" in buf:
                    line, _, buf = buf.partition(b"\n")
                    if line.startswith(b"{"):  # anything else the child's libraries printed
                        deadline = time.monotonic() + timeout
                        yield line
        if buf.startswith(b"{"):
            yield buf

    def _death(self, code):
        """One line: how the child ended, with the end of what it wrote on stderr."""
        how = f"killed by signal {-code}" if code < 0 else f"exit status {code}"
        tail = " ".join(self.stderr_text(4096).split()[-60:])
        if tail:
            how += f": {tail[-400:]}"
        return f"the ORT child died ({how})"

    def stderr_text(self, limit=1 << 20):
        """The last ``limit`` bytes the child wrote on stderr, as text."""
        if self._stderr is None:
            return ""
        try:
            self._stderr.seek(0, os.SEEK_END)
            self._stderr.seek(max(0, self._stderr.tell() - limit))
            return self._stderr.read().decode(errors="replace")
        except OSError:
            return ""

    def close(self):
        """Kill the child's process group (whatever it still runs), release its pipes and remove its
        temporary folder (the group is dead by then: nothing writes there any more)."""
        proc, self.proc = self.proc, None
        if proc is not None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (OSError, AttributeError):
                proc.kill()
            proc.wait()
            for stream in (proc.stdin, proc.stdout):
                if stream is not None:
                    try:
                        stream.close()
                    except OSError:
                        pass
            self.error = self.error or "the ORT child was closed"
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None
        _LIVE.discard(self)


class SharedOptimizer:
    """One ``optimize`` child making the sessions of several :class:`OptimizerSlot` side by side, one
    thread each (``ort_child.py``): one onnxruntime import instead of one per session.  ``lazy``: the
    process starts with the first request handed to a slot, so that answers found in the cache
    (:mod:`partsim.runtime.optimizer_cache`) start none; a slot started after the process was killed
    starts a fresh one.  The process is killed when the last slot closes, or when a slot still waiting
    for its session closes while no other slot waits (an abandoned session stops at once)."""

    def __init__(self, count, python=None, lazy=False):
        self.python, self.proc = python, None
        self.slots = [OptimizerSlot(self) for _ in range(count)]
        self._stream, self._answers = None, {}
        if not lazy:
            self._start()

    def _start(self):
        self.proc, self._stream, self._answers = OrtProcess("optimize", python=self.python, quick=True), None, {}
        return self.proc

    def submit(self, slot, request):
        proc = self.proc if self.proc is not None and self.proc.proc is not None else self._start()
        slot.proc, slot.target = proc, request.target
        proc.submit(request, last=False)
        self._end_input()

    def result(self, slot, timeout):
        """``slot``'s record (its ``target`` cleared), reading the child's records as they come."""
        proc = slot.proc
        if proc is None or proc is not self.proc:
            raise ChildFailure("crashed", "the ORT child was closed")
        try:
            if self._stream is None:
                self._stream = proc.records((OptimizeRecord,), timeout)
            while slot.target not in self._answers:
                record = next(self._stream, None)
                if record is None:
                    raise ChildFailure("protocol", "the ORT child ended without answering every request")
                self._answers[record.target] = record
        except ChildFailure:
            self._kill()
            raise
        slot.proc = None
        return replace(self._answers.pop(slot.target), target="")

    def release(self, slot):
        waiting = slot.proc is not None and slot.proc is self.proc
        slot.proc = None
        if all(s.closed for s in self.slots) or (waiting and not any(s.proc is self.proc for s in self.slots)):
            self._kill()
        else:
            self._end_input()

    def _end_input(self):
        """The child's stdin ends once no open slot can send it a request any more."""
        if self.proc is not None and not any(not s.closed and s.target is None for s in self.slots):
            self.proc.end_input()

    def _kill(self):
        if self.proc is not None:
            self.proc.close()
            self.proc = None


class OptimizerSlot:
    """One session's share of a :class:`SharedOptimizer`, used as an :class:`OrtProcess` (``submit``,
    ``result``, ``stderr_text``, ``close``, a context manager) by :func:`run_request`."""

    def __init__(self, shared):
        self.shared, self.proc, self.target, self.closed = shared, None, None, False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def submit(self, request):
        if not self.closed and self.target is None:
            self.shared.submit(self, request)

    def result(self, record_type, timeout):
        if self.target is None:
            raise ChildFailure("protocol", "no request was handed to the ORT child")
        return self.shared.result(self, timeout)

    def stderr_text(self, limit=1 << 20):
        proc = self.shared.proc
        return proc.stderr_text(limit) if proc is not None else ""

    def close(self):
        if not self.closed:
            self.closed = True
            self.shared.release(self)


def optimizer_children(count, python=None, lazy=False):
    """``count`` handles on one ``optimize`` child (a quick start; ``python``: another interpreter), one per
    session the caller begins, made side by side in that child (:class:`SharedOptimizer`).  ``lazy``: the
    child is started by the first request handed to one of them, so that answers found in the cache start
    none; else it starts now (the command line starts it before it can look: ``partsim.cli._prestart``).

    Two children side by side (one per session) were measured faster than one child making the sessions in
    turn (benchmarks/README.md, "Session 11"); one child making them side by side, in threads, imports
    onnxruntime once (benchmarks/README.md, "Session 13")."""
    return SharedOptimizer(count, python, lazy).slots


def run_request(command, request, record_type, timeout, python=None, memory_limit=DEFAULT_MEMORY_LIMIT,
                attempts=2, child=None, stderr=None):
    """``request``'s record from a child (``child``: one already started for it); a child that times
    out or dies is replaced by a fresh one, ``attempts`` times in all, then :class:`ChildFailure`.
    ``stderr``: a list that gets the last child's stderr (its end)."""
    for attempt in range(attempts):
        with (child if child is not None and attempt == 0 else OrtProcess(command, python, memory_limit)) as proc:
            proc.submit(request)
            try:
                record = proc.result(record_type, timeout)
            except ChildFailure as exc:
                if exc.cause == "protocol" or attempt + 1 == attempts:
                    raise
                continue
            if stderr is not None:
                stderr.append(proc.stderr_text())
            return record
    raise AssertionError("unreachable")
