"""Materialize a runnable copy of a model: its weights, real or seeded random.

Graph-only models (``/work/shared/corpus/graph_only``) keep their float weights as
ONNX external data in ``<stem>.weights.bin``, a file that is not shipped.  ONNX
Runtime cannot open such a model.  :func:`materialize_weights` writes a copy of the
model into a folder of the caller's choosing; every external-data file the model
references is either copied there (when present next to the model) or created
there with seeded random values of each tensor's dtype and shape, at the offsets
the model names.  The model file itself is copied byte for byte, so its graph,
node names and external-data references are unchanged.

The user's files are never written: the output folder may not be the model's own
folder.  External-data locations must be relative paths inside the model's folder
(anything else is refused before a byte is read).

Random values (``numpy.random.default_rng(seed)``, tensors drawn in a fixed order:
by location, then offset, then name):

- floating tensors: normal, mean 0, standard deviation ``1/sqrt(fan_in)`` with
  ``fan_in = numel / dims[0]`` for rank >= 2 and 0.1 for rank <= 1, so deep
  networks neither explode nor vanish; the variance input of
  BatchNormalization is drawn uniform in [0.5, 1.5) (it must be positive);
- int8/uint8/int16/uint16/int32: uniform over a small range (quantized weights);
- int64/uint64/uint32: zeros (such tensors are usually indices or shapes, and 0 is
  always in range);
- bool: uniform {False, True}; other packed or 8-bit float types: random bytes with
  NaN patterns avoided.
"""

import os
import shutil
from pathlib import Path

from ..errors import ModelError, UsageError
from .external import check_external_location

__all__ = ["materialize_weights", "external_tensors", "external_data_ends"]

MAX_EXTERNAL_END = 2**40  # the largest external-data file partsim reads or makes a sparse copy of

# onnx.TensorProto.DataType -> (bytes per element, numpy dtype name or None).
# Packed 4-bit types use 0.5 byte per element (rounded up per tensor).
_ELEM = {
    1: (4, "float32"),     # FLOAT
    2: (1, "uint8"),       # UINT8
    3: (1, "int8"),        # INT8
    4: (2, "uint16"),      # UINT16
    5: (2, "int16"),       # INT16
    6: (4, "int32"),       # INT32
    7: (8, "int64"),       # INT64
    9: (1, "bool"),        # BOOL
    10: (2, "float16"),    # FLOAT16
    11: (8, "float64"),    # DOUBLE
    12: (4, "uint32"),     # UINT32
    13: (8, "uint64"),     # UINT64
    14: (8, "complex64"),  # COMPLEX64
    15: (16, "complex128"),  # COMPLEX128
    16: (2, None),         # BFLOAT16
    17: (1, None),         # FLOAT8E4M3FN
    18: (1, None),         # FLOAT8E4M3FNUZ
    19: (1, None),         # FLOAT8E5M2
    20: (1, None),         # FLOAT8E5M2FNUZ
    21: (0.5, None),       # UINT4
    22: (0.5, None),       # INT4
    23: (0.5, None),       # FLOAT4E2M1
    24: (1, None),         # FLOAT8E8M0
}


def _walk_tensors(graph):
    """Yield (TensorProto, description, consumer hint) for every external-data tensor of ``graph`` and
    the graphs inside it (:func:`partsim.io.subgraphs.all_graphs`, graph by graph).

    Covers initializers, sparse initializers, and TENSOR/TENSORS/SPARSE_TENSOR attributes
    (Constant values).  The hint is ``"batchnorm_var"`` for a BatchNormalization variance initializer.
    Tensors stored in the file are passed over before any description is made (a model's Constants
    are most of its nodes).
    """
    from .subgraphs import all_graphs

    for g in all_graphs(graph):
        yield from _graph_tensors(g)


def _graph_tensors(graph):
    """:func:`_walk_tensors` of one graph, its bodies left out."""
    import onnx

    A, EXTERNAL = onnx.AttributeProto, onnx.TensorProto.EXTERNAL
    bn_var = None
    for t in graph.initializer:
        if t.data_location == EXTERNAL:
            if bn_var is None:
                bn_var = {n.input[4] for n in graph.node
                          if n.op_type == "BatchNormalization" and n.domain in ("", "ai.onnx") and len(n.input) > 4}
            yield t, f"initializer {t.name!r}", ("batchnorm_var" if t.name in bn_var else None)
    for s in graph.sparse_initializer:
        if s.values.data_location == EXTERNAL:
            yield s.values, f"sparse initializer {s.values.name!r} (values)", None
        if s.indices.data_location == EXTERNAL:
            yield s.indices, f"sparse initializer {s.values.name!r} (indices)", None
    for n in graph.node:
        for a in n.attribute:
            kind = a.type
            if kind == A.TENSOR:
                if a.t.data_location == EXTERNAL:
                    yield a.t, f"node {n.name!r} attribute {a.name!r}", None
            elif kind == A.TENSORS:
                for t in a.tensors:
                    if t.data_location == EXTERNAL:
                        yield t, f"node {n.name!r} attribute {a.name!r}", None
            elif kind == A.SPARSE_TENSOR:
                for part, t in (("values", a.sparse_tensor.values), ("indices", a.sparse_tensor.indices)):
                    if t.data_location == EXTERNAL:
                        yield t, f"node {n.name!r} attribute {a.name!r} ({part})", None


def external_tensors(proto, model_path):
    """The external-data tensors of ``proto``, checked.

    Returns
    -------
    list of dict
        One per tensor: ``name, what, location, offset, length (or None), nbytes,
        dtype (onnx enum), dims, hint``; sorted by (location, offset, name).

    Raises
    ------
    ModelError
        A location that is absolute, empty, or escapes the model's folder; an
        offset/length that is not a non-negative integer; a dtype that cannot be
        stored as external data; a length that does not match dtype and shape.
    """
    import onnx

    base = Path(model_path).resolve().parent
    out = []
    for t, what, hint in _walk_tensors(proto.graph):
        target, info = check_external_location(t, what, base, model_path)
        loc = info["location"]
        try:
            offset = int(info.get("offset", "0") or 0)
            length = int(info["length"]) if info.get("length") not in (None, "") else None
        except ValueError:
            raise ModelError(f"{what}: external data offset/length is not an integer", model_path) from None
        if offset < 0 or (length is not None and length < 0):
            raise ModelError(f"{what}: negative external data offset/length", model_path)
        if t.data_type not in _ELEM:
            name = onnx.TensorProto.DataType.Name(t.data_type) if t.data_type in onnx.TensorProto.DataType.values() \
                else str(t.data_type)
            raise ModelError(f"{what}: dtype {name} cannot be materialized from external data", model_path)
        numel = 1
        for d in t.dims:
            if d < 0:
                raise ModelError(f"{what}: negative dimension {d}", model_path)
            numel *= int(d)
        size, _ = _ELEM[t.data_type]
        nbytes = (numel + 1) // 2 if size == 0.5 else numel * size
        if length is not None and length != nbytes:
            raise ModelError(f"{what}: external data length {length} does not match its dtype and shape "
                             f"({nbytes} bytes)", model_path)
        if offset + nbytes > MAX_EXTERNAL_END:  # no file system holds it; a sparse copy would fail (EFBIG)
            raise ModelError(f"{what}: external data ends at byte {offset + nbytes}, beyond the "
                             f"{MAX_EXTERNAL_END} bytes (1 TiB) partsim accepts", model_path)
        out.append({"name": t.name, "what": what, "location": loc, "rel": target.relative_to(base),
                    "offset": offset, "length": length, "nbytes": nbytes, "dtype": t.data_type,
                    "dims": tuple(int(d) for d in t.dims), "numel": numel, "hint": hint})
    out.sort(key=lambda e: (str(e["rel"]), e["offset"], e["name"]))
    return out


def external_data_ends(entries):
    """``{file relative to the model's folder: bytes the model reads from it}`` (where its last tensor
    there ends) over :func:`external_tensors`' ``entries``: the one count of the external-data sizes a
    model needs (:mod:`partsim.io.wire` reads the same off the file's bytes, before ``onnx`` is imported)."""
    need = {}
    for e in entries:
        need[e["rel"]] = max(need.get(e["rel"], 0), e["offset"] + e["nbytes"])
    return need


def _random_bytes(rng, entry):
    """Seeded random content for one tensor, as little-endian bytes."""
    import numpy as np

    dtype, numel, dims = entry["dtype"], entry["numel"], entry["dims"]
    size, npname = _ELEM[dtype]
    if dtype in (1, 10, 11, 16, 14, 15):  # float-like
        if entry["hint"] == "batchnorm_var":
            vals = rng.uniform(0.5, 1.5, size=numel)
        else:
            std = 0.1
            if len(dims) >= 2 and dims[0] > 0 and numel > 0:
                std = 1.0 / max(1.0, (numel / dims[0])) ** 0.5
            # float32 draws for the 16/32-bit types (half the memory of float64 on big models)
            vals = rng.standard_normal(numel, dtype=np.float64 if dtype in (11, 15) else np.float32)
            vals *= std
            if dtype in (14, 15):
                vals = vals + 1j * (rng.standard_normal(numel) * std)
        if dtype == 16:  # bfloat16: the upper half of float32, round to nearest even
            bits = vals.astype("<f4").view("<u4").astype(np.uint64)
            bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
            return bits.astype("<u2").tobytes()
        return vals.astype(np.dtype(npname).newbyteorder("<")).tobytes()
    if dtype == 9:
        return rng.integers(0, 2, size=numel).astype(np.uint8).tobytes()
    if dtype in (2, 3, 4, 5, 6):
        lo, hi = {2: (0, 256), 3: (-127, 128), 4: (0, 1024), 5: (-1024, 1024), 6: (-1024, 1024)}[dtype]
        return rng.integers(lo, hi, size=numel).astype(np.dtype(npname).newbyteorder("<")).tobytes()
    if dtype in (7, 12, 13):
        return bytes(entry["nbytes"])
    # 8-bit floats, 4-bit packed types: random bytes with the exponent kept below the
    # NaN/Inf patterns (clear the sign bit and the top exponent bit of every field).
    raw = rng.integers(0, 256, size=entry["nbytes"]).astype(np.uint8)
    raw &= 0x33 if size == 0.5 else 0x3F
    return raw.tobytes()


def materialize_weights(model_path, out_dir, seed=0):
    """Write a runnable copy of ``model_path`` into ``out_dir``.

    Parameters
    ----------
    model_path : str or Path
        The ONNX model; it and its folder are only read.
    out_dir : str or Path
        Folder for the copy (created if needed).  It may not be the model's own
        folder.  The model keeps its file name; external-data files keep their
        relative locations.
    seed : int
        Seed of ``numpy.random.default_rng`` for absent weights.

    Returns
    -------
    Path
        The copied model.

    Raises
    ------
    ModelError
        Unreadable model, unsafe or inconsistent external-data references, or an
        external-data file present but too short.
    UsageError
        ``out_dir`` is the model's own folder.

    Examples
    --------
    >>> p = materialize_weights("graph_only/resnet18.ts.onnx", tmp)   # doctest: +SKIP
    >>> onnxruntime.InferenceSession(str(p))                          # doctest: +SKIP
    """
    import numpy as np

    from .read import read_model_proto

    model_path = Path(model_path)
    proto, data = read_model_proto(model_path)
    entries = external_tensors(proto, model_path)
    base = model_path.resolve().parent
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    out_res = out.resolve()
    if out_res == base:
        raise UsageError("the output folder is the model's own folder; partsim never writes next to your model",
                         out_dir)

    by_file = {}
    for e in entries:
        by_file.setdefault(e["rel"], []).append(e)
    ends = external_data_ends(entries)
    rng = np.random.default_rng(seed)
    for rel in sorted(by_file, key=str):
        src = base / rel
        dst = out_res / rel
        if dst.resolve() == src.resolve():
            raise UsageError(f"writing {rel} would overwrite the model's own external data", out_dir)
        dst.parent.mkdir(parents=True, exist_ok=True)
        need = ends[rel]
        if src.is_file():
            have = src.stat().st_size
            if have < need:
                raise ModelError(f"external data file {str(rel)!r} has {have} bytes, the model needs {need}",
                                 model_path)
            shutil.copyfile(src, dst)
            continue
        if src.exists():
            raise ModelError(f"external data location {str(rel)!r} is not a regular file", model_path)
        buf = bytearray(need)
        for e in by_file[rel]:
            buf[e["offset"]:e["offset"] + e["nbytes"]] = _random_bytes(rng, e)
        tmp = dst.with_name(dst.name + ".partial")
        tmp.write_bytes(bytes(buf))
        os.replace(tmp, dst)
    target = out_res / model_path.name
    target.write_bytes(data)
    return target


def absent_external_data(entries, model_path):
    """``{"files": [...], "tensors": n}`` for the external-data files the tensors ``entries``
    (:func:`external_tensors`' list, locations checked) read that are not beside ``model_path`` (graph-only
    models), or None when every referenced file is there.  Nothing is opened."""
    base = Path(model_path).resolve().parent
    files, tensors, present = set(), 0, {}
    for e in entries:
        loc = e["location"]
        if not present.setdefault(loc, (base / loc).is_file()):
            files.add(loc)
            tensors += 1
    return {"files": sorted(files), "tensors": tensors} if files else None


def stand_in_note(absent):
    """The summary warning for :func:`absent_external_data`'s record."""
    return (f"weights absent ({', '.join(absent['files'])}: {absent['tensors']} tensors): ORT's optimizer ran on "
            "seeded stand-in values; constant folding that depends on weight values may differ with the real "
            "weights")
