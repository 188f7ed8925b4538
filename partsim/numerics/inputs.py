"""Seeded model inputs, ``.npz`` input files (no pickles) and the inputDigest.

The one generator of seeded inputs: ``partsim observe``/``verify --observe`` (through
:func:`partsim.runtime.observe.run_session`, which hands the arrays to its child as ``.npz``) and
the numeric commands feed a model the same arrays:
``numpy.random.default_rng(seed)``, the model's graph inputs in declaration order
(initializers excluded), dynamic dimensions from ``dims`` (default 1); floats are
standard normal, integers uniform in ``[0, 4)``, bools uniform.

inputDigest (docs/contract.md §6) is sha256 over, for every input in name order (Python
string order), the bytes ``"<dtype>:<d0>,<d1>,…\\n"`` (numpy dtype name, e.g.
``float32:1,3,64,64``; a scalar has an empty shape list) followed by the array's
raw C-order little-endian bytes.  Input names are not hashed.
"""

import hashlib
from pathlib import Path

from ..errors import UsageError

MAX_NPZ_BYTES = 8 * 2**30  # inputs or expected outputs of one sample

__all__ = ["seeded_inputs", "graph_input_specs", "load_npz", "save_npz", "input_digest", "tensor_header"]

# ONNX TensorProto elem_type -> numpy dtype name (types random inputs can fill)
_NP = {1: "float32", 11: "float64", 10: "float16", 7: "int64", 6: "int32", 3: "int8", 2: "uint8", 9: "bool",
       5: "int16", 4: "uint16"}


def graph_input_specs(proto):
    """``[(name, elem_type, [dim, …])]`` of the real graph inputs (initializers excluded).

    A dim is an int, or a string (symbolic) / None (unknown).
    """
    inits = {i.name for i in proto.graph.initializer}
    out = []
    for vi in proto.graph.input:
        if vi.name in inits:
            continue
        tt = vi.type.tensor_type
        dims = []
        for d in tt.shape.dim:
            if d.HasField("dim_value"):
                dims.append(int(d.dim_value))
            else:
                dims.append(d.dim_param or None)
        out.append((vi.name, tt.elem_type, dims))
    return out


def seeded_inputs(specs, seed=0, dims=None):
    """Seeded random feeds for ``specs`` (see :func:`graph_input_specs`).

    Examples
    --------
    >>> f = seeded_inputs([("x", 1, [2, 3])], seed=0)
    >>> f["x"].shape, str(f["x"].dtype)
    ((2, 3), 'float32')
    """
    import numpy as np

    rng = np.random.default_rng(seed)
    dims = dims or {}
    feeds = {}
    for name, elem, shape in specs:
        shp = [d if isinstance(d, int) and d >= 0 else int(dims.get(str(d), 1)) for d in shape]
        dt = _NP.get(elem)
        if dt is None:
            raise UsageError(f"input {name!r} has ONNX type {elem}, which seeded inputs cannot fill; "
                             "pass --inputs FILE.npz")
        if dt == "bool":
            feeds[name] = rng.random(shp) < 0.5
        elif dt.startswith(("int", "uint")):
            feeds[name] = rng.integers(0, 4, size=shp).astype(dt)
        else:
            feeds[name] = rng.standard_normal(shp).astype(dt)
    return feeds


def load_npz(path):
    """Arrays of an ``.npz`` keyed by name; pickles and object arrays are refused (docs/contract.md §8)."""
    import numpy as np

    import io

    from ..io.files import lexists, read_bytes

    p = Path(path)
    if not lexists(p):
        raise UsageError("no such inputs file", path)
    data = read_bytes(p, MAX_NPZ_BYTES, UsageError, "the .npz")  # a regular file, bounded
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except (ValueError, OSError, EOFError, KeyError) as exc:
        raise UsageError(f"not a readable .npz without pickles: {' '.join(str(exc).split())[:200]}", path) from None
    except Exception as exc:  # zipfile.BadZipFile and friends
        raise UsageError(f"not a readable .npz: {type(exc).__name__}", path) from None
    for k, a in arrays.items():
        if a.dtype.hasobject or a.dtype.kind in "OV":
            raise UsageError(f"array {k!r} has dtype {a.dtype}, refused", path)
    if not arrays:
        raise UsageError("the .npz holds no arrays", path)
    return arrays


def save_npz(path, arrays):
    """Write ``arrays`` (name -> ndarray) to ``path`` uncompressed."""
    import numpy as np

    with open(path, "wb") as f:
        np.savez(f, **{k: arrays[k] for k in sorted(arrays)})


def tensor_header(arr):
    """The bytes hashed before an array's data: ``b"float32:1,3,64,64\\n"``."""
    return f"{arr.dtype.name}:{','.join(str(int(d)) for d in arr.shape)}\n".encode("ascii")


def input_digest(arrays):
    """inputDigest: sha256 hex over dtype, shape and raw bytes of every input in name order.

    Examples
    --------
    >>> import numpy as np, hashlib
    >>> a = np.arange(3, dtype="<i8")
    >>> input_digest({"x": a}) == hashlib.sha256(b"int64:3\\n" + a.tobytes()).hexdigest()
    True
    """
    import numpy as np

    h = hashlib.sha256()
    for name in sorted(arrays):
        a = np.asarray(arrays[name])
        a = np.ascontiguousarray(a.astype(a.dtype.newbyteorder("<"), copy=False))
        h.update(tensor_header(a))
        h.update(a.tobytes(order="C"))
    return h.hexdigest()


def prepare_feeds(model_path, seed=0, inputs=None, dims=None):
    """Feeds for ``model_path``: the ``--inputs`` arrays, or seeded ones from its input specs."""
    from ..io.read import read_model_proto

    proto, _ = read_model_proto(model_path)
    specs = graph_input_specs(proto)
    if inputs is not None:
        missing = sorted({s[0] for s in specs} - set(inputs))
        if missing:
            raise UsageError(f"--inputs lacks the model inputs {missing}")
        return {s[0]: inputs[s[0]] for s in specs}
    return seeded_inputs(specs, seed, dims)
