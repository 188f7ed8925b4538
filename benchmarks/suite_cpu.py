"""Where the test suite's CPU goes: a pytest plugin (issue 32, benchmarks/README.md "Test suite time").

For each test: wall, this process's CPU (user + system) and that of its waited-for children (ORT children, CLI
subprocesses, chromium), and this process's resident memory after it; for each ORT child
(:class:`partsim.runtime.process.OrtProcess`): the test, the sub-command, a digest of the request and of the
model's first 4 MB, how long it lived, and where it was started when it was closed without a request.  One
JSON line each, one file per pytest-xdist worker, in ``$SUITE_CPU_DIR`` (default ``out/suite-cpu``)::

    PYTHONPATH=.:benchmarks .venv/bin/python -m pytest -q -p suite_cpu -n 2 --dist loadfile
    python benchmarks/suite_cpu.py out/suite-cpu          # per-file CPU, children by sub-command

CPU seconds depend much less on the other load of a shared machine than walls do.
"""

import collections
import glob
import hashlib
import json
import os
import resource
import sys
import time
import traceback

import pytest

_OUT = os.environ.get("SUITE_CPU_DIR", os.path.join("out", "suite-cpu"))
_STATE = {"file": None, "test": None}


def _write(record):
    if _STATE["file"] is None:
        os.makedirs(_OUT, exist_ok=True)
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        _STATE["file"] = open(os.path.join(_OUT, f"{worker}-{os.getpid()}.jsonl"), "a", encoding="utf-8")
    _STATE["file"].write(json.dumps(record) + "\n")
    _STATE["file"].flush()


def _cpu():
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime, own.ru_stime, children.ru_utime, children.ru_stime


def _rss_mb():
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") >> 20
    except (OSError, ValueError):
        return None


def _model_digest(request_text):
    model = json.loads(request_text).get("model") or ""
    if not (model and os.path.isfile(model)):
        return None
    with open(model, "rb") as f:
        return f"{hashlib.sha1(f.read(4 << 20)).hexdigest()[:12]}-{os.path.getsize(model)}"


def pytest_configure(config):
    from partsim.runtime import process
    from partsim.runtime.ort_protocol import encode

    init, submit, close = process.OrtProcess.__init__, process.OrtProcess.submit, process.OrtProcess.close

    def logged_init(self, command, *args, **kw):
        self._suite = {"cmd": command, "t0": time.time(), "req": None, "model": None,
                       "started_at": [f"{f.filename.rsplit('/', 1)[-1]}:{f.lineno}:{f.name}"
                                      for f in traceback.extract_stack()[-7:-1]]}
        init(self, command, *args, **kw)

    def logged_submit(self, request, *args, **kw):  # an optimize child may get several requests: the last is kept
        text = encode(request)
        self._suite.update(req=hashlib.sha1(text.encode()).hexdigest()[:12], model=_model_digest(text),
                           requests=self._suite.get("requests", 0) + 1)
        return submit(self, request, *args, **kw)

    def logged_close(self):
        info = getattr(self, "_suite", None)
        if info is not None and self.proc is not None:
            _write({"kind": "child", "test": _STATE["test"], "cmd": info["cmd"], "python": self.argv[0],
                    "req": info["req"], "model": info["model"], "requests": info.get("requests", 0),
                    "wall": time.time() - info["t0"],
                    "started_at": None if info["req"] else info["started_at"]})
            self._suite = None
        return close(self)

    process.OrtProcess.__init__, process.OrtProcess.submit, process.OrtProcess.close = (
        logged_init, logged_submit, logged_close)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    _STATE["test"] = item.nodeid
    t0, before = time.time(), _cpu()
    yield
    t1, after = time.time(), _cpu()
    d = [b - a for a, b in zip(before, after)]
    _write({"kind": "test", "test": item.nodeid, "t0": t0, "t1": t1, "self": d[0] + d[1], "self_sys": d[1],
            "children": d[2] + d[3], "children_sys": d[3], "rss_mb": _rss_mb()})


def summary(folder):
    """Per-file CPU (own + children, system part) and the ORT children by sub-command, as text."""
    per_file = collections.defaultdict(lambda: [0.0, 0.0, 0.0, 0.0, 0])
    children = collections.Counter()
    for path in glob.glob(os.path.join(folder, "*.jsonl")):
        with open(path, encoding="utf-8") as f:
            for line in f:
                r = json.loads(line)
                if r["kind"] == "child":
                    children[r["cmd"] + ("" if r["req"] else " (closed without a request)")] += 1
                    continue
                row = per_file[r["test"].split("::")[0]]
                for k, key in enumerate(("self", "self_sys", "children", "children_sys")):
                    row[k] += r[key]
                row[4] += 1
    total = [sum(row[k] for row in per_file.values()) for k in range(4)]
    lines = [f"own {total[0]:.1f} s (system {total[1]:.1f}), children {total[2]:.1f} s (system {total[3]:.1f})",
             "ORT children: " + ", ".join(f"{n} {cmd}" for cmd, n in sorted(children.items())),
             f"{'file':<55} {'cpu s':>7} {'system':>7} {'tests':>5}"]
    for name, row in sorted(per_file.items(), key=lambda kv: -(kv[1][0] + kv[1][2])):
        lines.append(f"{name:<55} {row[0] + row[2]:7.1f} {row[1] + row[3]:7.1f} {row[4]:5d}")
    return "\n".join(lines)


if __name__ == "__main__":
    print(summary(sys.argv[1] if len(sys.argv) > 1 else _OUT))
