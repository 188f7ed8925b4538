"""The one way partsim runs ORT: a child process, a JSON request in, one JSON line out.

Every real session (placement observations, numeric runs, ORT's own optimizer) runs
in a child interpreter so that a crash, a hang or a runaway allocation of ORT or an
EP costs a record, never partsim itself (docs/contract.md §8).  The protocol:

* the request is one JSON document on the child's stdin;
* the child prints anything it likes, and its **last stdout line** is its JSON record;
* the child gets ``timeout`` seconds and an address-space ceiling (``RLIMIT_AS``).

>>> r = run_child("-c", {"x": 1}, script_args=["import json,sys; print(json.dumps(json.load(sys.stdin)))"])
>>> r.state, r.record
('ok', {'x': 1})
"""

import json
import subprocess
import sys
from dataclasses import dataclass

__all__ = ["run_child", "EarlyChild", "ChildResult", "memory_ceiling", "DEFAULT_MEMORY_LIMIT"]

# Generous, because EPs reserve address space they never touch.
DEFAULT_MEMORY_LIMIT = 32 * 1024**3


def memory_ceiling(limit):
    """A ``preexec_fn`` that caps the child's address space at ``limit`` bytes (where the OS can)."""
    def apply():
        try:
            import resource

            soft, hard = resource.getrlimit(resource.RLIMIT_AS)
            cap = limit if hard == resource.RLIM_INFINITY else min(limit, hard)
            resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
        except (ImportError, ValueError, OSError):
            pass  # not on this platform: the timeout still bounds the run
    return apply


@dataclass(frozen=True)
class ChildResult:
    """What one child run gave: ``state`` is ``ok``, ``crashed`` or ``timeout``.

    ``record`` is the parsed last stdout line (``None`` unless ``ok``); ``error`` a
    one-line explanation otherwise; ``stdout``/``stderr`` the raw streams.
    """

    state: str
    record: object = None
    error: str = ""
    returncode: object = None
    stdout: str = ""
    stderr: str = ""


def run_child(script, request, python=None, timeout=120, memory_limit=DEFAULT_MEMORY_LIMIT, script_args=()):
    """Run ``python script`` with ``request`` (JSON) on stdin; never raises for what the child does."""
    argv = [str(python) if python else sys.executable, str(script), *script_args]
    try:
        proc = subprocess.run(argv, input=json.dumps(request), capture_output=True, text=True, timeout=timeout,
                              preexec_fn=memory_ceiling(memory_limit) if memory_limit else None)
    except subprocess.TimeoutExpired:
        return ChildResult("timeout", error=f"no result within {timeout} s")
    except OSError as exc:
        return ChildResult("crashed", error=f"cannot start {argv[0]}: {exc.strerror or exc}")
    return _result(proc.returncode, proc.stdout, proc.stderr)


def _result(returncode, stdout, stderr):
    lines = stdout.strip().splitlines()
    try:
        rec = json.loads(lines[-1]) if lines else None
    except ValueError:
        rec = None
    if returncode != 0 or not isinstance(rec, dict):
        tail = " ".join(stderr.strip().splitlines()[-3:])[:400]
        return ChildResult("crashed", error=tail, returncode=returncode, stdout=stdout, stderr=stderr)
    return ChildResult("ok", rec, returncode=0, stdout=stdout, stderr=stderr)


def quick_start_env():
    """The environment of a child that imports onnxruntime and nothing else, started with
    ``python -S``: this interpreter's import path handed over (``PYTHONPATH``; ``site`` and the
    ``.pth`` files it reads took ~10 ms), and one OpenBLAS thread (numpy, which onnxruntime imports,
    starts one per core otherwise, ~20 ms of a cold start here; the child never multiplies a
    matrix with it).  The child falls back to ``site`` itself when the import fails without it."""
    import os

    paths = [p for p in sys.path if isinstance(p, str) and p and os.path.isdir(p)]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths), "OPENBLAS_NUM_THREADS": "1"}


class EarlyChild:
    """:func:`run_child`, started before its request is known, so that the interpreter and the
    child's imports (onnxruntime: ~0.2 s) load while the caller still prepares the request.
    Same protocol, timeout and address-space ceiling; :meth:`close` ends an unused child.

    >>> c = EarlyChild("-c", script_args=["import json,sys; print(json.dumps(json.load(sys.stdin)))"])
    >>> c.run({"x": 2}).record
    {'x': 2}
    >>> c = EarlyChild("-c", script_args=["import json,sys; print(json.dumps(json.load(sys.stdin)))"])
    >>> c.send({"x": 3})  # the child starts on it; the caller goes on
    >>> c.run(None).record
    {'x': 3}
    """

    def __init__(self, script, python=None, memory_limit=DEFAULT_MEMORY_LIMIT, script_args=(), quick=False):
        """``quick``: the child is only ever this interpreter importing onnxruntime, so it starts
        without ``site`` and with one BLAS thread (:func:`quick_start_env`)."""
        quick = quick and python is None
        env = quick_start_env() if quick else None
        self.argv = [str(python) if python else sys.executable, *(("-S",) if quick else ()), str(script),
                     *script_args]
        self.error = ""
        try:
            self.proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, text=True, env=env,
                                         preexec_fn=memory_ceiling(memory_limit) if memory_limit else None)
        except OSError as exc:
            self.proc = None
            self.error = f"cannot start {self.argv[0]}: {exc.strerror or exc}"

    def send(self, request):
        """Hand the child its request now and return at once: the child works while the caller
        goes on; :meth:`run` then collects its record (the request it is given is ignored)."""
        if self.proc is None or getattr(self, "sent", False):
            return
        self.sent = True
        try:
            self.proc.stdin.write(json.dumps(request))  # a few hundred bytes: never blocks on the pipe
            self.proc.stdin.close()
        except OSError:
            pass  # the child died: run() reports how
        self.proc.stdin = None  # closed: communicate() must not touch it

    def run(self, request, timeout=120):
        if self.proc is None:
            return ChildResult("crashed", error=self.error)
        proc, self.proc = self.proc, None
        try:
            if getattr(self, "sent", False):
                stdout, stderr = proc.communicate(timeout=timeout)
            else:
                stdout, stderr = proc.communicate(json.dumps(request), timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            return ChildResult("timeout", error=f"no result within {timeout} s")
        return _result(proc.returncode, stdout, stderr)

    def close(self):
        if self.proc is not None:
            self.proc.kill()
            self.proc.communicate()
            self.proc = None
