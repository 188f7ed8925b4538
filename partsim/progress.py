"""Progress lines on stderr for long runs (``partsim --progress``): never on stdout, never in the payload.

``auto`` (the default) reports only when stderr is a terminal, so pipes, CI logs and
machine formats stay clean; ``always`` and ``never`` force it.  Each stage line says
what was done and how long it took, e.g. ``[partsim] loaded 1,000,000 nodes (31.2 s)``.
"""

import sys
import time
from contextlib import contextmanager

__all__ = ["configure", "stage", "enabled"]

_mode = "auto"


def configure(mode):
    """Set ``auto``, ``always`` or ``never``."""
    global _mode
    _mode = mode


def enabled():
    if _mode == "always":
        return True
    if _mode == "never":
        return False
    return sys.stderr.isatty()


@contextmanager
def stage(doing, done=None):
    """Report ``doing …`` before a block and ``done (N s)`` after it.

    ``done`` may be a callable returning the message, evaluated after the block.
    """
    if not enabled():
        yield
        return
    t0 = time.perf_counter()
    print(f"[partsim] {doing} …", file=sys.stderr, flush=True)
    yield
    text = done() if callable(done) else (done or doing)
    print(f"[partsim] {text} ({time.perf_counter() - t0:.1f} s)", file=sys.stderr, flush=True)
