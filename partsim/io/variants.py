"""Model variants for what-if questions: fixed symbolic dimensions, another opset, another optimization level,
ops replaced by the ops that define them (decompositions).
"""

from ..errors import ModelError, UsageError

__all__ = ["load_variant", "load_variant_prepared", "fix_dims_in_proto", "dim_params", "check_dims",
           "decompose_in_proto", "decomposable", "decompose_sources", "DOCUMENTED"]


def dim_params(model):
    """Symbolic dimension names of the main graph's inputs -> sorted list of ``(input, axis)``."""
    out = {}
    for name in model.graph_inputs:
        v = model.value(name)
        if v.kind != "input" or v.shape is None:
            continue
        for axis, d in enumerate(v.shape):
            if isinstance(d, str) and d:
                out.setdefault(d, []).append((name, axis))
    return {k: sorted(v) for k, v in sorted(out.items())}


def check_dims(model, fixed, option="--dim"):
    """Refuse (one-line :class:`UsageError`) a name in ``fixed`` that no graph input of ``model`` has as a
    symbolic dimension, listing those it has."""
    known = dim_params(model)
    bad = sorted(set(fixed or ()) - set(known))
    if bad:
        raise UsageError(f"{option} {bad[0]}: no graph input has that symbolic dimension "
                         f"(symbolic: {', '.join(known) or 'none'})")


def fix_dims_in_proto(proto, fixed):
    """Replace every ``dim_param`` named in ``fixed`` by its value, in every graph's inputs,
    outputs and value_info (a symbolic name means the same size everywhere).  In place."""
    def fix_type(tp):
        which = tp.WhichOneof("value")
        if which in ("tensor_type", "sparse_tensor_type"):
            tt = getattr(tp, which)
            if tt.HasField("shape"):
                for d in tt.shape.dim:
                    if d.WhichOneof("value") == "dim_param" and d.dim_param in fixed:
                        d.dim_value = int(fixed[d.dim_param])
        elif which == "sequence_type":
            fix_type(tp.sequence_type.elem_type)
        elif which == "optional_type":
            fix_type(tp.optional_type.elem_type)

    from .subgraphs import all_graphs

    for g in all_graphs(proto.graph):
        for vi in list(g.input) + list(g.output) + list(g.value_info):
            fix_type(vi.type)
    return proto


def _convert_opset(proto, opset, path):
    import onnx
    from onnx import version_converter

    try:
        converted = version_converter.convert_version(proto, int(opset))
        onnx.checker.check_model(converted, full_check=False)
    except Exception as exc:  # the converter raises RuntimeError, ValidationError, IndexError ...
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        first = first.rsplit("failed: ", 1)[-1]  # drop the converter's C++ file and assertion text
        raise ModelError(f"onnx.version_converter cannot convert the model to opset {opset}: {first[:300]}",
                         path) from None
    return converted


def _modify(proto, fix_dims, opset, path, decompose=()):
    if fix_dims:
        fix_dims_in_proto(proto, fix_dims)
    if opset is not None:
        proto = _convert_opset(proto, opset, path)
    if decompose:
        done = decompose_in_proto(proto, decompose)
        missing = sorted(set(decompose) - set(done))
        if missing:
            raise ModelError(f"no {missing[0]} node of the main graph can be decomposed (none there, or no "
                             f"definition in ONNX ops at the model's opset)", path)
    return proto


def load_variant(path, optimize="none", fix_dims=None, opset=None, seed=0, label="what-if variant of the model",
                 resolution=None, decompose=()):
    """Load ``path`` with symbolic dims fixed and/or converted to another opset, at level ``optimize``.

    The change is made on the in-memory proto, then ORT's pipeline for that level
    (:func:`partsim.runtime.pipeline.prepare`) runs on it for ``resolution``'s providers (CPU only
    when absent); the external-data files stay the model's own and the user's file is never
    written.  ``label`` starts the note the model carries (its summary's ``warnings``).  Like
    :func:`partsim.api.load_for_prediction`, the graph ORT *partitions* at that level (at ``extended``/``all``
    the Level-1 graph): what-if and blame compare graphs every provider was asked about.
    """
    from ..sim.pipeline import normalize_level, partitioning_level

    at = partitioning_level(normalize_level(optimize) or "all")
    return load_variant_prepared(path, at, fix_dims, opset, seed, label, resolution, decompose).model


def load_variant_prepared(path, optimize="none", fix_dims=None, opset=None, seed=0,
                          label="what-if variant of the model", resolution=None, decompose=()):
    """:func:`load_variant`, returning the :class:`partsim.runtime.pipeline.Prepared` (origins, ORT's failure)."""
    from ..runtime.pipeline import prepare
    from ..sim.pipeline import normalize_level

    level = normalize_level(optimize) or "all"
    if resolution is None:  # CPU only, the shipped table
        from ..rules.load import builtin_tables
        from ..rules.resolve import resolve_providers

        resolution = resolve_providers(["CPUExecutionProvider"], builtin_tables())
    changes = ", ".join([f"{k}={v}" for k, v in sorted((fix_dims or {}).items())]
                        + ([f"opset {opset}"] if opset is not None else [])
                        + [f"{op} decomposed" for op in sorted(decompose)])
    notes = [f"{label} ({changes})" + (f", predicted at level {level}" if level != "disable" else "")] \
        if changes else []
    modify = (lambda proto: _modify(proto, fix_dims, opset, path, tuple(decompose))) if changes else None
    return prepare(path, level, resolution, seed=seed, notes=notes, modify=modify)


# --- decompositions: an op replaced by the ops that define it ------------------------------------
# Documented equivalents (the formulas of onnx/docs/Operators.md, onnx 1.17; HardSigmoid as
# Clip(x·alpha+beta, 0, 1) rather than its schema body's Max/Min/CastLike, so that each op is one a
# mobile provider's table knows).  Every other op of the default domain with a static ONNX function
# body (onnx.defs.get_schema(op).function_body) is expanded from that body.
DOCUMENTED = ("Gelu", "HardSigmoid", "HardSwish", "LayerNormalization", "Mish")


def decomposable(op_type, opset):
    """True when :func:`decompose_in_proto` can replace ``op_type`` nodes of a model at ``opset``."""
    return op_type in DOCUMENTED or _schema_body(op_type, opset) is not None


def decompose_sources(op_type, origins, opset, known=None):
    """The ops of a model file to decompose so that its ``op_type`` nodes go (a tuple, file ops sorted;
    empty when none can): ``op_type`` itself for nodes of the file (origin ``model``), and ``Y`` for nodes ORT
    made by inlining the function op ``Y`` (origin ``inlined:Y``: HardSwish becomes HardSigmoid and Mul).
    ``known``: the decomposable ops, when already worked out (else :func:`decomposable` at ``opset``).

    >>> decompose_sources("HardSigmoid", ["inlined:HardSwish", "model"], 14)
    ('HardSigmoid', 'HardSwish')
    >>> decompose_sources("HardSigmoid", ["fused:X"], 14)
    ()
    """
    ops = set()
    for origin in set(origins):
        source = op_type if origin == "model" else origin.partition(":")[2] if origin.startswith("inlined:") else None
        if not source or not (source in known if known is not None else decomposable(source, opset)):
            return ()
        ops.add(source)
    return tuple(sorted(ops))


def _schema_body(op_type, opset):
    import onnx.defs

    try:
        schema = onnx.defs.get_schema(op_type, opset, "")
    except Exception:  # onnx.defs raises SchemaError for an op it does not know at that opset
        return None
    if not schema.has_function or schema.deprecated:
        return None
    body = schema.function_body
    needs = max((o.version for o in body.opset_import if o.domain in ("", "ai.onnx")), default=opset)
    return body if needs <= opset else None  # its ops must exist at the model's opset


class _Emit:
    """New nodes and constants for one replaced node, with names nobody else uses."""

    def __init__(self, node, taken, dtype, inits):
        self.base, self.taken, self.dtype, self.inits, self.nodes = node.name or node.op_type, taken, dtype, inits, []

    def name(self, hint):
        k, name = 0, f"{self.base}/{hint}"
        while name in self.taken:
            k += 1
            name = f"{self.base}/{hint}_{k}"
        self.taken.add(name)
        return name

    def const(self, value, hint="c"):
        import numpy as np
        from onnx import helper, numpy_helper

        name = self.name(hint)
        arr = np.array(value, dtype=helper.tensor_dtype_to_np_dtype(self.dtype))
        self.inits.append(numpy_helper.from_array(arr, name))
        return name

    def op(self, op_type, inputs, out=None, **attrs):
        from onnx import helper

        out = out or self.name(op_type.lower())
        self.nodes.append(helper.make_node(op_type, list(inputs), [out], name=self.name(op_type), **attrs))
        return out


def _attr(node, name, default):
    from onnx import helper

    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def _documented(node, e):
    """Nodes for ``node`` (its outputs kept); None when its form has no documented equivalent here."""
    x, y = node.input[0], node.output[0]
    op = node.op_type
    if op == "HardSigmoid":
        a = e.op("Mul", [x, e.const(_attr(node, "alpha", 0.2), "alpha")])
        b = e.op("Add", [a, e.const(_attr(node, "beta", 0.5), "beta")])
        e.op("Clip", [b, e.const(0.0, "zero"), e.const(1.0, "one")], y)
    elif op == "HardSwish":  # x · HardSigmoid(x) with alpha 1/6, beta 0.5
        a = e.op("Mul", [x, e.const(1.0 / 6.0, "alpha")])
        b = e.op("Add", [a, e.const(0.5, "beta")])
        e.op("Mul", [x, e.op("Clip", [b, e.const(0.0, "zero"), e.const(1.0, "one")])], y)
    elif op == "Mish":  # x · tanh(softplus(x))
        e.op("Mul", [x, e.op("Tanh", [e.op("Softplus", [x])])], y)
    elif op == "Gelu":
        half = e.op("Mul", [x, e.const(0.5, "half")])
        if _attr(node, "approximate", b"none") in (b"tanh", "tanh"):  # 0.5x(1 + tanh(√(2/π)(x + 0.044715x³)))
            cube = e.op("Mul", [e.op("Mul", [x, x]), x])
            inner = e.op("Add", [x, e.op("Mul", [cube, e.const(0.044715, "k")])])
            t = e.op("Tanh", [e.op("Mul", [inner, e.const(0.7978845608028654, "sqrt_2_over_pi")])])
        else:  # 0.5x(1 + erf(x/√2))
            t = e.op("Erf", [e.op("Div", [x, e.const(1.4142135623730951, "sqrt2")])])
        e.op("Mul", [half, e.op("Add", [t, e.const(1.0, "one")])], y)
    elif op == "LayerNormalization":
        if len([o for o in node.output if o]) > 1:
            return None  # Mean / InvStdDev outputs used: no plain equivalent here
        axis = _attr(node, "axis", -1)
        if axis != -1:
            return None
        mean = e.op("ReduceMean", [x], axes=[-1], keepdims=1) if e.opset < 18 else \
            e.op("ReduceMean", [x, e.shape_const([-1])], keepdims=1)
        d = e.op("Sub", [x, mean])
        var = e.op("ReduceMean", [e.op("Mul", [d, d])], axes=[-1], keepdims=1) if e.opset < 18 else \
            e.op("ReduceMean", [e.op("Mul", [d, d]), e.shape_const([-1])], keepdims=1)
        std = e.op("Sqrt", [e.op("Add", [var, e.const(_attr(node, "epsilon", 1e-5), "epsilon")])])
        out = e.op("Mul", [e.op("Div", [d, std]), node.input[1]], None if len(node.input) > 2 and node.input[2] else y)
        if len(node.input) > 2 and node.input[2]:
            e.op("Add", [out, node.input[2]], y)
    else:
        return None
    return e.nodes


def _from_body(node, body, e):
    """``node`` expanded from its schema's function body: formal inputs, outputs and attribute
    references mapped to the node's; the body's own tensors renamed."""
    import onnx
    from onnx import helper

    names = dict(zip(body.input, node.input))
    names.update(zip(body.output, node.output))
    given = {a.name: a for a in node.attribute}
    schema_attrs = onnx.defs.get_schema(node.op_type, e.opset, "").attributes
    for n in body.node:
        new = helper.make_node(n.op_type, [names.setdefault(t, e.name(t)) if t else "" for t in n.input],
                               [names.setdefault(t, e.name(t)) if t else "" for t in n.output],
                               name=e.name(n.op_type), domain=n.domain)
        for a in n.attribute:
            if a.ref_attr_name:
                src = given.get(a.ref_attr_name)
                if src is None:
                    default = schema_attrs[a.ref_attr_name].default_value
                    if not default.name:
                        continue  # an optional attribute left unset
                    src = default
                copy = onnx.AttributeProto()
                copy.CopyFrom(src)
                copy.name = a.name
                new.attribute.append(copy)
            else:
                new.attribute.append(a)
        e.nodes.append(new)
    return e.nodes


def decompose_in_proto(proto, ops):
    """Replace every main-graph node of the default domain whose op type is in ``ops`` by the ops
    that define it (:data:`DOCUMENTED`, else the schema's function body).  In place; returns
    ``{op: nodes replaced}``.  Nodes inside control-flow bodies are left as they are."""
    import onnx
    from onnx import TensorProto

    opset = next((o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")), 1)
    typed = onnx.shape_inference.infer_shapes(proto)
    dtypes = {v.name: v.type.tensor_type.elem_type for v in list(typed.graph.value_info) + list(typed.graph.input)}
    dtypes.update({i.name: i.data_type for i in proto.graph.initializer})
    taken = {n.name for n in proto.graph.node} | {t for n in proto.graph.node for t in list(n.input) + list(n.output)}
    taken |= {i.name for i in proto.graph.initializer} | {i.name for i in proto.graph.input}
    out, counts = [], {}
    for node in proto.graph.node:
        e = None
        if node.domain in ("", "ai.onnx") and node.op_type in ops:
            e = _Emit(node, taken, dtypes.get(node.input[0]) or TensorProto.FLOAT, proto.graph.initializer)
            e.opset = opset
            e.shape_const = lambda values, e=e: _int64_const(e, values)
            body = _schema_body(node.op_type, opset)
            made = _documented(node, e) if node.op_type in DOCUMENTED else None
            if made is None and body is not None:
                made = _from_body(node, body, e)
            if made:
                out.extend(made)
                counts[node.op_type] = counts.get(node.op_type, 0) + 1
                continue
        out.append(node)
    del proto.graph.node[:]
    proto.graph.node.extend(out)
    return counts


def _int64_const(e, values):
    import numpy as np
    from onnx import numpy_helper

    name = e.name("axes")
    e.inits.append(numpy_helper.from_array(np.array(values, dtype=np.int64), name))
    return name
