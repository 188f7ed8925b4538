"""The child's ``facts`` sub-command: what the ORT of this interpreter is (version, distribution,
plugins, the build's identity for cache keys), its CPU kernel registry and load limits; with
``refresh`` also ORT's own operator schemas and its package folder (``partsim rules refresh``).

Runs inside :mod:`partsim.runtime.ort_child` for :func:`partsim.versions.select`, in the interpreter
of ``--ort``/``--python``, which need not have partsim installed (it is put on the path here) nor
anything but onnxruntime.
"""

import sys
from pathlib import Path

if __package__:  # imported as partsim.runtime.child_facts (the tests)
    from .ort_protocol import FactsRecord
else:  # run by ort_child.py, the modules beside it top-level
    from ort_protocol import FactsRecord


def run(ort, req):
    """The :class:`ort_protocol.FactsRecord` of this interpreter's ORT (``req``: :class:`ort_protocol.FactsRequest`)."""
    if str(Path(__file__).resolve().parents[2]) not in sys.path:
        sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from importlib import metadata

    from partsim.versions import ORT_DISTRIBUTIONS, PLUGIN_DISTRIBUTIONS, installed_ort, ort_build

    version, rows, rows_error = _guarded_registry_rows(ort)
    plugins = {}
    for dist in PLUGIN_DISTRIBUTIONS:
        try:
            plugins[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    dist = installed_ort()[0] or ORT_DISTRIBUTIONS[0]
    facts = {"version": version, "distribution": dist, "plugins": plugins,
             "build": [sys.executable, *(ort_build() or ())], "rows": rows, "limits": load_limits()}
    if rows_error:
        facts["rowsError"] = rows_error
    if req.refresh:  # partsim rules refresh: the rest of what the wheel can tell
        from partsim.gen.contrib_schemas import generate_contrib_schemas

        facts["contribSchemas"] = generate_contrib_schemas()
        facts["package"] = str(Path(ort.__file__).resolve().parent)
    yield FactsRecord(facts)


def _guarded_registry_rows(ort):
    """``(version, rows, None)`` of this ORT's CPU kernel registry (:func:`partsim.gen.ort_kernels.registry_rows`),
    read in a process of its own; ``(version,
    None, why)`` when reading it kills that process: onnxruntime-openvino 1.24.1's get_all_opkernel_def()
    segfaults (measured), and the facts of the build are still worth having."""
    import json
    import subprocess

    root = str(Path(__file__).resolve().parents[2])
    code = ("import json, sys; sys.path.insert(0, sys.argv[1]); from partsim.gen.ort_kernels import registry_rows; "
            "print(json.dumps(registry_rows('CPUExecutionProvider')))")
    try:
        done = subprocess.run([sys.executable, "-c", code, root], capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return ort.__version__, None, "reading its CPU kernel registry did not end within 300 s"
    if done.returncode != 0:
        how = f"signal {-done.returncode}" if done.returncode < 0 else f"exit status {done.returncode}"
        return ort.__version__, None, f"reading its CPU kernel registry (get_all_opkernel_def) killed the process ({how})"
    version, rows = json.loads(done.stdout.strip().splitlines()[-1])
    return version, rows, None


def _varint(n):
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def _field(number, value):
    """One protobuf field: an int (varint) or bytes/str (length-delimited)."""
    if isinstance(value, int):
        return _varint(number << 3) + _varint(value)
    data = value.encode() if isinstance(value, str) else value
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def _identity_model(ir_version, opset):
    """A one-Identity ModelProto's bytes (onnx.proto field numbers; no onnx package needed here)."""
    dims = _field(2, _field(1, _field(1, 1)))  # TensorShapeProto.dim[0].dim_value = 1

    def value(name):  # a float [1] ValueInfoProto
        return _field(1, name) + _field(2, _field(1, _field(1, 1) + dims))

    node = _field(1, "x") + _field(2, "y") + _field(4, "Identity")
    graph = _field(1, node) + _field(2, "g") + _field(11, value("x")) + _field(12, value("y"))
    return _field(1, ir_version) + _field(7, graph) + _field(8, _field(1, "") + _field(2, opset))


def load_limits():
    """``[newest IR version, newest official ai.onnx opset]`` this ORT loads, read off the messages of
    sessions on models beyond both (model.cc "max supported IR version: N"; model_load_utils.h
    ValidateOpsetForDomain "... is till opset N"); ``None`` for one not found."""
    import re

    import onnxruntime as ort

    found = []
    for ir, opset, pattern in ((999, 13, r"max supported IR version: (\d+)"), (10, 999, r"till opset (\d+)")):
        try:
            ort.InferenceSession(_identity_model(ir, opset), providers=["CPUExecutionProvider"])
            found.append(None)
        except Exception as exc:  # onnxruntime raises its own types
            m = re.search(pattern, str(exc))
            found.append(int(m.group(1)) if m else None)
    return found

