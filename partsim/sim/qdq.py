"""QDQ node units: a quantized op placed together with its DQ inputs and Q outputs.

ORT (``onnxruntime/core/framework/node_unit.cc`` and the QDQ selectors in
``core/optimizer/qdq_transformer/selectors_actions/``) lets EPs that work on node
units (NNAPI, CoreML, QNN, XNNPACK) take ``DQ… -> op -> Q…`` as one unit.  This
is a structural approximation of those selectors: a target op whose inputs that
come from nodes all come from DequantizeLinear nodes feeding only it, and whose
outputs all go only to QuantizeLinear nodes (and are not graph outputs).  A DQ of
an initializer therefore goes with the op that uses it.  For the ops of the
DropQDQNodeGroupSelector (Gather, Reshape, Transpose, ...) the selector's own check
applies too: the Q and the DQ must share their scale (:func:`drop_qdq_pair_ok`).
"""

__all__ = ["find_node_units", "drop_qdq_pair_ok"]

# qdq_transformer/selectors_actions/shared/utils.cc GetMiscOpVersionsMap (and the QNN plugin EP's copy,
# qnn_ep_utils.cc OrtSelectorManager): the ops whose unit DQ -> op -> Q is checked by the
# DropQDQNodeGroupSelector, :func:`drop_qdq_pair_ok`.  MaxPool from version 12.
DROP_QDQ_OPS = {"Gather": 1, "GatherElements": 1, "Reshape": 1, "Expand": 1, "Flatten": 1, "Transpose": 1,
                "MaxPool": 12, "Resize": 1, "Squeeze": 1, "Unsqueeze": 1, "Tile": 1}

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
        if node.domain == "" and node.since_version is not None and \
                node.since_version >= DROP_QDQ_OPS.get(node.op_type, 10 ** 6) and \
                not drop_qdq_pair_ok(model, dqs, qs):
            continue
        units[i] = tuple(dqs) + (i,) + tuple(qs)
        taken.update(dqs)
        taken.update(qs)
    return units


def drop_qdq_pair_ok(model, dqs, qs):
    """The DropQDQNodeGroupSelector check of a ``DQ -> op -> Q`` unit (see :data:`DROP_QDQ_OPS`):
    one DQ and one Q, the DQ's input dtype equal to the Q's output dtype, a positive constant scale
    on the Q, and the same scale on both: the same initializer, or constants of one dtype and value.
    That is the QNN plugin EP's copy of the selector (onnxruntime-qnn ``qnn_ep_utils.cc``
    ``IsQDQPairSupported``), which compares no zero points (ORT's own, ``qdq_util.cc``, does); measured
    on 2.7.0: a DQ -> Transpose -> Q with one scale and two zero points is one unit."""
    if len(dqs) != 1 or len(qs) != 1:
        return False
    dq, q = model.nodes[dqs[0]], model.nodes[qs[0]]
    if len(dq.inputs) < 2 or len(q.inputs) < 2 or not dq.inputs[1] or not q.inputs[1]:
        return False
    if model.value(dq.inputs[0]).dtype != model.value(q.outputs[0]).dtype:
        return False
    consts = model.scalar_consts
    q_scale = consts.get(q.inputs[1])
    if q_scale is None or not q_scale[1] > 0:
        return False
    return q.inputs[1] == dq.inputs[1] or q_scale == consts.get(dq.inputs[1])
