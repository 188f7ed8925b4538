"""Node groups a compiling provider claims only as a whole (QNN's ``qnn_node_group`` fusions).

The QNN EP first forms node units (QDQ groups, single nodes), then tries its fusions
(``onnxruntime/onnxruntime-qnn`` ``onnxruntime/core/providers/qnn/builder/qnn_node_group/qnn_node_group.cc``);
a fusion makes several units one group that is supported as a whole, although some of its
members have no builder of their own.  Ported here, for the table option
``partitioning.node_groups``:

``dq_matmul_integer`` (``qnn_node_group/dq_matmul_integer_fusion.cc``, ``DQMatMulIntegerFusion::TryFusion``):
a dynamically quantized MatMul ::

    x -> DynamicQuantizeLinear -> (a_q, a_scale, a_zp)
    MatMulInteger(a_q, B, a_zp[, B_zp]) -> Cast(to=float) -> Mul(., Mul(a_scale, B_scale)) [-> Add(., bias)]

becomes one float MatMul: ``DynamicQuantizeLinear`` and ``MatMulInteger`` (no builders of their own)
are claimed together with the Cast, the two Muls and the optional bias Add.  The checks kept: ``B``
a rank-2 int8/uint8 initializer whose first dimension is ``A``'s last, ``A`` of rank >= 2, ``a_zp``
from the same DynamicQuantizeLinear, a constant ``B_zp`` if present, each link the only consumer of
the one before, ``B_scale`` a constant float (scalar, [1], [N] or [1, N]), a constant float bias
([N] or [1, N]), and the DynamicQuantizeLinear's outputs read only by MatMulIntegers (a_q, a_zp) and
Muls (a_scale).  Not checked: QNN's own validation of the fused MatMul.

``dq_conv_integer``: the same chain around ``ConvInteger`` (weights ``[M, C/group, k...]`` a constant
int8/uint8 initializer of the input's rank, ``W_scale`` scalar or ``[M]``, bias ``[M]`` or
``[1, M, 1, ...]``).  Not in the stored QNN sources (older than 2.7.0); seen on real onnxruntime-qnn
2.7.0 sessions: q_tiny_resnet.ts.dyn at ORT_ENABLE_ALL puts every DynamicQuantizeLinear and
ConvInteger on QNN, and at ORT_DISABLE_ALL (bias still a Reshape output, not constant) none.

``gelu`` (``qnn_node_group/gelu_fusion.cc``): the erf form of Gelu (Div, Erf, Add and two Muls)
becomes one QNN Gelu, so the Erf, which has no builder, runs on QNN inside it (vit_tiny,
convnext_tiny).

Pure: reads the model, returns indices.
"""

__all__ = ["NODE_GROUPS", "node_group_members"]


def _only_consumer(model, consumers, tensor):
    cs = consumers.get(tensor, [])
    if len(cs) != 1 or tensor in model.graph_outputs:
        return None
    return cs[0]


def _const(model, name):
    return bool(name) and model.value(name).is_constant


def _dq_matmul_integer(model, members):
    """``[group indices]`` of every DQMatMulIntegerFusion among ``members`` (main-graph node indices)."""
    return _dq_integer(model, members, "MatMulInteger")


def _dq_conv_integer(model, members):
    """``[group indices]`` of every dynamically quantized Conv among ``members`` (the ConvInteger
    analogue of DQMatMulIntegerFusion, seen on real onnxruntime-qnn 2.7.0 sessions)."""
    return _dq_integer(model, members, "ConvInteger")


def _links(model, members):
    """``(producer, consumers)`` among ``members``: tensor -> producing node, tensor -> reading nodes."""
    producer, consumers = {}, {}
    for i in members:
        n = model.nodes[i]
        for t in n.outputs:
            if t:
                producer[t] = i
        for t in n.inputs:
            if t:
                consumers.setdefault(t, []).append(i)
    return producer, consumers


def _dq_integer(model, members, op):
    nodes = model.nodes
    member_set = set(members)
    producer, consumers = _links(model, members)
    groups = []
    for i in sorted(member_set):
        mm = nodes[i]
        if mm.op_type != op or mm.domain != "" or not 3 <= len(mm.inputs) <= 4 or len(
                [o for o in mm.outputs if o]) != 1:
            continue
        a, b, a_zp = mm.inputs[0], mm.inputs[1], mm.inputs[2]
        b_zp = mm.inputs[3] if len(mm.inputs) > 3 else ""
        va, vb = model.value(a), model.value(b)
        if not a_zp or va.rank is None or va.rank < 2 or vb.shape is None:
            continue
        if not _const(model, b) or vb.dtype not in ("int8", "uint8") or (b_zp and not _const(model, b_zp)):
            continue
        if op == "MatMulInteger":
            if len(vb.shape) != 2 or (va.shape is not None and va.shape[-1] != vb.shape[0]):
                continue
            n_out = vb.shape[1]
        else:  # ConvInteger: weights [M, C/group, k...], output channels on axis 1
            if len(vb.shape) != va.rank:
                continue
            n_out = vb.shape[0]
        d = producer.get(a)
        if d is None or nodes[d].op_type != "DynamicQuantizeLinear" or len(nodes[d].outputs) != 3:
            continue
        dq = nodes[d]
        if dq.outputs[0] != a or dq.outputs[2] != a_zp:
            continue
        cast = _only_consumer(model, consumers, mm.outputs[0])
        if cast is None or nodes[cast].op_type != "Cast" or nodes[cast].attrs.get("to") != 1:
            continue
        rm = _only_consumer(model, consumers, nodes[cast].outputs[0])
        if rm is None or nodes[rm].op_type != "Mul" or len(nodes[rm].inputs) != 2:
            continue
        ri = nodes[rm].inputs
        if (ri[0] == nodes[cast].outputs[0]) == (ri[1] == nodes[cast].outputs[0]):
            continue
        pm = producer.get(ri[1] if ri[0] == nodes[cast].outputs[0] else ri[0])
        if pm is None or nodes[pm].op_type != "Mul" or _only_consumer(model, consumers, nodes[pm].outputs[0]) != rm:
            continue
        pi = nodes[pm].inputs
        if len(pi) != 2 or (pi[0] == dq.outputs[1]) == (pi[1] == dq.outputs[1]):
            continue
        b_scale = pi[1] if pi[0] == dq.outputs[1] else pi[0]
        if not _const(model, b_scale) or model.value(b_scale).dtype != "float" or not _vector_of(
                model.value(b_scale).shape, n_out, scalar_ok=True):
            continue
        group = [d, i, cast, pm, rm]
        add = _only_consumer(model, consumers, nodes[rm].outputs[0])
        if add is not None and nodes[add].op_type == "Add":
            ai = nodes[add].inputs
            bias = ai[1] if ai and ai[0] == nodes[rm].outputs[0] else (ai[0] if ai else "")
            if len(ai) != 2 or nodes[rm].outputs[0] not in ai or not _const(model, bias) or model.value(
                    bias).dtype != "float" or not _vector_of(model.value(bias).shape, n_out, scalar_ok=False,
                                                             channel_rank=va.rank if op == "ConvInteger" else 0):
                continue  # TryFusion rejects the whole pattern
            group.append(add)
        outs = dq.outputs
        if not all(nodes[c].op_type in ("MatMulInteger", "ConvInteger")
                   for c in consumers.get(outs[0], []) + consumers.get(outs[2], [])):
            continue
        if not all(nodes[c].op_type == "Mul" for c in consumers.get(outs[1], [])):
            continue
        if any(t in model.graph_outputs for t in outs):
            continue
        groups.append(group)
    return groups


def _vector_of(shape, n, scalar_ok, channel_rank=0):
    """``[n]`` or ``[1, n]`` (or a scalar); with ``channel_rank``, also ``[1, n, 1, ...]`` of that
    rank (a Conv's per-channel bias as it is broadcast)."""
    if shape is None:
        return False
    shape = tuple(shape)
    if scalar_ok and (shape == () or shape == (1,)):
        return True
    if channel_rank and shape == (1, n) + (1,) * (channel_rank - 2):
        return True
    return shape == (n,) or shape == (1, n)


def _gelu(model, members):
    """``[group indices]`` of every GeluFusion among ``members`` (``qnn_node_group/gelu_fusion.cc``
    ``GeluFusion::TryFusion``): ``Div(x, .) -> Erf -> Add -> Mul`` with the other Mul input
    ``Mul(x, .)`` (pattern 1, group Div, Erf, Add, Mul(x), Mul), or that Mul reading ``x`` itself
    and followed by one more Mul (pattern 2), or followed by a Mul reading ``x`` (pattern 3, the
    torch.export order, measured).  Each link is the only consumer of the one before and
    no member but the last writes a graph output (``utils.cc`` GetParentOfInput /
    GetOnlyChildOfOutput); QNN then validates one Gelu from ``x`` to the last output, which needs
    static float shapes here."""
    nodes = model.nodes
    member_set = set(members)
    producer, consumers = _links(model, members)
    outputs = set(model.graph_outputs)

    def writes_output(i):
        return any(t in outputs for t in nodes[i].outputs)

    def only_child(i, op):
        if writes_output(i) or not nodes[i].outputs:
            return None
        cs = consumers.get(nodes[i].outputs[0], [])
        return cs[0] if len(cs) == 1 and nodes[cs[0]].op_type == op and not nodes[cs[0]].domain else None

    groups, taken = [], set()
    for i in sorted(member_set):
        erf = nodes[i]
        if erf.op_type != "Erf" or erf.domain or not erf.inputs or i in taken:
            continue
        div = producer.get(erf.inputs[0])
        if div is None or nodes[div].op_type != "Div" or len(nodes[div].inputs) < 2 or writes_output(div):
            continue
        add = only_child(i, "Add")
        mul = only_child(add, "Mul") if add is not None else None
        if mul is None or len(nodes[mul].inputs) < 2:
            continue
        root = nodes[div].inputs[0]
        mul2 = next((p for p in (producer.get(t) for t in nodes[mul].inputs[:2])
                     if p is not None and nodes[p].op_type == "Mul" and p not in taken
                     and root in nodes[p].inputs[:2]), None)
        if mul2 is not None:
            group, last = [div, i, add, mul2, mul], mul
        elif root in nodes[mul].inputs[:2]:
            last = only_child(mul, "Mul")
            if last is None:
                continue
            group = [div, i, add, mul, last]
        else:
            # pattern 3, measured on onnxruntime-qnn 2.7.0 (newer than the stored gelu_fusion.cc): the
            # torch.export order, Add -> Mul(., 0.5) -> Mul(x, .), is one Gelu too
            last = only_child(mul, "Mul")
            if last is None or root not in nodes[last].inputs[:2]:
                continue
            group = [div, i, add, mul, last]
        v_in, v_out = model.value(root), model.value(nodes[last].outputs[0])
        if not (v_in.dtype in ("float", "float16") and v_in.is_static and v_out.is_static):
            continue
        if taken & set(group):
            continue
        taken.update(group)
        groups.append(group)
    return groups


def _reshape_transpose_rank6(model, members):
    """``[group indices]`` of every Rank6ToRank5Fusion among ``members``
    (``qnn_node_group/reshape_transpose_rank5.cc``): ``Reshape -> Transpose -> Reshape`` through rank 6
    (window partitioning, as in Swin), both Reshape shapes constant, each link the only consumer of
    the one before and not a graph output, and a dimension that is 1 in both rank-6 tensors and that
    the permutation keeps in place: QNN drops it and runs the three on rank 5, which it supports,
    where each alone is refused for its rank."""
    nodes = model.nodes
    member_set = set(members)
    outputs = set(model.graph_outputs)

    def only_child(i, op):
        t = nodes[i].outputs[0] if len(nodes[i].outputs) == 1 else ""
        if not t or t in outputs:
            return None
        cs = [c for c in model.consumers.get(t, []) if c in member_set]
        if len(cs) != 1 or len(model.consumers.get(t, [])) != 1:
            return None
        c = cs[0]
        return c if nodes[c].op_type == op and not nodes[c].domain else None

    groups = []
    for i in sorted(member_set):
        r1 = nodes[i]
        if r1.op_type != "Reshape" or r1.domain or len(r1.inputs) < 2:
            continue
        tr = only_child(i, "Transpose")
        r2 = only_child(tr, "Reshape") if tr is not None else None
        if r2 is None or len(nodes[r2].inputs) < 2:
            continue
        if not (model.value(r1.inputs[1]).is_constant and model.value(nodes[r2].inputs[1]).is_constant):
            continue
        shapes = [model.value(t).shape for t in (r1.inputs[0], r1.outputs[0], nodes[tr].outputs[0],
                                                 nodes[r2].outputs[0])]
        if any(sh is None or not all(isinstance(d, int) for d in sh) for sh in shapes):
            continue
        t1, t2 = shapes[1], shapes[2]
        if len(t1) != 6 or len(t2) != 6:
            continue
        unit = next((k for k in range(6) if t1[k] == 1 and t2[k] == 1), None)
        perm = nodes[tr].attrs.get("perm")
        if unit is None or perm is None or len(perm) != 6 or perm[unit] != unit:
            continue
        if model.value(r1.inputs[0]).dtype not in ("float", "float16", "int32", "uint32", "bool"):
            continue
        groups.append([i, tr, r2])
    return groups


NODE_GROUPS = {"dq_matmul_integer": _dq_matmul_integer, "dq_conv_integer": _dq_conv_integer, "gelu": _gelu,
               "reshape_transpose_rank6": _reshape_transpose_rank6}
# groups QNN validates as a whole: their members need no rule of their own
_WHOLE = frozenset(("gelu", "reshape_transpose_rank6"))
# members a group claims although the provider has no builder for them alone
_BUILDERLESS = frozenset(("DynamicQuantizeLinear", "MatMulInteger", "ConvInteger", "Erf"))


def node_group_members(model, names, members, matched):
    """``{node index: group}`` for the members of every node group in ``names`` (table option
    ``node_groups``) whose members with a table rule of their own (``matched``) all matched: the
    others (DynamicQuantizeLinear, MatMulInteger) are then claimed with them."""
    out = {}
    for name in names:
        for group in NODE_GROUPS[name](model, members):
            own = [] if name in _WHOLE else [i for i in group if model.nodes[i].op_type not in _BUILDERLESS]
            if all(i in matched for i in own):
                for i in group:
                    out.setdefault(i, tuple(group))
    return out
