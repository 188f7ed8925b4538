"""modelBundleId (docs/contract.md §6): one identity for a model and everything that shapes its inputs and outputs.

Exactly what is hashed (all digests are lowercase sha256 hex):

1. ``model``: the model file's bytes as stored (external-data weight files are
   not included).
2. ``metadata``: the model's ``metadata_props`` plus the ``--metadata`` file.
   If the model has no metadata props and no file is given, the part is absent
   (sha256 of empty bytes).  Otherwise the bytes are the canonical JSON
   ``{"file": <sha256 hex of the file's bytes, or null>, "props": {key: value, …}}``
   (keys sorted, separators ``,`` and ``:``, UTF-8, no spaces, no newline).
3. ``labels``, 4. ``tokenizer``, 5. ``preprocessing``, 6. ``postprocessing``:
   the given file's bytes; absent -> empty bytes.

modelBundleId = sha256 of the ASCII text
``"model:<hex>\\nmetadata:<hex>\\nlabels:<hex>\\ntokenizer:<hex>\\npreprocessing:<hex>\\npostprocessing:<hex>\\n"``,
so anyone can redo it with ``sha256sum`` and ``printf``.
"""

import hashlib
import json
from pathlib import Path

from ..errors import UsageError

__all__ = ["PARTS", "bundle_id", "metadata_bytes", "combine"]

PARTS = ("model", "metadata", "labels", "tokenizer", "preprocessing", "postprocessing")
MAX_PART_BYTES = 2**31 - 1  # a model is at most what protobuf parses; the other parts are smaller
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()


def _read(path, what):
    from ..io.files import lexists, read_bytes

    p = Path(path)
    if not lexists(p):
        raise UsageError(f"no such {what} file", path)
    return read_bytes(p, MAX_PART_BYTES, UsageError, f"the {what} file")


def metadata_bytes(props, file_bytes=None):
    """The bytes hashed for the metadata part (empty when there is nothing).

    Examples
    --------
    >>> metadata_bytes({})
    b''
    >>> metadata_bytes({"b": "2", "a": "1"})
    b'{"file":null,"props":{"a":"1","b":"2"}}'
    """
    if not props and file_bytes is None:
        return b""
    doc = {"file": None if file_bytes is None else hashlib.sha256(file_bytes).hexdigest(),
           "props": dict(sorted(props.items()))}
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def combine(digests):
    """modelBundleId from the six part digests (dict part -> hex), in :data:`PARTS` order.

    Examples
    --------
    >>> d = {p: EMPTY_SHA256 for p in PARTS}
    >>> text = "".join(f"{p}:{EMPTY_SHA256}\\n" for p in PARTS).encode()
    >>> combine(d) == hashlib.sha256(text).hexdigest()
    True
    """
    text = "".join(f"{p}:{digests[p]}\n" for p in PARTS)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def bundle_id(model, metadata=None, labels=None, tokenizer=None, preprocessing=None, postprocessing=None):
    """Compute the modelBundleId of ``model`` and its associated files.

    Returns
    -------
    dict
        ``{modelBundleId, parts: {part: {sha256, source}}, metadataProps}``; ``source``
        is the file used, ``"model metadata_props"``, or null when the part is absent.
    """
    from ..io.read import read_model_proto

    proto, data = read_model_proto(model)
    props = {p.key: p.value for p in proto.metadata_props}
    meta_file = _read(metadata, "metadata") if metadata else None
    blobs = {"model": (data, str(model)),
             "metadata": (metadata_bytes(props, meta_file),
                          None if not props and meta_file is None else
                          " + ".join(x for x in ("model metadata_props" if props else "",
                                                 str(metadata) if metadata else "") if x))}
    for part, path in (("labels", labels), ("tokenizer", tokenizer), ("preprocessing", preprocessing),
                       ("postprocessing", postprocessing)):
        blobs[part] = (_read(path, part), str(path)) if path else (b"", None)
    parts = {p: {"sha256": hashlib.sha256(blobs[p][0]).hexdigest(), "source": blobs[p][1]} for p in PARTS}
    return {"modelBundleId": combine({p: parts[p]["sha256"] for p in PARTS}), "parts": parts,
            "metadataProps": dict(sorted(props.items()))}
