"""``OptimizeImpl`` (``onnx_transpose_optimization.cc``): push each Transpose through the nodes it
feeds while the cost check allows, fold constants, then fix the Q/DQ units it broke.
"""

from .graph import _permute, _rank_estimate, channel_first_to_last, channel_last_to_first, invert
from .edits import _Ctx, _dq_with_const_single_consumer, _make_qdq_unit, _perm_attr, _quant_info, _read_axes
from .table import handler_of


def _can_remove(g, t):
    """CanLikelyRemoveTranspose: every consumer of the Transpose has a handler."""
    users, comp = g.consumers(g.nodes[t].outputs[0])
    return comp and all(handler_of(g.nodes[c]) is not None for c in users)


def _is_constant_like(g, t):
    if g.prod(t) is None:
        return g.is_const(t)
    p = g.prod(t)
    return g.nodes[p].op == "DequantizeLinear" and _dq_with_const_single_consumer(g, t) is not None


def _value_cost(g, t, perm_inv):
    """EstimateTransposeValueCost."""
    if _is_constant_like(g, t):
        return 0
    p = g.prod(t)
    if p is not None:
        if g.nodes[p].op == "DequantizeLinear":
            q = g.prod(g.nodes[p].inputs[0])
            if q is not None:
                if g.nodes[q].op == "Squeeze":
                    r = g.prod(g.nodes[q].inputs[0])
                    if r is not None and g.nodes[r].op == "Transpose":
                        p = r
                else:
                    p = q
        if g.nodes[p].op == "Transpose":
            perm2 = _perm_attr(g.nodes[p])
            if perm2 is not None:
                if perm2 == tuple(perm_inv) and _can_remove(g, p):
                    return -_rank_estimate(g.shape(t))
                return 0
    return _rank_estimate(g.shape(t))


def _cost_push(ctx, i, perm, info, indices):
    """PostLayoutTransformCostCheck, then OrtEPCostCheck (CPU only: no node is on the CPU yet),
    then DefaultCostCheck."""
    g = ctx.g
    nd = g.nodes[i]
    rank = len(perm)
    if nd.op != "Concat" and rank >= 2 and perm in (channel_first_to_last(rank), channel_last_to_first(rank)):
        return True
    if nd.op == "Transpose" and nd.domain in ("", "ai.onnx"):
        return True
    cost = sum(_value_cost(g, g.nodes[i].inputs[k], perm) for k in indices)
    if cost < 0 and info[2]:
        out_cost, leading = 0, False
        for o in nd.outputs:
            out_cost = max(out_cost, _rank_estimate(g.shape(o)))
            leading = leading or _leads(ctx, o, perm)
        if not leading:
            cost += out_cost
    return cost < 0


def _leads(ctx, t, perm):
    """Whether the Transpose a push of ``perm`` leaves on output ``t`` is expected to cancel further on.

    ORT's ``CalculateCost`` (onnx_transpose_optimization.cc, microsoft/onnxruntime 02a72958) counts
    membership of ``t`` in ``outputs_leading_to_transpose`` only; real onnxruntime 1.31.1 +
    onnxruntime-qnn 2.7.0 sessions (tests/gen/test_qnn.py, the ``push_*``/``no_push_*`` cases) show a
    stricter rule.  ``t`` leads when some path from it through pushable nodes ends at a Transpose that
    cancels the pushed one (``perm``'s inverse): a Relu feeding that Transpose and a graph output, or one
    cancelling and one other Transpose, is pushed through, and so is the expanded RotaryEmbedding's second
    Split, whose outputs feed two Muls each (tests/sim/test_transpose_leads.py).  Failing that, ``t`` leads
    when it has one consumer and that consumer is a Transpose or a pushable node whose output is in the
    set: a Relu feeding two non-cancelling Transposes, or one and an unused Relu, is not pushed through."""
    g = ctx.g
    if t not in ctx.leading:
        return False
    if _reaches_cancelling(ctx, t, invert(perm), {}):
        return True
    users, comp = g.consumers(t)
    if not comp or len(users) != 1:
        return False
    nd = g.nodes[users[0]]
    if nd.op == "Transpose":
        return True
    info = handler_of(nd)
    return info is not None and info[2] and any(o in ctx.leading for o in nd.outputs)


def _reaches_cancelling(ctx, t, inv, seen):
    """Whether some consumer path of ``t`` through nodes that transpose their outputs (each entered on a
    transposable input, each output in ``ctx.leading``) ends at a Transpose of perm ``inv``."""
    if t in seen:
        return seen[t]
    seen[t] = False
    g = ctx.g
    for c in g.consumers(t)[0]:
        nd = g.nodes[c]
        if nd.op == "Transpose" and nd.domain in ("", "ai.onnx"):
            if _perm_attr(nd) == inv:
                seen[t] = True
                return True
            continue
        info = handler_of(nd)
        if info is None or not info[2] or not any(nd.inputs[k] == t for k in info[0](ctx, c) if k < len(nd.inputs)):
            continue
        if any(o and o in ctx.leading and _reaches_cancelling(ctx, o, inv, seen) for o in nd.outputs):
            seen[t] = True
            return True
    return False


def _process(ctx, t, i, perm, k):
    info = handler_of(ctx.g.nodes[i])
    if info is None:
        return False
    indices = info[0](ctx, i)
    if k not in indices:
        return False
    if not _cost_push(ctx, i, perm, info, indices):
        return False
    return info[1](ctx, t, i, perm, indices)


def _can_modify(ctx, nd):
    return nd.ep is None or nd.ep == ctx.provider


def _constant_fold(ctx, i):
    """TryConstantFoldNode: a Transpose or Squeeze of a constant becomes a new initializer."""
    g = ctx.g
    nd = g.nodes[i]
    if nd.op not in ("Transpose", "Squeeze") or not g.is_const(nd.inputs[0]):
        return False
    users, _ = g.consumers(nd.outputs[0])
    if not users:
        return False
    if nd.op == "Transpose":
        perm = _perm_attr(nd)
        if perm is None:
            return False
        new = g.add_initializer(_permute(g.shape(nd.inputs[0]), perm) or ())
    else:
        if _read_axes(g, nd, 1, 13) is None:
            return False
        new = g.add_initializer(g.shape(nd.outputs[0]) or ())
    g.replace_refs(users, nd.outputs[0], new)
    if not g.has_consumers(nd.outputs[0]):
        g.remove(i)
    return True


def _qdq_match(g, dq, q):
    if dq.domain != q.domain:
        return False
    a, b = g.dtypes.get(dq.inputs[0]), g.dtypes.get(q.outputs[0])
    if a is None or b is None or a != b:
        return False
    # scale / zero point: partsim keeps no float data, so only the same tensors count as equal
    dz = dq.inputs[2] if len(dq.inputs) > 2 else ""
    qz = q.inputs[2] if len(q.inputs) > 2 else ""
    return dq.inputs[1] == q.inputs[1] and dz == qz


def _fix_qdq(ctx):
    """FixQDQNodeUnits: TryRemoveEmptyDQQ, TryFixTransposeMissingQ, TryFixTransposeMissingDQ."""
    g = ctx.g
    for i in _order(g):
        nd = g.nodes[i]
        if not nd.alive or not _can_modify(ctx, nd):
            continue
        if nd.op == "QuantizeLinear":
            p = g.prod(nd.inputs[0])
            if p is None or g.nodes[p].op != "DequantizeLinear":
                continue
            dq = g.nodes[p]
            users, comp = g.consumers(dq.outputs[0])
            if not (comp and len(users) == 1) or not _qdq_match(g, dq, nd):
                continue
            qusers, qcomp = g.consumers(nd.outputs[0])
            if qcomp and len(qusers) == 1:
                c = qusers[0]
                g.replace_refs([c], nd.outputs[0], dq.inputs[0])
                g.set_input(p, 0, "")
                g.set_input(i, 0, "")
                g.remove(p)
                g.remove(i)
            elif not qusers and nd.outputs[0] in g.graph_outputs:
                parent = g.prod(dq.inputs[0])
                if parent is None:
                    continue
                k = g.nodes[parent].outputs.index(dq.inputs[0])
                pu, pc = g.consumers(dq.inputs[0])
                if not (pc and len(pu) == 1):
                    continue
                g.set_input(p, 0, "")
                g.move_output(i, 0, parent, k)
                g.set_input(i, 0, "")
                g.remove(p)
                g.remove(i)
        elif nd.op == "Transpose":
            p = g.prod(nd.inputs[0])
            if p is not None and g.nodes[p].op == "DequantizeLinear":
                users, _ = g.consumers(nd.outputs[0])
                if not users or (len(users) == 1 and g.nodes[users[0]].op != "QuantizeLinear"):
                    if _make_qdq_unit(g, p):
                        continue
                continue
            users, comp = g.consumers(nd.outputs[0])
            if not (comp and len(users) == 1) or g.nodes[users[0]].op != "QuantizeLinear":
                continue
            if p is None or g.nodes[p].op == "DequantizeLinear":
                continue
            if len(g.consumers(nd.inputs[0])[0]) != 1:
                continue
            q = g.nodes[users[0]]
            if _quant_info(g, q) is None:
                continue
            ins = ["", q.inputs[1]] + ([q.inputs[2]] if len(q.inputs) > 2 else [])
            nq = g.add_node("QuantizeLinear", ins, 1, q.domain, {})
            g.copy_info(q.outputs[0], g.nodes[nq].outputs[0])
            g.shapes[g.nodes[nq].outputs[0]] = g.shape(nd.inputs[0])
            ndq = g.add_node("DequantizeLinear", [g.nodes[nq].outputs[0]] + ins[1:], 1, q.domain, {})
            g.copy_info(nd.inputs[0], g.nodes[ndq].outputs[0])
            k = g.nodes[p].outputs.index(nd.inputs[0])
            new = g.move_output(p, k, ndq, 0)
            g.set_input(nq, 0, new)


def _order(g):
    from ...ir.order import ort_default_order

    alive = [i for i, nd in g.nodes.items() if nd.alive]

    def producers(i):
        return sorted({p for t in g.nodes[i].inputs if (p := g.prod(t)) is not None})

    return ort_default_order(alive, producers)


def optimize(g, provider):
    """``OptimizeImpl`` for ``provider`` (layout transformation mode): edits ``g`` in place."""
    ctx = _Ctx(g, provider)
    nodes = _order(g)
    for i in reversed(nodes):  # outputs with a path through pushable ops to a Transpose
        nd = g.nodes[i]
        if nd.op == "Transpose":
            ctx.leading.add(nd.inputs[0])
            continue
        if any(o in ctx.leading for o in nd.outputs):
            info = handler_of(nd)
            if info is not None and info[2]:
                for k in info[0](ctx, i):
                    ctx.leading.add(nd.inputs[k])
    have_dq = False
    for i in nodes:
        nd = g.nodes[i]
        if nd.op == "DequantizeLinear":
            have_dq = True
        if not nd.alive or not _can_modify(ctx, nd):
            continue
        for k, t in enumerate(list(nd.inputs)):
            if not t:
                continue
            p = g.prod(t)
            if p is not None and g.nodes[p].op == "Transpose":
                perm = _perm_attr(g.nodes[p])
                if perm is not None and _process(ctx, p, i, perm, k):
                    break
    if not have_dq:
        return
    for i in _order(g):
        nd = g.nodes[i]
        if nd.alive and _can_modify(ctx, nd):
            _constant_fold(ctx, i)
    _fix_qdq(ctx)
