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

import struct

__all__ = ["propagate_shape_values", "MAX_VALUES"]

#: longest 1-D value list kept (shape vectors are short; this bounds the work on odd graphs)
MAX_VALUES = 64

_INT_TYPES = (6, 7)  # TensorProto INT32, INT64
#: ONNX ops whose shape inference reads the data of an input (``getInputData``): a Constant (or a
#: propagated value) feeding another op tells its inference nothing (onnx/defs/*/defs.cc)
_READS_DATA = {"Reshape", "Expand", "ConstantOfShape", "Range", "Tile", "Pad", "Slice", "Squeeze", "Unsqueeze",
               "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
               "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare", "Resize", "Upsample", "TopK", "OneHot", "Split",
               "CenterCropPad", "Col2Im", "STFT", "DFT", "BlackmanWindow", "HannWindow", "HammingWindow",
               "AffineGrid", "MaxUnpool"}
_VALUE_OPS = {"Cast", "Shape", "Size", "Concat", "Slice", "Gather", "Squeeze", "Unsqueeze",
              "Add", "Sub", "Mul", "Div"}


def _static_dims(tp):
    if not tp.HasField("tensor_type") or not tp.tensor_type.HasField("shape"):
        return None
    dims = []
    for d in tp.tensor_type.shape.dim[:]:
        if not d.HasField("dim_value"):
            return None
        dims.append(d.dim_value)
    return dims


def _known(tp):
    """Number of known dimensions of a type (-1: no shape)."""
    if not tp.HasField("tensor_type") or not tp.tensor_type.HasField("shape"):
        return -1
    return sum([1 for d in tp.tensor_type.shape.dim[:] if d.HasField("dim_value")])


def _attr(node, name, default=None):
    import onnx

    for a in node.attribute[:]:
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
    propagate = _PROPAGATORS.get(op)
    return None if propagate is None else propagate(op, node, ins, types, const, opset)


def _chan(ins, k, want):
    """Input ``k``'s propagated values when they are on channel ``want``, else None."""
    return ins[k][1] if k < len(ins) and ins[k] is not None and ins[k][0] == want else None


def _side(const, k):
    return const[k] if k < len(const) else None


def _shape_values(op, node, ins, types, const, opset):
    """ONNX's Shape propagator (symbolic dimensions kept as unknown elements)."""
    t = types.get(node.input[0])
    if t is None or not t.HasField("tensor_type") or not t.tensor_type.HasField("shape"):
        return None
    dims = [d.dim_value if d.HasField("dim_value") else None for d in t.tensor_type.shape.dim[:]]
    r = len(dims)
    start, end = _attr(node, "start", 0), _attr(node, "end", r)
    start, end = (start + r if start < 0 else start), (end + r if end < 0 else end)
    return "shape", dims[max(0, min(start, r)):max(0, min(end, r))]


def _cast_values(op, node, ins, types, const, opset):
    v = _chan(ins, 0, "shape")
    return ("shape", v) if v is not None and _attr(node, "to") in _INT_TYPES else None


def _concat_values(op, node, ins, types, const, opset):
    parts = [_chan(ins, k, "shape") for k in range(len(node.input))]
    return ("shape", [x for p in parts for x in p]) if parts and all(p is not None for p in parts) else None


def _arith_values(op, node, ins, types, const, opset):
    """Add, Sub, Mul (ONNX's MathOpDataPropagator, element-wise on shape values) and Div (ORT's only)."""
    a, b = _chan(ins, 0, "shape"), _chan(ins, 1, "shape")
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


def _size_values(op, node, ins, types, const, opset):
    """size_op_data_propagation.cc: the product of the input's shape values."""
    v = _chan(ins, 0, "shape")
    if v is None or not v or any(x is None for x in v):
        return None
    n = 1
    for x in v:
        n *= x
    return "scalar", n


def _gather_values(op, node, ins, types, const, opset):
    """gather_op_data_propagation.cc: one element picked by a constant index."""
    v, idx = _chan(ins, 0, "shape"), _side(const, 1)
    if v is None or idx is None or _attr(node, "axis", 0) != 0:
        return None
    one = idx if not isinstance(idx, list) else (idx[0] if len(idx) == 1 else None)
    if one is None or not -len(v) <= one < len(v) or v[one] is None:
        return None
    return ("scalar", v[one]) if not isinstance(idx, list) else ("shape", [v[one]])


def _unsqueeze_values(op, node, ins, types, const, opset):
    """unsqueeze_op_data_propagation.cc."""
    s = _chan(ins, 0, "scalar")
    if s is not None:
        return "shape", [s]
    v = _chan(ins, 0, "shape")
    return ("shape", list(v)) if v is not None else None


def _squeeze_values(op, node, ins, types, const, opset):
    """squeeze_op_data_propagation.cc: entries at the axes dropped."""
    v = _chan(ins, 0, "shape")
    if v is None:
        return None
    axes = _attr(node, "axes") if opset < 13 else _side(const, 1)
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


_PROPAGATORS = {"Shape": _shape_values, "Cast": _cast_values, "Concat": _concat_values, "Add": _arith_values,
                "Sub": _arith_values, "Mul": _arith_values, "Div": _arith_values, "Size": _size_values,
                "Gather": _gather_values, "Unsqueeze": _unsqueeze_values, "Squeeze": _squeeze_values}


def _data_key(t):
    """What of a TensorProto the inference can read, for the memo key: a small tensor by content (not
    its name), a big one by name."""
    n = 1
    for d in t.dims[:]:
        n *= d
    if n > MAX_VALUES or t.data_location:
        return ("named", t.name)
    if not t.name:  # (a Constant's value: nameless in exported graphs) its bytes are its content already
        return t.SerializeToString()
    c = type(t)()
    c.CopyFrom(t)
    c.name = ""
    return c.SerializeToString()


def _copy_type(tp):
    import onnx

    out = onnx.TypeProto()
    out.CopyFrom(tp)
    return out


def _constant_tensor(node):
    """The TensorProto a Constant node makes (``value`` or the scalar/list attributes), or None."""
    for a in node.attribute[:]:
        name = a.name
        if name == "value":
            return a.t  # read only; its own name does not matter to the inference
        if name in ("value_int", "value_ints", "value_float", "value_floats"):
            import onnx

            v = onnx.helper.get_attribute_value(a)
            dtype = onnx.TensorProto.INT64 if "int" in a.name else onnx.TensorProto.FLOAT
            dims = [] if a.name in ("value_int", "value_float") else [len(v)]
            return onnx.helper.make_tensor(node.output[0], dtype, dims, [v] if not dims else list(v))
    return None


def _small_ints(t):
    """The values of an int32/int64 TensorProto of rank <= 1 and at most :data:`MAX_VALUES` elements
    (an int for rank 0, a list for rank 1), or None; read straight from the proto (no numpy:
    exported graphs hold thousands of such constants)."""
    if t.data_type not in _INT_TYPES or len(t.dims) > 1 or (t.dims and t.dims[0] > MAX_VALUES) or t.data_location:
        return None
    if t.raw_data:
        raw = t.raw_data
        fmt = "q" if t.data_type == 7 else "i"
        if len(raw) % struct.calcsize(fmt):
            return None
        vals = list(struct.unpack(f"<{len(raw) // struct.calcsize(fmt)}{fmt}", raw))
    else:
        vals = list(t.int64_data if t.data_type == 7 else t.int32_data)
    n = t.dims[0] if t.dims else 1
    if len(vals) != n:
        return None
    return vals if t.dims else vals[0]


def _constant_value(node):
    for a in node.attribute[:]:
        if a.name == "value":
            return _small_ints(a.t)
        if a.name == "value_int":
            return a.i
        if a.name == "value_ints":
            return list(a.ints) if len(a.ints) <= MAX_VALUES else None
    return None


def propagate_shape_values(proto, listed=None, rows=None):
    """Tighten, in place, the ``value_info`` of ``proto``'s main graph (already through ONNX
    inference, nodes in topological order) with the shapes ORT infers from propagated shape values.
    Returns the number of tensors whose shape got more known dimensions.  ``listed`` (a dict), when given,
    gets the main graph's ``input``, ``value_info`` and ``output`` as read here, each a list of
    ``(name, TypeProto)`` in order, the entries added last, and, once every node was seen, ``node``: per node
    ``(NodeProto, op_type, domain, input names or None when not read, name, output names, attributes)``, the
    last three ``None`` when not read (the IR builder reads them from there).  ``rows``: those rows as the
    caller read them already (:func:`partsim.io.load.model_from_proto`'s)."""
    opset = next((o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")), None)
    if opset is None:
        return 0
    run = _Propagation(proto, opset, listed)
    watched = run.watched
    if rows is None:
        rows = _read_rows(proto.graph.node)
    for node, op, domain, inputs, _, outputs, _ in rows:
        if inputs is None or not (not domain or domain == "ai.onnx"):  # not read: not an ONNX op
            if op == "Constant" and (not domain or domain == "ai.onnx"):
                run.constant(node, outputs)  # ORT makes it an initializer, which every later inference can read
            continue
        # a node none of whose inputs carries anything to learn from (a value, a tightened type) has no
        # value to propagate and nothing to re-infer; Shape reads its input's type.  A Constant's data
        # alone teaches nothing new: ONNX's own inference read it already (onnx 1.23.2,
        # onnx/shape_inference/implementation.cc ``ProcessConstant``: ``value`` and ``value_int(s)`` /
        # ``value_float(s)`` become input data of every later node), with the same input types
        if op != "Shape" and watched.isdisjoint(inputs):
            continue
        if outputs is None:
            outputs = node.output[:]
        run.propagate(node, op, inputs, outputs)
        fed = run.fed_inputs(op, inputs, outputs)
        if fed is not None:
            run.tighten(run.infer(node, op, inputs, outputs, fed))
    if listed is not None:
        listed["node"] = rows
    return run.tightened


def _read_rows(nodes):
    """Per node ``(NodeProto, op_type, domain, input names or None, None, None, None)``: the inputs of ONNX ops
    but Constant read (a list: iterating the repeated field itself ends in a formatted IndexError)."""
    rows = []
    for node in nodes:
        domain, op = node.domain, node.op_type
        if (not domain or domain == "ai.onnx") and op != "Constant":
            rows.append((node, op, domain, node.input[:], None, None, None))
        else:
            rows.append((node, op, domain, None, None, None, None))
    return rows


class _Propagation:
    """The state of one :func:`propagate_shape_values` pass over a graph."""

    def __init__(self, proto, opset, listed=None):
        graph = proto.graph
        self.proto, self.graph, self.opset = proto, graph, opset
        self.opset_imports = list(proto.opset_import)
        # name -> TypeProto the inference reads (an input's, else the first value_info's, else an output's);
        # name -> ValueInfoProto a tightened type is written to (the last value_info, else the last output)
        types, self.value_infos, self.outputs = {}, {}, {}
        # (name, TypeProto) of each list, as read (propagate_shape_values's ``listed``)
        inputs, self.listed_infos, outputs = [], [], []
        for vi in graph.input:
            name, tp = vi.name, vi.type
            inputs.append((name, tp))
            types.setdefault(name, tp)
        for vis, by_name, pairs in ((graph.value_info, self.value_infos, self.listed_infos),
                                    (graph.output, self.outputs, outputs)):
            for vi in vis:
                name, tp = vi.name, vi.type
                pairs.append((name, tp))
                by_name[name] = vi
                if name not in types:
                    types[name] = tp
        if listed is not None:
            listed.update(input=inputs, value_info=self.listed_infos, output=outputs)
        self.types = types
        # propagated (channel, values); small int initializers; Constant nodes by output (their small
        # ints are read when a propagator asks); TensorProtos (a Constant's once a node re-inferred reads
        # it: ``unread`` are those not read yet)
        self.values, self.consts, self.const_nodes, self.data, self.unread = {}, {}, {}, {}, set()
        for t in graph.initializer:
            v = _small_ints(t)
            if v is not None:
                self.consts[t.name] = v
            self.data[t.name] = t
        # tensors a node's inference may learn from: propagated values and changed types (not a Constant's
        # output: ONNX's inference read its data already, see propagate_shape_values)
        self.watched, self.changed_types = set(), set()
        self.tightened = 0
        self.memo = {}
        # per tensor name, worked out once (dropped when its data or type changes): the data's memo key,
        # whether every dimension is known, how many are; per op its schema (None: unknown)
        self.data_keys, self.static, self.knowns, self.schemas = {}, {}, {}, {}

    def constant(self, node, outputs=None):
        """Note a Constant node (``outputs``: its output names, when read); its tensor is read when a node
        re-inferred reads its output (most never are)."""
        if outputs is None:
            outputs = node.output
        if not outputs:
            return
        name = outputs[0]
        self.const_nodes.setdefault(name, []).append(node)
        self.unread.add(name)

    def read_constants(self, inputs):
        """Make the data of the Constants noted so far that ``inputs`` name: the latest one with a tensor
        (:func:`_constant_tensor`) gives it, over an initializer of that name."""
        unread = self.unread
        for name in inputs:
            if name in unread:
                unread.discard(name)
                for node in reversed(self.const_nodes[name]):
                    t = _constant_tensor(node)
                    if t is not None:
                        self.data[name] = t
                        self.data_keys.pop(name, None)
                        break

    def const(self, name):
        """The small int value of ``name`` as the latest Constant node (else the initializer) gives it."""
        for node in reversed(self.const_nodes.get(name, ())):
            v = _constant_value(node)
            if v is not None:
                return v
        return self.consts.get(name)

    def propagate(self, node, op, inputs, outputs):
        """The value of ``node``'s first output (``outputs``: its output names), when ORT propagates one."""
        values = self.values
        if op not in _VALUE_OPS or not outputs or outputs[0] in values:
            return
        ins = [values.get(i) if i else None for i in inputs]
        if op != "Shape" and not any(ins):  # every other propagator needs a value in
            return
        # only Gather's index and Squeeze's axes are read from constants
        const = [self.const(i) for i in inputs] if op in ("Gather", "Squeeze") else ()
        try:
            v = _value_of(op, node, ins, self.types, const, self.opset)
        except (ValueError, TypeError, IndexError, OverflowError):
            v = None
        if v is not None and (v[0] == "scalar" or len(v[1]) <= MAX_VALUES):
            values[outputs[0]] = v
            self.watched.add(outputs[0])

    def known(self, name):
        """:func:`_known` of ``name``'s type (it has one)."""
        got = self.knowns.get(name)
        if got is None:
            got = self.knowns[name] = _known(self.types[name])
        return got

    def is_static(self, name):
        got = self.static.get(name)
        if got is None:
            got = self.static[name] = name in self.types and _static_dims(self.types[name]) is not None
        return got

    def fed_inputs(self, op, inputs, outputs):
        """The inputs whose propagated values the inference of a node (``op``, its ``inputs`` and ``outputs``)
        should be given, when it has something new to learn (``None``: nothing to re-infer).  The caller
        checked that an input is watched."""
        values, changed = self.values, self.changed_types
        if not self.unread.isdisjoint(inputs):
            self.read_constants(inputs)  # the data below and the inference read
        changed_in = not changed.isdisjoint(inputs) if changed else False
        if op not in _READS_DATA and not changed_in:
            return None  # only a changed input type can tell its inference something new
        if not changed_in and all(self.is_static(o) for o in outputs if o):
            return None  # its outputs are known already
        fed = [i for i in inputs if i in values and i not in self.data and
               (values[i][0] == "scalar" or all(x is not None for x in values[i][1]))]
        if not fed and not changed_in:
            return None
        return fed

    def schema(self, op):
        if op not in self.schemas:
            import onnx

            try:
                self.schemas[op] = onnx.defs.get_schema(op, self.opset, "")
            except Exception:  # an op ONNX does not know: nothing to re-infer
                self.schemas[op] = None
        return self.schemas[op]

    def data_key(self, name):
        key = self.data_keys.get(name)
        if key is None:
            key = self.data_keys[name] = _data_key(self.data[name])
        return key

    def infer(self, node, op, inputs, outputs, fed):
        """ONNX's inference of ``node`` (``outputs``: its output names) given its input types and data:
        ``{output: (TypeProto, known dimensions)}``."""
        import onnx

        data, types = self.data, self.types
        in_types = {}
        for i in inputs:
            if not i:
                continue
            if i in types:
                in_types[i] = types[i]
            elif i in data:
                in_types[i] = onnx.helper.make_tensor_type_proto(data[i].data_type, list(data[i].dims))
            else:
                return {}
        schema = self.schema(op)
        if schema is None:
            return {}
        fed_values = {i: self.values[i] for i in fed}
        fed_keys = {i: ("fed", ch, tuple(v) if ch == "shape" else v) for i, (ch, v) in fed_values.items()}
        # exported graphs repeat the same node with the same input types and data (one per block):
        # ONNX's inference runs once per distinct (op, attributes, input types, input data).  A type is
        # keyed by its bytes (a symbolic dimension may reappear, by name, in an output type: Reshape
        # copies a 0 of its target); a propagated value by its values (made into a TensorProto only
        # when the inference runs)
        key = (op, tuple([a.SerializeToString() for a in node.attribute[:]]),
               tuple((in_types[i].SerializeToString(), self.data_key(i) if i in data else
                      fed_keys.get(i)) if i else None for i in inputs),
               len(outputs))
        if key not in self.memo:
            input_data = {i: data[i] for i in inputs if i in data}
            for i, (ch, v) in fed_values.items():
                input_data[i] = _fed_tensor(i, ch, v, in_types[i])
            try:
                got = onnx.shape_inference.infer_node_outputs(
                    schema, node, in_types, input_data, opset_imports=self.opset_imports,
                    ir_version=self.proto.ir_version or 8)
            except Exception:  # ONNX's inference refused the node: ORT would keep what it had
                got = {}
            self.memo[key] = [None if got.get(o) is None else (got[o], _known(got[o])) for o in outputs]
        return {o: got for o, got in zip(outputs, self.memo[key]) if o and got is not None}

    def tighten(self, inferred):
        """Keep each inferred type that knows more dimensions than the one the graph has."""
        graph, types = self.graph, self.types
        for name, (tp, known) in inferred.items():
            old = types.get(name)
            if old is not None and known <= self.known(name):
                continue
            tp = _copy_type(tp)  # the memo's own stays as inferred
            if old is not None and old.HasField("tensor_type") and old.tensor_type.HasField("shape") and \
                    tp.tensor_type.HasField("shape") and \
                    len(old.tensor_type.shape.dim) == len(tp.tensor_type.shape.dim):
                for d_old, d_new in zip(old.tensor_type.shape.dim, tp.tensor_type.shape.dim):
                    if d_old.HasField("dim_value") and not d_new.HasField("dim_value"):
                        d_new.dim_value = d_old.dim_value
            vi = self.value_infos.get(name) or self.outputs.get(name)
            if vi is None:
                vi = graph.value_info.add()
                vi.name = name
                self.value_infos[name] = vi
                self.listed_infos.append((name, vi.type))
            vi.type.CopyFrom(tp)
            types[name] = vi.type
            self.static.pop(name, None)
            self.knowns.pop(name, None)
            self.changed_types.add(name)
            self.watched.add(name)
            self.tightened += 1


def _fed_tensor(name, channel, values, in_type):
    """A propagated value as the TensorProto ONNX's inference reads (int32 when the tensor is)."""
    import numpy as np
    from onnx import numpy_helper

    v = np.array(values, dtype=np.int64).reshape(() if channel == "scalar" else (-1,))
    elem = in_type.tensor_type.elem_type if in_type.HasField("tensor_type") else 7
    return numpy_helper.from_array(v.astype(np.int32 if elem == 6 else np.int64), name)
