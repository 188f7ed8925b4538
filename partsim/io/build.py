"""Build partsim's IR (:class:`partsim.ir.model.Model`) from an inferred ModelProto.

Repeated protobuf fields are read as slices (``n.input[:]``, a list made in one call): a loop over the
field itself ends in an IndexError that upb formats with ``sprintf`` (~2,300 instructions a loop, 20 M a
build of swin_t).
"""

import struct
from functools import lru_cache
from pathlib import Path

from ..errors import ModelError
from ..ir.model import Model, Node, Value
from ..ir.schemas import lookup_schema
from .external import check_external_location


MAX_DIM = 2**40  # a dimension above this is not a real tensor
DYNAMIC_DIM = -1  # a declared dimension of -1 is a dynamic one (paddle2onnx), not an error


def _dtype_name(code):
    """ONNX element-type code -> ``"float"`` …; an unknown code (corrupt file) is a ModelError."""
    import onnx

    try:
        return onnx.TensorProto.DataType.Name(code)
    except ValueError:
        raise ModelError(f"unknown tensor element type {code}") from None


@lru_cache(maxsize=None)
def _dtype_lower(code):
    return _dtype_name(code).lower()


def _parse_type(tp):
    """``(dtype, shape, bad, static)`` of an onnx TypeProto; ``bad`` is the first impossible
    dimension (negative or above :data:`MAX_DIM`), else ``None``; ``static``: every dimension
    is a known int."""
    which = tp.WhichOneof("value")
    if which == "tensor_type":
        tt = tp.tensor_type
        dtype = None
        if tt.elem_type:
            dtype = _dtype_lower(tt.elem_type)
        shape = None
        bad = None
        if tt.HasField("shape"):
            dims = []
            for d in tt.shape.dim[:]:
                w = d.WhichOneof("value")
                if w == "dim_value":
                    v = int(d.dim_value)
                    if v == DYNAMIC_DIM:  # paddle2onnx writes -1 for a dynamic dimension; ORT reads it so
                        dims.append(None)
                        continue
                    if bad is None and not 0 <= v <= MAX_DIM:
                        bad = v
                    dims.append(v)
                elif w == "dim_param":
                    if not isinstance(d.dim_param, str):
                        raise ModelError(f"a dimension name is not valid UTF-8 text: {d.dim_param[:60]!r}")
                    dims.append(d.dim_param)
                else:
                    dims.append(None)
            shape = tuple(dims)
        static = shape is not None and bad is None and all(d.__class__ is int for d in shape)
        return dtype, shape, bad, static
    if which is None:
        return None, None, None, False
    return _type_string(tp), None, None, False


def _int_values(t, wide, dims):
    """The values of an int64 (``wide``) or int32 TensorProto (``dims``: its dims) as a tuple of ints, read
    without numpy (``numpy_helper.to_array`` costs ~5 us a tensor, and a model has thousands of shape
    constants); ``None`` when its data does not match its shape (as ``to_array`` refuses)."""
    numel = 1
    for d in dims:
        numel *= d
    raw = t.raw_data
    if raw:
        if len(raw) != numel * (8 if wide else 4):
            return None
        return struct.unpack(f"<{numel}{'q' if wide else 'i'}", raw)
    data = t.int64_data if wide else t.int32_data
    if len(data) != numel:
        return None
    return tuple(data)


def _dims_of(dims):
    """``(shape, bad, static)`` for a TensorProto's dims."""
    shape = tuple([int(d) for d in dims])
    for d in shape:
        if not 0 <= d <= MAX_DIM:
            return shape, d, False
    return shape, None, True


def _type_string(tp):
    which = tp.WhichOneof("value")
    if which == "tensor_type":
        return f"tensor({_dtype_name(tp.tensor_type.elem_type).lower()})"
    if which == "sequence_type":
        return f"seq({_type_string(tp.sequence_type.elem_type)})"
    if which == "optional_type":
        return f"optional({_type_string(tp.optional_type.elem_type)})"
    if which == "map_type":
        key = _dtype_name(tp.map_type.key_type).lower()
        return f"map({key},{_type_string(tp.map_type.value_type)})"
    return None


# AttributeProto.AttributeType and TensorProto.DataType / DataLocation codes (onnx/onnx.proto), as plain
# ints: the loops below read them once per node of models with a million nodes
_FLOAT, _INT, _STRING, _TENSOR, _GRAPH, _FLOATS, _INTS, _STRINGS, _TENSORS, _GRAPHS, _SPARSE_TENSOR = range(1, 12)
_INT32, _INT64, _STRING_TYPE, _UNDEFINED_TYPE, _EXTERNAL = 6, 7, 8, 0, 1


def _attr_value(a):
    t = a.type
    if t == _INT:
        return int(a.i)
    if t == _FLOAT:
        return float(a.f)
    if t == _STRING:
        return a.s.decode("utf-8", "replace")
    if t == _INTS:
        return tuple([int(x) for x in a.ints[:]])
    if t == _FLOATS:
        return tuple([float(x) for x in a.floats[:]])
    if t == _STRINGS:
        return tuple([x.decode("utf-8", "replace") for x in a.strings[:]])
    if t == _TENSOR:
        return {"dtype": _dtype_name(a.t.data_type).lower(),
                "dims": tuple([int(d) for d in a.t.dims[:]])}
    return None  # graphs and the rest: not used by predicates


class _Builder:
    def __init__(self, proto, path, sha256, opsets, warnings, file_order=None, resort=False, shown_as=None, notes=(),
                 listed=None):
        self.proto = proto
        # the main graph's (name, TypeProto) per list, as the shape-value propagation read them (or None)
        self.listed = listed or None
        self.file_order = file_order  # main-graph node positions in file order, when the proto was sorted
        self.resort = resort  # stop (build() -> None) at a main graph listed out of topological order
        self.unsorted = False
        self.path = path
        self.sha256 = sha256
        self.opsets = opsets
        self.implied_opsets = frozenset()  # set by io.load for a file without an ai.onnx import
        self.shown_as = shown_as  # (path, sha256) the model reports, when it is a rewrite of another file
        self.notes = list(notes)
        self.int_consts = {}  # small int constants (every graph's, by unique name): name -> tuple
        self.scalar_consts = {}  # main-graph one-element constants: name -> (dtype, value)
        self.warnings = warnings
        self.values = {}
        self.producer = {}
        self.consumers = {}
        self.nodes = []  # dicts, frozen into Node at the end
        self.names = set()
        self.scope_outputs = {}
        self.types = {}  # serialized TypeProto -> _parse_type of it: a model repeats a few hundred types
        self.schemas = {}  # (domain, op) -> since_version under this model's opsets
        self.op_schemas = {}  # (domain, op) -> OpSchemaInfo or None, for the matcher's dtype ports
        self.in_order = True  # every node reads only what lower-indexed nodes make (the usual case)
        self._external_base = None

    def error(self, msg):
        raise ModelError(msg, self.path)

    def text(self, x, what):
        """Names are text: protobuf hands back ``bytes`` for a string field that is not UTF-8."""
        if x.__class__ is not str:
            self.error(f"{what} is not valid UTF-8 text: {x[:60]!r}")

    def external(self, t, what):
        """Refuse tensor ``t``'s external-data location unless it is a file inside the model's
        folder (the file is never opened).  ``what`` is a callable naming the tensor."""
        if self.path == "<memory>":
            return
        if self._external_base is None:
            self._external_base = Path(self.path).resolve().parent
            self._resolved = {}
        check_external_location(t, what(), self._external_base, self.path, self._resolved)

    def build(self):
        g = self.proto.graph
        if self.walk(g, "", None, {}) is None:
            return None  # listed out of order: the caller infers shapes again on a sorted copy
        del g
        ir_version = int(self.proto.ir_version)
        self.proto = None  # the IR is complete: let the proto go before edges are built
        self.listed = None
        nodes, self.nodes = self.nodes, None
        # already topological: no sort, and no cycle
        known = {"topological_order": list(range(len(nodes)))} if self.in_order else {}
        path, sha256 = self.shown_as or (self.path, self.sha256)
        model = Model(path, sha256, self.opsets, nodes, self.values, self.producer,
                      self.consumers, [self._main_inputs[i] for i in range(len(self._main_inputs))],
                      self._main_outputs, self.scope_outputs, self.warnings + self.notes, op_schemas=self.op_schemas,
                      ir_version=ir_version, int_consts=self.int_consts,
                      scalar_consts=self.scalar_consts, implied_opsets=self.implied_opsets, _derived=known)
        if not self.in_order:
            self._check_acyclic(model)
        return model

    def _keep_values(self, name, t, main=True):
        """Keep the values of a small int32/int64 tensor (Reshape shapes, axes inputs), and (``main``: of
        the main graph) of any one-element numeric tensor (Q/DQ scales and zero points)."""
        dtype, dims = t.data_type, t.dims[:]
        if len(dims) > 1 or t.data_location == _EXTERNAL:
            return
        scalar = (not dims or dims[0] == 1) and dtype != _STRING_TYPE and dtype != _UNDEFINED_TYPE
        ints = None
        if (dtype == _INT64 or dtype == _INT32) and not (dims and dims[0] > 64):
            ints = _int_values(t, dtype == _INT64, dims)
            if ints is not None:
                self.int_consts[name] = ints
        if not scalar or not main:
            return
        if ints is not None:
            if len(ints) == 1:
                self.scalar_consts[name] = (_dtype_lower(dtype), ints[0])
            return
        from onnx import numpy_helper

        try:
            (value,) = numpy_helper.to_array(t).reshape(-1).tolist()
        except (ValueError, TypeError):
            return
        self.scalar_consts[name] = (_dtype_lower(dtype), value)

    def define(self, name, scope, visible, kind, typ=None):
        """Add tensor ``name`` (``typ`` = ``(dtype, shape, bad, static)`` or None); returns its unique name."""
        unique = name
        if unique in self.values:
            unique = f"{scope}/{name}" if scope else name
            k = 1
            while unique in self.values:
                unique = f"{scope}/{name}#{k}"
                k += 1
        if typ is None:
            self.values[unique] = Value(unique, None, None, kind, False)
        else:
            if typ[2] is not None:
                self.error(f"tensor {name!r} has an impossible dimension {typ[2]}")
            self.values[unique] = Value(unique, typ[0], typ[1], kind, typ[3])
        visible[name] = unique
        return unique

    def walk(self, g, scope, parent, outer):
        """Add graph ``g``'s tensors and nodes; return the outer names it reads (``None``: the main graph is
        listed out of topological order and must be read again sorted).

        Also checks, as it reads them: UTF-8 text, impossible dimensions, external-data
        locations (initializers and tensor attributes), duplicate producers, and whether
        the nodes are listed in topological order.
        """
        visible = dict(outer)
        info = self._value_types(g, self.listed if parent is None else None)
        init_names = self._initializers(g, scope, visible, parent)
        inputs = self._graph_inputs(g, scope, visible, info, init_names)
        if parent is None:
            self._main_inputs = inputs
        outer_uniques = set(outer.values())
        produced_here, todo = self._node_outputs(g, scope, parent, visible, info, outer_uniques)
        reads_outer = set()
        if not self._make_nodes(todo, scope, parent, visible, produced_here, outer_uniques, reads_outer):
            return None
        outs = []
        for vi in g.output:
            u = visible.get(vi.name)
            if u is None:
                self.text(vi.name, "a graph output name")
                self.error(f"graph output {vi.name!r} is produced by nothing")
            if u in outer_uniques:
                reads_outer.add(u)
            outs.append(u)
        self.scope_outputs[scope] = set(outs)
        if parent is None:
            self._main_outputs = outs
        return reads_outer

    def _value_types(self, g, listed=None):
        """Tensor name -> parsed type of ``g``'s value_info, inputs and outputs (one parse per distinct type);
        ``listed``: those lists as ``(name, TypeProto)`` pairs read already."""
        types = self.types
        info = {}
        if listed is None:
            listed = {which: [(vi.name, vi.type) for vi in vis] for which, vis in
                      (("value_info", g.value_info), ("input", g.input), ("output", g.output))}
        for which in ("value_info", "input", "output"):
            for name, tp in listed[which]:
                key = tp.SerializeToString()
                typ = types.get(key)
                if typ is None:
                    typ = types[key] = _parse_type(tp)
                info[name] = typ
        return info

    def _initializers(self, g, scope, visible, parent):
        """Define ``g``'s initializers and sparse initializers; returns their names."""
        import onnx

        EXTERNAL = onnx.TensorProto.EXTERNAL
        init_names = set()
        for init in g.initializer[:]:
            self.text(init.name, "an initializer name")
            if init.name in init_names:
                self.error(f"initializer {init.name!r} is defined twice")
            init_names.add(init.name)
            if init.data_location == EXTERNAL:
                self.external(init, lambda: f"initializer {init.name!r}")
            typ = (_dtype_name(init.data_type).lower() if init.data_type else None,) + _dims_of(init.dims)
            unique = self.define(init.name, scope, visible, "initializer", typ)
            self._keep_values(unique, init, parent is None)  # subgraphs' ints too: the transpose optimizer reads them
        for sinit in g.sparse_initializer:
            self.text(sinit.values.name, "a sparse initializer name")
            for t, what in ((sinit.values, ""), (sinit.indices, " indices")):
                if t.data_location == EXTERNAL:
                    self.external(t, lambda: f"sparse initializer {sinit.values.name!r}{what}")
            init_names.add(sinit.values.name)
            self.define(sinit.values.name, scope, visible, "initializer", (None,) + _dims_of(sinit.dims))
        return init_names

    def _graph_inputs(self, g, scope, visible, info, init_names):
        """Define ``g``'s inputs that are not initializers; returns their unique names."""
        inputs = []
        input_names = set()
        for vi in g.input:
            self.text(vi.name, "a graph input name")
            if vi.name in input_names:
                self.error(f"graph input {vi.name!r} is listed twice")
            input_names.add(vi.name)
            if vi.name in init_names:
                continue
            inputs.append(self.define(vi.name, scope, visible, "input", info.get(vi.name)))
        return inputs

    def _node_outputs(self, g, scope, parent, visible, info, outer_uniques):
        """Define every node output of ``g`` (all are visible to every node of it: the file order need not be
        sorted) and Constant nodes' values; returns ``(output -> position, nodes to make)``."""
        produced_here = {}
        read = self.listed.get("node") if parent is None and self.listed is not None else None
        if read is None:  # (NodeProto, op_type, raw domain, input names, name, output names, attributes; each of
            # the last four None when not read): the propagation's, or read here
            read = [(n, n.op_type, n.domain, None, None, None, None) for n in g.node]
        if parent is None and self.file_order is not None:
            read = [read[pos] for pos in self.file_order]
        values = self.values
        # (NodeProto, op_type, domain, name, output names, position, input names or None, attributes or None):
        # the nodes to make
        todo = []
        for k, (n, op_type, raw_domain, inputs, node_name, outputs, attrs) in enumerate(read):
            if node_name is None:
                node_name, outputs = n.name, n.output[:]
            if op_type.__class__ is not str or raw_domain.__class__ is not str or node_name.__class__ is not str:
                for what, x in (("a node's op type", op_type), ("a node's domain", raw_domain),
                                ("a node name", node_name)):
                    self.text(x, what)
            domain = "" if raw_domain == "" or raw_domain == "ai.onnx" else raw_domain  # normalize_domain
            if op_type == "Constant" and domain == "":
                # ORT turns Constant nodes into initializers when it loads a graph, so they are never assigned
                # to a provider: their outputs are defined here as constants, and no node is made
                kind = "constant"
                value_attr, first_ints = self._constant_attributes(n, bool(outputs), attrs)
            else:
                kind, value_attr, first_ints = "intermediate", None, None
                todo.append((n, op_type, domain, node_name, outputs, k, inputs, attrs))
            for o in outputs:
                if not o:
                    continue
                if o.__class__ is not str:
                    self.text(o, f"an output name of node {n.name or n.op_type!r}")
                u = visible.get(o)  # every output produced here is visible: one lookup for both checks
                if u is not None and (o in produced_here or (u in values and u not in outer_uniques)):
                    self.error(f"tensor {o!r} is produced twice (node {n.name or n.op_type!r})")
                produced_here[o] = k
                typ = info.get(o)
                if typ is None and value_attr is not None:  # a Constant that shape inference left untyped
                    typ = (_dtype_name(value_attr.data_type).lower(),) + _dims_of(value_attr.dims)
                if o in values or (typ is not None and typ[2] is not None):
                    self.define(o, scope, visible, kind, typ)  # a shadowing name, or an error to raise
                else:
                    values[o] = (Value(o, None, None, kind, False) if typ is None
                                 else Value(o, typ[0], typ[1], kind, typ[3]))
                    visible[o] = o
            if value_attr is not None and outputs and outputs[0]:
                self._keep_values(visible[outputs[0]], value_attr, parent is None)
            if first_ints is not None and outputs and outputs[0]:
                self.int_consts[visible[outputs[0]]] = first_ints
        return produced_here, todo

    def _constant_attributes(self, n, has_outputs, attrs=None):
        """``(value tensor or None, the first value_int(s) as a tuple or None)`` of Constant node ``n`` (``attrs``:
        its attributes, when read); checks the external-data locations of its tensors."""
        value_attr, first_ints = None, None
        for a in (n.attribute[:] if attrs is None else attrs):
            atype = a.type
            if atype == _TENSOR:
                t = a.t
                if t.data_location == _EXTERNAL:
                    self.external(t, lambda: f"attribute {a.name!r} of node {n.name or n.op_type!r}")
                if a.name == "value":
                    value_attr = t
            elif a.name in ("value_ints", "value_int") and has_outputs:
                if first_ints is None:
                    first_ints = tuple(a.ints) if a.name == "value_ints" else (a.i,)
            elif atype == _SPARSE_TENSOR:
                for t in (a.sparse_tensor.values, a.sparse_tensor.indices):
                    if t.data_location == _EXTERNAL:
                        self.external(t, lambda: f"attribute {a.name!r} of node {n.name or n.op_type!r}")
        return value_attr, first_ints

    def _make_nodes(self, todo, scope, parent, visible, produced_here, outer_uniques, reads_outer):
        """Make the IR nodes of ``todo`` (their subgraphs walked); ``False`` when the main graph reads a tensor a
        later node makes (shapes then need a sorted pass)."""
        # hot loop (one pass per node of million-node models): locals instead of attribute lookups
        nodes, names, producer, consumers = self.nodes, self.names, self.producer, self.consumers
        check_order = self.resort and parent is None
        opsets, schemas, values = self.opsets, self.schemas, self.values
        for n, op_type, domain, node_name, outputs, position, inputs, attributes in todo:
            index = len(nodes)
            schema_key = (domain, op_type)
            since = schemas.get(schema_key, schemas)
            if since is schemas:
                schema = lookup_schema(domain, op_type, opsets.get(domain))
                since = schemas[schema_key] = schema.since_version if schema else None
                self.op_schemas[schema_key] = schema
            name = node_name or f"{op_type}_{index}"
            if name in names:
                name = f"{scope}/{name}" if scope and f"{scope}/{name}" not in names else f"{name}_{index}"
            names.add(name)
            ins = []
            for t in (n.input[:] if inputs is None else inputs):
                if not t:
                    ins.append("")
                    continue
                if check_order:
                    if produced_here.get(t, -1) >= position:
                        self.unsorted = True  # reads what a later node makes: shapes need a sorted pass
                        return False
                    u = visible.get(t)  # made earlier in the file, or not made here: in order
                elif (u := visible.get(t)) is not None and u not in producer and values[u].kind == "intermediate":
                    self.in_order = False  # made by a node listed later (or by itself)
                if u is None:
                    self.text(t, f"an input name of node {name!r}")
                    self.error(f"node {name!r} ({op_type}) consumes tensor {t!r}, which no node, "
                               "graph input or initializer produces")
                if u in outer_uniques:
                    reads_outer.add(u)
                ins.append(u)
            outs = tuple([visible[o] if o else "" for o in outputs])
            nodes.append(None)  # the Node is made once its implicit inputs are known
            for o in outs:
                if o:
                    producer[o] = index
            if attributes is None:
                attributes = n.attribute[:] if n.attribute else ()
            if attributes:
                attrs, implicit = self._node_attributes(n, attributes, name, index, visible, ins, outer_uniques,
                                                        reads_outer)
            else:
                attrs, implicit = {}, ()
            nodes[index] = Node(index, name, op_type, domain, tuple(ins), outs, attrs, since, since is not None,
                                scope, parent, tuple(implicit))
            for t in ins:
                if t:
                    cs = consumers.get(t)
                    if cs is None:
                        consumers[t] = [index]
                    else:
                        cs.append(index)
            for t in implicit:
                consumers.setdefault(t, []).append(index)
        return True

    def _node_attributes(self, n, attributes, name, index, visible, ins, outer_uniques, reads_outer):
        """``(attributes, implicit inputs)`` of node ``n`` (IR node ``index``; ``attributes``: its AttributeProto
        list): each subgraph is walked, and the outer tensors it reads become implicit inputs."""
        GRAPH, GRAPHS, TENSOR, TENSORS, SPARSE_TENSOR, EXTERNAL = _GRAPH, _GRAPHS, _TENSOR, _TENSORS, _SPARSE_TENSOR, \
            _EXTERNAL
        attrs = {}
        implicit = []
        for a in attributes:
            atype = a.type
            if a.name.__class__ is not str:
                self.text(a.name, f"an attribute name of node {name!r}")
            if atype == GRAPH or atype == GRAPHS:
                attrs[a.name] = None
                for sg in ([a.g] if atype == GRAPH else list(a.graphs)):
                    used = self.walk(sg, f"{name}/{a.name}", index, visible)
                    for u in sorted(used):
                        if u not in implicit and u not in ins:
                            implicit.append(u)
                        if u in outer_uniques:
                            reads_outer.add(u)
                continue
            if atype == TENSOR:
                if a.t.data_location == EXTERNAL:
                    self.external(a.t, lambda: f"attribute {a.name!r} of node {n.name or n.op_type!r}")
            elif atype == TENSORS or atype == SPARSE_TENSOR:
                ts = a.tensors if atype == TENSORS else (a.sparse_tensor.values, a.sparse_tensor.indices)
                for t in ts:
                    if t.data_location == EXTERNAL:
                        self.external(t, lambda: f"attribute {a.name!r} of node {n.name or n.op_type!r}")
            attrs[a.name] = _attr_value(a)
        return attrs, implicit

    def _check_acyclic(self, model):
        from ..ir.order import topological_order

        order = topological_order(model)  # computed once here, reused by the simulation
        if len(order) != len(model.nodes):
            placed = set(order)
            stuck = next(n.name for n in model.nodes if n.index not in placed)
            self.error(f"graph has a cycle (through node {stuck!r})")
