"""partsim's cache folder: where it is, and entries written so that readers never see half of one.

The folder is ``$PARTSIM_CACHE_DIR``, else ``$XDG_CACHE_HOME/partsim``, else ``~/.cache/partsim``;
``PARTSIM_NO_CACHE=1`` switches every cache off (:func:`cache_enabled`).  What is kept there is derived data only (parsed
rule tables, the graphs ORT's optimizer made), each entry named by a digest of everything it was
made from, so a stale entry is never found: a changed input is another name.  Every entry also
carries the digest of its content, checked on read: a damaged entry is dropped and made again.  A cache that cannot
be written is no cache; nothing fails for it.

>>> import os, tempfile
>>> os.environ["PARTSIM_CACHE_DIR"] = tempfile.mkdtemp()
>>> put("demo", "k1", {"a.txt": b"hello"})
True
>>> get("demo", "k1")
{'a.txt': b'hello'}
>>> entry("demo", "other") is None
True
"""

import hashlib
import json
import os
import shutil
from pathlib import Path

__all__ = ["cache_root", "cache_enabled", "entry", "get", "put", "seal", "unseal", "read_sealed",
           "write_sealed"]

MAX_ENTRY_BYTES = 2**31 - 1  # an optimized graph is at most what protobuf parses
_OFF = ("0", "false", "no", "off", "")
_ON = ("1", "true", "yes", "on")


def cache_enabled():
    """Whether ``PARTSIM_NO_CACHE`` leaves the cache on: unset, ``0``, ``false``, ``no``, ``off`` or
    empty mean on (the variable says "no cache": ``0`` is "no cache: no", a cache); ``1``,
    ``true``, ``yes``, ``on`` (any case) mean off.  Another value is read as "off" (the safe side).

    >>> os.environ["PARTSIM_NO_CACHE"] = "0"; cache_enabled()
    True
    >>> os.environ["PARTSIM_NO_CACHE"] = "yes"; cache_enabled()
    False
    >>> del os.environ["PARTSIM_NO_CACHE"]
    """
    value = os.environ.get("PARTSIM_NO_CACHE")
    return value is None or value.strip().lower() in _OFF


def cache_root():
    """The cache folder, or ``None`` when caching is switched off."""
    if not cache_enabled():
        return None
    base = os.environ.get("PARTSIM_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "partsim")
    return Path(base)


def seal(data):
    """``data`` preceded by its sha256 (one line): what :func:`unseal` checks."""
    return hashlib.sha256(data).hexdigest().encode("ascii") + b"\n" + data


def unseal(blob):
    """The data of a :func:`seal` ed blob, or ``None`` when it was cut, emptied or changed."""
    digest, sep, data = blob.partition(b"\n")
    if not sep or hashlib.sha256(data).hexdigest().encode("ascii") != digest:
        return None
    return data


def read_sealed(path, limit=MAX_ENTRY_BYTES):
    """The checked content of a sealed cache file, or ``None`` (absent, not a regular file, too big,
    damaged: a damaged file is removed, so the next run writes it again)."""
    from ..errors import PartsimError
    from .files import read_bytes

    try:
        blob = read_bytes(path, limit + 100)
    except PartsimError:
        return None
    data = unseal(blob)
    if data is None:
        _drop(Path(path))
    return data


def write_sealed(path, data):
    """Write ``data`` sealed to ``path`` (atomically: a temporary file renamed); ``False`` on failure."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(seal(data))
        os.replace(tmp, path)
        return True
    except OSError:
        _drop(tmp)
        return False


def _drop(path):
    try:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink()
    except OSError:
        pass


def entry(kind, key):
    """The folder of a complete entry ``kind/key``, or ``None`` (absent, or caching off).  Its files
    are not checked: read them with :func:`get`."""
    root = cache_root()
    if root is None:
        return None
    d = root / kind / key
    return d if (d / ".complete").is_file() else None


def get(kind, key):
    """The files of entry ``kind/key`` (name -> bytes), each checked against the digest written
    with it; ``None`` when absent, off, or damaged (a file replaced, cut, emptied, added or gone:
    the entry is removed, to be made again)."""
    d = entry(kind, key)
    if d is None:
        return None
    from ..errors import PartsimError
    from .files import read_bytes

    try:
        manifest = json.loads(unseal(read_bytes(d / ".complete", 1 << 20)) or b"null")
        if not isinstance(manifest, dict):
            raise ValueError("no manifest")
        files = {}
        for name, digest in manifest.items():
            data = read_bytes(d / name, MAX_ENTRY_BYTES)
            if hashlib.sha256(data).hexdigest() != digest:
                raise ValueError(f"{name} changed")
            files[name] = data
        if sorted(p.name for p in d.iterdir()) != sorted([".complete", *manifest]):
            raise ValueError("files added or removed")
        return files
    except (PartsimError, ValueError, OSError, UnicodeDecodeError):
        _drop(d)
        return None


def put(kind, key, files):
    """Write ``files`` (name -> bytes) as entry ``kind/key`` with their digests; ``True`` when written."""
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
        manifest = {name: hashlib.sha256(data).hexdigest() for name, data in sorted(files.items())}
        (tmp / ".complete").write_bytes(seal(json.dumps(manifest, sort_keys=True).encode()))
        if final.exists():
            shutil.rmtree(final, ignore_errors=True)
        os.replace(tmp, final)
        return True
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
        return False
