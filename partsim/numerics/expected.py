"""Authoritative outputs for the CPU baseline gate: ``.npz`` files or ONNX test-data ``output_<n>.pb`` sets.
"""

from pathlib import Path

from ..errors import UsageError

__all__ = ["load_expected"]

MAX_TENSOR_BYTES = 2**31 - 1  # protobuf's limit


def read_pb(path):
    import onnx
    from onnx import numpy_helper

    from ..io.files import read_bytes

    t = onnx.TensorProto()
    data = read_bytes(path, MAX_TENSOR_BYTES, UsageError, "an expected-output tensor")
    try:
        t.ParseFromString(data)
        return t.name, numpy_helper.to_array(t)
    except Exception as exc:  # protobuf DecodeError and friends
        raise UsageError(f"not a readable ONNX TensorProto: {type(exc).__name__}", path) from None


def pb_set(folder, prefix, names):
    import re

    files = sorted((int(m.group(1)), f) for f in Path(folder).glob(f"{prefix}_*.pb")
                   if (m := re.fullmatch(rf"{prefix}_(\d+)\.pb", f.name)))
    out = {}
    for n, f in files:
        tname, arr = read_pb(f)
        name = tname or (names[n] if n < len(names) else None)
        if name is None:
            raise UsageError(f"{f.name}: no tensor name and no model {prefix} number {n}", f)
        out[name] = arr
    return out


def load_expected(path, output_names, sample=None):
    """Authoritative outputs: ``(arrays, source, inputs-or-None)``.

    ``path`` is an ``.npz`` file, or a folder holding ``<sample>.npz``, a single
    ``.npz``, or ONNX test data (``output_<n>.pb``, and ``input_<n>.pb`` which then
    are the sample's inputs unless ``--inputs`` is given).
    """
    from .inputs import load_npz

    p = Path(path)
    if p.is_file():
        return load_npz(p), "npz", None
    if not p.is_dir():
        raise UsageError("no such expected-outputs file or folder", path)
    if sample and (p / f"{sample}.npz").is_file():
        return load_npz(p / f"{sample}.npz"), "npz", None
    npzs = sorted(p.glob("*.npz"))
    if len(npzs) == 1:
        return load_npz(npzs[0]), "npz", None
    if list(p.glob("output_*.pb")):
        return pb_set(p, "output", output_names), "onnx-test-data", p
    raise UsageError("expected outputs: need one .npz (keyed by output name) or output_<n>.pb files", path)
