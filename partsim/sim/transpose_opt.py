"""ORT's transpose optimizer as the layout transformation runs it, on a small mutable graph.

Port of ``onnx_transpose_optimization::OptimizeImpl`` and its handlers
(``onnxruntime/core/optimizer/transpose_optimization/onnx_transpose_optimization.cc``), the
ORT-specific handlers and cost check (``ort_transpose_optimization.cc``: ``OrtExtendedHandlers``,
``OrtEPCostCheck``), ``PostLayoutTransformCostCheck`` (``layout_transformation/layout_transformation.cc``)
and the graph edits of ``ort_optimizer_api_impl.cc`` (node and value names).  What it decides:
which Transposes of the model and of the NHWC wrapping survive, which nodes the optimizer adds
(``Transpose``, ``Gather`` after a ``Shape``, ``Unsqueeze``/``Squeeze``, Q/DQ pairs) and what ORT
names them.  Tensor data is not kept: constants whose values a handler reads (Reshape shapes,
axes inputs) come from ``Model.int_consts``; other constants are edited by shape only.

``TransformLayoutForEP`` calls ``Optimize`` for the EP whether or not it converted a node (the
newest stored layout_transformation.cc, microsoft/onnxruntime 02c16ee1; older copies ran it only
after a conversion), so the model's own Transposes are pushed and cancelled too, on the nodes
assigned to that EP or still unassigned (``CanModifyNode``).

Names: ``Graph::GenerateNodeName`` / ``GenerateNodeArgName`` (``graph/graph.cc``) return the base
when free, else ``<base>_token_<n>`` with one counter for both; a new node is named after its op
type, its outputs ``<name>_out<i>``; ``MoveOutput`` gives the node it takes an output from a new
output named after that node; every new initializer is ``const_transpose_optimizer[_token_<n>]``.

Two handlers are measured, not read, because the stored sources predate them: graphs saved with
``session.debug_layout_transformation=1`` from real onnxruntime 1.31.1 + onnxruntime-qnn 2.7.0 sessions
show (a) a Gather handler: with scalar indices the axis moves through the perm and the output is
transposed back by the perm without that axis (1-D indices are handled by the same algebra, not
seen); (b) a Transpose feeding a QNN Reshape that splits dimensions of the Transpose's output into
runs of consecutive ones (a channel shuffle) or inserts size-1 dimensions is pushed below it:
each inserted dimension goes with the next dimension of the Transpose's output, the groups are put
in the Transpose's input order for the new Reshape shape, and a Transpose restores the output
(:func:`_reshape_groups`).  A Reshape that merges or drops dimensions (mobilenet_v2.dynamo's
classifier, a flatten) or appends a size-1 dimension after the last one is not pushed.
"""

from dataclasses import dataclass, field

__all__ = ["OptGraph", "optimize", "invert", "channel_last_to_first", "channel_first_to_last"]

QNN = "QNNExecutionProvider"  # kQnnExecutionProvider: the EP EPAwareHandleReshape special-cases


def invert(perm):
    inv = [0] * len(perm)
    for k, p in enumerate(perm):
        inv[p] = k
    return tuple(inv)


def compose(perm1, perm2):
    """ComposePerm: transposing by perm1 then perm2."""
    return tuple(perm1[p] for p in perm2)


def channel_last_to_first(rank):
    if rank < 2:
        return ()
    return (0, rank - 1) + tuple(range(1, rank - 1))


def channel_first_to_last(rank):
    return invert(channel_last_to_first(rank)) if rank >= 2 else ()


def _is_identity(perm):
    return all(p == k for k, p in enumerate(perm))


def _valid_perm(perm):
    return perm is not None and sorted(perm) == list(range(len(perm)))


def _norm_axes(axes, rank):
    out = []
    for a in axes:
        a = a + rank if a < 0 else a
        if not 0 <= a < rank or a in out:
            return None
        out.append(a)
    return out


def _sorted_axes_for_transposed(axes, perm):
    return sorted({perm[a] for a in axes})


def _squeeze_perm(axes, perm):
    removed = set(axes)
    amap, j = {}, 0
    for i in range(len(perm)):
        if i not in removed:
            amap[i] = j
            j += 1
    return tuple(amap[p] for p in perm if p not in removed)


def _unsqueeze_perm(axes, perm):
    new_rank = len(perm) + len(axes)
    added = set(axes)
    amap = [i for i in range(new_rank) if i not in added]
    out, j = [], 0
    for i in range(new_rank):
        if i in added:
            out.append(i)
        else:
            out.append(amap[perm[j]])
            j += 1
    return tuple(out)


def _unsqueeze_shape(shape, axes):
    if shape is None:
        return None
    new_rank = len(shape) + len(axes)
    out, j = [], 0
    for i in range(new_rank):
        if i in axes:
            out.append(1)
        else:
            out.append(shape[j])
            j += 1
    return tuple(out)


def _permute(shape, perm):
    if shape is None or len(shape) != len(perm):
        return shape if shape is None else None
    return tuple(shape[p] for p in perm)


def _rank_estimate(shape):
    """EstimateValueRank: dimensions other than 1, 5 when the shape is unknown."""
    if shape is None:
        return 5
    return sum(1 for d in shape if d != 1)


@dataclass
class ONode:
    id: int
    name: str
    op: str
    domain: str
    inputs: list
    outputs: list
    attrs: dict
    ep: object = None  # provider; None while unassigned
    orig: object = None  # model node index, None for nodes ORT adds
    since: object = None
    alive: bool = True


@dataclass
class OptGraph:
    """The main graph as ORT's ``ApiGraph`` sees it during the layout transformation."""

    opset: int
    nodes: dict = field(default_factory=dict)
    shapes: dict = field(default_factory=dict)  # value -> shape tuple or None
    dtypes: dict = field(default_factory=dict)
    consts: set = field(default_factory=set)  # constant initializers (GetLocalConstant)
    data: dict = field(default_factory=dict)  # constant -> int values, where known
    graph_outputs: set = field(default_factory=set)
    implicit: set = field(default_factory=set)  # values a subgraph reads (GetValueConsumers: not comprehensive)
    producer: dict = field(default_factory=dict)
    users: dict = field(default_factory=dict)  # value -> [node id] (one entry per consuming node)
    taken_nodes: set = field(default_factory=set)
    taken_args: set = field(default_factory=set)
    counter: int = 0
    next_id: int = 0

    # --- names (graph.cc) ---
    def _gen(self, base, taken):
        name = base
        while name in taken:
            name = f"{base}_token_{self.counter}"
            self.counter += 1
        taken.add(name)
        return name

    def node_name(self, base):
        return self._gen(base, self.taken_nodes)

    def arg_name(self, base):
        return self._gen(base, self.taken_args)

    # --- structure ---
    def add(self, name, op, domain, inputs, outputs, attrs, ep=None, orig=None, since=None):
        i = self.next_id
        self.next_id += 1
        self.nodes[i] = ONode(i, name, op, domain, list(inputs), list(outputs), dict(attrs), ep, orig, since)
        for t in outputs:
            if t:
                self.producer[t] = i
        for t in dict.fromkeys(inputs):  # in input order: GetConsumerNodes keeps insertion order
            if t:
                self.users.setdefault(t, []).append(i)
        return i

    def consumers(self, t):
        """(consumer node ids, comprehensive): not comprehensive for a graph output."""
        return ([c for c in self.users.get(t, ()) if self.nodes[c].alive],
                t not in self.graph_outputs and t not in self.implicit)

    def has_consumers(self, t):
        return bool(self.consumers(t)[0]) or t in self.graph_outputs or t in self.implicit

    def prod(self, t):
        p = self.producer.get(t) if t else None
        return p if p is not None and self.nodes[p].alive else None

    def set_input(self, i, k, t):
        nd = self.nodes[i]
        while k >= len(nd.inputs):
            nd.inputs.append("")
        old = nd.inputs[k]
        nd.inputs[k] = t
        if old and old not in nd.inputs and i in self.users.get(old, ()):
            self.users[old].remove(i)
        if t and i not in self.users.setdefault(t, []):
            self.users[t].append(i)

    def remove(self, i):
        nd = self.nodes[i]
        nd.alive = False
        for t in set(nd.inputs):
            if t and i in self.users.get(t, ()):
                self.users[t].remove(i)

    def add_node(self, op, inputs, n_out=1, domain="", attrs=None):
        """ApiGraph::AddNode (CreateNodeHelper): named after the op type, outputs ``<name>_out<i>``."""
        name = self.node_name(op)
        outs = [self.arg_name(f"{name}_out{k}") for k in range(n_out)]
        return self.add(name, op, domain, inputs, outs, attrs or {})

    def copy_node(self, i, op, domain):
        """ApiGraph::CopyNode as ORT 1.31 does it: the copy is named after the source node."""
        src = self.nodes[i]
        name = self.node_name(src.name)
        outs = [self.arg_name(f"{name}_out{k}") for k in range(len(src.outputs))]
        return self.add(name, op, domain, src.inputs, outs, src.attrs, src.ep, src.orig, src.since)

    def move_output(self, src, si, dst, di):
        s, d = self.nodes[src], self.nodes[dst]
        t = s.outputs[si]
        d.outputs[di] = t
        self.producer[t] = dst
        new = self.arg_name(s.name)
        s.outputs[si] = new
        self.producer[new] = src
        return new

    def add_initializer(self, shape, values=None):
        name = self.arg_name("const_transpose_optimizer")
        self.consts.add(name)
        self.shapes[name] = tuple(shape)
        if values is not None:
            self.data[name] = tuple(values)
        return name

    def copy_info(self, src, dst):
        self.shapes[dst] = self.shapes.get(src)
        if src in self.dtypes:
            self.dtypes[dst] = self.dtypes[src]

    def shape(self, t):
        return self.shapes.get(t)

    def is_const(self, t):
        return t in self.consts and t not in self.producer

    def const_numel(self, t):
        s = self.shapes.get(t)
        if s is None or not all(isinstance(d, int) for d in s):
            return None
        n = 1
        for d in s:
            n *= d
        return n

    def replace_refs(self, ids, old, new):
        for c in ids:
            for k, t in enumerate(list(self.nodes[c].inputs)):
                if t == old:
                    self.set_input(c, k, new)

    def ints(self, t):
        return self.data.get(t) if t else None


# --- handler support -----------------------------------------------------------------------------

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


# --- handlers (transposible inputs, handler, transposes_outputs) ----------------------------------

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


_UNARY = ("Cast", "Exp", "Gelu", "Identity", "LeakyRelu", "Log", "Reciprocal", "Relu", "Sigmoid", "Sqrt", "Tanh",
          "Abs", "Not", "Ceil", "Floor", "Neg", "Erf", "HardSigmoid", "Round", "IsInf", "IsNaN", "Selu", "Shrink",
          "Sign", "Softplus", "Softsign", "ThresholdedRelu", "Celu", "HardSwish", "Sin", "Cos", "Tan", "Sinh", "Cosh",
          "Asin", "Acos", "Atan", "Asinh", "Acosh", "Atanh")
_BROADCAST = ("Add", "Max", "Min", "Mul", "Sub", "Div", "And", "Or", "Xor", "Mod", "PRelu", "BitShift", "Equal",
              "Greater", "Less", "GreaterOrEqual", "LessOrEqual", "Mean", "Sum", "Pow", "Where")
_REDUCE = ("ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean", "ReduceMin", "ReduceProd", "ReduceSum",
           "ReduceSumSquare", "ReduceL1", "ReduceL2")

# key -> (transposible inputs, handler, transposes_outputs); ONNX-domain keys are the op type
HANDLERS = {op: (_all_inputs, _h_simple, True) for op in _UNARY}
HANDLERS.update({op: (_non_scalar_inputs, _h_broadcast, True) for op in _BROADCAST})
HANDLERS.update({op: (_first_input, _h_reduce, True) for op in _REDUCE})
HANDLERS.update({
    "Clip": (_first_input, _h_simple, True), "CastLike": (_first_input, _h_simple, True),
    "Transpose": (_first_input, _h_transpose, False), "Concat": (_all_inputs, _h_concat, True),
    "Split": (_first_input, _h_split, True), "Shape": (_first_input, _h_shape, False),
    "Pad": (_first_input, _h_pad, True), "ArgMin": (_first_input, _h_argminmax, True),
    "ArgMax": (_first_input, _h_argminmax, True), "Squeeze": (_first_input, _h_squeeze, True),
    "Unsqueeze": (_first_input, _h_unsqueeze, True), "Slice": (_first_input, _h_slice, True),
    "Tile": (_first_input, _h_tile, True), "Softmax": (_first_input, _h_softmax, True),
    "Hardmax": (_first_input, _h_softmax, True), "LogSoftmax": (_first_input, _h_softmax, True),
    "QuantizeLinear": (_first_input, _h_qdq, True), "DequantizeLinear": (_first_input, _h_qdq, True),
    # OrtExtendedHandlers (ort_transpose_optimization.cc), which take priority
    "MaxPool": (_first_input, _h_never, True), "Resize": (_first_input, _h_never, True),
    "Reshape": (_first_input, _h_reshape, False),
    "Gather": (_first_input, _h_gather, True),
    "com.microsoft.QuantizeLinear": (_first_input, _h_qdq, True),
    "com.microsoft.DequantizeLinear": (_first_input, _h_qdq, True),
    "com.microsoft.QLinearAdd": (lambda c, i: [0, 3], _h_broadcast, True),
    "com.microsoft.QLinearMul": (lambda c, i: [0, 3], _h_broadcast, True),
    "com.microsoft.QLinearConcat": (lambda c, i: list(range(2, len(c.g.nodes[i].inputs), 3)), _h_concat, True),
    "com.microsoft.QLinearLeakyRelu": (_first_input, _h_simple, True),
    "com.microsoft.QLinearSigmoid": (_first_input, _h_simple, True),
    "com.microsoft.QLinearReduceMean": (_first_input, _h_reduce, True),
    "com.microsoft.QLinearSoftmax": (_first_input, _h_softmax, True),
})


def handler_of(nd):
    key = nd.op if nd.domain in ("", "ai.onnx") else f"{nd.domain}.{nd.op}"
    return HANDLERS.get(key)


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
            leading = leading or _leads(ctx, o)
        if not leading:
            cost += out_cost
    return cost < 0


def _leads(ctx, t):
    """Whether the Transpose a push leaves on output ``t`` is expected to cancel further on: ``t`` is
    in ORT's ``outputs_leading_to_transpose`` and has that one consumer.  Measured on onnxruntime
    1.31.1 (the stored sources count membership only): a Relu, Sigmoid or Softmax whose output feeds
    two Transposes, or a Transpose and an unused Relu, is not pushed through; with one consumer it is."""
    g = ctx.g
    if t not in ctx.leading:
        return False
    users, comp = g.consumers(t)
    if not comp or len(users) != 1:
        return False
    nd = g.nodes[users[0]]
    if nd.op == "Transpose":
        return True
    info = handler_of(nd)
    return info is not None and info[2] and any(o in ctx.leading for o in nd.outputs)


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
    from ..ir.order import ort_default_order

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
