"""Model variants for what-if questions: fixed symbolic dimensions, another opset, another optimization level.
"""

from ..errors import ModelError

__all__ = ["load_variant", "fix_dims_in_proto", "dim_params"]


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


def load_variant(path, optimize="none", fix_dims=None, opset=None, seed=0, resolution=None):
    """Load ``path`` with symbolic dims fixed and/or converted to another opset, at level ``optimize``.

    At ``none``/``disable`` the change is made on the in-memory proto and the IR rebuilt
    (:func:`partsim.io.load.model_from_proto`).  At the other levels the weights are
    materialized in a temporary folder first, the changed copy is written there and ORT's
    pipeline (:func:`partsim.pipeline.prepare`) runs on it for ``resolution``'s providers
    (CPU only when absent).  The user's file is never written.
    """
    from ..api import load_for_prediction
    from .load import load_model, model_from_proto
    from .read import read_model_proto

    if not fix_dims and opset is None:
        return load_for_prediction(path, optimize, seed=seed, resolution=resolution)
    changes = ", ".join([f"{k}={v}" for k, v in sorted((fix_dims or {}).items())]
                        + ([f"opset {opset}"] if opset is not None else []))
    if optimize in ("none", "disable"):
        import hashlib

        proto, data = read_model_proto(path)
        proto = _modify(proto, fix_dims, opset, path)
        return model_from_proto(proto, path=str(path), sha256=hashlib.sha256(data).hexdigest(),
                                notes=[f"what-if variant of the model ({changes})"])
    import tempfile
    from pathlib import Path

    import onnx

    from ..runtime.pipeline import prepare
    from ..sim.pipeline import normalize_level
    from .materialize import materialize_weights

    level = normalize_level(optimize) or "all"
    if resolution is None:
        from ..api import DEFAULT_PROVIDERS, load_tables
        from ..rules.resolve import resolve_providers

        resolution = resolve_providers(list(DEFAULT_PROVIDERS), load_tables())
    original = load_model(path, infer_shapes=False)
    with tempfile.TemporaryDirectory(prefix="partsim-whatif-") as tmp:
        copy = materialize_weights(path, Path(tmp) / "src", seed=seed)
        proto, _ = read_model_proto(copy)
        proto = _modify(proto, fix_dims, opset, path)
        changed = copy.with_name(copy.stem + ".whatif.onnx")
        onnx.save(proto, str(changed))  # external-data references stay relative to the same folder
        return prepare(changed, level, resolution, seed=seed, shown_as=(original.path, original.sha256),
                       notes=[f"what-if variant of the model ({changes}), predicted at level {level}"]).model
