"""JSON written as it is encoded: a million-node partitionSummary never exists as one string.

``json.dumps`` joins every encoded piece into one string (for a million nodes ~250 MB,
plus the list of ~40 million pieces behind it and the bytes made from it to write).
:func:`write_json` feeds the encoder's pieces straight into a buffered file instead;
the bytes are those of :func:`partsim.report.output.to_json`, key order and indent
included.  A file is still written atomically: a temporary file in the same folder,
renamed when complete.
"""

import sys

from .output import announce_written, atomic_file, json_encoder

__all__ = ["write_json", "iter_json"]

_BUFFER = 1 << 20


def iter_json(data):
    """The pieces of ``to_json(data)``, in order (their concatenation is byte-identical)."""
    yield from json_encoder().iterencode(data)
    yield "\n"


def _pump(data, write):
    """Encode ``data`` into ``write`` (bytes), about a megabyte at a time."""
    batch, size = [], 0
    for piece in iter_json(data):
        batch.append(piece)
        size += len(piece)
        if size >= _BUFFER:
            write("".join(batch).encode("utf-8"))
            batch, size = [], 0
    if batch:
        write("".join(batch).encode("utf-8"))


def write_json(data, output=None, announce=True):
    """Write ``data`` as canonical JSON to ``output`` (a path, atomically, announced on stderr) or
    stdout, streaming."""
    if output in (None, "-"):
        out = sys.stdout.buffer if hasattr(sys.stdout, "buffer") else None
        if out is None:  # a text stream (tests redirect stdout to StringIO)
            _pump(data, lambda b: sys.stdout.write(b.decode("utf-8")))
        else:
            sys.stdout.flush()
            _pump(data, out.write)
            out.flush()
        return
    with atomic_file(output) as f:
        _pump(data, f.write)
    if announce:
        announce_written(output)
