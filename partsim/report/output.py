"""Writing results: stdout or an atomically written file (nothing half-written on failure).

One JSON encoding for everything partsim writes (:func:`json_encoder`: sorted keys, two-space
indent, UTF-8 text as is); :func:`to_json` gives it as one string, ``report/stream.py`` piece by
piece for very large summaries.  Every output file goes through :func:`atomic_file`.
"""

import json
import os
import stat
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

from ..errors import UsageError

__all__ = ["json_encoder", "to_json", "write_output", "write_file", "atomic_write", "atomic_file",
           "announce_written", "output_target"]


def json_encoder(indent=2):
    """The encoder of every JSON partsim writes: sorted keys, ``indent`` (two spaces; 0 = one item a
    line, for big data files), non-ASCII text as is (not ``\\u`` escaped)."""
    return json.JSONEncoder(sort_keys=True, indent=indent, ensure_ascii=False)


def to_json(data, indent=2):
    """Canonical JSON with a trailing newline (byte-stable).

    >>> print(to_json({"b": 1, "a": "é"}), end="")
    {
      "a": "é",
      "b": 1
    }
    """
    return json_encoder(indent).encode(data) + "\n"


def output_target(path):
    """The file ``-o path`` writes, checked before anything is written: ``(target, mode, owner)``.

    Only regular files are written.  An existing ``path`` must be a regular file, or a symlink to
    one (then the file it points to is replaced, the link kept); a device (``/dev/null``), a FIFO,
    a socket, a folder or a dangling link is refused with a one-line :class:`UsageError`, so a CI
    job never turns ``/dev/null`` into a JSON file.  ``mode`` and ``owner`` are those of the
    existing file (``None`` for a new one): replacing it keeps them.
    """
    p = Path(path)
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        st = None
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot write output: {getattr(exc, 'strerror', None) or exc}", path) from None
    if st is not None and stat.S_ISLNK(st.st_mode):
        try:
            st = os.stat(p)
        except OSError:
            raise UsageError("output path is a symlink to nothing: not written", path) from None
        p = Path(os.path.realpath(p))
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise UsageError("output path is a folder, not a file", path)
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise UsageError("output path is not a regular file (a device, FIFO or socket): partsim writes only "
                         "regular files", path)
    folder = p.parent if str(p.parent) else Path(".")
    if not folder.is_dir():
        raise UsageError(f"output folder {str(folder)!r} does not exist", path)
    if st is None:
        return p, None, None
    return p, stat.S_IMODE(st.st_mode), (st.st_uid, st.st_gid)


#: the temporary files :func:`atomic_file` is writing now (a command ended by SIGTERM removes them: cli)
PENDING: set[str] = set()


@contextmanager
def atomic_file(path):
    """A binary file that becomes ``path`` only when the block completes.

    It is a temporary file in the same folder, renamed at the end; on any failure it is
    removed and the destination is left as it was.  The target is checked first
    (:func:`output_target`: regular files only); an existing file keeps its mode and owner.
    An OS error (no such folder, no permission, disk full) becomes a one-line :class:`UsageError`.
    """
    p, mode, owner = output_target(path)
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
        PENDING.add(tmp)
        if mode is None:
            mask = os.umask(0)
            os.umask(mask)
            mode = 0o666 & ~mask  # mkstemp makes 0600; a new output file follows the umask
        elif owner is not None and os.geteuid() == 0:
            try:
                os.fchown(fd, *owner)
            except OSError:
                pass
        os.fchmod(fd, mode)
    except OSError as exc:
        if tmp is not None:  # made, but its mode could not be set: not left behind
            os.close(fd)
            os.unlink(tmp)
            PENDING.discard(tmp)
        raise UsageError(f"cannot write output: {exc.strerror or exc}", path) from None
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
        os.replace(tmp, p)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise UsageError(f"cannot write output: {exc.strerror or exc}", path) from None
        raise
    finally:
        PENDING.discard(tmp)


def atomic_write(path, text_or_bytes):
    """Write ``text_or_bytes`` (text as UTF-8) to ``path`` through :func:`atomic_file`."""
    data = text_or_bytes.encode("utf-8") if isinstance(text_or_bytes, str) else text_or_bytes
    with atomic_file(path) as f:
        f.write(data)


def announce_written(path):
    """One line on stderr saying what a command wrote, so ``-o`` does not finish in silence:
    ``partsim: wrote out.json (2.1 KiB)``."""
    from .text import human_bytes

    print(f"partsim: wrote {path} ({human_bytes(os.path.getsize(path))})", file=sys.stderr, flush=True)


def write_file(path, text_or_bytes, announce=True):
    """:func:`atomic_write`, then (``announce``) :func:`announce_written`."""
    atomic_write(path, text_or_bytes)
    if announce:
        announce_written(path)


def write_output(text, output=None, announce=True):
    """Write the payload to ``output`` (a path, announced on stderr) or stdout."""
    if output in (None, "-"):
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        write_file(output, text, announce)
