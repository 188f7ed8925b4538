"""The graphs ORT's optimizer made, kept by exactly what ORT was given.

ORT's optimizer session (:mod:`partsim.runtime.child_optimize`) is a function of its request: the
model file's bytes, the sizes of its external-data files (their values do not shape the graph,
see :func:`partsim.runtime.ort_pipeline._structural_copy`), the level, the transformers switched
off, the session options, and the ORT build that runs it.  The digest of all of that names a cache
entry (:mod:`partsim.io.cache`, kind ``optimized``) holding the optimized graph without its
weights, the size of its weights file and ORT's answer.  Checking an unchanged model again (a
pre-commit hook, CI on every push) then needs no ORT session at all; a changed byte anywhere in
that list is another entry.  ORT's own failures are kept too (they are as deterministic); a child
that crashed or timed out is not.

``PARTSIM_NO_CACHE=1`` switches it off; ``PARTSIM_CACHE_DIR`` moves it.
"""

import hashlib
import json
import os
from dataclasses import asdict
from functools import lru_cache
from pathlib import Path

from ..io.cache import get, put
from .ort_protocol import OptimizeRecord

__all__ = ["request_key", "lookup", "remember"]

KIND = "optimized"
_FORMAT = "partsim-ort-optimizer-2"


@lru_cache(maxsize=1)
def _ort_build():
    """What identifies the ORT build the child imports (:func:`partsim.versions.ort_build`)."""
    from ..versions import ort_build

    return ort_build()


def request_key(model_file, request):
    """The digest naming the cache entry for ``request`` (an :class:`partsim.runtime.ort_protocol.OptimizeRequest`) on
    ``model_file`` (the copy ORT opens, its external-data files beside it), or ``None`` when the
    ORT build cannot be identified."""
    from ..versions import target_build

    build = target_build() or _ort_build()  # the ORT that runs the session (--ort/--python: another one)
    if build is None:
        return None
    request = asdict(request)
    h = hashlib.sha256()
    fixed = {k: request[k] for k in sorted(request) if k not in ("model", "target")}
    h.update(json.dumps([_FORMAT, build, fixed], sort_keys=True).encode())
    model_file = Path(model_file)
    h.update(model_file.read_bytes())
    folder = model_file.parent
    sizes = []
    for root, _dirs, files in os.walk(folder):
        for f in files:
            p = Path(root) / f
            if p != model_file:
                sizes.append([str(p.relative_to(folder)), p.stat().st_size])
    h.update(json.dumps(sorted(sizes)).encode())
    return h.hexdigest()


_MODEL, _TEMP = "\x00model\x00", "\x00temp\x00"


def _paths(model, target):
    """(text, placeholder) pairs: ORT's messages name the copy it was given and the temp folder,
    which differ from run to run; the cache keeps placeholders."""
    model, temp = Path(model), Path(target).parent
    pairs = []
    for p in (model.resolve(), model):
        pairs.append((str(p), _MODEL))
    for p in (temp.resolve(), temp):
        pairs.append((str(p), _TEMP))
    return pairs


def _swap(record, pairs, back=False):
    text = json.dumps(record, sort_keys=True)
    for real, token in pairs:
        token = json.dumps(token)[1:-1]
        text = text.replace(token, real) if back else text.replace(json.dumps(real)[1:-1], token)
    return json.loads(text)


def lookup(key, target, weights_name, model=None):
    """ORT's record for ``key`` when cached, with the optimized graph written to ``target`` and a
    sparse weights file of the recorded size beside it; else ``None``.  Paths in ORT's messages
    name this run's copy of the model (``model``) again."""
    if key is None:
        return None
    files = get(KIND, key)  # checked against the digests written with them
    if files is None:
        return None
    try:
        meta = json.loads(files["meta.json"])
        if "graph.onnx" in files:
            target.write_bytes(files["graph.onnx"])
            with open(target.parent / weights_name, "wb") as f:
                os.truncate(f.fileno(), int(meta.get("weights_size", 0)))
        record = meta["record"]
        record = _swap(record, _paths(model, target), back=True) if model is not None else record
        return OptimizeRecord(**record)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def remember(key, record, target, weights_name, model=None):
    """Keep ORT's ``record`` (and the optimized graph at ``target``, if written) under ``key``;
    ``model`` (the copy ORT opened) and the temp folder are kept as placeholders in its messages."""
    if key is None:
        return
    files = {}
    weights = target.parent / weights_name
    record = asdict(record)
    if model is not None:
        record = _swap(record, _paths(model, target))
    meta = {"record": record, "weights_size": weights.stat().st_size if weights.is_file() else 0}
    if target.is_file():
        files["graph.onnx"] = target.read_bytes()
    files["meta.json"] = json.dumps(meta, sort_keys=True).encode()
    put(KIND, key, files)
