"""The external-data files an ONNX model needs, read from its protobuf bytes without ``onnx``.

``import onnx`` (and numpy behind it) costs a cold process 0.1-0.15 s.  ORT's optimizer session
(:mod:`partsim.runtime.ort_pipeline`) needs only the model's bytes and the sizes of its
external-data files, so it can be started before that import: :func:`external_data_sizes` walks
the protobuf wire format (https://protobuf.dev/programming-guides/encoding/) over exactly the
messages :func:`partsim.io.materialize.external_tensors` visits, with the field numbers of
``onnx/onnx.proto``.  The answer only decides what is started early: the caller checks it against
the parsed model before using the session's result.

>>> import onnx
>>> from onnx import helper, TensorProto
>>> t = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4, 8], data_location=TensorProto.EXTERNAL)
>>> for k, v in (("location", "w.bin"), ("offset", "64")):
...     e = t.external_data.add(); e.key, e.value = k, v
>>> g = helper.make_graph([helper.make_node("Relu", ["w"], ["y"])], "g", [],
...                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])], [t])
>>> external_data_sizes(helper.make_model(g).SerializeToString())
{'w.bin': 192}
>>> external_data_sizes(b"not a model") is None
True
"""

__all__ = ["external_data_sizes"]

# onnx.proto field numbers
_MODEL_GRAPH = 7
_GRAPH_NODE, _GRAPH_INITIALIZER, _GRAPH_SPARSE_INITIALIZER = 1, 5, 15
_NODE_ATTRIBUTE = 5
_ATTR_T, _ATTR_G, _ATTR_TENSORS, _ATTR_GRAPHS, _ATTR_TYPE, _ATTR_SPARSE = 5, 6, 10, 11, 20, 22
_TENSOR, _GRAPH, _TENSORS, _GRAPHS, _SPARSE_TENSOR = 4, 5, 9, 10, 11  # AttributeProto.AttributeType
_SPARSE_VALUES, _SPARSE_INDICES = 1, 2
_TENSOR_DIMS, _TENSOR_TYPE, _TENSOR_EXTERNAL, _TENSOR_LOCATION = 1, 2, 13, 14
_EXTERNAL = 1  # TensorProto.DataLocation.EXTERNAL
_MAX_DEPTH = 64


class _Odd(Exception):
    """Bytes this reader does not follow (the caller then takes the long way)."""


def _varint(buf, pos, end):
    result = shift = 0
    while True:
        if pos >= end or shift > 63:
            raise _Odd
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7


def _fields(buf, pos, end):
    """``(field number, wire type, value or (start, stop) of a length-delimited field)``."""
    while pos < end:
        tag, pos = _varint(buf, pos, end)
        field, wt = tag >> 3, tag & 7
        if wt == 0:
            value, pos = _varint(buf, pos, end)
            yield field, wt, value
        elif wt == 2:
            n, pos = _varint(buf, pos, end)
            if pos + n > end:
                raise _Odd
            yield field, wt, (pos, pos + n)
            pos += n
        elif wt == 1:
            pos += 8
        elif wt == 5:
            pos += 4
        else:  # groups: not in onnx.proto
            raise _Odd
        if pos > end:
            raise _Odd


def _tensor(buf, start, stop, need):
    dims, dtype, entries, external = [], 0, {}, False
    for f, wt, v in _fields(buf, start, stop):
        if f == _TENSOR_DIMS:
            if wt == 0:
                dims.append(v)
            elif wt == 2:  # packed
                p, e = v
                while p < e:
                    d, p = _varint(buf, p, e)
                    dims.append(d)
        elif f == _TENSOR_TYPE and wt == 0:
            dtype = v
        elif f == _TENSOR_LOCATION and wt == 0:
            external = v == _EXTERNAL
        elif f == _TENSOR_EXTERNAL and wt == 2:
            key = value = ""
            for f2, wt2, v2 in _fields(buf, *v):
                if wt2 == 2 and f2 in (1, 2):
                    text = bytes(buf[v2[0]:v2[1]]).decode("utf-8")
                    key, value = (text, value) if f2 == 1 else (key, text)
            entries[key] = value
    if not external:
        return
    from .materialize import _ELEM

    loc = entries.get("location", "")
    if dtype not in _ELEM or not loc or any(d >= 2**63 for d in dims):  # negative dims read as huge
        raise _Odd
    numel = 1
    for d in dims:
        numel *= d
    size = _ELEM[dtype][0]
    nbytes = (numel + 1) // 2 if size == 0.5 else numel * size
    try:
        offset = int(entries.get("offset", "0") or 0)
        length = int(entries["length"]) if entries.get("length") not in (None, "") else None
    except ValueError:
        raise _Odd from None
    if offset < 0 or (length is not None and length != nbytes):
        raise _Odd
    need[loc] = max(need.get(loc, 0), offset + nbytes)


def _sparse(buf, start, stop, need):
    for f, wt, v in _fields(buf, start, stop):
        if wt == 2 and f in (_SPARSE_VALUES, _SPARSE_INDICES):
            _tensor(buf, *v, need)


def _graph(buf, start, stop, need, depth, data):
    if depth > _MAX_DEPTH:
        raise _Odd
    for f, wt, v in _fields(buf, start, stop):
        if wt != 2:
            continue
        if f == _GRAPH_INITIALIZER:
            _tensor(buf, *v, need)
        elif f == _GRAPH_SPARSE_INITIALIZER:
            _sparse(buf, *v, need)
        elif f == _GRAPH_NODE and data.find(b"location", *v) >= 0:  # else no external tensor inside
            for f2, wt2, v2 in _fields(buf, *v):
                if f2 == _NODE_ATTRIBUTE and wt2 == 2:
                    _attribute(buf, *v2, need, depth, data)


def _attribute(buf, start, stop, need, depth, data):
    kind, parts = 0, []
    for f, wt, v in _fields(buf, start, stop):
        if f == _ATTR_TYPE and wt == 0:
            kind = v
        elif wt == 2 and f in (_ATTR_T, _ATTR_G, _ATTR_TENSORS, _ATTR_GRAPHS, _ATTR_SPARSE):
            parts.append((f, v))
    follow = {_TENSOR: _ATTR_T, _TENSORS: _ATTR_TENSORS, _SPARSE_TENSOR: _ATTR_SPARSE, _GRAPH: _ATTR_G,
              _GRAPHS: _ATTR_GRAPHS}.get(kind)
    for f, v in parts:
        if f != follow:
            continue
        if f in (_ATTR_T, _ATTR_TENSORS):
            _tensor(buf, *v, need)
        elif f == _ATTR_SPARSE:
            _sparse(buf, *v, need)
        else:
            _graph(buf, *v, need, depth + 1, data)


def external_data_sizes(data):
    """``{location: bytes the model reads from it}`` (the largest offset + size of a tensor stored
    there) over every external-data tensor of the model ``data`` (its file's bytes), or ``None``
    when the bytes are not a model this reader follows (the caller reads it the long way).

    Locations are returned as written; whether they stay inside the model's folder is for the
    caller to check.  A model without the text ``location`` anywhere has no external data and is
    answered without a walk.
    """
    data = bytes(data)
    buf = memoryview(data)
    try:
        graphs = [v for f, wt, v in _fields(buf, 0, len(buf)) if f == _MODEL_GRAPH and wt == 2]
        if not graphs:
            return None
        need = {}
        if b"location" not in data:
            return need
        for start, stop in graphs:
            _graph(buf, start, stop, need, 0, data)
        return need
    except (_Odd, UnicodeDecodeError):
        return None
