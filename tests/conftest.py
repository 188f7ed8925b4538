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
# the developer's ~/.cache: every run starts cold, CLI subprocesses inherit the variable.
import atexit  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402

_TEST_CACHE = tempfile.mkdtemp(prefix="partsim-test-cache-")
os.environ["PARTSIM_CACHE_DIR"] = _TEST_CACHE
os.environ.pop("PARTSIM_NO_CACHE", None)
# no warm ORT worker outlives the tests (tests/test_ort_worker.py starts its own, in its own folder)
os.environ["PARTSIM_WORKER"] = "0"
atexit.register(shutil.rmtree, _TEST_CACHE, True)
