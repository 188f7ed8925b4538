import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"


def shared_path(*parts):
    """A path under ../shared, or skip the test when the shared folder is absent."""
    p = SHARED.joinpath(*parts)
    if not p.exists():
        pytest.skip(f"{p} is absent: ../shared (corpus and observations) is not checked out beside the project")
    return p


@pytest.fixture
def run_cli():
    """Run the real CLI in-process; returns (exit code, stdout, stderr)."""
    from partsim.cli import main

    def run(*argv, capsys=None):
        import contextlib
        import io

        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main([str(a) for a in argv])
        return code, out.getvalue(), err.getvalue()

    return run


def as_written_cli(run, commands=("simulate", "verify", "render")):
    """``run_cli`` for tests of the graph as written: ``commands`` get ``--level disable``
    (an ORT_DISABLE_ALL session) unless the test names a level itself."""
    def run_as_written(cmd, *args, **kw):
        sub = args[1] if cmd == "--progress" and len(args) > 1 else cmd
        if sub in commands and "--level" not in args and "--optimize" not in args \
                and "--compat" not in args:
            args = args + ("--level", "disable")
        return run(cmd, *args, **kw)
    return run_as_written


def predict_as_written(*args, **kw):
    """:func:`partsim.predict` at level ``disable`` unless the test names a level."""
    from partsim import predict

    kw.setdefault("level", "disable")
    return predict(*args, **kw)


def run_subprocess(*argv, env=None):
    return subprocess.run([sys.executable, str(ROOT / "cli.py"), *map(str, argv)], capture_output=True,
                          text=True, cwd=ROOT, env=env)


# Property and fuzz tests use a fixed example sequence so a CI run is reproducible;
# `HYPOTHESIS_PROFILE=explore pytest` draws new examples.
import os  # noqa: E402

from hypothesis import settings  # noqa: E402

settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("explore", deadline=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# partsim's caches (parsed tables, ORT optimizer results) go to a folder of this test run, never
# the developer's ~/.cache: every run starts cold, CLI subprocesses inherit the variable.  Under
# pytest-xdist (`-n 2`) the workers share the folder of the run that started them (entries are
# written atomically and named by digests, partsim.io.cache), and that run removes it.
import atexit  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402


def _remove_caches_of_ended_runs():
    """A test run killed outright (a CI job cancelled, ``timeout -s KILL``) cannot remove its cache folder;
    the next run removes those whose process is gone (the folder is named by it; live runs' stay)."""
    import glob

    for folder in glob.glob(os.path.join(tempfile.gettempdir(), "partsim-test-cache-*-*")):
        pid = os.path.basename(folder).split("-")[3]
        if pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
            shutil.rmtree(folder, ignore_errors=True)


if os.environ.get("PYTEST_XDIST_WORKER") and os.environ.get("PARTSIM_TEST_CACHE_OF_RUN"):
    os.environ["PARTSIM_CACHE_DIR"] = os.environ["PARTSIM_TEST_CACHE_OF_RUN"]
else:
    if os.path.isdir("/proc/self"):
        _remove_caches_of_ended_runs()
    _TEST_CACHE = tempfile.mkdtemp(prefix=f"partsim-test-cache-{os.getpid()}-")
    os.environ["PARTSIM_CACHE_DIR"] = os.environ["PARTSIM_TEST_CACHE_OF_RUN"] = _TEST_CACHE
    atexit.register(shutil.rmtree, _TEST_CACHE, True)
os.environ.pop("PARTSIM_NO_CACHE", None)


def materialized(model):
    """A runnable copy of ``model`` (:func:`partsim.io.materialize.materialize_weights`, seed 0), made once per
    test run and shared by its tests and workers (in the run's cache folder): a graph-only corpus model is
    observed by several files at several levels, and its weights took 0.3-1 s to write each time.  Only read it."""
    import hashlib

    from partsim.io.materialize import materialize_weights

    model = Path(model).resolve()
    stat = model.stat()
    key = hashlib.sha256(f"{model}|{stat.st_size}|{stat.st_mtime_ns}".encode()).hexdigest()[:24]
    final = Path(os.environ["PARTSIM_TEST_CACHE_OF_RUN"]) / "test-materialized" / key
    if not final.is_dir():
        final.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=f"{key}-", dir=final.parent))
        materialize_weights(model, work)
        try:
            os.rename(work, final)  # whole or not at all; another worker may have been first
        except OSError:
            shutil.rmtree(work, ignore_errors=True)
    return final / model.name


# --- markers: what a test needs beyond Python (registered in pyproject.toml; `make test-fast` leaves them out) ---
# Read off each test's own source and the fixtures it uses (conservatively: a test whose source may start ORT is
# marked `ort`), so a new test is classified without a list to keep.
import inspect  # noqa: E402
import re  # noqa: E402

_MODULE_MARKS = {"test_qnn": ("qnn", "ort"), "test_openvino": ("openvino", "ort"), "test_webgpu": ("webgpu", "ort")}
_TOKENS = {
    "corpus": ("shared_path(", "SHARED", "../shared", "CORPUS"),
    "browser": ("chromium", "CHROMIUM"),
    "openvino": ("OV_PY", "OPENVINO_PY", "venv-openvino", "ov_set"),
    "ort": ("onnxruntime", "InferenceSession", "observe", "run_session", "verify", "receipt", "run_compare",
            "run-compare", "determinism", "optimize", "subprocess", "OrtProcess", "run_request", "misbehave", "qnn", "openvino",
            "webgpu", '"all"', '"basic"', '"extended"', "upgrade", "--ort", "ort_python", "--python"),
}
# run_cli and predict start ORT's optimizer (level all) unless the test runs the graph as written
_AS_WRITTEN = ("as_written", 'level="disable"', '"--level", "disable"', '"disable"')


_SOURCE_OF = {}  # function -> its source: a parametrized test and a common fixture are read once, not per item


def _source(fn):
    if fn not in _SOURCE_OF:
        try:
            _SOURCE_OF[fn] = inspect.getsource(fn)
        except (TypeError, OSError):
            _SOURCE_OF[fn] = None
    return _SOURCE_OF[fn]


def _sources(item):
    """The test function's source and those of the fixtures it uses (and theirs)."""
    fns = [getattr(item, "function", None)] + [
        d.func for defs in getattr(item, "_fixtureinfo", None).name2fixturedefs.values() for d in defs
        if getattr(item, "_fixtureinfo", None) is not None]
    return "\n".join(t for t in map(_source, fns) if t is not None)


def _marks_of(item):
    marks = set()
    stem = item.path.stem
    for prefix, names in _MODULE_MARKS.items():
        if stem.startswith(prefix):
            marks.update(names)
    src = _sources(item)
    for mark, tokens in _TOKENS.items():
        if any(t in src for t in tokens):
            marks.add(mark)
    if re.search(r"\brun_cli\b|\bpredict\(|\bmain\(\[", src) and not any(t in src for t in _AS_WRITTEN):
        marks.add("ort")
    callspec = getattr(item, "callspec", None)
    if callspec is not None and re.search(r"(graph_only|full|light|observed)/", callspec.id):
        marks.add("corpus")
    if "corpus" in item.name or (callspec is not None and ".onnx" in callspec.id and _module_reads_shared(item.path)):
        marks.add("corpus")  # parameters listed from ../shared at import
    return marks


_SHARED_MODULES = {}


def _module_reads_shared(path):
    if path not in _SHARED_MODULES:
        text = path.read_text(encoding="utf-8")
        _SHARED_MODULES[path] = any(t in text for t in _TOKENS["corpus"])
    return _SHARED_MODULES[path]


def pytest_collection_modifyitems(config, items):
    weight = {}  # test file -> how many of its tests need real sessions (the slow ones)
    for item in items:
        if item.path.suffix != ".py" or not item.path.name.startswith("test_"):
            continue  # the doctests of partsim/ need nothing
        marks = _marks_of(item)
        for mark in sorted(marks):
            item.add_marker(getattr(pytest.mark, mark))
        weight[item.path] = weight.get(item.path, 0) + bool(marks & _SLOW_MARKS)
    # the files with the most real-session tests first (the order within a file kept).  Under `make test`,
    # pytest-xdist (--dist loadfile, whose --loadscope-reorder is on by default) then hands out whole files, those
    # with the most tests first, ties in this order; either way the short files fill in at the end
    first = {}
    for k, item in enumerate(items):
        first.setdefault(item.path, k)
    items.sort(key=lambda it: (-weight.get(it.path, 0), first[it.path]))


_SLOW_MARKS = frozenset(("qnn", "openvino", "webgpu", "browser", "corpus"))
