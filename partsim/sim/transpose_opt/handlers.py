"""The op handlers of ``onnx_transpose_optimization.cc`` (the table that picks one per op is :mod:`.table`).
"""

from .graph import _norm_axes, _sorted_axes_for_transposed, _squeeze_perm, compose, invert
from .edits import (_help_unsqueeze, _perm_attr, _perm_values, _read_axes, _transpose_input, _transpose_inputs,
                    _transpose_outputs, _unsqueeze_input)


def _all_inputs(ctx, i):
    return list(range(len(ctx.g.nodes[i].inputs)))


def _first_input(ctx, i):
    return [0]


def _non_scalar_inputs(ctx, i):
    out = []
    for k, t in enumerate(ctx.g.nodes[i].inputs):
        s = ctx.g.shape(t)
        if s is None or len(s) != 0:
            out.append(k)
    return out


def _simple_base(ctx, i, perm, indices, broadcast):
    g = ctx.g
    rank = len(perm)
    if broadcast:
        ranks = []
        for k in indices:
            s = g.shape(g.nodes[i].inputs[k])
            if s is None or len(s) > rank:
                return False
            ranks.append(len(s))
        for k, r in zip(indices, ranks):
            if rank - r > 0:
                _unsqueeze_input(ctx, i, k, list(range(rank - r)))
    _transpose_inputs(ctx, i, invert(perm), indices)
    _transpose_outputs(ctx, i, perm)
    return True


def _h_simple(ctx, t, i, perm, indices):
    return _simple_base(ctx, i, perm, indices, False)


def _h_broadcast(ctx, t, i, perm, indices):
    return _simple_base(ctx, i, perm, indices, True)


def _with_axis(ctx, i, perm, indices, default):
    nd = ctx.g.nodes[i]
    axis = nd.attrs.get("axis", default)
    if axis is None:
        return False
    rank = len(perm)
    axis = axis + rank if axis < 0 else axis
    if not 0 <= axis < rank:
        return False
    _simple_base(ctx, i, perm, indices, False)
    nd.attrs["axis"] = perm[axis]
    return True


def _h_concat(ctx, t, i, perm, indices):
    return _with_axis(ctx, i, perm, indices, None)


def _h_split(ctx, t, i, perm, indices):
    return _with_axis(ctx, i, perm, indices, 0)


def _h_softmax(ctx, t, i, perm, indices):
    if ctx.g.opset >= 13:
        return _with_axis(ctx, i, perm, indices, -1)
    rank = len(perm)
    axis = ctx.g.nodes[i].attrs.get("axis", 1)
    axis = axis + rank if axis < 0 else axis
    if not 0 <= axis < rank:
        return False
    if any((k < axis) != (perm[k] < axis) for k in range(rank)):
        return False
    return _simple_base(ctx, i, perm, indices, False)


def _h_shape(ctx, t, i, perm, indices):
    """Shape(Transpose(x, perm)) => Gather(Shape(x), perm)."""
    g = ctx.g
    _transpose_inputs(ctx, i, invert(perm), indices)
    rank = len(perm)
    nd = g.nodes[i]
    if g.opset >= 15:
        start = nd.attrs.get("start", 0)
        end = nd.attrs.get("end", rank)
        start = start + rank if start < 0 else start
        end = end + rank if end < 0 else end
        new_perm = perm[max(0, min(start, rank)):max(0, min(end, rank))]
        nd.attrs.pop("start", None)
        nd.attrs.pop("end", None)
    else:
        new_perm = perm
    c = g.add_initializer((len(new_perm),), new_perm)
    gather = g.add_node("Gather", ["", c], 1, "", {"axis": 0})
    new = g.move_output(i, 0, gather, 0)
    g.set_input(gather, 0, new)
    g.shapes[new] = (rank,)
    return True


def _permute_input(ctx, i, k, perm):
    g = ctx.g
    t = g.nodes[i].inputs[k]
    s = g.shape(t)
    if g.is_const(t) and s is not None and len(s) == 1 and s[0] in (len(perm), 0):
        g.set_input(i, k, g.add_initializer(s, _perm_values(g.ints(t), perm)))
        return
    c = g.add_initializer((len(perm),), perm)
    j = g.add_node("Gather", [t, c], 1, "", {"axis": 0})
    g.copy_info(t, g.nodes[j].outputs[0])
    g.set_input(i, k, g.nodes[j].outputs[0])


def _h_pad(ctx, t, i, perm, indices):
    g = ctx.g
    rank = len(perm)
    inv = invert(perm)
    pads_perm = inv + tuple(p + rank for p in inv)
    nd = g.nodes[i]
    if g.opset < 11:
        pads = nd.attrs.get("pads")
        if pads is None or len(pads) != 2 * rank:
            return False
        nd.attrs["pads"] = tuple(pads[p] for p in pads_perm)
    else:
        _permute_input(ctx, i, 1, pads_perm)
    _transpose_input(g, i, 0, inv, perm)
    _transpose_outputs(ctx, i, perm)
    return True


def _h_reduce(ctx, t, i, perm, indices):
    g = ctx.g
    nd = g.nodes[i]
    keep = nd.attrs.get("keepdims", 1)
    inv = invert(perm)
    if (nd.op == "ReduceSum" and g.opset < 13) or (nd.op != "ReduceSum" and g.opset < 18):
        axes = nd.attrs.get("axes")
        if axes is None:
            out_perm = () if keep == 0 else perm
        else:
            axes = _norm_axes(axes, len(perm))
            if axes is None:
                return False
            new_axes = _sorted_axes_for_transposed(axes, perm)
            nd.attrs["axes"] = tuple(new_axes)
            out_perm = _squeeze_perm(new_axes, perm) if keep == 0 else perm
        _transpose_input(g, i, 0, inv, perm)
        _transpose_outputs(ctx, i, out_perm)
        return True
    empty = len(nd.inputs) < 2 or not nd.inputs[1]
    axes = None
    if not empty:
        if not g.is_const(nd.inputs[1]):
            return False
        if g.const_numel(nd.inputs[1]) == 0:
            empty = True
        else:
            axes = g.ints(nd.inputs[1])
            if axes is None:
                return False  # values not kept by partsim: no push (as for run-time axes)
    if empty:
        _transpose_input(g, i, 0, inv, perm)
        if nd.attrs.get("noop_with_empty_axes", 0) or keep:
            _transpose_outputs(ctx, i, perm)
        return True
    axes = _norm_axes(axes, len(perm))
    if axes is None:
        return False
    new_axes = _sorted_axes_for_transposed(axes, perm)
    g.set_input(i, 1, g.add_initializer((len(new_axes),), new_axes))
    _transpose_input(g, i, 0, inv, perm)
    _transpose_outputs(ctx, i, perm if keep else _squeeze_perm(new_axes, perm))
    return True


def _h_squeeze(ctx, t, i, perm, indices):
    g = ctx.g
    nd = g.nodes[i]
    axes = _read_axes(g, nd, 1, 13)
    axes = _norm_axes(axes, len(perm)) if axes is not None else None
    if axes is None:
        return False
    new_axes = _sorted_axes_for_transposed(axes, perm)
    if g.opset < 13:
        nd.attrs["axes"] = tuple(new_axes)
    else:
        g.set_input(i, 1, g.add_initializer((len(new_axes),), new_axes))
    _transpose_input(g, i, 0, invert(perm), perm)
    _transpose_outputs(ctx, i, _squeeze_perm(new_axes, perm))
    return True


def _h_unsqueeze(ctx, t, i, perm, indices):
    g = ctx.g
    axes = _read_axes(g, g.nodes[i], 1, 13)
    if axes is None:
        return False
    axes = _norm_axes(axes, len(perm) + len(axes))
    if axes is None:
        return False
    _help_unsqueeze(ctx, t, i, perm, axes)
    return True


def _h_qdq(ctx, t, i, perm, indices):
    g = ctx.g
    nd = g.nodes[i]
    if g.opset >= 13 or nd.domain == "com.microsoft":
        s = g.shape(nd.inputs[1]) if len(nd.inputs) > 1 else None
        if not (s is not None and len(s) == 0):
            axis = nd.attrs.get("axis", 1)
            rank = len(perm)
            axis = axis + rank if axis < 0 else axis
            if not 0 <= axis < rank:
                return False
            nd.attrs["axis"] = perm[axis]
    _transpose_input(g, i, 0, invert(perm), perm)
    _transpose_outputs(ctx, i, perm)
    return True


def _axis_through(nd, perm):
    """The node's ``axis`` attribute on the input before the Transpose (``perm[axis]``), set on
    the node; ``None`` (nothing changed) when the axis is out of range."""
    rank = len(perm)
    axis = nd.attrs.get("axis", 0)
    axis = axis + rank if axis < 0 else axis
    if not 0 <= axis < rank:
        return None
    nd.attrs["axis"] = perm[axis]
    return perm[axis]


def _h_argminmax(ctx, t, i, perm, indices):
    nd = ctx.g.nodes[i]
    keep = nd.attrs.get("keepdims", 1)
    new_axis = _axis_through(nd, perm)
    if new_axis is None:
        return False
    _transpose_inputs(ctx, i, invert(perm), indices)
    _transpose_outputs(ctx, i, perm if keep else _squeeze_perm([new_axis], perm))
    return True


def _h_slice(ctx, t, i, perm, indices):
    g = ctx.g
    nd = g.nodes[i]
    rank = len(perm)
    if g.opset < 10:
        axes = nd.attrs.get("axes")
        if axes is None:
            axes = tuple(range(len(nd.attrs.get("starts", ()))))
        axes = _norm_axes(axes, rank)
        if axes is None:
            return False
        nd.attrs["axes"] = tuple(perm[a] for a in axes)
    elif len(nd.inputs) < 4 or not nd.inputs[3]:
        s = g.shape(nd.inputs[1])
        if s is None or len(s) != 1 or not isinstance(s[0], int) or s[0] < 0:
            return False
        g.set_input(i, 3, g.add_initializer((s[0],), tuple(perm[k] for k in range(s[0]))))
    else:
        a = nd.inputs[3]
        if not g.is_const(a):
            return False
        axes = g.ints(a)
        if axes is None:
            return False
        axes = _norm_axes(axes, rank)
        if axes is None:
            return False
        new_axes = tuple(perm[x] for x in axes)
        g.set_input(i, 3, g.add_initializer((len(new_axes),), new_axes))
    _transpose_input(g, i, 0, invert(perm), perm)
    _transpose_outputs(ctx, i, perm)
    return True


def _h_tile(ctx, t, i, perm, indices):
    g = ctx.g
    rank = len(perm)
    inv = invert(perm)
    r = g.nodes[i].inputs[1]
    if g.is_const(r):
        g.set_input(i, 1, g.add_initializer((rank,), _perm_values(g.ints(r), inv)))
    else:
        c = g.add_initializer((rank,), inv)
        j = g.add_node("Gather", [r, c], 1, "", {"axis": 0})
        g.copy_info(r, g.nodes[j].outputs[0])
        g.set_input(i, 1, g.nodes[j].outputs[0])
    _transpose_input(g, i, 0, inv, perm)
    _transpose_outputs(ctx, i, perm)
    return True


def _remove_cancelling(ctx, t, i):
    """RemoveCancelingTransposeNodes: Transpose -> Transpose (or Reshape) that cancel."""
    g = ctx.g
    src = g.nodes[t].inputs[0]
    out = g.nodes[i].outputs[0]
    users, comp = g.consumers(out)
    if comp:
        g.replace_refs(users, out, src)
    else:
        src_users, src_comp = g.consumers(src)
        parent = g.prod(src)
        if parent is not None and src_comp:
            g.set_input(i, 0, "")
            g.replace_refs(src_users, src, out)
            k = g.nodes[parent].outputs.index(src)
            g.move_output(i, 0, parent, k)
        else:
            j = g.add_node("Identity", [""], 1, "", {})
            g.move_output(i, 0, j, 0)
            g.set_input(j, 0, src)
    g.remove(i)
    if not g.has_consumers(g.nodes[t].outputs[0]):
        g.remove(t)


def _transpose_impl(ctx, t, i, perm, node_perm):
    g = ctx.g
    if invert(perm) == tuple(node_perm):
        _remove_cancelling(ctx, t, i)
        return True
    new_perm = compose(perm, node_perm)
    if g.nodes[i].op == "Reshape":
        j = g.add_node("Transpose", [g.nodes[t].inputs[0]], 1, "", {})
        g.move_output(i, 0, j, 0)
        g.remove(i)
        target = j
    else:
        g.set_input(i, 0, g.nodes[t].inputs[0])
        target = i
    g.nodes[target].attrs["perm"] = new_perm
    if not g.has_consumers(g.nodes[t].outputs[0]):
        g.remove(t)
    return True


def _h_transpose(ctx, t, i, perm, indices):
    node_perm = _perm_attr(ctx.g.nodes[i])
    if node_perm is None or len(node_perm) != len(perm):
        return False
    return _transpose_impl(ctx, t, i, perm, node_perm)


