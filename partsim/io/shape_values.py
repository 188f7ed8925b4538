"""Shape values the way ORT propagates them, on top of ONNX shape inference.

ORT's graph resolution (``onnxruntime/core/graph/graph.cc``, ``Graph::InferAndVerifyTypeMatch`` and
``SaveShapeValuesFromDataPropagation``) keeps the *values* of small integer tensors computed from
shapes (``Shape`` and what follows it) and hands them to every later node's shape inference as
if they were constant inputs; ``onnxruntime/core/graph/data_propagation/`` adds its own propagation
for ``Size``, ``Squeeze``, ``Unsqueeze`` and for scalar ``Gather``/``Add``/``Sub``/``Mul``/``Div``
besides ONNX's partial data propagation (``Cast``, ``Shape``, ``Size``, ``Concat``, ``Slice``,
``Gather``, ``Squeeze``, ``Unsqueeze``, ``Add``, ``Sub``, ``Mul``).  ``onnx.shape_inference`` with
``data_prop=True`` only offers such values to the few ops that ask for symbolic inputs, so a
``Reshape``-13 reading ``Shape(x)``, a ``Range`` or ``ConstantOfShape`` reading a ``Gather`` of it
stay symbolic there while ORT knows them (seen with onnxruntime 1.31.1 on CPU sessions:
``Reshape(x2, Shape(x))`` at opset 13, ``Range(0, Gather(Shape(x), 1), 1)``,
``ConstantOfShape(Sub(Size(Shape(x)), [1]))``, ``ConstantOfShape(Add(Shape(x), [2]))`` all get
static shapes; ``Range(0, Size(x), 1)`` does not: ``Size`` of a tensor without values has none).

:func:`propagate_shape_values` computes those values (plain integers, 0-D and 1-D, at most
:data:`MAX_VALUES` elements) in topological order and re-runs ONNX's inference of each node that
reads one (or whose input types changed), with the values given as input data.
"""

__all__ = ["propagate_shape_values", "MAX_VALUES"]

#: longest 1-D value list kept (shape vectors are short; this bounds the work on odd graphs)
MAX_VALUES = 64

_INT_TYPES = (6, 7)  # TensorProto INT32, INT64
_VALUE_OPS = {"Cast", "Shape", "Size", "Concat", "Slice", "Gather", "Squeeze", "Unsqueeze",
              "Add", "Sub", "Mul", "Div"}


def _static_dims(tp):
    if not tp.HasField("tensor_type") or not tp.tensor_type.HasField("shape"):
        return None
    dims = []
    for d in tp.tensor_type.shape.dim:
        if not d.HasField("dim_value"):
            return None
        dims.append(d.dim_value)
    return dims


def _known(tp):
    """Number of known dimensions of a type (-1: no shape)."""
    if not tp.HasField("tensor_type") or not tp.tensor_type.HasField("shape"):
        return -1
    return sum(1 for d in tp.tensor_type.shape.dim if d.HasField("dim_value"))


def _attr(node, name, default=None):
    import onnx

    for a in node.attribute:
        if a.name == name:
            return onnx.helper.get_attribute_value(a)
    return default


def _value_of(op, node, ins, types, const, opset):
    """``(channel, values)`` of ``node``'s first output as ORT propagates it, or None.

    ``ins``: per input ``(channel, values)`` or None; channel ``"shape"`` is ORT's
    ``inferred_shape_values_`` (a list, ``None`` for an unknown element), ``"scalar"`` its
    ``inferred_scalar_value_``.  ``const``: per input the initializer's value or None.  ONNX's
    partial data propagation (Shape, Cast, Concat, Add, Sub, Mul) sees only the shape channel of its
    inputs, never an initializer (seen: ``Concat(Shape(x), [2])``, ``Slice(Shape(x), [0], [1])``,
    ``Sub(Gather(Shape(x), 1), 1)`` give ORT no values); ORT's own propagators read initializers for
    their side inputs (``data_propagation/*_op_data_propagation.cc``).
    """
    def chan(k, want):
        return ins[k][1] if k < len(ins) and ins[k] is not None and ins[k][0] == want else None

    def side(k):
        return const[k].tolist() if k < len(const) and const[k] is not None else None

    if op == "Shape":  # ONNX's Shape propagator (symbolic dimensions kept as unknown elements)
        t = types.get(node.input[0])
        if t is None or not t.HasField("tensor_type") or not t.tensor_type.HasField("shape"):
            return None
        dims = [d.dim_value if d.HasField("dim_value") else None for d in t.tensor_type.shape.dim]
        r = len(dims)
        start, end = _attr(node, "start", 0), _attr(node, "end", r)
        start, end = (start + r if start < 0 else start), (end + r if end < 0 else end)
        return "shape", dims[max(0, min(start, r)):max(0, min(end, r))]
    if op == "Cast":
        v = chan(0, "shape")
        return ("shape", v) if v is not None and _attr(node, "to") in _INT_TYPES else None
    if op == "Concat":
        parts = [chan(k, "shape") for k in range(len(node.input))]
        return ("shape", [x for p in parts for x in p]) if parts and all(p is not None for p in parts) else None
    if op in ("Add", "Sub", "Mul", "Div"):
        a, b = chan(0, "shape"), chan(1, "shape")
        if op != "Div" and a is not None and b is not None and a and b and (
                len(a) == len(b) or len(a) == 1 or len(b) == 1):  # ONNX's MathOpDataPropagator
            n = max(len(a), len(b))
            a, b = (a * n if len(a) == 1 else a), (b * n if len(b) == 1 else b)
            f = {"Add": lambda x, y: x + y, "Sub": lambda x, y: x - y, "Mul": lambda x, y: x * y}[op]
            return "shape", [None if x is None or y is None else f(x, y) for x, y in zip(a, b)]
        # ORT's propagators: one value each, a scalar or a one-element shape value, the rank kept
        # (data_propagation_value_utils.h TryGetSinglePropagatedShapeValue; seen: Div of two
        # one-element Shape slices gives ORT the Expand target of flexattention's KV repeat)
        one = []
        for k in (0, 1):
            if k < len(ins) and ins[k] is not None and (ins[k][0] == "scalar" or len(ins[k][1]) == 1):
                one.append((ins[k][1] if ins[k][0] == "scalar" else ins[k][1][0], ins[k][0] == "shape"))
        if len(one) != 2 or one[0][0] is None or one[1][0] is None:
            return None
        (a, ra), (b, rb) = one
        if op == "Div":
            if b == 0:
                return None
            q = abs(a) // abs(b)
            r = -q if (a < 0) != (b < 0) else q
        else:
            r = {"Add": a + b, "Sub": a - b, "Mul": a * b}[op]
        return ("shape", [r]) if ra or rb else ("scalar", r)
    if op == "Size":  # size_op_data_propagation.cc: the product of the input's shape values
        v = chan(0, "shape")
        if v is None or not v or any(x is None for x in v):
            return None
        n = 1
        for x in v:
            n *= x
        return "scalar", n
    if op == "Gather":  # gather_op_data_propagation.cc: one element picked by a constant index
        v, idx = chan(0, "shape"), side(1)
        if v is None or idx is None or _attr(node, "axis", 0) != 0:
            return None
        one = idx if not isinstance(idx, list) else (idx[0] if len(idx) == 1 else None)
        if one is None or not -len(v) <= one < len(v) or v[one] is None:
            return None
        return ("scalar", v[one]) if not isinstance(idx, list) else ("shape", [v[one]])
    if op == "Unsqueeze":  # unsqueeze_op_data_propagation.cc
        s = chan(0, "scalar")
        if s is not None:
            return "shape", [s]
        v = chan(0, "shape")
        return ("shape", list(v)) if v is not None else None
    if op == "Squeeze":  # squeeze_op_data_propagation.cc: entries at the axes dropped
        v = chan(0, "shape")
        if v is None:
            return None
        axes = _attr(node, "axes") if opset < 13 else side(1)
        if len(v) == 1 and (axes is None or axes in (0, -1, [0], [-1])):  # [n] -> the scalar n
            return ("scalar", v[0]) if v[0] is not None else None
        if axes is None:
            out = [x for x in v if x != 1]
        else:
            axes = {a + len(v) if a < 0 else a for a in ([axes] if isinstance(axes, int) else axes)}
            out = [x for k, x in enumerate(v) if k not in axes]
        if len(out) == 1 and len(v) == 1 and out[0] is not None:
            return "shape", out
        if not out and len(v) == 1:
            return ("scalar", v[0]) if v[0] is not None else None
        return "shape", out
    return None


def _constant_tensor(node):
    """The TensorProto a Constant node makes (``value`` or the scalar/list attributes), or None."""
    import onnx

    for a in node.attribute:
        if a.name == "value":
            t = onnx.TensorProto()
            t.CopyFrom(a.t)
            t.name = node.output[0]
            return t
        if a.name in ("value_int", "value_ints", "value_float", "value_floats"):
            v = onnx.helper.get_attribute_value(a)
            dtype = onnx.TensorProto.INT64 if "int" in a.name else onnx.TensorProto.FLOAT
            dims = [] if a.name in ("value_int", "value_float") else [len(v)]
            return onnx.helper.make_tensor(node.output[0], dtype, dims, [v] if not dims else list(v))
    return None


def _constant_value(node):
    import numpy as np
    from onnx import numpy_helper

    for a in node.attribute:
        if a.name == "value" and a.t.data_type in _INT_TYPES:
            v = numpy_helper.to_array(a.t)
        elif a.name == "value_int":
            v = np.array(a.i)
        elif a.name == "value_ints":
            v = np.array(list(a.ints))
        else:
            continue
        return v.astype(np.int64) if v.ndim <= 1 and v.size <= MAX_VALUES else None
    return None


def propagate_shape_values(proto):
    """Tighten, in place, the ``value_info`` of ``proto``'s main graph (already through ONNX
    inference, nodes in topological order) with the shapes ORT infers from propagated shape values.
    Returns the number of tensors whose shape got more known dimensions."""
    import numpy as np
    import onnx
    from onnx import numpy_helper

    graph = proto.graph
    opset = next((o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")), None)
    if opset is None:
        return 0
    types = {}
    for vi in list(graph.input) + list(graph.value_info) + list(graph.output):
        types.setdefault(vi.name, vi.type)
    values, consts, data = {}, {}, {}  # propagated (channel, values); initializer values; TensorProtos
    for t in graph.initializer:
        if t.data_type in _INT_TYPES and len(t.dims) <= 1 and (not t.dims or t.dims[0] <= MAX_VALUES):
            v = numpy_helper.to_array(t).astype(np.int64)
            consts[t.name] = v
        data[t.name] = t
        if t.name not in types:
            types[t.name] = onnx.helper.make_tensor_type_proto(t.data_type, list(t.dims))
    value_infos = {vi.name: vi for vi in graph.value_info}
    outputs = {vi.name: vi for vi in graph.output}
    changed_types, tightened, from_constant = set(), 0, set()
    for node in graph.node:
        if node.domain not in ("", "ai.onnx"):
            continue
        op = node.op_type
        if op == "Constant":  # ORT makes it an initializer, which every later inference can read
            v = _constant_value(node)
            if v is not None and node.output:
                consts[node.output[0]] = v
            t = _constant_tensor(node)
            if t is not None and node.output:
                data[node.output[0]] = t
                from_constant.add(node.output[0])
            continue
        ins = [values.get(i) if i else None for i in node.input]
        if op in _VALUE_OPS and node.output and node.output[0] not in values:
            try:
                v = _value_of(op, node, ins, types, [consts.get(i) for i in node.input], opset)
            except (ValueError, TypeError, IndexError, OverflowError):
                v = None
            if v is not None and (v[0] == "scalar" or len(v[1]) <= MAX_VALUES):
                values[node.output[0]] = v
        fed = [i for i, v in zip(node.input, ins) if v is not None and i and i not in data and
               (v[0] == "scalar" or all(x is not None for x in v[1]))]
        if not fed and not any(i in changed_types or i in from_constant for i in node.input):
            continue
        if any(_static_dims(types[o]) is not None for o in node.output if o in types) and \
                not any(i in changed_types for i in node.input):
            continue  # its outputs are known already
        if any(i and i not in types for i in node.input):
            continue
        try:
            schema = onnx.defs.get_schema(op, opset, "")
        except Exception:  # an op ONNX does not know: nothing to re-infer
            continue
        input_data = dict(data)
        for i in fed:
            ch, v = values[i]
            v = np.array(v, dtype=np.int64).reshape(() if ch == "scalar" else (-1,))
            elem = types[i].tensor_type.elem_type if types[i].HasField("tensor_type") else 7
            input_data[i] = numpy_helper.from_array(v.astype(np.int32 if elem == 6 else np.int64), i)
        try:
            inferred = onnx.shape_inference.infer_node_outputs(
                schema, node, {i: types[i] for i in node.input if i},
                {i: input_data[i] for i in node.input if i in input_data},
                opset_imports=list(proto.opset_import), ir_version=proto.ir_version or 8)
        except Exception:  # ONNX's inference refused the node: ORT would keep what it had
            continue
        for name, tp in inferred.items():
            old = types.get(name)
            if old is not None and _known(tp) <= _known(old):
                continue
            if old is not None and old.HasField("tensor_type") and old.tensor_type.HasField("shape") and \
                    tp.tensor_type.HasField("shape") and len(old.tensor_type.shape.dim) == len(tp.tensor_type.shape.dim):
                for d_old, d_new in zip(old.tensor_type.shape.dim, tp.tensor_type.shape.dim):
                    if d_old.HasField("dim_value") and not d_new.HasField("dim_value"):
                        d_new.dim_value = d_old.dim_value
            vi = value_infos.get(name) or outputs.get(name)
            if vi is None:
                vi = graph.value_info.add()
                vi.name = name
                value_infos[name] = vi
            vi.type.CopyFrom(tp)
            types[name] = vi.type
            changed_types.add(name)
            tightened += 1
    return tightened
