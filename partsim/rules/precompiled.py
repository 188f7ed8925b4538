"""The shipped tables parsed and validated ahead of time (``partsim/data/tables/<name>.json``).

Reading a shipped table the long way (YAML events for the alias and depth checks, a composed
tree for line numbers, JSON-Schema validation) costs about 0.1 s per large table, more than
the rest of a small prediction.  ``make tables`` stores each shipped table's result once, under
a key that covers partsim's version, the schema and the table's exact text; a table is taken
from the store only when its text has that key, so an edited, renamed or user-made table goes
the long way (and into the user's cache, :mod:`partsim.io.cache`).  ``tests/rules/test_precompiled_tables.py``
checks that the store is current and equals what the long way gives.

>>> table_key("provider: X") == table_key("provider: X"), table_key("a") == table_key("b")
(True, False)
"""

import hashlib
import json
import os
from functools import lru_cache
from pathlib import Path

from ..data import data_path

__all__ = ["table_key", "lookup", "store_dir", "entry_text", "write_store"]


@lru_cache(maxsize=1)
def _schema_text():
    return json.dumps(json.loads(data_path("rules.schema.json").read_text()), sort_keys=True)


def table_key(text):
    """The digest a parsed table is stored under: partsim's version, the schema, the text."""
    from .. import __version__

    h = hashlib.sha256()
    for part in (__version__, _schema_text(), text):
        h.update(part.encode("utf-8"))
        h.update(b"\0")
    return h.hexdigest()


def store_dir():
    return data_path("tables")


def lookup(text, path, store=None):
    """``(data, lines)`` stored for the table ``path`` with exactly ``text``, else ``None``."""
    f = Path(store or store_dir()) / f"{Path(str(path)).stem}.json"
    try:
        doc = json.loads(f.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("key") != table_key(text):
        return None
    try:
        return doc["data"], {tuple(k): v for k, v in doc["lines"]}
    except (KeyError, TypeError, ValueError):
        return None


def entry_text(text, data, lines):
    """One store file's text: the key, the parsed data and the line of each JSON path."""
    doc = {"key": table_key(text), "data": data, "lines": [[list(k), v] for k, v in lines.items()]}
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False) + "\n"


def write_store(entries, store=None):
    """Write ``{name: (text, data, lines)}`` as the store (files of other names removed)."""
    out = Path(store or store_dir())
    out.mkdir(parents=True, exist_ok=True)
    keep = set()
    for name, (text, data, lines) in sorted(entries.items()):
        f = out / f"{name}.json"
        keep.add(f.name)
        tmp = f.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(entry_text(text, data, lines), encoding="utf-8")
        os.replace(tmp, f)
    for f in out.glob("*.json"):
        if f.name not in keep:
            f.unlink()
    return sorted(keep)
