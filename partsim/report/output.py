"""Writing results: stdout or an atomically written file (nothing half-written on failure)."""

import json
import os
import sys
import tempfile
from pathlib import Path

from ..errors import UsageError

__all__ = ["to_json", "write_output", "atomic_write"]


def to_json(data):
    """Canonical JSON: sorted keys, two-space indent, trailing newline (byte-stable)."""
    return json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def atomic_write(path, text_or_bytes):
    """Write via a temporary file in the same folder, then rename.

    On any failure the temporary file is removed and the destination is left as
    it was; an OS error (no such folder, a folder in the way, no permission, disk
    full) becomes a one-line :class:`UsageError`.
    """
    p = Path(path)
    folder = p.parent if str(p.parent) else Path(".")
    if not folder.is_dir():
        raise UsageError(f"output folder {str(folder)!r} does not exist", path)
    if p.is_dir():
        raise UsageError("output path is a folder, not a file", path)
    data = text_or_bytes.encode("utf-8") if isinstance(text_or_bytes, str) else text_or_bytes
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=folder)
        mask = os.umask(0)
        os.umask(mask)
        os.fchmod(fd, 0o666 & ~mask)  # mkstemp makes 0600; a normal output file follows the umask
    except OSError as exc:
        raise UsageError(f"cannot write output: {exc.strerror or exc}", path) from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, p)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise UsageError(f"cannot write output: {exc.strerror or exc}", path) from None
        raise


def write_output(text, output=None):
    """Write the payload to ``output`` (a path) or stdout."""
    if output in (None, "-"):
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        atomic_write(output, text)
