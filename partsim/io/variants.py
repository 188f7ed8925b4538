"""Model variants for what-if questions: fixed symbolic dimensions, another opset, another optimization level.
"""

from ..errors import ModelError, UsageError

__all__ = ["load_variant", "load_variant_prepared", "fix_dims_in_proto", "dim_params", "check_dims"]


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

    def walk(g):
        for vi in list(g.input) + list(g.output) + list(g.value_info):
            fix_type(vi.type)
        for n in g.node:
            for a in n.attribute:
                if a.HasField("g"):
                    walk(a.g)
                for sub in a.graphs:
                    walk(sub)

    walk(proto.graph)
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


def _modify(proto, fix_dims, opset, path):
    if fix_dims:
        fix_dims_in_proto(proto, fix_dims)
    if opset is not None:
        proto = _convert_opset(proto, opset, path)
    return proto


def load_variant(path, optimize="none", fix_dims=None, opset=None, seed=0, label="what-if variant of the model",
                 resolution=None):
    """Load ``path`` with symbolic dims fixed and/or converted to another opset, at level ``optimize``.

    The change is made on the in-memory proto, then ORT's pipeline for that level
    (:func:`partsim.runtime.pipeline.prepare`) runs on it for ``resolution``'s providers (CPU only
    when absent); the external-data files stay the model's own and the user's file is never
    written.  ``label`` starts the note the model carries (its summary's ``warnings``).
    """
    return load_variant_prepared(path, optimize, fix_dims, opset, seed, label, resolution).model


def load_variant_prepared(path, optimize="none", fix_dims=None, opset=None, seed=0,
                          label="what-if variant of the model", resolution=None):
    """:func:`load_variant`, returning the :class:`partsim.runtime.pipeline.Prepared` (origins, ORT's failure)."""
    from ..runtime.pipeline import prepare
    from ..sim.pipeline import normalize_level

    level = normalize_level(optimize) or "all"
    if resolution is None:  # CPU only, the shipped table
        from ..rules.load import builtin_tables
        from ..rules.resolve import resolve_providers

        resolution = resolve_providers(["CPUExecutionProvider"], builtin_tables())
    changes = ", ".join([f"{k}={v}" for k, v in sorted((fix_dims or {}).items())]
                        + ([f"opset {opset}"] if opset is not None else []))
    notes = [f"{label} ({changes})" + (f", predicted at level {level}" if level != "disable" else "")] \
        if changes else []
    modify = (lambda proto: _modify(proto, fix_dims, opset, path)) if changes else None
    return prepare(path, level, resolution, seed=seed, notes=notes, modify=modify)
