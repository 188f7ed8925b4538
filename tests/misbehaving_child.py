"""A stand-in for partsim/runtime/ort_child.py that misbehaves as the test asks (test-only).

``PARTSIM_TEST_CHILD``: ``crash`` (abort), ``hang`` (sleep), ``hog`` (allocate without bound),
``babble`` (a line out of protocol), ``orphan`` (start a grandchild, then hang: both must go).  Before it
hangs it leaves a folder in its ``TMPDIR``, as a session killed mid-way leaves its profile and log, and like
the real child it dies with its parent.  ``PARTSIM_TEST_CHILD_ONCE=<file>``: misbehave only while
that file does not exist (it is made on the first run), then be the real child: a failure that a
fresh child does not repeat.
"""

import os
import sys
import time
from pathlib import Path

REAL = Path(__file__).resolve().parents[1] / "partsim" / "runtime" / "ort_child.py"


def _session_files():
    """What a session killed mid-way leaves: a folder of its own in the child's TMPDIR."""
    import tempfile

    with open(os.path.join(tempfile.mkdtemp(prefix="partsim-ort-"), "ort.log"), "w") as f:
        f.write("a session under way\n")


def main():
    sys.path.insert(0, str(REAL.parent))
    import ort_child

    if not ort_child._die_with_parent():
        return
    once = os.environ.get("PARTSIM_TEST_CHILD_ONCE")
    if once:
        if os.path.exists(once):
            os.execv(sys.executable, [sys.executable, str(REAL), *sys.argv[1:]])
        open(once, "w").close()
    how = os.environ.get("PARTSIM_TEST_CHILD", "crash")
    if how == "crash":
        os.abort()
    if how == "orphan":
        import subprocess

        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
        _session_files()
        time.sleep(3600)
    if how == "hang":
        _session_files()
        time.sleep(3600)
    if how == "hog":
        hog = []
        while True:
            hog.append(bytearray(256 * 1024**2))
    if how == "babble":
        print('{"version": 99, "type": "optimize_record"}', flush=True)


if __name__ == "__main__":
    main()
