"""Nodes with a zero-size tensor (a dimension of 0) on a compiling EP that cannot build them.

onnxruntime-qnn 2.7.0 (HTP emulator, soc_model 60), measured on single-node graphs with a
``[2, 0, 4]`` input (``tests/gen/test_qnn_refusals.py``) and the recorded node tests:

- Slice, Reshape and Split refuse such a node in GetCapability: it stays on the CPU
  (``test_layer_normalization_*_expanded``: the Slice whose output is an empty shape);
- every other builder tried claims it, and the session then fails: "Failed to compose Qnn
  graph" (``QNN.graphAddNode() failed ... with error code 6005``: Abs, Relu, Exp, Add, Mul,
  MatMul, Where, Equal, Gather, Unsqueeze, Transpose, Cast, Softmax, a ReduceSum over a
  non-empty axis, ...; ``test_reduce_l1_empty_set_expanded``), "Failed to setup QNN input
  tensors" (Concat), or the emulator dies (SIGFPE, a reduction over the empty axis).

The table's ``partitioning.zero_size_tensors`` holds ``fallback_ops`` (the first kind); with it,
a claimed node of any other op whose input 0 or an output is zero-size (not a constant
initializer) is a session refusal.  Pure.
"""

__all__ = ["zero_size_tensor", "zero_size_fallbacks", "zero_size_failure"]


def zero_size_tensor(model, node):
    """The data input (input 0) or an output of ``node`` with a 0 dimension, not a constant initializer,
    or ``None``.  The other inputs are left out: an empty ``axes`` fed at run time is read as a
    parameter, not built as a tensor (``test_reduce_sum_default_axes_keepdims_example`` runs)."""
    for t in tuple(node.inputs[:1]) + tuple(node.outputs):
        if not t:
            continue
        v = model.value(t)
        if v.is_constant or v.shape is None:
            continue
        if 0 in v.shape:
            return t
    return None


def zero_size_fallbacks(model, members, option):
    """``{node index: tensor}`` of ``members`` the provider refuses for a zero-size tensor."""
    ops = set((option or {}).get("fallback_ops", ()))
    out = {}
    for i in members:
        node = model.nodes[i]
        if node.op_type in ops and not node.domain:
            t = zero_size_tensor(model, node)
            if t:
                out[i] = t
    return out


def zero_size_failure(model, group, option, provider):
    """``(why, nodes)`` when a claimed node of ``group`` has a zero-size tensor its builder takes and
    the backend then cannot build, else ``None``."""
    if option is None:
        return None
    ops = set(option.get("fallback_ops", ()))
    bad = [(i, t) for i in group if model.nodes[i].op_type not in ops
           for t in [zero_size_tensor(model, model.nodes[i])] if t]
    if not bad:
        return None
    i, t = bad[0]
    n = model.nodes[i]
    return (f"{provider} claims {n.name} ({n.op_type}) with the zero-size tensor '{t}' "
            f"{list(model.value(t).shape)}; the backend cannot build it (QNN: \"Failed to compose Qnn graph\", "
            "or the emulator crashes)", tuple(j for j, _ in bad))
