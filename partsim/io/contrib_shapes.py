"""Output types and shapes of ONNX Runtime's contrib ops (``com.microsoft``) that ONNX shape
inference does not know.

ONNX's shape inference stops at an op it has no schema for, so in a QOperator model (QGemm,
QLinearAdd, ...) every tensor after the first contrib op would stay without a shape, while ORT,
which registers these schemas with their inference functions, knows them all; providers that
need static shapes (QNN, NNAPI) then claim nodes partsim would have refused.  The rules here are
ported from ORT's schema inference functions (``onnxruntime/core/graph/contrib_ops/
quantization_defs.cc``: QLinearAdd/QLinearMul broadcast A and B, QGemm is Gemm on A and B with the
output zero point's type, QLinearSoftmax/QLinearSigmoid/QLinearLeakyRelu keep X's shape,
QLinearGlobalAveragePool, QLinearConcat, QuantizeLinear/DequantizeLinear keep x's shape with the
zero point's and the scale's type; ``contrib_defs.cc``/``bert_defs.cc``: FusedMatMul,
MatMulIntegerToFloat, DynamicQuantizeMatMul, the Gelu family).

:func:`contrib_value_infos` gives what it can work out from the shapes known so far;
:mod:`partsim.io.shape_inference` alternates it with ONNX's inference until nothing new comes.

>>> from onnx import helper as h, TensorProto as T
>>> n = h.make_node("QLinearAdd", ["a", "sa", "za", "b", "sb", "zb", "sc", "zc"], ["c"], domain="com.microsoft")
>>> known = {"a": (T.UINT8, [2, 1, 8]), "b": (T.UINT8, [4, 8]), "zc": (T.UINT8, [])}
>>> [(v.name, v.type.tensor_type.elem_type, [d.dim_value for d in v.type.tensor_type.shape.dim])
...  for v in contrib_value_infos([n], known)]
[('c', 2, [2, 4, 8])]
"""

__all__ = ["contrib_value_infos", "known_types", "tensor_dims"]

MS = "com.microsoft"


def tensor_dims(tensor_type):
    """The dims of an ``onnx.TypeProto.Tensor``: ints, dim_param strings, ``None`` for unknown ones;
    ``None`` for an unknown rank."""
    if not tensor_type.HasField("shape"):
        return None
    return [d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in tensor_type.shape.dim]


def known_types(graph):
    """``{tensor: (elem_type, dims)}`` of the graph's typed tensors; a dim is an int, a str
    (symbolic) or ``None``; ``dims`` is ``None`` for an unknown rank."""
    out = {}
    for vi in list(graph.input) + list(graph.value_info) + list(graph.output):
        t = vi.type.tensor_type if vi.type.HasField("tensor_type") else None
        if t is None or not t.elem_type:
            continue
        dims = tensor_dims(t)
        prev = out.get(vi.name)
        if prev is None or (prev[1] is None and dims is not None):
            out[vi.name] = (t.elem_type, dims)
    for init in graph.initializer:
        out[init.name] = (init.data_type, list(init.dims))
    return out


def _broadcast(a, b):
    if a is None or b is None:
        return None
    n = max(len(a), len(b))
    a = [1] * (n - len(a)) + list(a)
    b = [1] * (n - len(b)) + list(b)
    out = []
    for x, y in zip(a, b):
        if x == y:
            out.append(x)
        elif x == 1:
            out.append(y)
        elif y == 1:
            out.append(x)
        elif isinstance(x, int) and not isinstance(y, int):
            out.append(x)
        elif isinstance(y, int) and not isinstance(x, int):
            out.append(y)
        else:
            return None
    return out


def _matmul(a, b, trans_a=False, trans_b=False):
    if a is None or b is None or not a or not b:
        return None
    a, b = list(a), list(b)
    if len(a) == 1:
        a = [1] + a
        squeeze_a = True
    else:
        squeeze_a = False
    if len(b) == 1:
        b = b + [1]
        squeeze_b = True
    else:
        squeeze_b = False
    if trans_a:
        a[-2], a[-1] = a[-1], a[-2]
    if trans_b:
        b[-2], b[-1] = b[-1], b[-2]
    batch = _broadcast(a[:-2], b[:-2])
    if batch is None:
        return None
    out = batch + [a[-2], b[-1]]
    if squeeze_a:
        out.pop(-2)
    if squeeze_b:
        out.pop(-1)
    return out


def _attr(node, name, default):
    for a in node.attribute:
        if a.name == name:
            return a.i if a.type == 2 else (a.f if a.type == 1 else default)
    return default


def _infer(node, known):
    """``[(output name, elem_type, dims)]`` for one contrib node, or ``[]``."""
    def get(k):
        return known.get(node.input[k]) if k < len(node.input) and node.input[k] else None

    def elem_of(k, fallback=None):
        g = get(k)
        return g[0] if g else fallback

    op = node.op_type
    x = get(0)
    if op in ("QLinearAdd", "QLinearMul"):
        b = get(3)
        if x is None or b is None:
            return []
        return [(node.output[0], elem_of(7, x[0]), _broadcast(x[1], b[1]))]
    if op == "QGemm":
        b = get(3)
        if x is None or b is None or x[1] is None or b[1] is None or len(x[1]) != 2 or len(b[1]) != 2:
            return []
        m = x[1][1] if _attr(node, "transA", 0) else x[1][0]
        n = b[1][0] if _attr(node, "transB", 0) else b[1][1]
        return [(node.output[0], elem_of(8, 1), [m, n])]  # float output without y_zero_point
    if op in ("QLinearSoftmax", "QLinearSigmoid", "QLinearLeakyRelu"):
        if x is None:
            return []
        return [(node.output[0], elem_of(4, x[0]), x[1])]
    if op == "QLinearGlobalAveragePool":
        if x is None or x[1] is None or len(x[1]) < 3:
            return []
        dims = list(x[1])
        if _attr(node, "channels_last", 0):
            dims = [dims[0]] + [1] * (len(dims) - 2) + [dims[-1]]
        else:
            dims = dims[:2] + [1] * (len(dims) - 2)
        return [(node.output[0], elem_of(4, x[0]), dims)]
    if op == "QLinearConcat":
        parts = [known.get(node.input[k]) for k in range(2, len(node.input), 3)]
        if not parts or any(p is None or p[1] is None for p in parts):
            return []
        rank = len(parts[0][1])
        axis = _attr(node, "axis", 0)
        axis = axis + rank if axis < 0 else axis
        if not 0 <= axis < rank or any(len(p[1]) != rank for p in parts):
            return []
        dims = list(parts[0][1])
        sizes = [p[1][axis] for p in parts]
        dims[axis] = sum(sizes) if all(isinstance(s, int) for s in sizes) else None
        return [(node.output[0], elem_of(1, parts[0][0]), dims)]
    if op in ("FusedMatMul", "MatMulIntegerToFloat", "DynamicQuantizeMatMul"):
        b = get(1)
        if x is None or b is None:
            return []
        ta = op == "FusedMatMul" and bool(_attr(node, "transA", 0))
        tb = op == "FusedMatMul" and bool(_attr(node, "transB", 0))
        out_elem = x[0] if op == "FusedMatMul" else 1
        return [(node.output[0], out_elem, _matmul(x[1], b[1], ta, tb))]
    if op == "QuantizeLinear":  # y: x's shape, the zero point's type (uint8 without one)
        if x is None:
            return []
        return [(node.output[0], elem_of(2, 2), x[1])]
    if op == "DequantizeLinear":  # y: x's shape, the scale's type
        if x is None:
            return []
        return [(node.output[0], elem_of(1, 1), x[1])]
    if op in ("Gelu", "FastGelu", "BiasGelu", "QuickGelu", "BiasAdd"):
        if x is None:
            return []
        return [(node.output[0], x[0], x[1])]
    return []


def contrib_value_infos(nodes, known):
    """Value infos for contrib-node outputs that ``known`` (tensor -> (elem_type, dims)) lacks,
    worked out from what it has.  Outputs whose shape cannot be worked out get none."""
    from onnx import helper

    out = []
    for node in nodes:
        if node.domain != MS or not node.output or not node.output[0]:
            continue
        have = known.get(node.output[0])
        if have is not None and have[1] is not None:
            continue
        for name, elem, dims in _infer(node, known):
            if not name or not elem or dims is None:
                continue
            known[name] = (elem, dims)
            out.append(helper.make_tensor_value_info(name, elem, dims))
    return out
