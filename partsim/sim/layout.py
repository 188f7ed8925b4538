"""ORT's NHWC layout transformation for providers that prefer channels-last (QNN, NNAPI, XNNPACK).

Port of ``TransformLayoutForEP`` (``onnxruntime/core/optimizer/layout_transformation/
layout_transformation.cc``) and of the part of the transpose optimizer it runs
(``onnxruntime/core/optimizer/transpose_optimization/onnx_transpose_optimization.cc``,
names from ``ort_optimizer_api_impl.cc`` and ``graph/graph.cc``), as far as it decides
which nodes are converted, which Transposes survive and what they are named:

1. *Wrap.*  In ORT's default topological order, every node the EP claimed whose op is
   layout sensitive (``GetORTLayoutSensitiveOps`` + the table's ``layout_extra_ops``) and
   whose first input has a known rank gets a Transpose NCHW->NHWC on input 0 (cancelling
   a Transpose NHWC->NCHW that produces it, or reusing one of the same perm) and one
   NHWC->NCHW on output 0 (``TransposeOutput``: the node gets a new output named after
   itself); then it is recreated in ``com.ms.internal.nhwc`` (``SwapNodeOpTypeAndDomain``:
   ``CopyNode`` names it ``GenerateNodeName(<orig>)`` = ``<orig>_token_<k>``, and moving
   each output off the old node spends one more ``GenerateNodeArgName(<orig>)``).
2. *Push.*  Nodes are visited in the new graph's order; a node fed by a Transpose is pushed
   through when it has a handler (element-wise unary and broadcasting ops, Clip, per-tensor
   Q/DQ) and is not assigned to another provider (unassigned nodes count: at that time
   only this EP has claimed anything).  Its other inputs get the inverse perm (constants are
   transposed in place, a producing inverse Transpose cancels, a Transpose of the same perm
   is reused, otherwise a new one is made) and each output a new Transpose.  A Transpose
   fed by the inverse Transpose cancels with it.  ``PostLayoutTransformCostCheck`` pushes
   channel-order perms always (Concat is not pushed here).
3. The surviving Transposes start unassigned; the EP takes them in its second GetCapability
   when its table has a Transpose rule, else the CPU does.

Names: ``Graph::GenerateNodeName(base)``/``GenerateNodeArgName(base)`` return ``base`` when
free, else ``base_token_<n>`` with one counter for both (``graph/graph.cc``).
Not ported: Unsqueeze of lower-rank non-constant inputs, Concat/Split/Reduce/Softmax/
Slice/Pad/Squeeze handlers, subgraphs (the layout transformer does not recurse into them).
"""

from dataclasses import dataclass

from ..ir.order import ort_default_order

__all__ = ["LAYOUT_SENSITIVE_OPS", "NHWC_PROVIDERS", "LayoutResult", "nhwc_layout", "layout_pass",
           "ort_default_order", "handles_layout"]

CPU = "CPUExecutionProvider"

# EPs whose GetPreferredDataLayout is NHWC, so ORT's partitioner runs TransformLayoutForEP for them
# (graph_partitioner.cc GetCapabilityForEP; qnn_execution_provider.cc / QnnEp::GetPreferredDataLayoutImpl,
# nnapi_execution_provider.cc unless NNAPI_FLAG_USE_NCHW, xnnpack_execution_provider.cc)
NHWC_PROVIDERS = frozenset({"QNNExecutionProvider", "NnapiExecutionProvider", "XnnpackExecutionProvider"})
# IsSupportedOpset (layout_transformation.cc): onnx_transpose_optimization kMinSupportedOpset .. kMaxSupportedOpset
MIN_OPSET, MAX_OPSET = 7, 24


def handles_layout(table):
    """True when ORT itself converts this provider's nodes to NHWC (so no conversion is 'missing')."""
    return table.provider in NHWC_PROVIDERS and table.layout == "NHWC"


def layout_pass(model, tables, assigned, rules, late=()):
    """Run :func:`nhwc_layout` for every NHWC provider of the session, in priority order.

    Returns ``(results, refusals)``: a LayoutResult per provider that converted a node, and
    ``(failure sentence, node indices)`` for converted nodes the provider's rule marks as refused
    in NHWC form (``layout_refusal``), which ORT turns into a failed session.  Nodes in ``late``
    are claimed only in the provider's second GetCapability: the conversion does not see them.
    """
    opset = model.opsets.get("", 0)
    if not MIN_OPSET <= opset <= MAX_OPSET:
        return (), []
    results, refusals = [], []
    done = []
    for t in tables:
        if t.provider == CPU:
            break
        done.append(t.provider)
        if not handles_layout(t):
            continue
        state = [p if p in done and k not in late else None for k, p in enumerate(assigned)]
        r = nhwc_layout(model, t.provider, t, state, lambda name: model.value(name).rank, ort_default_order)
        if not r.converted:
            continue
        results.append(r)
        bad = [i for i in r.converted if getattr(rules.get(i), "layout_refusal", False)]
        if bad:
            i = bad[0]
            new = r.converted[i][0]
            refusals.append((f"Node '{new}' OpType:{model.nodes[i].op_type} with domain:{NHWC_DOMAIN} was inserted "
                             f"using the NHWC format as requested by {t.provider}, but was not selected by that EP "
                             f"(ORT refuses the session)", tuple(bad)))
    return tuple(results), refusals

NHWC_DOMAIN = "com.ms.internal.nhwc"

# onnx_transpose_optimization::GetLayoutSensitiveOps + the ORT-specific ones of GetORTLayoutSensitiveOps
LAYOUT_SENSITIVE_OPS = frozenset({
    "AveragePool", "BatchNormalization", "Conv", "ConvInteger", "ConvTranspose", "DepthToSpace",
    "GlobalAveragePool", "GlobalLpPool", "GlobalMaxPool", "GridSample", "InstanceNormalization", "LpPool",
    "LRN", "MaxPool", "MaxRoiPool", "MaxUnpool", "QLinearConv", "RoiAlign", "SpaceToDepth",
    "FusedConv", "QLinearAveragePool", "QLinearGlobalAveragePool", "Resize",
})

# HandleSimpleNode and friends (onnx_transpose_optimization.cc handler map): the ops a
# Transpose is pushed through, and which inputs then get the inverse perm
_UNARY = frozenset({
    "Cast", "Exp", "Identity", "LeakyRelu", "Log", "Reciprocal", "Relu", "Sigmoid", "Sqrt", "Tanh", "Abs",
    "Not", "Ceil", "Floor", "Neg", "Erf", "HardSigmoid", "Round", "IsInf", "IsNaN", "Selu", "Shrink", "Sign",
    "Softplus", "Softsign", "ThresholdedRelu", "Celu", "HardSwish", "Sin", "Cos", "Tan", "Sinh", "Cosh",
    "Asin", "Acos", "Atan", "Asinh", "Acosh", "Atanh", "Elu", "Mish", "Bernoulli", "Gelu",
})
_FIRST_INPUT = frozenset({"Clip", "QuantizeLinear", "DequantizeLinear"})
_REDUCE = frozenset({
    "ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum",
    "ReduceLogSumExp", "ReduceSumSquare", "ArgMax", "ArgMin",
})
_BROADCAST = frozenset({
    "Add", "Max", "Mean", "Min", "Mul", "Sum", "Div", "Sub", "Pow", "PRelu", "Mod", "BitShift", "Equal",
    "Greater", "Less", "GreaterOrEqual", "LessOrEqual", "And", "Or", "Xor", "Where",
})


def _perm_to_last(rank):
    return (0,) + tuple(range(2, rank)) + (1,)


def _invert(perm):
    inv = [0] * len(perm)
    for k, p in enumerate(perm):
        inv[p] = k
    return tuple(inv)


@dataclass
class _N:
    index: int
    name: str
    op: str
    inputs: list
    outputs: list
    ep: object  # provider, None while unassigned
    orig: object = None  # model node index
    perm: tuple = ()
    alive: bool = True


@dataclass(frozen=True)
class LayoutResult:
    """What the layout transformation did for one provider.

    ``converted``: model node index -> (new name, NHWC domain).  ``transposes``: the surviving
    inserted Transposes as ``(name, provider, input tensor)`` in graph order.  ``refused``:
    model node indices converted to NHWC that the provider's table refuses after conversion.
    """

    provider: str
    converted: dict
    transposes: tuple
    refused: tuple


class _Names:
    """``Graph::GenerateNodeName`` / ``GenerateNodeArgName`` with their shared counter."""

    def __init__(self, node_names, arg_names):
        self.nodes, self.args, self.counter = set(node_names), set(arg_names), 0

    def _gen(self, base, taken):
        name = base
        while name in taken:
            name = f"{base}_token_{self.counter}"
            self.counter += 1
        taken.add(name)
        return name

    def node(self, base):
        return self._gen(base, self.nodes)

    def arg(self, base):
        return self._gen(base, self.args)


def _reduce_out_perm(perm, axes, keepdims):
    """HandleReduceOps: the perm left on the output of a Reduce* fed by a Transpose of ``perm``."""
    rank = len(perm)
    if axes is None:  # all axes reduced
        return tuple(perm) if keepdims else ()
    new_axes = {perm[a % rank] for a in axes}
    if keepdims:
        return tuple(perm)
    kept = [p for p in perm if p not in new_axes]
    order = sorted(kept)
    return tuple(order.index(p) for p in kept)


def nhwc_layout(model, provider, table, assigned, rank_of, order_of):
    """Run the layout transformation for ``provider`` over the main graph.

    Parameters
    ----------
    model : Model
    provider : str
    table : RuleTable
        The provider's table (``layout_extra_ops``; a Transpose rule makes it take the Transposes).
    assigned : sequence
        Per model node: its provider after the first GetCapability (None: unassigned).
    rank_of : callable
        Tensor name -> rank or None.
    order_of : callable
        ``order_of(members, producers)`` -> ORT's default topological order of node ids, where
        ``producers(i)`` gives the producer ids of node ``i``.
    """
    sensitive = LAYOUT_SENSITIVE_OPS | set(table.option("layout_extra_ops", ()) or ())
    main = [n for n in model.nodes if not n.scope]
    arg_names = set(model.values)
    names = _Names((n.name for n in model.nodes), arg_names)
    nodes = {}
    producer = {}
    consumers = {}
    for n in main:
        nodes[n.index] = _N(n.index, n.name, n.op_type, list(n.inputs), list(n.outputs), assigned[n.index],
                            orig=n.index)
    next_id = [max(nodes, default=-1) + 1]
    graph_outputs = set(model.graph_outputs)
    constants = {t for t, v in model.values.items() if v.is_constant}

    def index():
        producer.clear()
        consumers.clear()
        for i, nd in nodes.items():
            if not nd.alive:
                continue
            for t in nd.outputs:
                if t:
                    producer[t] = i
            for t in nd.inputs:
                if t:
                    consumers.setdefault(t, []).append(i)

    def users(t):
        return [c for c in consumers.get(t, ()) if nodes[c].alive and t in nodes[c].inputs]

    def set_input(i, k, t):
        old = nodes[i].inputs[k]
        nodes[i].inputs[k] = t
        if old and old in consumers and i in consumers[old] and old not in nodes[i].inputs:
            consumers[old] = [c for c in consumers[old] if c != i]
        if t:
            consumers.setdefault(t, []).append(i)

    def make_transpose(src, perm):
        name = names.node("Transpose")
        out = names.arg(name + "_out0")
        i = next_id[0]
        next_id[0] += 1
        nodes[i] = _N(i, name, "Transpose", [src], [out], None, perm=perm)
        if src:
            consumers.setdefault(src, []).append(i)
        producer[out] = i
        return i

    def remove_if_unused(i):
        nd = nodes[i]
        if nd.alive and not any(users(t) for t in nd.outputs) and not (set(nd.outputs) & graph_outputs):
            nd.alive = False
            for t in nd.inputs:
                if t in consumers:
                    consumers[t] = [c for c in consumers[t] if c != i]

    def transpose_input(i, k, perm):
        t = nodes[i].inputs[k]
        if not t:
            return
        if t in constants:
            return  # Case 1: the initializer is transposed in place (no node, no name)
        p = producer.get(t)
        inv = _invert(perm)
        if p is not None and nodes[p].alive and nodes[p].op == "Transpose" and len(nodes[p].perm) == len(perm):
            if nodes[p].perm == inv:  # Case 2: cancels
                set_input(i, k, nodes[p].inputs[0])
                remove_if_unused(p)
                return
        for c in users(t):  # Case 3: a Transpose of the same perm exists
            if c != i and nodes[c].op == "Transpose" and nodes[c].perm == perm:
                set_input(i, k, nodes[c].outputs[0])
                return
        j = make_transpose(t, perm)  # Case 4
        set_input(i, k, nodes[j].outputs[0])

    def transpose_output(i, k, perm):
        nd = nodes[i]
        j = make_transpose("", perm)
        old = nd.outputs[k]
        nodes[j].outputs[0] = old  # MoveOutput: the Transpose now produces the old value
        producer[old] = j
        new = names.arg(nd.name)
        nd.outputs[k] = new
        producer[new] = i
        nodes[j].inputs[0] = new
        consumers.setdefault(new, []).append(j)

    def from_inverse(t, perm):
        p = producer.get(t)
        return p is not None and nodes[p].alive and nodes[p].op == "Transpose" and nodes[p].perm == tuple(perm)

    def axes_from_shapes(n0):
        """Constant ``axes`` input (opset 18): partsim keeps no tensor data, so the axes are read off
        the shapes (the dimensions that became 1 or went away); None when that is ambiguous."""
        a, b = model.value(n0.inputs[0]).shape, model.value(n0.outputs[0]).shape
        if a is None or b is None or not all(isinstance(d, int) for d in tuple(a) + tuple(b)):
            return None
        if len(a) == len(b):
            return [k for k in range(len(a)) if a[k] != b[k]] or None
        keep, k = [], 0
        for j, d in enumerate(a):
            if k < len(b) and b[k] == d:
                keep.append(j)
                k += 1
        if k != len(b) or len(set(a)) != len(a):
            return None
        return [j for j in range(len(a)) if j not in keep]

    index()
    member_ids = [n.index for n in main]

    def producers_of(i):
        return sorted({producer[t] for t in nodes[i].inputs if t in producer and nodes[producer[t]].alive})

    converted = {}
    refused = []
    for i in order_of(member_ids, producers_of):
        nd = nodes[i]
        n = model.nodes[nd.orig]
        if nd.ep != provider or n.op_type not in sensitive or n.domain not in ("", "com.microsoft"):
            continue
        rank = rank_of(n.inputs[0]) if n.inputs else None
        if not rank:
            continue
        to_last = _perm_to_last(rank)
        transpose_input(i, 0, to_last)
        transpose_output(i, 0, _invert(to_last))
        # SwapNodeOpTypeAndDomain: CopyNode (a new node, new index), then the outputs move to it
        new_id = next_id[0]
        next_id[0] += 1
        new_name = names.node(nd.name)
        copy = _N(new_id, new_name, nd.op, list(nd.inputs), list(nd.outputs), nd.ep, orig=nd.orig)
        for _ in nd.outputs:
            names.arg(nd.name)
        nd.alive = False
        nodes[new_id] = copy
        index()
        converted[nd.orig] = (new_name, NHWC_DOMAIN)
    if not converted:
        return LayoutResult(provider, {}, (), ())

    # the transpose optimizer, in the order of the graph after wrapping
    alive_ids = [i for i, nd in nodes.items() if nd.alive]
    for i in order_of(alive_ids, producers_of):
        nd = nodes[i]
        if not nd.alive:
            continue
        for k, t in enumerate(list(nd.inputs)):
            p = producer.get(t)
            if p is None or not nodes[p].alive or nodes[p].op != "Transpose" or nodes[p].ep is not None:
                continue
            perm = nodes[p].perm
            if nd.op == "Transpose" and nd.ep is None:
                if nd.perm == _invert(perm) and not (set(nd.outputs) & graph_outputs):
                    src = nodes[p].inputs[0]
                    for c in users(nd.outputs[0]):
                        for kk, tt in enumerate(nodes[c].inputs):
                            if tt == nd.outputs[0]:
                                set_input(c, kk, src)
                    nd.alive = False
                    consumers[t] = [c for c in consumers.get(t, ()) if c != i]
                    remove_if_unused(p)
                break
            if nd.ep not in (None, provider) or nd.orig is None:
                continue
            out_perm = perm
            if nd.op in _UNARY or nd.op in _FIRST_INPUT:
                ks = [0]
            elif nd.op in _REDUCE:
                ks = [0]
                n0 = model.nodes[nd.orig]
                axes = n0.attrs.get("axes")
                if nd.op in ("ArgMax", "ArgMin"):
                    axes = [n0.attrs.get("axis", 0)]
                elif axes is None and len(n0.inputs) > 1 and n0.inputs[1]:
                    if n0.inputs[1] not in constants:
                        continue  # axes computed at run time: no handler
                    axes = axes_from_shapes(n0)
                    if axes is None:
                        continue
                if axes is not None and not len(axes) and n0.attrs.get("noop_with_empty_axes", 0):
                    continue
                out_perm = _reduce_out_perm(perm, list(axes) if axes else None, n0.attrs.get("keepdims", 1))
            elif nd.op == "Concat":
                ks = list(range(len(nd.inputs)))
                cancel = sum(1 for j in ks if from_inverse(nd.inputs[j], perm))
                fresh = sum(1 for j in ks if nd.inputs[j] and nd.inputs[j] not in constants
                            and not from_inverse(nd.inputs[j], perm))
                if cancel <= fresh + 1:  # OrtEPCostCheck: pushing must remove more than it adds
                    continue
            elif nd.op in _BROADCAST:
                ks = list(range(len(nd.inputs)))
                if any(nd.inputs[j] and nd.inputs[j] not in constants and rank_of(nd.inputs[j]) not in
                       (None, len(perm)) for j in ks):
                    continue  # would need an Unsqueeze of a non-constant input: not ported
            else:
                continue
            if k not in ks:
                continue
            inv = _invert(perm)
            for j in ks:
                transpose_input(i, j, inv)
            if out_perm and out_perm != tuple(range(len(out_perm))):
                for j in range(len(nd.outputs)):
                    if nd.outputs[j]:
                        transpose_output(i, j, out_perm)
            remove_if_unused(p)
            break
    takes_transpose = bool(table.rules_for("", "Transpose"))
    kept = []
    for i in order_of([i for i, nd in nodes.items() if nd.alive], producers_of):
        nd = nodes[i]
        if nd.op == "Transpose" and nd.orig is None:
            kept.append((nd.name, provider if takes_transpose else "CPUExecutionProvider", nd.inputs[0]))
    return LayoutResult(provider, converted, tuple(kept), tuple(refused))
