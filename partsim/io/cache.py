"""partsim's cache folder: where it is, and entries written so that readers never see half of one.

The folder is ``$PARTSIM_CACHE_DIR``, else ``$XDG_CACHE_HOME/partsim``, else ``~/.cache/partsim``;
``PARTSIM_NO_CACHE=1`` switches every cache off.  What is kept there is derived data only (parsed
rule tables, the graphs ORT's optimizer made), each entry named by a digest of everything it was
made from, so a stale entry is never found: a changed input is another name.  A cache that cannot
be written is no cache; nothing fails for it.

>>> import os, tempfile
>>> os.environ["PARTSIM_CACHE_DIR"] = tempfile.mkdtemp()
>>> put("demo", "k1", {"a.txt": b"hello"})
True
>>> (entry("demo", "k1") / "a.txt").read_bytes()
b'hello'
>>> entry("demo", "other") is None
True
"""

import os
import shutil
from pathlib import Path

__all__ = ["cache_root", "entry", "put"]


def cache_root():
    """The cache folder, or ``None`` when caching is switched off."""
    if os.environ.get("PARTSIM_NO_CACHE"):
        return None
    base = os.environ.get("PARTSIM_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "partsim")
    return Path(base)


def entry(kind, key):
    """The folder of a complete entry ``kind/key``, or ``None`` (absent, or caching off)."""
    root = cache_root()
    if root is None:
        return None
    d = root / kind / key
    return d if (d / ".complete").is_file() else None


def put(kind, key, files):
    """Write ``files`` (name -> bytes) as entry ``kind/key``; ``True`` when it was written."""
    root = cache_root()
    if root is None:
        return False
    final = root / kind / key
    tmp = root / kind / f".{key}.{os.getpid()}.tmp"
    try:
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.mkdir(parents=True)
        for name, data in files.items():
            (tmp / name).write_bytes(data)
        (tmp / ".complete").write_bytes(b"")
        if final.exists():
            shutil.rmtree(final, ignore_errors=True)
        os.replace(tmp, final)
        return True
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
        return False
