"""The ORT-specific handlers (``ort_transpose_optimization.cc``: ``OrtExtendedHandlers``,
``EPAwareHandleReshape``) and the measured Gather handler (see :mod:`partsim.sim.transpose_opt`).
"""

from .graph import QNN, _squeeze_perm, channel_first_to_last, channel_last_to_first, invert
from .edits import _transpose_input, _transpose_outputs
from .handlers import _axis_through, _h_simple, _transpose_impl


def _h_unbiased(ctx, t, i, perm, indices):
    """FastGelu (PR #32118): its optional bias is tied to the last axis, so a Transpose moves through
    it only when it has none."""
    nd = ctx.g.nodes[i]
    if len(nd.inputs) > 1 and nd.inputs[1]:
        return False
    return _h_simple(ctx, t, i, perm, indices)


def _static(shape):
    return shape is not None and all(isinstance(d, int) and d >= 0 for d in shape)


def _h_reshape_default(ctx, t, i, perm):
    """HandleReshape: a Reshape that is a Transpose (same rank, non-1 dims in order) merges with it."""
    g = ctx.g
    nd = g.nodes[i]
    tin = g.shape(g.nodes[t].inputs[0])
    tout = g.shape(g.nodes[t].outputs[0])
    if tin is None or tout is None or len(nd.inputs) < 2:
        return False
    req = g.ints(nd.inputs[1]) if g.is_const(nd.inputs[1]) else None
    if not req or len(req) != len(tin):
        return False
    allow_zero = nd.attrs.get("allowzero", 0) if (nd.since or 0) > 13 else 0
    if not _static(tout):
        return False
    total = 1
    for d in tout:
        total *= d
    final = list(req)
    unknown, size = -1, 1
    for k, r in enumerate(req):
        if r == -1:
            if unknown != -1:
                return False
            unknown = k
        else:
            if not allow_zero and r == 0:
                final[k] = tout[k]
            size *= final[k]
    if unknown != -1:
        if size == 0 or total % size:
            return False
        final[unknown] = total // size
    elif size != total:
        return False
    dims = list(tout)
    perms = []
    for target in final:
        c = 0
        while dims[c] != target:
            if dims[c] != -1 and dims[c] != 1 and target != 1:
                return False
            c += 1
            if c == len(dims):
                return False
        perms.append(c)
        dims[c] = -1
    return _transpose_impl(ctx, t, i, perm, tuple(perms))


def _reshape_groups(x_shape, perm, out_shape):
    """The measured 1.31 QNN Reshape push (module docstring): ``(new reshape shape, output perm)``
    for a Reshape of ``Transpose(x, perm)`` that splits dims of the Transpose's output into runs of
    consecutive dims (a channel shuffle's ``[N, C, H, W] -> [N, g, C/g, H, W]``) and inserts size-1
    dims before or between them, else None (a Reshape that merges or drops dims, as before a
    classifier, or appends a trailing 1 is not pushed)."""
    t_shape = tuple(x_shape[p] for p in perm)
    if len(out_shape) <= len(t_shape):
        return None
    groups = [[] for _ in t_shape]  # per dim of the Transpose output: the output dims it becomes
    pending, run, prod = [], [], 1
    k = 0
    for o, d in enumerate(out_shape):
        if k == len(t_shape) or d < 1:
            return None  # a size-1 dim after the last one: not pushed (seen on 1.31.1)
        if not run and d == 1 and t_shape[k] != 1:
            pending.append(o)  # an inserted dim goes with the next dim
            continue
        run.append(o)
        prod *= d
        if prod == t_shape[k]:
            groups[k].extend(pending + run)
            pending, run, prod = [], [], 1
            k += 1
        elif prod > t_shape[k] or t_shape[k] % prod:
            return None  # a merge, or no split of this dim
    if k != len(t_shape) or pending or run:
        return None
    inv = invert(perm)
    order = []
    for xd in range(len(x_shape)):
        order.extend(groups[inv[xd]])
    return tuple(out_shape[o] for o in order), tuple(order)


def _qnn_channel_reshape(ctx, i, perm):
    """EPAwareHandleReshape's QNN case (ort_transpose_optimization.cc): a "channel" Transpose before a
    "spatial" Reshape whose output leads to a Transpose is pushed below it; the output perm, or None."""
    g = ctx.g
    nd = g.nodes[i]
    if nd.outputs[0] not in ctx.leading:
        return None
    a, b = g.shape(nd.inputs[0]), g.shape(nd.outputs[0])
    if a is None or b is None or not a or not b:
        return None
    batch = a[0] == b[0]
    cf = len(a) > 1 and len(b) > 1 and a[1] == b[1]
    cl = a[-1] == b[-1]
    if perm == (0, 2, 1):
        if batch and cf:
            return channel_first_to_last(len(b))
        if batch and cl:
            return channel_last_to_first(len(b))
        return None
    if perm == (0, 2, 3, 1) and batch and cl:
        return channel_last_to_first(len(b))
    if perm == (0, 3, 1, 2) and batch and cf:
        return channel_first_to_last(len(b))
    return None


def _h_reshape(ctx, t, i, perm, indices):
    """EPAwareHandleReshape (ort_transpose_optimization.cc): for a node on QNN the channel/spatial case
    of the source; then, for any node, HandleReshape as onnxruntime 1.31.1 behaves: the measured push
    of :func:`_reshape_groups` (seen on an unassigned Reshape too), then the source's merge."""
    g = ctx.g
    nd = g.nodes[i]
    out = g.shape(nd.outputs[0])
    new_shape = order = None
    if nd.ep == QNN and out is not None:
        out_perm = _qnn_channel_reshape(ctx, i, perm)
        if out_perm and len(out_perm) == len(out):
            order = tuple(out_perm)
            new_shape = tuple(out[p] for p in order)
    if order is None:
        x = g.shape(g.nodes[t].inputs[0])
        if _static(x) and _static(out):
            got = _reshape_groups(x, perm, out)
            if got is not None:
                new_shape, order = got
    if order is not None:
        _transpose_input(g, i, 0, invert(perm), perm)
        g.set_input(i, 1, g.add_initializer((len(new_shape),), new_shape))
        _transpose_outputs(ctx, i, invert(order))
        return True
    return _h_reshape_default(ctx, t, i, perm)


def _h_gather(ctx, t, i, perm, indices):
    """Gather(Transpose(x, perm), idx, axis) = Transpose(Gather(x, idx, perm[axis])): measured on
    onnxruntime 1.31.1 (swin_t: scalar indices; the handler is not in the stored sources)."""
    g = ctx.g
    nd = g.nodes[i]
    idx = g.shape(nd.inputs[1]) if len(nd.inputs) > 1 else None
    if idx is None or len(idx) > 1:
        return False
    new_axis = _axis_through(nd, perm)
    if new_axis is None:
        return False
    _transpose_input(g, i, 0, invert(perm), perm)
    _transpose_outputs(ctx, i, _squeeze_perm([new_axis], perm) if len(idx) == 0 else perm)
    return True


def _h_never(ctx, t, i, perm, indices):
    return False  # a handler that declines here (MaxPool/Resize are only pushed for the CPU EP)

