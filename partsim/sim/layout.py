"""ORT's NHWC layout transformation for providers that prefer channels-last (QNN, NNAPI, XNNPACK).

Port of ``TransformLayoutForEP`` (``onnxruntime/core/optimizer/layout_transformation/
layout_transformation.cc``), names from ``ort_optimizer_api_impl.cc`` and ``graph/graph.cc``:

1. *Wrap.*  In ORT's default topological order, every node the EP claimed whose op is
   layout sensitive (``GetORTLayoutSensitiveOps`` + the table's ``layout_extra_ops``, less its
   ``layout_keep_ops``) and
   whose first input has a known rank gets a Transpose NCHW->NHWC on input 0 (Resize: also its
   4-value constant scales/sizes) and one NHWC->NCHW on output 0 (``TransposeOutput``: the node
   gets a new output named after itself); then it is recreated in ``com.ms.internal.nhwc``
   (``SwapNodeOpTypeAndDomain``: ``CopyNode`` names it ``GenerateNodeName(<orig>)`` =
   ``<orig>_token_<k>``, and moving each output off the old node spends one more
   ``GenerateNodeArgName(<orig>)``).  A node with ``channels_last=1`` only changes domain.
2. *Optimize.*  ``onnx_transpose_optimization::Optimize`` runs for the EP whether or not step 1
   converted anything (:mod:`partsim.sim.transpose_opt`): the wrapping Transposes and the model's
   own ones are pushed through the nodes that are unassigned or on this EP, merged and cancelled;
   it also adds ``Gather`` nodes after ``Shape``, ``Unsqueeze`` for lower-rank inputs and Q/DQ pairs.
3. The nodes it added start unassigned: the EP takes one in its second GetCapability when its table
   has a rule for the op and the node's first input and output have static shapes, else the CPU does.

Names: ``Graph::GenerateNodeName(base)``/``GenerateNodeArgName(base)`` return ``base`` when
free, else ``base_token_<n>`` with one counter for both (``graph/graph.cc``); the counter continues
where ORT's own rewrites before partitioning left it (``SessionFacts.name_counter``, from the pipeline).
Subgraphs: each graph the EP claimed a node of is transformed on its own (:func:`layout_pass`), deepest first.
"""

from dataclasses import dataclass

from ..ir.order import ort_default_order
from .layout_checks import refused_after_layout
from .names import NameGenerator
from .transpose_opt import OptGraph, channel_first_to_last, channel_last_to_first, optimize
from .transpose_opt.edits import _transpose_input, _transpose_output

__all__ = ["LAYOUT_SENSITIVE_OPS", "NHWC_PROVIDERS", "LayoutResult", "nhwc_layout", "layout_pass", "graph_for_memcpy",
           "ort_default_order", "handles_layout", "layout_opset_refusal"]

CPU = "CPUExecutionProvider"

# EPs whose GetPreferredDataLayout is NHWC, so ORT's partitioner runs TransformLayoutForEP for them
# (graph_partitioner.cc GetCapabilityForEP; qnn_execution_provider.cc / QnnEp::GetPreferredDataLayoutImpl,
# nnapi_execution_provider.cc unless NNAPI_FLAG_USE_NCHW, xnnpack_execution_provider.cc)
NHWC_PROVIDERS = frozenset({"QNNExecutionProvider", "NnapiExecutionProvider", "XnnpackExecutionProvider",
                            "WebGpuExecutionProvider"})
# IsSupportedOpset (layout_transformation.cc): onnx_transpose_optimization kMinSupportedOpset .. kMaxSupportedOpset
# (optimizer_api.h: 7 .. 25 in the stored ~1.25 source; real onnxruntime 1.31.1 + QNN sessions insert the
# layout Transposes around a Conv at opsets 25 and 26 too, and leave an opset-6 model to the CPU)
MIN_OPSET, MAX_OPSET = 7, 26


def layout_opset_refusal(model, table):
    """Why ORT never asks NHWC provider ``table`` for nodes of ``model`` (``None`` when it does):
    ``GetCapabilityForEP`` (graph_partitioner.cc) gives an NHWC EP no capability when the layout
    transformation does not support the model's ai.onnx opset ("cannot be used with this model due
    to its ONNX opset not being supported by the layout transformer")."""
    if not handles_layout(table):
        return None
    opset = model.opsets.get("", 0)
    if MIN_OPSET <= opset <= MAX_OPSET:
        return None
    return (f"ORT does not use {table.provider} for a model of ai.onnx opset {opset or 'none'}: its NHWC layout "
            f"transformation supports opsets {MIN_OPSET}-{MAX_OPSET} (graph_partitioner.cc GetCapabilityForEP)")


def handles_layout(table):
    """True when ORT itself converts this provider's nodes to NHWC (so no conversion is 'missing')."""
    return table.provider in NHWC_PROVIDERS and table.layout == "NHWC"


def layout_pass(model, tables, assigned, rules, late=(), name_counter=0, unnamed=()):
    """Run :func:`nhwc_layout` for every NHWC provider of the session, in priority order.

    Returns ``(results, refusals)``: a LayoutResult per provider that converted a node, and
    ``(failure sentence, node indices)`` for converted nodes the provider's rule marks as refused
    in NHWC form (``layout_refusal``), which ORT turns into a failed session.  Nodes in ``late``
    are claimed only in the provider's second GetCapability: the conversion does not see them.
    ``unnamed``: indices of nodes the file left without a name (:class:`partsim.sim.facts.SessionFacts`).
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
        for scope in _graphs_bottom_up(model, state, t.provider):
            r = nhwc_layout(model, t.provider, t, state, lambda name: model.value(name).rank, ort_default_order,
                            name_counter, scope, unnamed)
            if not (r.converted or r.transposes or r.inserted or r.removed):
                continue
            results.append(r)
            refusals += _refused_in_nhwc(model, r, t, rules)
    return tuple(results), refusals


def _graphs_bottom_up(model, assigned, provider):
    """The graphs ORT's partitioner transforms for ``provider``: each graph where the provider claimed a node
    (``GetCapabilityForEP`` returns before the layout transformation when it claimed none, graph_partitioner.cc;
    measured for the main graph on onnxruntime-qnn 2.7.0: a graph QNN takes nothing of keeps its Transposes where
    Level 1 left them, tests/gen/test_qnn_layout_cpu.py), subgraphs before the graph holding them
    (``PartitionOnnxFormatModelImpl`` recurses into subgraphs first), the main graph last."""
    depth = {}
    for n in model.nodes:  # a body node's graph lies one deeper than the graph of the node holding it
        if n.scope and n.scope not in depth:
            depth[n.scope] = depth.get(model.nodes[n.parent].scope, 0) + 1
    scopes = {model.nodes[i].scope for i, p in enumerate(assigned) if p == provider}
    return sorted(scopes - {""}, key=lambda s: (-depth[s], s)) + [""] * ("" in scopes)


def _refused_in_nhwc(model, r, table, rules):
    """``[(failure sentence, node indices)]`` for converted nodes the provider refuses in NHWC form."""
    bad = [i for i in r.converted if getattr(rules.get(i), "layout_refusal", False)
           or refused_after_layout(model, model.nodes[i], table)]  # sim/layout_checks.py
    if not bad:
        return []
    i = bad[0]
    new = r.converted[i][0]
    why = refused_after_layout(model, model.nodes[i], table)
    return [(f"Node '{new}' OpType:{model.nodes[i].op_type} with domain:{NHWC_DOMAIN} was inserted "
             f"using the NHWC format as requested by {table.provider}, but was not selected by that EP "
             f"(ORT refuses the session)" + (f": {why}" if why else ""), tuple(bad))]

NHWC_DOMAIN = "com.ms.internal.nhwc"

# onnx_transpose_optimization::GetLayoutSensitiveOps + the ORT-specific ones of GetORTLayoutSensitiveOps
LAYOUT_SENSITIVE_OPS = frozenset({
    "AveragePool", "BatchNormalization", "Conv", "ConvInteger", "ConvTranspose", "DepthToSpace",
    "GlobalAveragePool", "GlobalLpPool", "GlobalMaxPool", "GridSample", "InstanceNormalization", "LpPool",
    "LRN", "MaxPool", "MaxRoiPool", "MaxUnpool", "QLinearConv", "RoiAlign", "SpaceToDepth",
    "FusedConv", "QLinearAveragePool", "QLinearGlobalAveragePool", "Resize",
})

@dataclass(frozen=True)
class LayoutResult:
    """What the layout transformation did for one provider.

    ``converted``: model node index -> (new name, NHWC domain).  ``transposes``: the surviving
    inserted Transposes as ``(name, provider, input tensor)`` in graph order.  ``inserted``: the other
    nodes the transpose optimizer added (``Gather`` after a ``Shape``, ``Unsqueeze``, Q/DQ, ...) as
    ``(name, op type, provider, input tensor)``.  ``removed``: model node indices the optimizer took
    out (cancelled or merged Transposes, Reshapes that became Transposes).  ``refused``: model node
    indices converted to NHWC that the provider's table refuses after conversion.
    """

    provider: str
    converted: dict
    transposes: tuple
    refused: tuple
    inserted: tuple = ()
    removed: tuple = ()
    touched: tuple = ()  # model node indices whose inputs or outputs the optimizer rewired
    # with the table's offload_graph_io_quantization: model node indices that quantize a graph input or
    # dequantize to a graph output in the graph as the optimizer left it (ORT's second GetCapability sees that)
    graph_io: tuple = ()
    scope: str = ""  # the graph transformed ("": the main graph)
    # the graph as the optimizer left it, in ORT's order: (model index or None for a node it added, op type,
    # inputs, outputs, provider of an added node); an NHWC copy carries its original's index
    graph: tuple = ()
    # the Transposes it added that go to the CPU, as (name, output, perm), and (tensor, dtype, shape) of every tensor of
    # ``graph``: ORT's Level 2/3 sees that graph's CPU nodes (runtime/layout_region.py)
    cpu_transposes: tuple = ()
    tensor_types: tuple = ()
    # (model index, ((attribute, value), ...)) of the nodes whose attributes the optimizer changed (a pushed
    # Reduce's axes, a merged Transpose's perm), the changed attributes only
    changed_attrs: tuple = ()


def graph_for_memcpy(model, a, members, result, on_device, table):
    """The nodes of one graph as ORT's MemcpyTransformer sees them, after the layout transformation of the
    device provider (``result``, or ``None``: the graph as written): ``(inputs, outputs, on the device,
    host_inputs, host_outputs)`` each.  A node the optimizer added (the Q/DQ pair it puts after a pushed
    Transpose: a QuantizeLinear on the CPU between two WebGPU nodes) has the ports of the table's rule."""
    if result is None:
        for i in members:
            rule = a.rules.get(i) if on_device[i] else None
            n = model.nodes[i]
            yield n.inputs, n.outputs, on_device[i], *_ports(rule)
        return
    for orig, op, ins, outs, ep in result.graph:
        dev = on_device[orig] if orig is not None else ep == table.provider
        if orig is not None:
            rule = a.rules.get(orig) if dev else None
        else:
            rule = next(iter(table.rules_for("", op)), None) if dev else None
        yield ins, outs, dev, *_ports(rule)


def _ports(rule):
    return (rule.host_inputs, rule.host_outputs) if rule is not None else ((), ())


# ops whose output 0 has input 0's shape: a tensor the optimizer made on one side of one (its shape not tracked)
# has the other side's (QNN took the QuantizeLinear it puts after a pushed Transpose: real QNN 2.7.0 sessions,
# q_tiny_transformer.dynamo.qop)
_SAME_SHAPE = frozenset(("QuantizeLinear", "DequantizeLinear"))


def _static(shape):
    return shape is not None and all(isinstance(d, int) and d >= 0 for d in shape)


def build_graph(model, assigned, name_counter=0, scope="", unnamed=()):
    """The graph ``scope`` (``""``: the main graph; else a subgraph, ORT's layout transformation runs on each
    graph the partitioner visits) as an :class:`~partsim.sim.transpose_opt.OptGraph` (node ids = model indices,
    the other graphs' nodes dead); ``name_counter``: where ORT's name counter of the main graph stands
    (:class:`partsim.sim.facts.SessionFacts`; a subgraph's ``Graph`` counts from 0, graph/graph.cc); the nodes
    ``unnamed`` keep ORT's empty name, which is taken (ORT converted an unnamed MaxPool to ``_token_2``)."""
    g = OptGraph(opset=model.opsets.get("", 0))
    inputs = set(model.graph_inputs)
    for name, v in model.values.items():
        g.shapes[name] = v.shape
        if v.dtype is not None:
            g.dtypes[name] = v.dtype
        if v.is_constant and name not in inputs:
            g.consts.add(name)
    g.data.update(model.int_consts)
    g.graph_outputs = set(model.graph_outputs) if not scope else set(model.scope_outputs.get(scope, ()))
    g.implicit = {t for n in model.nodes if n.scope == scope for t in n.implicit_inputs}
    if scope:  # a subgraph's own tensors and node names
        mine = [n for n in model.nodes if n.scope == scope]
        g.names = NameGenerator({t for n in mine for t in n.inputs + n.outputs if t}, (n.name for n in mine))
    else:
        g.names = NameGenerator(model.values, (n.name for n in model.nodes))
    for n in model.nodes:
        g.next_id = n.index
        if n.scope != scope:
            g.add(n.name, n.op_type, n.domain, (), (), {}, None, n.index, n.since_version)
            g.nodes[n.index].alive = False
            continue
        g.add(n.name, n.op_type, n.domain, n.inputs, n.outputs, n.attrs, assigned[n.index], n.index,
              n.since_version)
    g.next_id = len(model.nodes)
    g.names.counter = 0 if scope else name_counter
    for i in unnamed:
        if model.nodes[i].scope == scope:
            g.nodes[i].name = ""
            g.names.nodes.add("")  # and as a tensor name: ORT's TransposeOutput names the node's new output
            g.names.tensors.add("")  # GenerateNodeArgName("") = "_token_<k>", the copy the next <k>
    return g


def nhwc_layout(model, provider, table, assigned, rank_of, order_of, name_counter=0, scope="", unnamed=()):
    """Run the layout transformation for ``provider`` over the main graph (or the subgraph ``scope``).

    Parameters
    ----------
    model : Model
    provider : str
    table : RuleTable
        The provider's table (``layout_extra_ops``; an op rule makes it take the nodes ORT adds).
    assigned : sequence
        Per model node: its provider after the first GetCapability (None: unassigned).
    rank_of : callable
        Tensor name -> rank or None.
    order_of : callable
        ``order_of(members, producers)`` -> ORT's default topological order of node ids, where
        ``producers(i)`` gives the producer ids of node ``i``.
    """
    sensitive = (LAYOUT_SENSITIVE_OPS | set(table.option("layout_extra_ops", ()) or ())) - set(
        table.option("layout_keep_ops", ()) or ())
    g = build_graph(model, assigned, name_counter, scope, unnamed)
    main = [n.index for n in model.nodes if n.scope == scope]

    def producers_of(i):  # an If/Loop/Scan's implicit inputs are edges too (graph.cc BuildConnections)
        implicit = model.nodes[i].implicit_inputs if i < len(model.nodes) else ()
        return sorted({p for t in (*g.nodes[i].inputs, *implicit) if (p := g.prod(t)) is not None})

    converted = _wrap_sensitive(g, model, provider, sensitive, order_of(main, producers_of), rank_of)

    # Optimize runs whether or not a node was converted (layout_transformation.cc)
    optimize(g, provider)

    max_rank = table.option("max_tensor_rank")
    static_only = table.option("layout_inserted_static_only", True)  # WebGPU's measured table: false
    io_quant = (_graph_io_quantization(g, model.graph_inputs) if table.option("offload_graph_io_quantization")
                and not scope else set())

    def takes(op, i):
        nd = g.nodes[i]
        if i in io_quant:  # a Q/DQ the optimizer moved to a graph input or output: left to the CPU
            return CPU
        ends = [g.shape(t) for t in nd.inputs[:1] + nd.outputs[:1] if t]
        if op in _SAME_SHAPE and any(_static(s) for s in ends):
            ends = [s for s in ends if s is not None]  # input 0 and output 0 have one shape (ONNX's Q/DQ schemas)
        shapes_ok = not static_only or all(_static(s) for s in ends)
        # a tensor of too high a rank (a Transpose pushed below a Reshape to rank 6): refused as any node
        rank_ok = not max_rank or all(len(g.shape(t)) <= max_rank for t in nd.inputs[:1] + nd.outputs[:1]
                                      if t and g.shape(t) is not None)
        return provider if table.rules_for("", op) and shapes_ok and rank_ok and _dtype_taken(table, op, g, nd) else CPU

    kept, others, final, on_cpu = [], [], [], []
    for i in order_of([i for i, nd in g.nodes.items() if nd.alive], producers_of):
        nd = g.nodes[i]
        ep = takes(nd.op, i) if nd.orig is None else None
        final.append((nd.orig, nd.op, tuple(nd.inputs), tuple(nd.outputs), ep))
        if nd.orig is not None:
            continue
        if nd.op == "Transpose":
            kept.append((nd.name, ep, nd.inputs[0]))
            if ep == CPU and nd.attrs.get("perm") is not None:
                on_cpu.append((nd.name, nd.outputs[0], tuple(nd.attrs["perm"])))
        else:
            others.append((nd.name, nd.op, ep, nd.inputs[0] if nd.inputs else ""))
    alive_orig = {nd.orig for nd in g.nodes.values() if nd.alive and nd.orig is not None}
    removed = tuple(i for i in main if i not in alive_orig and i not in converted)
    touched = tuple(i for i in main if i not in converted and g.nodes[i].alive
                    and (tuple(g.nodes[i].inputs) != tuple(model.nodes[i].inputs)
                         or tuple(g.nodes[i].outputs) != tuple(model.nodes[i].outputs)))
    graph_io = tuple(sorted(g.nodes[i].orig for i in io_quant if g.nodes[i].orig is not None))
    return LayoutResult(provider, converted, tuple(kept), (), tuple(others), removed, touched, graph_io, scope,
                        tuple(final), tuple(on_cpu), _tensor_types(g, final), _changed_attrs(g, model, main))


def _changed_attrs(g, model, main):
    """``((model index, ((name, value), ...)), ...)``: the attributes the optimizer changed on the nodes it kept."""
    def plain(v):  # a number, a string or a list of numbers, as a hashable value
        if isinstance(v, (list, tuple)) and all(isinstance(x, (int, float)) for x in v):
            return tuple(v)
        return v if isinstance(v, (int, float, str)) else None

    out = []
    for i in main:
        nd = g.nodes[i]
        if nd.alive and nd.orig == i and nd.attrs != model.nodes[i].attrs:
            old = model.nodes[i].attrs
            changed = tuple((k, plain(v)) for k, v in sorted(nd.attrs.items())
                            if plain(v) is not None and plain(old.get(k)) != plain(v))
            if changed:
                out.append((i, changed))
    return tuple(out)


def _tensor_types(g, final):
    """``((tensor, dtype, shape), ...)`` of every tensor the nodes of ``final`` read or write, as ``g`` has them."""
    names = dict.fromkeys(t for entry in final for t in entry[2] + entry[3] if t)
    return tuple((t, g.dtypes.get(t), g.shape(t)) for t in names)


def _wrap_sensitive(g, model, provider, sensitive, order, rank_of):
    """Step 1 of the module docstring on ``g``, nodes visited in ``order`` (ORT's default topological order of
    the main graph, taken before any edit): the converted nodes as model index -> (new name, NHWC domain)."""
    converted = {}
    for i in order:  # TransformLayoutForEP: Nodes() taken before any edit
        nd = g.nodes[i]
        n = model.nodes[i]
        if not nd.alive or nd.ep != provider or n.op_type not in sensitive or n.domain not in ("", "com.microsoft"):
            continue
        op = "Conv" if n.op_type == "FusedConv" else n.op_type
        if n.attrs.get("channels_last", 0) != 1:
            rank = (rank_of(n.inputs[0]) if n.inputs else None) or _rank_from_node(model, n, rank_of)
            if not rank:
                continue
            to_last = channel_first_to_last(rank)
            back = channel_last_to_first(rank)
            _transpose_input(g, i, 0, to_last, back)
            if op == "Resize":  # scales/sizes of 4 constant values are permuted too (roi is not)
                for k in range(2, len(n.inputs)):
                    t = g.nodes[i].inputs[k]
                    if t and g.is_const(t) and g.const_numel(t) == 4:
                        _transpose_input(g, i, k, to_last, back)
            _transpose_output(g, i, 0, back, to_last)
        # SwapNodeOpTypeAndDomain: CopyNode, the outputs move to the copy, the old node goes
        copy = g.copy_node(i, op, NHWC_DOMAIN)
        for k, t in enumerate(list(g.nodes[i].outputs)):
            if t:
                g.move_output(i, k, copy, k)
        g.remove(i)
        converted[i] = (g.nodes[copy].name, NHWC_DOMAIN)
    return converted


def _rank_from_node(model, n, rank_of):
    """Input 0's rank as the node itself fixes it where partsim's shape inference lost it (ORT's own, which
    ``TransformLayoutForEP`` reads, knew it: ppocrv4_rec's Reshape to a computed 3-value shape): a Conv's
    input has its weight's rank, a pooling node's is its kernel's plus two (ONNX Conv/Pool schemas)."""
    if n.op_type in ("Conv", "ConvTranspose", "FusedConv") and len(n.inputs) > 1 and n.inputs[1]:
        return rank_of(n.inputs[1])
    kernel = n.attrs.get("kernel_shape")
    if n.op_type in ("MaxPool", "AveragePool", "LpPool") and kernel:
        return len(kernel) + 2
    return None


def _dtype_taken(table, op, g, nd):
    """A kernel EP's table with measured dtypes (WebGPU) takes an inserted node only for a dtype of its input 0
    that some rule of the op allows (ORT's kernel lookup: the Gather after a Shape reads int64)."""
    t = nd.inputs[0] if nd.inputs else None
    dtype = g.dtypes.get(t) if t else None
    if dtype is None and t and g.prod(t) is not None and g.nodes[g.prod(t)].op in ("Shape", "Size"):
        dtype = "int64"  # the optimizer's new output of a Shape it rewired
    if dtype is None or table.kind != "kernel":
        return True
    for rule in table.rules_for("", op):
        allowed = (rule.types.get("i0") or rule.types.get("T")) if rule.types else None
        if allowed is None or dtype in allowed:
            return True
    return False


def _graph_io_quantization(g, graph_inputs):
    """Ids of the live nodes of ``g`` that quantize a graph input or dequantize to a graph output (the QNN
    EP's ``offload_graph_io_quantization``, ``qnn_execution_provider.cc``), after the transpose optimizer:
    it can move a graph-output DequantizeLinear behind the output Transpose (its QDQ fix-up then adds a
    new Q/DQ pair after it), so the original one no longer writes the output and the new one does."""
    inputs = set(graph_inputs)
    out = set()
    for i, nd in g.nodes.items():
        if not nd.alive or nd.domain not in ("", "com.microsoft"):
            continue
        if nd.op == "QuantizeLinear" and nd.inputs and nd.inputs[0] in inputs:
            out.add(i)
        elif nd.op == "DequantizeLinear" and nd.outputs and nd.outputs[0] in g.graph_outputs:
            out.add(i)
    return out
