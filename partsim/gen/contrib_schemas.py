"""Snapshot of ORT's operator schemas: ``partsim/data/contrib_schemas.json``.

``onnx.defs`` knows only the ONNX domains.  ORT registers more (``com.microsoft``
contrib ops, ``com.microsoft.nchwc``, the internal NHWC domain).  This generator
reads them from the installed ORT (``onnxruntime.capi._pybind_state.get_all_operator_schema``)
and writes, per op and ``since_version``, its formal inputs/outputs with their
type-constraint names (``ops``), which is all the simulator needs to resolve a node's
schema version and check its dtypes.

ORT's registry also holds the ONNX schemas of the ONNX release ORT was built with, which may be older
than the ``onnx`` package installed beside partsim (onnxruntime 1.31.1 knows Attention-23 and -24, onnx
1.23 also Attention-25 with ``left_window_size``).  ORT checks every node's attributes against the schema
*it* resolves (``OpSchema::Verify`` from ``Graph::VerifyNodeAndOpMatch``, graph.cc: "Unrecognized
attribute"), so ``attributes`` lists, for every schema of ORT's registry (ONNX and ORT's own domains),
the attribute names per ``since_version`` (:func:`partsim.sim.refusals.load_refusal`).
"""

from ..report.output import to_json

__all__ = ["generate_contrib_schemas"]

ONNX_DOMAINS = ("", "ai.onnx", "ai.onnx.ml", "ai.onnx.preview.training", "ai.onnx.training", "ai.onnx.preview")


def _params(params):
    out = []
    for p in params:
        option = str(p.option).rsplit(".", 1)[-1]
        out.append([p.typeStr, option == "Variadic"])
    return out


def generate_contrib_schemas():
    """Return the JSON text of the snapshot (deterministic: sorted keys and entries)."""
    import onnxruntime
    from onnxruntime.capi import _pybind_state as C

    ops, attributes = {}, {}
    for s in C.get_all_operator_schema():
        domain = "" if s.domain == "ai.onnx" else s.domain
        attributes.setdefault(f"{domain}:{s.name}", {})[str(s.since_version)] = sorted(s.attributes)
        if s.domain in ONNX_DOMAINS:
            continue
        key = f"{s.domain}:{s.name}"
        ops.setdefault(key, {})[str(s.since_version)] = {
            "inputs": _params(s.inputs),
            "outputs": _params(s.outputs),
            "constraints": {
                tc.type_param_str: sorted(tc.allowed_type_strs) for tc in s.type_constraints
            },
        }
    doc = {
        "source": f"onnxruntime {onnxruntime.__version__} get_all_operator_schema()",
        "release": onnxruntime.__version__,
        "ops": ops,
        "attributes": attributes,
    }
    return to_json(doc, indent=0)
