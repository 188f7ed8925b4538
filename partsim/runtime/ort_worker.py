"""A warm ORT process that later runs hand their optimizer sessions to, the way build tools keep a daemon.

Half of a cold ``partsim simulate`` at the default level is a new interpreter importing
onnxruntime (and numpy behind it, 0.1-0.2 s) before ORT's optimizer session can start.  After a
run whose session needed such a child, the command line leaves one *worker* behind: a detached
process that has imported onnxruntime and waits on a Unix socket.  A later run connects (well
under a millisecond), and the worker forks a fresh process per request, which runs the same
session as :mod:`partsim.runtime.optimize_child` under the same address-space ceiling and
answers over the socket; the caller's timeout kills that process, as it kills a child.  Every
session still runs in a process of its own (docs/contract.md §8), and a forked process that dies
costs one answer, never the worker or partsim (the caller then runs the request in a plain child).

- **Where**: ``$XDG_RUNTIME_DIR/partsim-<uid>/`` (else the temporary folder), a folder only the
  user may enter (anything else: no worker); ``PARTSIM_WORKER_DIR`` moves it.  The socket's name is
  a digest of the interpreter, the ORT build, partsim's version, this file and the session's code,
  and the locale and ORT/OpenMP environment: a run that differs in any of them gets another worker.
- **How long**: it exits after ``PARTSIM_WORKER_IDLE`` seconds (default 600) without a request, and
  at once when its socket file is removed or replaced.
- **Off**: ``PARTSIM_WORKER=0``; never on Windows (no fork, no Unix sockets there).  Only the command
  line starts a worker (:func:`autostart`); the Python API uses one that is already running.

The protocol: the caller sends its request as one JSON line; the worker's process answers
``{"pid": N}`` when it starts and its record as a second line.
"""

import errno
import hashlib
import json
import os
import socket
import sys
import time
from pathlib import Path

__all__ = ["WorkerChild", "connect", "autostart", "socket_path", "enabled", "prestart", "take_prestarted",
           "end_prestarted", "cold_session_ran"]

HERE = Path(__file__).resolve()
SESSION_CODE = HERE.with_name("optimize_child.py")
DEFAULT_IDLE_S = 600
_MAX_LINE = 1 << 20
_AUTOSTART = {"on": False, "wanted": False}


def enabled():
    """Whether workers may be used here (``PARTSIM_WORKER`` is not ``0``, the OS has fork and Unix sockets)."""
    return (os.environ.get("PARTSIM_WORKER", "1").strip().lower() not in ("0", "no", "off", "false")
            and hasattr(os, "fork") and hasattr(socket, "AF_UNIX") and sys.platform != "win32")


def _private_dir():
    """The user's worker folder, made if absent; ``None`` unless it is a real folder of this user
    that nobody else may enter."""
    base = os.environ.get("PARTSIM_WORKER_DIR")
    if base:
        d = Path(base)
    else:
        import tempfile

        d = Path(os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()) / f"partsim-{os.getuid()}"
    try:
        d.mkdir(mode=0o700, parents=bool(base), exist_ok=True)
        st = os.lstat(d)
    except OSError:
        return None
    import stat

    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        return None
    return d


def _identity():
    """What a worker must share with its caller to answer for it."""
    from .optimizer_cache import _ort_build

    build = _ort_build()
    if build is None:
        return None
    from .. import __version__

    env = sorted((k, v) for k, v in os.environ.items()
                 if k.startswith(("LC_", "ORT_", "OMP_", "MKL_")) or k in ("LANG", "LANGUAGE", "LD_LIBRARY_PATH"))
    h = hashlib.sha256()
    h.update(json.dumps([sys.executable, list(build), __version__, env]).encode())
    for f in (HERE, SESSION_CODE):
        try:
            h.update(f.read_bytes())
        except OSError:
            return None
    return h.hexdigest()[:20]


def socket_path():
    """The socket of the worker for this interpreter, ORT build and environment, or ``None``."""
    if not enabled():
        return None
    d, ident = _private_dir(), _identity()
    if d is None or ident is None:
        return None
    p = d / f"ort-{ident}.sock"
    return p if len(os.fsencode(str(p))) < 100 else None  # sun_path holds ~104-108 bytes


class WorkerChild:
    """One request to a running worker, with :class:`partsim.runtime.child.EarlyChild`'s interface
    (:meth:`send`, :meth:`run`, :meth:`close`)."""

    def __init__(self, sock):
        self.sock = sock
        self.sent = False
        self.pid = None
        self.done = False
        self._buf = b""

    def send(self, request):
        if self.sent or self.sock is None:
            return
        self.sent = True
        try:
            self.sock.sendall(json.dumps(request).encode() + b"\n")
        except OSError:
            self._drop()

    def _line(self, deadline):
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            self.sock.settimeout(left)
            chunk = self.sock.recv(65536)
            if not chunk:
                return None
            self._buf += chunk
            if len(self._buf) > _MAX_LINE:
                return None
        line, _, self._buf = self._buf.partition(b"\n")
        return line

    def run(self, request, timeout=120):
        from .child import ChildResult

        if self.sock is None:
            return ChildResult("crashed", error="the warm ORT worker went away")
        self.send(request)
        deadline = time.monotonic() + timeout
        try:
            while True:
                line = self._line(deadline) if self.sock is not None else None
                if line is None:
                    self._drop()
                    return ChildResult("crashed", error="the warm ORT worker's session ended without an answer")
                rec = json.loads(line)
                if self._named(rec):
                    continue
                self.done = True
                self._drop()
                if not isinstance(rec, dict):
                    return ChildResult("crashed", error="the warm ORT worker answered no record")
                return ChildResult("ok", rec, returncode=0)
        except (TimeoutError, socket.timeout):
            self.close()
            return ChildResult("timeout", error=f"no result within {timeout} s")
        except (OSError, ValueError):
            self.close()
            return ChildResult("crashed", error="the warm ORT worker's answer was cut off")

    def _named(self, rec):
        """Whether ``rec`` is the worker's first line, naming the process it forked (kept)."""
        if isinstance(rec, dict) and set(rec) == {"pid"}:
            self.pid = rec["pid"]
            return True
        return False

    def _drop(self):
        if self.sock is not None:
            try:
                self.sock.close()
            except OSError:
                pass
            self.sock = None

    def close(self):
        """End the request: its process is killed unless it has answered."""
        if not self.done and self.sent and not self.pid and self.sock is not None:
            try:  # the worker names the process right after it forks: learn it to stop it
                line = self._line(time.monotonic() + 1.0)
                self._named(json.loads(line) if line else None)
            except (TimeoutError, socket.timeout, OSError, ValueError):
                pass
        if not self.done and self.pid:
            import signal

            try:
                os.kill(self.pid, signal.SIGKILL)
            except OSError:
                pass
        self.done = True
        self._drop()


def connect():
    """A :class:`WorkerChild` on the running worker, or ``None`` (no worker: the caller starts a
    child, and :func:`autostart` may leave a worker for the next run)."""
    path = socket_path()
    if path is None:
        return None
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.settimeout(1.0)
        s.connect(str(path))
    except OSError:
        s.close()
        return None
    return WorkerChild(s)


def cold_session_ran():
    """Note that this run's optimizer session needed a new interpreter (no worker answered): the
    command line then leaves a worker for the next run (:func:`start_wanted`).  A run the cache
    answered starts none."""
    if _AUTOSTART["on"]:
        _AUTOSTART["wanted"] = True


_PRESTARTED = []


def prestart():
    """Connect to the worker, or else start the optimizer's child, now: the command line calls this
    first thing for the commands that predict at an ORT level, so that the child imports
    onnxruntime while partsim itself still loads.  :func:`take_prestarted` hands it on; one nobody
    took is ended by :func:`end_prestarted`."""
    from .child import EarlyChild

    _PRESTARTED.append(connect() or EarlyChild(SESSION_CODE, quick=True))


def take_prestarted():
    """The process :func:`prestart` started, once, or ``None``."""
    return _PRESTARTED.pop() if _PRESTARTED else None


def end_prestarted():
    while _PRESTARTED:
        _PRESTARTED.pop().close()


def autostart(on=True):
    """Let this process leave a worker behind when it exits, if its session needed a new child
    (the command line switches this on; :func:`partsim.cli.main` calls :func:`start_wanted`)."""
    _AUTOSTART["on"] = on


def start_wanted():
    """Start the worker (detached, in its own session, no inherited files) if this run wanted one."""
    if not (_AUTOSTART["on"] and _AUTOSTART["wanted"]):
        return
    _AUTOSTART["wanted"] = False
    path = socket_path()
    if path is None:
        return
    import subprocess

    try:
        idle = float(os.environ.get("PARTSIM_WORKER_IDLE", DEFAULT_IDLE_S))
    except ValueError:
        idle = DEFAULT_IDLE_S
    try:
        # one OpenBLAS thread: numpy's threads would be the only ones a fork leaves half-copied
        subprocess.Popen([sys.executable, str(HERE), str(path), str(idle)], stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, close_fds=True,
                         start_new_session=True, cwd="/", env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    except OSError:
        pass


# ---- the worker itself (run as a script: imports only onnxruntime and the session's code) ----

def _serve(path, idle):
    import onnxruntime  # noqa: F401  the point of the worker

    import importlib.util

    spec = importlib.util.spec_from_file_location("partsim_optimize_child", SESSION_CODE)
    code = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(code)
    optimize = code.optimize

    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        srv.bind(path)
    except OSError as exc:
        if exc.errno != errno.EADDRINUSE:
            return
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(path)
            return  # another worker answers there
        except OSError:
            os.unlink(path)  # left by a worker that died
            srv.bind(path)
        finally:
            probe.close()
    os.chmod(path, 0o600)
    mine = os.stat(path).st_ino
    srv.listen(16)
    srv.settimeout(1.0)
    children, last = set(), time.monotonic()
    try:
        while True:
            for pid in list(children):
                try:
                    if os.waitpid(pid, os.WNOHANG)[0]:
                        children.discard(pid)
                except ChildProcessError:
                    children.discard(pid)
            try:
                if os.stat(path).st_ino != mine:
                    return
            except OSError:
                return  # the socket file was removed: stop
            if not children and time.monotonic() - last > idle:
                return
            try:
                conn, _ = srv.accept()
            except socket.timeout:
                continue
            last = time.monotonic()
            pid = os.fork()
            if pid == 0:
                srv.close()
                code = 0
                try:
                    _answer(conn, optimize)
                except BaseException:
                    code = 1
                finally:
                    os._exit(code)
            children.add(pid)
            conn.close()
    finally:
        try:
            if os.stat(path).st_ino == mine:
                os.unlink(path)
        except OSError:
            pass


def _answer(conn, optimize):
    """One request in the forked process: the same ceiling as a child, then the session."""
    conn.settimeout(30)
    buf = b""
    while b"\n" not in buf:
        chunk = conn.recv(65536)
        if not chunk or len(buf) > _MAX_LINE:
            return
        buf += chunk
    req = json.loads(buf.partition(b"\n")[0])
    try:
        import resource

        from_child = int(req.pop("memory_limit", 32 * 1024**3))
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        resource.setrlimit(resource.RLIMIT_AS, (from_child if hard == resource.RLIM_INFINITY
                                                else min(from_child, hard), hard))
    except (ImportError, ValueError, OSError):
        pass
    conn.settimeout(None)
    conn.sendall(json.dumps({"pid": os.getpid()}).encode() + b"\n")
    conn.sendall(json.dumps(optimize(req)).encode() + b"\n")


if __name__ == "__main__":
    _serve(sys.argv[1], float(sys.argv[2]))
