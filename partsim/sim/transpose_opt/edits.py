"""The graph edits the handlers share (``onnx_transpose_optimization.cc``: ``TransposeInput``,
``TransposeOutput``, ``UnsqueezeInput``, the Q/DQ unit helpers).
"""

from dataclasses import dataclass, field
from .graph import OptGraph, _is_identity, _permute, _unsqueeze_perm, _unsqueeze_shape, _valid_perm, compose, invert


@dataclass
class _Ctx:
    g: OptGraph
    provider: str
    leading: set = field(default_factory=set)


def _perm_attr(nd):
    p = nd.attrs.get("perm")
    if p is None:
        return None
    p = tuple(p)
    return p if _valid_perm(p) else None


def _quant_info(g, nd):
    """GetQuantizationInfo: ('tensor', 1) / ('axis', normalized axis) / None (blocked or unknown)."""
    if len(nd.inputs) < 2:
        return None
    s = g.shape(nd.inputs[1])
    if s is None:
        return None
    if len(s) == 0 or (len(s) == 1 and s[0] == 1):
        return ("tensor", 1)
    axis = nd.attrs.get("axis", 1)
    r = g.shape(nd.inputs[0])
    if r is None:
        return None
    axis = axis + len(r) if axis < 0 else axis
    if not 0 <= axis < len(r):
        return None
    if nd.attrs.get("block_size", 0):
        return None
    return ("axis", axis)


def _dq_with_const_single_consumer(g, t):
    """GetDQWithConstInitializerInputAndSingleConsumer: the DQ id, or None."""
    p = g.prod(t)
    if p is None or g.nodes[p].op != "DequantizeLinear":
        return None
    dq = g.nodes[p]
    if not g.is_const(dq.inputs[0]) or _quant_info(g, dq) is None:
        return None
    if not g.consumers(dq.inputs[0])[1]:
        return None
    users, comp = g.consumers(dq.outputs[0])
    return p if comp and len(users) == 1 else None


def _make_qdq_unit(g, dq_id):
    """MakeQDQNodeUnit: DQ -> next node => DQ -> next node -> Q -> DQ."""
    dq = g.nodes[dq_id]
    users, comp = g.consumers(dq.outputs[0])
    if not (comp and len(users) == 1):
        return False
    nxt = users[0]
    qi = _quant_info(g, dq)
    if qi is None:
        return False
    ins = ["", dq.inputs[1]] + ([dq.inputs[2]] if len(dq.inputs) > 2 else [])
    q = g.add_node("QuantizeLinear", ins, 1, dq.domain, {})
    g.copy_info(dq.inputs[0], g.nodes[q].outputs[0])
    g.shapes[g.nodes[q].outputs[0]] = g.shape(g.nodes[nxt].outputs[0])
    ins2 = [g.nodes[q].outputs[0]] + ins[1:]
    dq2 = g.add_node("DequantizeLinear", ins2, 1, dq.domain, {})
    g.copy_info(g.nodes[nxt].outputs[0], g.nodes[dq2].outputs[0])
    new = g.move_output(nxt, 0, dq2, 0)
    g.set_input(q, 0, new)
    g.copy_info(g.nodes[dq2].outputs[0], new)
    return True


def _detach_input(g, i, k):
    """Input ``k`` of node ``i`` taken off the node (and off its DequantizeLinear when the input is a
    constant behind a DQ the node alone reads), so the consumer count of the constant leaves them
    out: ``(input, is constant, the DQ or None, the tensor to edit)``, as both input rewrites of
    ``onnx_transpose_optimization.cc`` (TransposeInputImpl, UnsqueezeInput) begin."""
    t = g.nodes[i].inputs[k]
    const = g.is_const(t)
    dq = None
    target = t
    if not const:
        dq = _dq_with_const_single_consumer(g, t)
        if dq is not None:
            target = g.nodes[dq].inputs[0]
            const = True
    g.set_input(i, k, "")
    if dq is not None:
        g.set_input(dq, 0, "")
    return t, const, dq, target


def _transpose_input(g, i, k, perm, perm_inv):
    """TransposeInputImpl: Transpose input ``k`` of node ``i`` by ``perm``."""
    t, const, dq, const_t = _detach_input(g, i, k)
    users, comp = g.consumers(const_t)
    if const and comp:  # Case 1: a constant, edited in place
        try:
            numel = g.const_numel(const_t)
            s = g.shape(const_t)
            if numel == 1:
                return
            if s is not None and len(s) == 1 and s[0] == len(perm):
                new = g.add_initializer(s, _perm_values(g.ints(const_t), perm))
                g.set_input(i, k, new)
                t = ""  # reconnected
                return
            if users:
                j = g.add_node("Transpose", [const_t], 1, "", {"perm": perm_inv})
                g.copy_info(const_t, g.nodes[j].outputs[0])
                g.replace_refs(users, const_t, g.nodes[j].outputs[0])
            g.shapes[const_t] = _permute(g.shape(const_t), perm)
            if dq is not None:
                g.set_input(dq, 0, const_t)
                g.shapes[g.nodes[dq].outputs[0]] = g.shape(const_t)
                dq = None
            return
        finally:
            if t:
                g.set_input(i, k, t)
            if dq is not None:
                g.set_input(dq, 0, const_t)
    if dq is not None:
        g.set_input(dq, 0, const_t)
        dq = None
    # Case 2: the input is a Transpose (looking past a DQ)
    p = g.prod(t)
    users, comp = g.consumers(t)
    dq_past = None
    if p is not None and g.nodes[p].op == "DequantizeLinear" and _quant_info(g, g.nodes[p]) is not None:
        dq_past = p
        p = g.prod(g.nodes[p].inputs[0])
        users, comp = g.consumers(g.nodes[dq_past].inputs[0])
    if p is not None and g.nodes[p].op == "Transpose":
        perm2 = _perm_attr(g.nodes[p])
        if perm2 is not None and len(perm2) == len(perm):
            if perm2 == perm_inv:
                pre = g.nodes[p].inputs[0]
                if dq_past is not None:
                    g.set_input(dq_past, 0, pre)
                    g.shapes[g.nodes[dq_past].outputs[0]] = g.shape(pre)
                    g.set_input(i, k, g.nodes[dq_past].outputs[0])
                else:
                    g.set_input(i, k, pre)
                users, comp = g.consumers(g.nodes[p].outputs[0])
                if comp and len(users) == (1 if dq_past is not None else 0):
                    g.remove(p)
                return
            if dq_past is None:
                j = g.add_node("Transpose", [g.nodes[p].inputs[0]], 1, "", {"perm": compose(perm2, perm)})
                out = g.nodes[j].outputs[0]
                g.copy_info(t, out)
                g.shapes[out] = _permute(g.shape(t), perm)
                if comp and not users:
                    g.remove(p)
                g.set_input(i, k, out)
                return
    inp = g.prod(t)
    users, comp = g.consumers(t)
    for c in users:  # Case 3: a Transpose of the same perm exists
        if g.nodes[c].op == "Transpose" and _perm_attr(g.nodes[c]) == tuple(perm):
            g.set_input(i, k, g.nodes[c].outputs[0])
            return
    j = g.add_node("Transpose", [t], 1, "", {"perm": tuple(perm)})  # Case 4
    out = g.nodes[j].outputs[0]
    g.copy_info(t, out)
    g.shapes[out] = _permute(g.shape(t), perm)
    g.set_input(i, k, out)
    if inp is not None and g.nodes[inp].op == "DequantizeLinear":
        _make_qdq_unit(g, inp)


def _perm_values(values, perm):
    if values is None or len(values) != len(perm):
        return None
    return tuple(values[p] for p in perm)


def _transpose_output(g, i, k, perm, perm_inv):
    """TransposeOutput: a Transpose by ``perm`` after output ``k``; the node gets a new output."""
    j = g.add_node("Transpose", [""], 1, "", {"perm": tuple(perm)})
    old = g.nodes[i].outputs[k]
    g.nodes[j].outputs[0] = old  # MakeTranspose's own output is dropped by MoveOutput
    g.producer[old] = j
    new = g.arg_name(g.nodes[i].name)
    g.nodes[i].outputs[k] = new
    g.producer[new] = i
    g.set_input(j, 0, new)
    g.shapes[new] = _permute(g.shape(old), perm_inv)
    if old in g.dtypes:
        g.dtypes[new] = g.dtypes[old]
    return old


def _transpose_inputs(ctx, i, perm, indices):
    inv = invert(perm)
    for k in indices:
        _transpose_input(ctx.g, i, k, perm, inv)


def _transpose_outputs(ctx, i, perm):
    if _is_identity(perm):
        return
    inv = invert(perm)
    for k in range(len(ctx.g.nodes[i].outputs)):
        _transpose_output(ctx.g, i, k, perm, inv)


def _squeeze_or_unsqueeze(ctx, op, t, axes):
    g = ctx.g
    if ctx.g.opset < 13:
        return g.add_node(op, [t], 1, "", {"axes": tuple(axes)})
    c = g.add_initializer((len(axes),), tuple(axes))
    return g.add_node(op, [t, c], 1, "", {})


def _unsqueeze_input(ctx, i, k, axes):
    """UnsqueezeInput: give input ``k`` leading size-1 dims (NormalizeInputRanks)."""
    g = ctx.g
    t, const, dq, target = _detach_input(g, i, k)
    users, comp = g.consumers(target)
    if const and comp:  # Case 1
        if users:
            s = _squeeze_or_unsqueeze(ctx, "Squeeze", target, axes)
            out = g.nodes[s].outputs[0]
            g.copy_info(target, out)
            g.replace_refs(users, target, out)
        g.shapes[target] = _unsqueeze_shape(g.shape(target), axes)
        if dq is not None:
            g.set_input(dq, 0, target)
            g.shapes[g.nodes[dq].outputs[0]] = g.shape(target)
        g.set_input(i, k, t)
        return
    if dq is not None:
        g.set_input(dq, 0, target)
    inp = g.prod(t)
    dq_past = None
    if inp is not None and g.nodes[inp].op == "DequantizeLinear" and _quant_info(g, g.nodes[inp]) is not None:
        dq_past = inp
        inp = g.prod(g.nodes[inp].inputs[0])
        users, comp = g.consumers(g.nodes[dq_past].inputs[0])
    else:
        users, comp = g.consumers(t)
    if inp is not None and g.nodes[inp].op == "Squeeze":
        sq = g.nodes[inp]
        sq_axes = _read_axes(g, sq, 1, 13)
        if sq_axes is not None and list(sq_axes) == list(axes):
            if dq_past is not None:
                g.set_input(dq_past, 0, sq.inputs[0])
                g.set_input(i, k, g.nodes[dq_past].outputs[0])
            else:
                g.set_input(i, k, sq.inputs[0])
            if comp and len(users) == (1 if dq_past is not None else 0):
                g.remove(inp)
            return
    if dq_past is not None:
        inp = dq_past
    u = _squeeze_or_unsqueeze(ctx, "Unsqueeze", t, axes)
    out = g.nodes[u].outputs[0]
    g.copy_info(t, out)
    g.shapes[out] = _unsqueeze_shape(g.shape(t), axes)
    if inp is not None and g.nodes[inp].op == "Transpose":
        perm = _perm_attr(g.nodes[inp])
        if perm is not None:
            new = _help_unsqueeze(ctx, inp, u, perm, axes)
            g.set_input(i, k, new)
            return
    g.set_input(i, k, out)
    if inp is not None and g.nodes[inp].op == "DequantizeLinear":
        _make_qdq_unit(g, inp)


def _read_axes(g, nd, index, opset_with_input):
    if g.opset < opset_with_input or nd.domain not in ("", "ai.onnx"):
        a = nd.attrs.get("axes")
        return tuple(a) if a is not None else None
    if index < len(nd.inputs) and nd.inputs[index] and g.is_const(nd.inputs[index]):
        return g.ints(nd.inputs[index])
    return None


def _help_unsqueeze(ctx, transpose, node, perm, axes):
    _transpose_input(ctx.g, node, 0, invert(perm), perm)
    new_perm = _unsqueeze_perm(axes, perm)
    return _transpose_output(ctx.g, node, 0, new_perm, invert(new_perm))


