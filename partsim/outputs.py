"""Writing results: stdout or an atomically written file (nothing half-written on failure)."""

import json
import os
import sys
import tempfile
from pathlib import Path

from .errors import UsageError

__all__ = ["to_json", "write_output", "atomic_write"]


def to_json(data):
    """Canonical JSON: sorted keys, two-space indent, trailing newline (byte-stable)."""
    return json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def atomic_write(path, text_or_bytes):
    """Write via a temporary file in the same folder, then rename."""
    p = Path(path)
    folder = p.parent if str(p.parent) else Path(".")
    if not folder.is_dir():
        raise UsageError(f"output folder {str(folder)!r} does not exist", path)
    data = text_or_bytes.encode("utf-8") if isinstance(text_or_bytes, str) else text_or_bytes
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, p)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_output(text, output=None):
    """Write the payload to ``output`` (a path) or stdout."""
    if output in (None, "-"):
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        atomic_write(output, text)
