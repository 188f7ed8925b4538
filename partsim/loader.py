"""Load an ONNX file into a :class:`partsim.model.Model`.

Weights are not read (``load_external_data=False``), so graph-only models whose
weight file is absent load fine.  External-data locations are still checked: one
that points outside the model's folder is refused, and never opened.
"""

import hashlib
import os
from pathlib import Path

from .errors import ModelError
from .model import Model, Node, Value
from .schemas import lookup_schema, normalize_domain

__all__ = ["load_model", "model_from_proto", "read_model_proto"]

MAX_DIM = 2**40  # a dimension above this is not a real tensor


def _type_of(tp):
    """(dtype, shape) of an onnx TypeProto."""
    import onnx

    which = tp.WhichOneof("value")
    if which == "tensor_type":
        tt = tp.tensor_type
        dtype = None
        if tt.elem_type:
            dtype = onnx.TensorProto.DataType.Name(tt.elem_type).lower()
        shape = None
        if tt.HasField("shape"):
            dims = []
            for d in tt.shape.dim:
                w = d.WhichOneof("value")
                if w == "dim_value":
                    dims.append(int(d.dim_value))
                elif w == "dim_param":
                    dims.append(d.dim_param)
                else:
                    dims.append(None)
            shape = tuple(dims)
        return dtype, shape
    if which is None:
        return None, None
    return _type_string(tp), None


def _type_string(tp):
    import onnx

    which = tp.WhichOneof("value")
    if which == "tensor_type":
        return f"tensor({onnx.TensorProto.DataType.Name(tp.tensor_type.elem_type).lower()})"
    if which == "sequence_type":
        return f"seq({_type_string(tp.sequence_type.elem_type)})"
    if which == "optional_type":
        return f"optional({_type_string(tp.optional_type.elem_type)})"
    if which == "map_type":
        key = onnx.TensorProto.DataType.Name(tp.map_type.key_type).lower()
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
        return {"dtype": onnx.TensorProto.DataType.Name(a.t.data_type).lower(),
                "dims": tuple(int(d) for d in a.t.dims)}
    return None  # graphs and the rest: not used by predicates


def read_model_proto(path):
    """Read and parse ``path`` (no external data), with one-line errors.

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
    if not any(normalize_domain(o.domain) == "" for o in proto.opset_import):
        raise ModelError("model has no opset import for the default ONNX domain", path)
    return proto, data


def _check_external_data(proto, path):
    """Refuse external-data locations that leave the model's folder (never opened)."""
    import onnx

    base = Path(path).resolve().parent
    graphs = [proto.graph]
    while graphs:
        g = graphs.pop()
        for init in g.initializer:
            if init.data_location != onnx.TensorProto.EXTERNAL:
                continue
            loc = next((e.value for e in init.external_data if e.key == "location"), "")
            if not loc or os.path.isabs(loc) or loc.startswith(("/", "\\")):
                raise ModelError(
                    f"initializer {init.name!r}: external data location {loc!r} is not a relative path", path)
            target = (base / loc).resolve()
            if target != base and base not in target.parents:
                raise ModelError(
                    f"initializer {init.name!r}: external data location {loc!r} escapes the model's folder", path)
        for n in g.node:
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    graphs.append(a.g)
                elif a.type == onnx.AttributeProto.GRAPHS:
                    graphs.extend(a.graphs)


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
    proto, data = read_model_proto(path)
    _check_external_data(proto, path)
    return model_from_proto(proto, path=str(path), sha256=hashlib.sha256(data).hexdigest(),
                            infer_shapes=infer_shapes)


def model_from_proto(proto, path="<memory>", sha256="", infer_shapes=True):
    """Build the IR from an in-memory ``onnx.ModelProto`` (the proto is not modified)."""
    import onnx

    warnings = []
    if infer_shapes:
        try:
            proto = onnx.shape_inference.infer_shapes(proto, check_type=False, strict_mode=False,
                                                      data_prop=True)
        except Exception as exc:  # onnx raises many types; a failed inference is not fatal
            warnings.append(f"shape inference failed: {' '.join(str(exc).split())[:200]}")
    opsets = {}
    for o in proto.opset_import:
        opsets[normalize_domain(o.domain)] = int(o.version)
    return _Builder(proto, path, sha256, opsets, warnings).build()


class _Builder:
    def __init__(self, proto, path, sha256, opsets, warnings):
        self.proto = proto
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

    def error(self, msg):
        raise ModelError(msg, self.path)

    def build(self):
        g = self.proto.graph
        self.walk(g, "", None, {})
        nodes = []
        for d in self.nodes:
            nodes.append(Node(**d))
        model = Model(self.path, self.sha256, self.opsets, nodes, self.values, self.producer,
                      self.consumers, [self._main_inputs[i] for i in range(len(self._main_inputs))],
                      self._main_outputs, self.scope_outputs, self.warnings)
        self._check_acyclic(model)
        return model

    def define(self, name, scope, visible, kind, typ=None):
        unique = name
        if unique in self.values:
            unique = f"{scope}/{name}" if scope else name
            k = 1
            while unique in self.values:
                unique = f"{scope}/{name}#{k}"
                k += 1
        dtype, shape = typ if typ is not None else (None, None)
        if shape is not None:
            for d in shape:
                if isinstance(d, int) and (d < 0 or d > MAX_DIM):
                    self.error(f"tensor {name!r} has an impossible dimension {d}")
        self.values[unique] = Value(unique, dtype, shape, kind)
        visible[name] = unique
        return unique

    def walk(self, g, scope, parent, outer):
        """Add graph ``g``'s tensors and nodes; return the outer names it reads."""
        import onnx

        visible = dict(outer)
        info = {}
        for vi in list(g.value_info) + list(g.input) + list(g.output):
            info[vi.name] = _type_of(vi.type)
        init_names = set()
        for init in g.initializer:
            init_names.add(init.name)
            typ = (onnx.TensorProto.DataType.Name(init.data_type).lower() if init.data_type else None,
                   tuple(int(d) for d in init.dims))
            self.define(init.name, scope, visible, "initializer", typ)
        for sinit in g.sparse_initializer:
            init_names.add(sinit.values.name)
            self.define(sinit.values.name, scope, visible, "initializer",
                        (None, tuple(int(d) for d in sinit.dims)))
        inputs = []
        for vi in g.input:
            if vi.name in init_names:
                continue
            inputs.append(self.define(vi.name, scope, visible, "input", info.get(vi.name)))
        if parent is None:
            self._main_inputs = inputs
        # all node outputs of this graph are visible to every node of it (file order need not be sorted)
        produced_here = {}
        for k, n in enumerate(g.node):
            for o in n.output:
                if not o:
                    continue
                if o in produced_here or (o in visible and visible[o] in self.values
                                          and visible[o] not in outer.values()):
                    self.error(f"tensor {o!r} is produced twice (node {n.name or n.op_type!r})")
                produced_here[o] = k
                kind = "constant" if n.op_type == "Constant" and normalize_domain(n.domain) == "" else "intermediate"
                typ = info.get(o)
                if kind == "constant" and typ is None:
                    for a in n.attribute:
                        if a.name == "value" and a.type == onnx.AttributeProto.TENSOR:
                            typ = (onnx.TensorProto.DataType.Name(a.t.data_type).lower(),
                                   tuple(int(d) for d in a.t.dims))
                self.define(o, scope, visible, kind, typ)
        reads_outer = set()
        outer_uniques = set(outer.values())
        for n in g.node:
            if n.op_type == "Constant" and normalize_domain(n.domain) == "":
                # ORT turns Constant nodes into initializers when it loads a graph, so they are
                # never assigned to a provider; their outputs were defined above as constants.
                continue
            index = len(self.nodes)
            domain = normalize_domain(n.domain)
            opset = self.opsets.get(domain)
            schema = lookup_schema(domain, n.op_type, opset)
            name = n.name or f"{n.op_type}_{index}"
            if name in self.names:
                name = f"{scope}/{name}" if scope and f"{scope}/{name}" not in self.names else f"{name}_{index}"
            self.names.add(name)
            ins = []
            for t in n.input:
                if not t:
                    ins.append("")
                    continue
                u = visible.get(t)
                if u is None:
                    self.error(f"node {name!r} ({n.op_type}) consumes tensor {t!r}, which no node, "
                               "graph input or initializer produces")
                if u in outer_uniques:
                    reads_outer.add(u)
                ins.append(u)
            outs = tuple(visible[o] if o else "" for o in n.output)
            entry = dict(index=index, name=name, op_type=n.op_type, domain=domain,
                         inputs=tuple(ins), outputs=outs,
                         attrs={a.name: _attr_value(a) for a in n.attribute},
                         since_version=schema.since_version if schema else None,
                         schema_known=schema is not None, scope=scope, parent=parent,
                         implicit_inputs=())
            self.nodes.append(entry)
            for o in outs:
                if o:
                    self.producer[o] = index
            implicit = []
            for a in n.attribute:
                subs = []
                if a.type == onnx.AttributeProto.GRAPH:
                    subs = [a.g]
                elif a.type == onnx.AttributeProto.GRAPHS:
                    subs = list(a.graphs)
                for sg in subs:
                    used = self.walk(sg, f"{name}/{a.name}", index, visible)
                    for u in sorted(used):
                        if u not in implicit and u not in ins:
                            implicit.append(u)
                        if u in outer_uniques:
                            reads_outer.add(u)
            entry["implicit_inputs"] = tuple(implicit)
            for t in list(ins) + implicit:
                if t:
                    self.consumers.setdefault(t, []).append(index)
        outs = []
        for vi in g.output:
            u = visible.get(vi.name)
            if u is None:
                self.error(f"graph output {vi.name!r} is produced by nothing")
            if u in outer_uniques:
                reads_outer.add(u)
            outs.append(u)
        self.scope_outputs[scope] = set(outs)
        if parent is None:
            self._main_outputs = outs
        return reads_outer

    def _check_acyclic(self, model):
        indeg = [0] * len(model.nodes)
        for n in model.nodes:
            indeg[n.index] = len(model.in_edges(n.index))
        ready = [i for i, d in enumerate(indeg) if d == 0]
        seen = 0
        while ready:
            i = ready.pop()
            seen += 1
            for c, _ in model.out_edges(i):
                indeg[c] -= 1
                if indeg[c] == 0:
                    ready.append(c)
        if seen != len(model.nodes):
            stuck = next(n.name for n in model.nodes if indeg[n.index] > 0)
            self.error(f"graph has a cycle (through node {stuck!r})")
