"""Reading a file the user names: a regular file, a bounded size, one-line errors naming it.

Every input partsim reads (models, rule tables, observations, receipts, requirement
files, ORT's kernel docs) goes through :func:`read_bytes` or :func:`read_text`, so a
folder, a FIFO, ``/dev/zero``, a missing file, a file too large or one that is not
text gets the same clear refusal whatever the command (docs/contract.md §8).

>>> import tempfile, os
>>> d = tempfile.mkdtemp()
>>> read_text(d, 10)
Traceback (most recent call last):
...
partsim.errors.UsageError: ...: not a regular file
"""

import os
import stat
from pathlib import Path

from ..errors import UsageError

__all__ = ["read_bytes", "read_text", "lexists"]


def lexists(path):
    """Whether ``path`` names anything (a dangling symlink included), never raising: a name too long
    for the file system or with a NUL byte names nothing (``Path.exists`` raises for the first)."""
    try:
        os.lstat(path)
        return True
    except (OSError, ValueError):
        return False


def read_bytes(path, limit, error=UsageError, what="file"):
    """The bytes of ``path``, at most ``limit`` of them (bounded even if the file grows while read).

    ``error(message, path)`` is raised for a missing or unreadable file, anything but a
    regular file, and a file over ``limit`` bytes; ``what`` names the file in the message.
    """
    p = Path(path)
    try:
        st = p.stat()
    except FileNotFoundError:
        raise error("no such file", path) from None
    except OSError as exc:
        raise error(f"cannot read: {exc.strerror}", path) from None
    except ValueError as exc:  # a NUL byte in the name
        raise error(f"cannot read: {exc}", path) from None
    if not stat.S_ISREG(st.st_mode):  # a folder, a FIFO, /dev/zero: never read from those
        raise error("not a regular file", path)
    if st.st_size > limit:
        raise error(f"{what} is {st.st_size} bytes, more than the {limit} allowed", path)
    try:
        with open(p, "rb") as f:
            data = f.read(limit + 1)
    except OSError as exc:
        raise error(f"cannot read: {exc.strerror}", path) from None
    if len(data) > limit:
        raise error(f"{what} is more than the {limit} bytes allowed", path)
    return data


def read_text(path, limit, error=UsageError, what="file"):
    """:func:`read_bytes`, decoded as UTF-8 (``error`` naming the first bad byte otherwise)."""
    data = read_bytes(path, limit, error, what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"not UTF-8 text (byte {exc.start})", path) from None
