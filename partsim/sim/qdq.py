"""QDQ node units: a quantized op placed together with its DQ inputs and Q outputs.

ORT (``onnxruntime/core/framework/node_unit.cc`` and the QDQ selectors in
``core/optimizer/qdq_transformer/selectors_actions/``) lets EPs that work on node
units (NNAPI, CoreML, QNN, XNNPACK) take ``DQ… -> op -> Q…`` as one unit.  This
is a structural approximation of those selectors: a target op whose inputs that
come from nodes all come from DequantizeLinear nodes feeding only it, and whose
outputs all go only to QuantizeLinear nodes (and are not graph outputs).  A DQ of
an initializer therefore goes with the op that uses it.
"""

__all__ = ["find_node_units"]

_DQ = ("DequantizeLinear",)
_Q = ("QuantizeLinear",)
_QUANT_DOMAINS = ("", "com.microsoft")


def _is(node, ops):
    return node.op_type in ops and node.domain in _QUANT_DOMAINS


def find_node_units(model, indices):
    """Return ``{target: (members in topological order)}`` for the QDQ units among ``indices``.

    Nodes outside any unit are not in the result.
    """
    if not any(_is(model.nodes[i], _DQ) for i in indices):
        return {}  # no DequantizeLinear, no unit (a float model: skip the per-node work)
    idx = set(indices)
    units = {}
    taken = set()
    for i in indices:
        node = model.nodes[i]
        if _is(node, _DQ) or _is(node, _Q):
            continue
        dqs = []
        ok = True
        for p, t in model.in_edges(i):
            if p not in idx:
                continue
            pn = model.nodes[p]
            if not _is(pn, _DQ) or p in taken:
                ok = False
                break
            if any(c != i for c, _ in model.out_edges(p)) or pn.outputs[0] in model.scope_outputs.get(pn.scope, ()):
                ok = False
                break
            if p not in dqs:
                dqs.append(p)
        if not ok or not dqs:
            continue
        qs = []
        for o in node.outputs:
            if not o:
                continue
            if o in model.scope_outputs.get(node.scope, ()):
                ok = False
                break
            cons = model.consumers.get(o, [])
            if not cons or any(not _is(model.nodes[c], _Q) or c not in idx for c in cons):
                ok = False
                break
            qs.extend(c for c in cons if c not in qs)
        if not ok or not qs:
            continue
        units[i] = tuple(dqs) + (i,) + tuple(qs)
        taken.update(dqs)
        taken.update(qs)
    return units
