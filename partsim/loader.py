"""Load an ONNX file into a :class:`partsim.model.Model`.

Weights are not read (``load_external_data=False``), so graph-only models whose
weight file is absent load fine.  External-data locations are still checked: one
that points outside the model's folder is refused, and never opened.
"""

import hashlib
from functools import lru_cache
import os
from pathlib import Path

from .errors import ModelError
from .model import Model, Node, Value, stable_topological_order
from .schemas import lookup_schema, normalize_domain

__all__ = ["load_model", "model_from_proto", "read_model_proto"]

MAX_DIM = 2**40  # a dimension above this is not a real tensor
# The ai.onnx opset ORT gives a model that imports none (onnxruntime 1.31.1 writes ai.onnx 26 into
# such a model; "Current official support for domain ai.onnx is till opset 26").
ORT_DEFAULT_ONNX_OPSET = 26
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
            for d in tt.shape.dim:
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


def _attr_value(a):
    import onnx

    t = a.type
    A = onnx.AttributeProto
    if t == A.INT:
        return int(a.i)
    if t == A.FLOAT:
        return float(a.f)
    if t == A.STRING:
        return a.s.decode("utf-8", "replace")
    if t == A.INTS:
        return tuple(int(x) for x in a.ints)
    if t == A.FLOATS:
        return tuple(float(x) for x in a.floats)
    if t == A.STRINGS:
        return tuple(x.decode("utf-8", "replace") for x in a.strings)
    if t == A.TENSOR:
        return {"dtype": _dtype_name(a.t.data_type).lower(),
                "dims": tuple(int(d) for d in a.t.dims)}
    return None  # graphs and the rest: not used by predicates


def read_model_proto(path, check_node_text=True):
    """Read and parse ``path`` (no external data), with one-line errors.

    ``check_node_text=False`` leaves the UTF-8 check of node fields to the caller
    (:func:`load_model` does it while it builds the IR, at no extra cost).

    Returns
    -------
    (onnx.ModelProto, bytes)
        The parsed model and the raw file bytes (for hashing).
    """
    import onnx
    from google.protobuf.message import DecodeError

    p = Path(path)
    if not p.exists():
        raise ModelError("no such file", path)
    if not p.is_file():
        raise ModelError("not a regular file", path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise ModelError(f"cannot read: {exc.strerror}", path) from None
    if not data:
        raise ModelError("empty file, not an ONNX model", path)
    try:
        proto = onnx.ModelProto()
        proto.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError) as exc:
        raise ModelError(f"not a valid ONNX protobuf (truncated or corrupt): {exc}", path) from None
    if not proto.HasField("graph"):
        raise ModelError("not an ONNX model: no graph", path)
    _check_strings(proto, path, nodes=check_node_text)
    return proto, data


def _check_strings(msg, path, where="model", nodes=True):
    """Every string field must be UTF-8: ONNX's proto2 schema lets protobuf hand back ``bytes``
    for one that is not, and names, op types and locations are used as text everywhere."""
    from google.protobuf.descriptor import FieldDescriptor as F

    STRING, MESSAGE = F.TYPE_STRING, F.TYPE_MESSAGE
    repeated_of = {}

    def is_repeated(field):
        r = repeated_of.get(field)
        if r is None:
            r = field.is_repeated if hasattr(field, "is_repeated") else field.label == F.LABEL_REPEATED
            repeated_of[field] = r
        return r

    def describe(trail):  # the dotted path, built only for the error message
        parts = []
        while trail is not None:
            trail, name = trail
            parts.append(name)
        return ".".join([where] + parts[::-1])

    stack = [(msg, None)]
    while stack:
        m, trail = stack.pop()
        for field, value in m.ListFields():
            ftype = field.type
            if ftype == STRING:
                for v in (value if is_repeated(field) else (value,)):
                    if not isinstance(v, str):
                        raise ModelError(f"{describe((trail, field.name))} is not valid UTF-8 text: {v[:60]!r}",
                                         path)
            elif ftype == MESSAGE:
                mname = field.message_type.name
                if mname == "NodeProto":  # the bulk of a model: its text fields read directly (fast path)
                    if not nodes:
                        continue  # the IR builder checks node text (and their subgraphs) as it reads them
                    for k, node in enumerate(value):
                        _check_node_text(node, lambda k=k: describe((trail, f"{field.name}[{k}]")), path,
                                         stack, (trail, f"{field.name}[{k}]"))
                    continue
                if mname == "TypeProto":
                    continue  # its only text, dim_param, is checked where it is read (_parse_type)
                if mname == "TensorProto":  # weights: only the name and external-data entries are text we use
                    for t in (value if is_repeated(field) else (value,)):
                        texts = [t.name] + [x for e in t.external_data for x in (e.key, e.value)]
                        if not all(isinstance(x, str) for x in texts):
                            raise ModelError(f"{describe((trail, field.name))}: a tensor name or external-data "
                                             "entry is not valid UTF-8 text", path)
                    continue
                if is_repeated(field):
                    stack.extend((x, (trail, f"{field.name}[{k}]")) for k, x in enumerate(value))
                else:
                    stack.append((value, (trail, field.name)))


def _check_node_text(node, where, path, stack, trail):
    """UTF-8 check of one NodeProto's text; subgraphs go back on the generic ``stack``."""
    texts = [node.name, node.op_type, node.domain, node.doc_string, node.overload]
    texts.extend(node.input)
    texts.extend(node.output)
    for a in node.attribute:
        texts.append(a.name)
        texts.append(a.ref_attr_name)
        texts.append(a.doc_string)
        if a.HasField("g"):
            stack.append((a.g, (trail, f"attribute[{a.name}].g")))
        for k, g in enumerate(a.graphs):
            stack.append((g, (trail, f"attribute[{a.name}].graphs[{k}]")))
        if a.HasField("t"):
            texts.append(a.t.name)
            texts.extend(x for e in a.t.external_data for x in (e.key, e.value))
        for t in a.tensors:
            texts.append(t.name)
            texts.extend(x for e in t.external_data for x in (e.key, e.value))
    for x in node.metadata_props:
        texts.append(x.key)
        texts.append(x.value)
    for x in texts:
        if x.__class__ is not str:
            raise ModelError(f"{where()}: a name, op type, domain or attribute is not valid UTF-8 text: "
                             f"{x[:60]!r}", path)


def check_external_location(t, what, base, path, resolved=None):
    """Where tensor ``t``'s external data lives, refused unless it is a file inside ``base``.

    Returns ``(target path, external_data entries as a dict)``; never opens anything.
    Raises ModelError (naming ``path``) for absolute paths, NUL bytes, unresolvable
    names and locations that leave the model's folder (after resolving links).
    ``resolved``, a dict, remembers locations already found inside ``base`` (most
    tensors of a model share one weight file).
    """
    info = {e.key: e.value for e in t.external_data}
    if not all(isinstance(x, str) for kv in info.items() for x in kv):
        raise ModelError(f"{what}: an external-data entry is not valid UTF-8 text", path)
    loc = info.get("location", "")
    if not loc or os.path.isabs(loc) or loc.startswith(("/", "\\")):
        raise ModelError(f"{what}: external data location {loc!r} is not a relative path", path)
    if resolved is not None and loc in resolved:
        return resolved[loc], info
    if "\0" in loc:
        raise ModelError(f"{what}: external data location {loc!r} contains a NUL byte", path)
    try:
        target = (base / loc).resolve()
    except (OSError, RuntimeError, ValueError) as exc:  # a link loop, a name too long
        raise ModelError(f"{what}: external data location {loc!r} cannot be resolved: {exc}", path) from None
    if target == base or base not in target.parents:
        raise ModelError(f"{what}: external data location {loc!r} escapes the model's folder", path)
    if resolved is not None:
        resolved[loc] = target
    return target, info


def load_model(path, infer_shapes=True):
    """Load an ONNX model file into partsim's IR.

    Parameters
    ----------
    path : str or Path
    infer_shapes : bool, optional
        Run ONNX shape inference (default True).  Failures are kept as warnings.

    Returns
    -------
    Model

    Raises
    ------
    ModelError
        Unreadable, truncated or invalid file, cyclic graph, tensors consumed but
        never produced, duplicate producers, unsafe external-data paths.
    """
    proto, data = read_model_proto(path, check_node_text=False)
    sha256 = hashlib.sha256(data).hexdigest()
    del data
    # hand the only reference over, so the parsed proto can be freed once shapes are inferred
    box = [proto]
    del proto
    return _build_from_box(box, str(path), sha256, infer_shapes)


def model_from_proto(proto, path="<memory>", sha256="", infer_shapes=True):
    """Build the IR from an in-memory ``onnx.ModelProto`` (the proto is not modified).

    External-data locations are checked against ``path``'s folder unless ``path`` is
    ``"<memory>"``.
    """
    return _build_from_box([proto], path, sha256, infer_shapes)


def _build_from_box(box, path, sha256, infer_shapes):
    """Build from ``box = [proto]``; when the box held the only reference, each proto is
    freed as soon as it is no longer needed (a million-node model is ~0.5 GB per copy).

    Shape inference runs on the graph as listed.  ``onnx.shape_inference`` visits nodes in
    file order, so when the builder meets a node reading a tensor that a later node makes
    (a graph not listed in topological order), the inference is redone on a sorted copy,
    as ORT sorts before it infers; sorted files (nearly all) pay nothing for the check.
    """
    proto = box.pop()
    if infer_shapes:
        _check_declared_dims(proto, path)
        warnings = []
        inferred = _infer_shapes_as_listed(proto, warnings)
        del proto
        proto = inferred
        del inferred
        model, builder = _try_build(proto, path, sha256, warnings, None, resort=True)
        if model is not None:
            return model
        proto = builder.proto  # listed out of order: infer again on a sorted copy
        del builder
        warnings = []
        proto, file_order = _infer_shapes_sorted(proto, warnings)
        return _try_build(proto, path, sha256, warnings, file_order, resort=False)[0]
    return _try_build(proto, path, sha256, [], None, resort=False)[0]


def _try_build(proto, path, sha256, warnings, file_order, resort):
    opsets = {}
    for o in proto.opset_import:
        if o.domain.__class__ is not str:
            raise ModelError(f"an opset import domain is not valid UTF-8 text: {o.domain[:60]!r}", path)
        opsets[normalize_domain(o.domain)] = int(o.version)
    if "" not in opsets:  # ORT adds the import itself (onnxruntime/core/graph/model.cc: missing domains get
        opsets[""] = ORT_DEFAULT_ONNX_OPSET  # their newest opset), e.g. for an ai.onnx.ml-only model
        warnings.append(f"no opset import for the default ONNX domain: ai.onnx {ORT_DEFAULT_ONNX_OPSET} "
                        "assumed, as onnxruntime 1.31.1 does")
    builder = _Builder(proto, path, sha256, opsets, warnings, file_order, resort)
    del proto
    try:
        return builder.build(), builder
    except ModelError as exc:
        if exc.path is None:
            exc.path = path
        raise


def _check_declared_dims(proto, path):
    """Impossible declared dimensions are refused before ONNX shape inference sees them."""
    import onnx

    A = onnx.AttributeProto
    graphs = [proto.graph]
    while graphs:
        g = graphs.pop()
        for vi in list(g.input) + list(g.output) + list(g.value_info):
            tt = vi.type.tensor_type if vi.type.WhichOneof("value") == "tensor_type" else None
            if tt is None or not tt.HasField("shape"):
                continue
            for d in tt.shape.dim:
                if d.WhichOneof("value") == "dim_value" and d.dim_value == DYNAMIC_DIM:
                    d.Clear()  # in memory only: shape inference sees an unknown dimension
                elif d.WhichOneof("value") == "dim_value" and not 0 <= d.dim_value <= MAX_DIM:
                    raise ModelError(f"tensor {vi.name!r} has an impossible dimension {d.dim_value}", path)
        for t in g.initializer:
            for d in t.dims:
                if not 0 <= d <= MAX_DIM:
                    raise ModelError(f"tensor {t.name!r} has an impossible dimension {d}", path)
        for n in g.node:
            if n.op_type not in _INFERRED_BODY_OPS:
                continue  # ONNX shape inference enters no other node's graphs (the IR builder checks those)
            for a in n.attribute:
                if a.type == A.GRAPH:
                    graphs.append(a.g)
                elif a.type == A.GRAPHS:
                    graphs.extend(a.graphs)


# ops whose graph attributes ONNX shape inference enters (onnx/defs: If, Loop, Scan, SequenceMap)
_INFERRED_BODY_OPS = frozenset({"If", "Loop", "Scan", "SequenceMap"})


# Memory ONNX shape inference may use beyond the model's own size.  Its data propagation
# (seen with onnx 1.23.2) builds one shape entry per element of every 1-D tensor fed to
# Add/Sub/Mul/Concat, so a 1-D tensor of 2**31 elements (declared, or made by a Reshape whose
# target is propagated) asks for hundreds of GiB.  Under a cap, that fails as MemoryError.
SHAPE_INFERENCE_MEMORY = 2 * 1024**3


def _topological_permutation(graph):
    """Node positions of ``graph`` in a topological order (file order kept where it can be),
    or ``None`` when the graph has a cycle."""
    producer = {}
    for k, n in enumerate(graph.node):
        for o in n.output:
            if o:
                producer.setdefault(o, k)
    deps = [sorted({producer[t] for t in n.input if t in producer and producer[t] != k})
            for k, n in enumerate(graph.node)]
    users = [[] for _ in deps]
    for k, ds in enumerate(deps):
        for d in ds:
            users[d].append(k)
    order = stable_topological_order([len(ds) for ds in deps], users.__getitem__)
    return order if len(order) == len(deps) else None


def _infer_shapes_sorted(proto, warnings):
    """ONNX shape inference on the main graph in topological order, as ORT does it.

    ORT sorts the graph before it infers (seen with onnxruntime 1.31.1: a model listed as
    Tanh(b), Relu(a)->b, Sigmoid(x)->a gets its output shape, which ONNX's file-order
    inference leaves unknown), so the inference runs on a sorted copy.  Returns the
    inferred (sorted) proto and, per file position, the node's position in it.
    """
    import onnx

    order = _topological_permutation(proto.graph)
    if order is None:  # a cycle: the builder reports it
        return proto, None
    sorted_proto = onnx.ModelProto()
    sorted_proto.CopyFrom(proto)
    del sorted_proto.graph.node[:]
    sorted_proto.graph.node.extend(proto.graph.node[k] for k in order)
    del proto
    inferred = _infer_shapes_as_listed(sorted_proto, warnings)
    del sorted_proto
    file_order = [0] * len(order)
    for pos, k in enumerate(order):
        file_order[k] = pos
    return inferred, file_order


def _infer_shapes_as_listed(proto, warnings):
    """ONNX shape inference with data propagation, then without; never fatal, memory-capped."""
    import onnx

    last = None
    for data_prop in (True, False):
        try:
            with _memory_cap(SHAPE_INFERENCE_MEMORY + 4 * proto.ByteSize()):
                inferred = onnx.shape_inference.infer_shapes(proto, check_type=False, strict_mode=False,
                                                             data_prop=data_prop)
        except MemoryError:
            last = "out of memory"
            continue
        except Exception as exc:  # onnx raises many types; a failed inference is not fatal
            last = " ".join(str(exc).split())[:200]
            continue
        if not data_prop:
            warnings.append(f"shape inference ran without data propagation ({last})")
        return inferred
    warnings.append(f"shape inference failed: {last}")
    return proto


class _memory_cap:
    """Lower the address-space limit to current use + ``extra`` bytes for a block (Linux only).

    A C++ allocation beyond it raises ``std::bad_alloc``, which the ONNX bindings turn
    into MemoryError, instead of the whole machine paging or the process being killed.
    Elsewhere (no ``resource`` module or no ``/proc``), it does nothing.
    """

    def __init__(self, extra):
        self.extra = extra
        self.saved = None

    def __enter__(self):
        try:
            import resource

            with open("/proc/self/statm") as f:
                used = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
            soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        except (ImportError, OSError, ValueError, AttributeError):
            return self
        cap = used + self.extra
        if hard != resource.RLIM_INFINITY:
            cap = min(cap, hard)
        if soft != resource.RLIM_INFINITY and soft <= cap:
            return self  # already as tight
        try:
            resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
        except (ValueError, OSError):
            return self
        self.saved = (resource, soft, hard)
        return self

    def __exit__(self, *exc):
        if self.saved is not None:
            resource, soft, hard = self.saved
            resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
        return False


class _Builder:
    def __init__(self, proto, path, sha256, opsets, warnings, file_order=None, resort=False):
        self.proto = proto
        self.file_order = file_order  # main-graph node positions in file order, when the proto was sorted
        self.resort = resort  # stop (build() -> None) at a main graph listed out of topological order
        self.unsorted = False
        self.path = path
        self.sha256 = sha256
        self.opsets = opsets
        self.warnings = warnings
        self.values = {}
        self.producer = {}
        self.consumers = {}
        self.nodes = []  # dicts, frozen into Node at the end
        self.names = set()
        self.scope_outputs = {}
        self.types = {}  # serialized TypeProto -> _parse_type of it: a model repeats a few hundred types
        self.schemas = {}  # (domain, op) -> since_version under this model's opsets
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
        nodes, self.nodes = self.nodes, None
        model = Model(self.path, self.sha256, self.opsets, nodes, self.values, self.producer,
                      self.consumers, [self._main_inputs[i] for i in range(len(self._main_inputs))],
                      self._main_outputs, self.scope_outputs, self.warnings, ir_version)
        if self.in_order:
            model._topo = list(range(len(nodes)))  # already topological: no sort, and no cycle
        else:
            self._check_acyclic(model)
        return model

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
        """Add graph ``g``'s tensors and nodes; return the outer names it reads.

        Also checks, as it reads them: UTF-8 text, impossible dimensions, external-data
        locations (initializers and tensor attributes), duplicate producers, and whether
        the nodes are listed in topological order.
        """
        import onnx

        A = onnx.AttributeProto
        GRAPH, GRAPHS, TENSOR, TENSORS, SPARSE_TENSOR = A.GRAPH, A.GRAPHS, A.TENSOR, A.TENSORS, A.SPARSE_TENSOR
        EXTERNAL = onnx.TensorProto.EXTERNAL
        visible = dict(outer)
        types = self.types
        info = {}
        for vis in (g.value_info, g.input, g.output):
            for vi in vis:
                tp = vi.type
                key = tp.SerializeToString()
                typ = types.get(key)
                if typ is None:
                    typ = types[key] = _parse_type(tp)
                info[vi.name] = typ
        init_names = set()
        for init in g.initializer:
            self.text(init.name, "an initializer name")
            if init.name in init_names:
                self.error(f"initializer {init.name!r} is defined twice")
            init_names.add(init.name)
            if init.data_location == EXTERNAL:
                self.external(init, lambda: f"initializer {init.name!r}")
            typ = (_dtype_name(init.data_type).lower() if init.data_type else None,) + _dims_of(init.dims)
            self.define(init.name, scope, visible, "initializer", typ)
        for sinit in g.sparse_initializer:
            self.text(sinit.values.name, "a sparse initializer name")
            for t, what in ((sinit.values, ""), (sinit.indices, " indices")):
                if t.data_location == EXTERNAL:
                    self.external(t, lambda: f"sparse initializer {sinit.values.name!r}{what}")
            init_names.add(sinit.values.name)
            self.define(sinit.values.name, scope, visible, "initializer", (None,) + _dims_of(sinit.dims))
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
        if parent is None:
            self._main_inputs = inputs
        # all node outputs of this graph are visible to every node of it (file order need not be sorted)
        produced_here = {}
        outer_uniques = set(outer.values())
        g_nodes = g.node
        if parent is None and self.file_order is not None:
            g_nodes = [g.node[pos] for pos in self.file_order]
        values = self.values
        todo = []  # (NodeProto, op_type, domain, output names): the nodes to make, read once
        for k, n in enumerate(g_nodes):
            op_type, raw_domain, node_name = n.op_type, n.domain, n.name
            if op_type.__class__ is not str or raw_domain.__class__ is not str or node_name.__class__ is not str:
                for what, x in (("a node's op type", op_type), ("a node's domain", raw_domain),
                                ("a node name", n.name)):
                    self.text(x, what)
            domain = "" if raw_domain == "" or raw_domain == "ai.onnx" else raw_domain  # normalize_domain
            constant = op_type == "Constant" and domain == ""
            kind = "constant" if constant else "intermediate"
            value_attr = None
            if constant:
                for a in n.attribute:
                    atype = a.type
                    if atype == TENSOR:
                        if a.t.data_location == EXTERNAL:
                            self.external(a.t, lambda: f"attribute {a.name!r} of node {n.name or n.op_type!r}")
                        if a.name == "value":
                            value_attr = a.t
                    elif atype == SPARSE_TENSOR:
                        for t in (a.sparse_tensor.values, a.sparse_tensor.indices):
                            if t.data_location == EXTERNAL:
                                self.external(t, lambda: f"attribute {a.name!r} of node {n.name or n.op_type!r}")
            outputs = n.output[:]
            for o in outputs:
                if not o:
                    continue
                if o.__class__ is not str:
                    self.text(o, f"an output name of node {n.name or n.op_type!r}")
                if o in produced_here or (o in visible and visible[o] in values
                                          and visible[o] not in outer_uniques):
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
            if not constant:
                # ORT turns Constant nodes into initializers when it loads a graph, so they are
                # never assigned to a provider; their outputs were defined above as constants.
                todo.append((n, op_type, domain, node_name, outputs, k))
        reads_outer = set()
        # hot loop (one pass per node of million-node models): locals instead of attribute lookups
        nodes, names, producer, consumers = self.nodes, self.names, self.producer, self.consumers
        check_order = self.resort and parent is None
        opsets = self.opsets
        schemas = self.schemas
        for n, op_type, domain, node_name, outputs, position in todo:
            index = len(nodes)
            schema_key = (domain, op_type)
            since = schemas.get(schema_key, schemas)
            if since is schemas:
                schema = lookup_schema(domain, op_type, opsets.get(domain))
                since = schemas[schema_key] = schema.since_version if schema else None
            name = node_name or f"{op_type}_{index}"
            if name in names:
                name = f"{scope}/{name}" if scope and f"{scope}/{name}" not in names else f"{name}_{index}"
            names.add(name)
            ins = []
            for t in n.input:
                if not t:
                    ins.append("")
                    continue
                if check_order:
                    if produced_here.get(t, -1) >= position:
                        self.unsorted = True  # reads what a later node makes: shapes need a sorted pass
                        return None
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
            attrs = {}
            implicit = []
            for a in n.attribute:
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
                else:
                    if atype == TENSOR:
                        if a.t.data_location == EXTERNAL:
                            self.external(a.t, lambda: f"attribute {a.name!r} of node {n.name or n.op_type!r}")
                    elif atype == TENSORS or atype == SPARSE_TENSOR:
                        ts = a.tensors if atype == TENSORS else (a.sparse_tensor.values, a.sparse_tensor.indices)
                        for t in ts:
                            if t.data_location == EXTERNAL:
                                self.external(t, lambda: f"attribute {a.name!r} of node {n.name or n.op_type!r}")
                    attrs[a.name] = _attr_value(a)
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

    def _check_acyclic(self, model):
        from .model import topological_order

        order = topological_order(model)  # computed once here, reused by the simulation
        if len(order) != len(model.nodes):
            placed = set(order)
            stuck = next(n.name for n in model.nodes if n.index not in placed)
            self.error(f"graph has a cycle (through node {stuck!r})")
