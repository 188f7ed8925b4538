"""EP-aware function inlining, as ORT's graph partitioner does it before partitioning.

``GraphPartitioner::InlineFunctionsAOT`` (``onnxruntime/core/framework/graph_partitioner.cc``)
asks every provider for its capabilities; a node whose op is an ONNX function (a schema with
a function body, or a model-local function) that no provider claims is replaced by its body.
``Graph::InlineFunction`` / ``function_utils.cc`` name what they add: one prefix per inlined
node, ``GenerateNodeName("_inlfunc_" + op_type)`` (``_inlfunc_HardSwish``,
``_inlfunc_HardSwish_token_0`` ...), the body's internal tensors ``<prefix>_<name>``, named
body nodes ``<prefix>_<name>``, unnamed ones stay unnamed; the function's inputs and outputs
become the node's own tensors.  Body nodes that are functions again are inlined in turn.

ORT does the same inside If/Loop/Scan bodies (:func:`inline_in_bodies`).

Pure: works on an in-memory ``onnx.ModelProto``, reads no file.
"""

from functools import lru_cache

from .names import NameGenerator, graph_tensor_names, is_constant_node

__all__ = ["function_body", "inline_functions", "inline_in_bodies", "is_function_node", "is_context_dependent",
           "value_types"]


def _opset_of(model, domain):
    for o in model.opset_import:
        if (o.domain or "") == (domain or ""):
            return o.version
    return None


def function_body(model, node, _cache=None, types=None):
    """``(input names, output names, nodes, attribute defaults)`` of ``node``'s function body,
    or ``None`` when its op is not a function.  A context-dependent function (SoftmaxCrossEntropyLoss,
    CastLike, Bernoulli ...: ONNX builds the body from the node's attributes and input types) needs
    ``types`` (tensor name -> ``onnx.TypeProto``), else it counts as no function."""
    import onnx

    domain = node.domain or ""
    for f in model.functions:
        if f.name == node.op_type and (f.domain or "") == domain:
            defaults = {a.name: a for a in f.attribute_proto}
            return list(f.input), list(f.output), list(f.node), defaults
    if domain not in ("", "ai.onnx"):
        return None
    version = _opset_of(model, "")
    if version is None:
        return None
    key = (node.op_type, version)
    if _cache is not None and key in _cache:
        found = _cache[key]
    else:
        found = None
        try:
            schema = onnx.defs.get_schema(node.op_type, version, "")
        except Exception:  # onnx raises SchemaError for an unknown op
            schema = None
        if schema is not None and schema.has_function:
            body = schema.get_function_with_opset_version(version) if hasattr(
                schema, "get_function_with_opset_version") else None
            fp = onnx.FunctionProto()
            if body:
                fp.ParseFromString(body)
            else:
                fp.node.extend(schema.function_body.node)
                fp.input.extend(schema.function_body.input)
                fp.output.extend(schema.function_body.output)
            defaults = {}
            for name, attr in schema.attributes.items():
                if attr.default_value is not None and attr.default_value.type != 0:
                    defaults[name] = attr.default_value
            found = (list(fp.input), list(fp.output), list(fp.node), defaults)
        if _cache is not None:
            _cache[key] = found
    if found is None and types is not None:
        return _context_dependent_body(node, version, types)
    return found


def _context_dependent_body(node, version, types):
    """The body ONNX builds for this node (``OpSchema::BuildContextDependentFunction``, the call
    ORT's ``Node::CanBeInlined`` / ``Graph::InlineFunction`` make), or ``None``."""
    import onnx

    try:
        schema = onnx.defs.get_schema(node.op_type, version, "")
    except Exception:  # SchemaError: an op ONNX does not know
        return None
    if not schema.has_context_dependent_function:
        return None
    known = [v for v in schema.context_dependent_function_opset_versions if v <= version]
    if not known:
        return None
    ins = []
    for t in node.input:
        tp = types.get(t) if t else onnx.TypeProto()
        if tp is None:
            return None  # an input type ONNX's inference left unknown: ORT would know it, partsim does not
        ins.append(tp.SerializeToString())
    try:
        raw = schema.get_context_dependent_function_with_opset_version(max(known), node.SerializeToString(), ins)
    except Exception:  # the builder rejects this node (a type it does not handle)
        return None
    if not raw:
        return None
    fp = onnx.FunctionProto()
    fp.ParseFromString(raw)
    defaults = {}
    for name, attr in schema.attributes.items():
        if attr.default_value is not None and attr.default_value.type != 0:
            defaults[name] = attr.default_value
    return list(fp.input), list(fp.output), list(fp.node), defaults


def is_function_node(model, node, _cache=None):
    return function_body(model, node, _cache) is not None


def _bind_attributes(body_node, given, defaults):
    """A copy of ``body_node`` with attribute references (``ref_attr_name``) resolved."""
    import onnx

    out = onnx.NodeProto()
    out.CopyFrom(body_node)
    del out.attribute[:]
    for a in body_node.attribute:
        if a.ref_attr_name:
            src = given.get(a.ref_attr_name) or defaults.get(a.ref_attr_name)
            if src is None:
                continue
            b = out.attribute.add()
            b.CopyFrom(src)
            b.name = a.name
        else:
            out.attribute.add().CopyFrom(a)
    return out


def inline_functions(model, keep, names=None, rounds=None, indices=None, path=()):
    """Inline, in place, every function node of ``model``'s main graph (or of the body at ``path``) for
    which ``keep(node)`` is false (no provider claims it).  Returns ``{new node position: op_type inlined}``.

    Parameters
    ----------
    model : onnx.ModelProto
    keep : callable
        ``keep(node_proto) -> bool``: a provider claims the node, so it stays whole.
    names : NameGenerator, optional
        The graph's generator (shared with later steps); made from the graph's tensors if absent.
    rounds : dict, optional
        Filled with ``{new node position: partitioning round}`` for the nodes an ONNX schema
        function's body made.  ORT inlines those only after a whole partitioning round left the
        function node without a provider (``graph_partitioner.cc`` PartitionOnnxFormatModel: every
        EP, then ``InlineNodes``, then again), so a body's nodes are partitioned in the next round,
        apart from the nodes partitioned before; a body inside a body one round later still.  The
        bodies of model-local functions are inlined before partitioning (``InlineFunctionsAOT``):
        round of the node they replace.
    indices : dict, optional
        Filled with ``{new node position: (round, k)}`` for the nodes a body made: the round its
        body was inlined in (as ``rounds``; 0 = before partitioning) and ``k``, the order the
        nodes were made in.  ORT adds them to the graph one by one after the nodes it loaded
        (``graph.cc`` ``AddNode``: a node's index is the count of nodes made before it; a body's
        Constant nodes become initializers and get none), and its profiler calls an unnamed one
        ``<op>_<index>`` (``sequential_executor.cc``); see :func:`ort_node_indices`.
    path : tuple, optional
        ``((node position, body number), ...)`` from the main graph down to an If/Loop/Scan body
        (:func:`inline_in_bodies`): that body is inlined instead, with its own name generator.
    """
    graph = _graph_at(model, path)
    made = {}  # id(body node) -> the order it was made in
    if names is None:
        names = NameGenerator.for_graph(graph)
    cache = {}
    inlined = {}
    depth = {}
    changed = False
    current = list(graph.node)
    for _ in range(4):  # a context-dependent body inside a body needs the types of the first one's tensors
        types = None
        if any(is_context_dependent(model, n) and not keep(n) for n in current):
            types = value_types(_with_nodes(model, current, path), bodies=bool(path))
        out_nodes, work, grew = [], list(current), False
        while work:
            node = work.pop(0)
            body = function_body(model, node, cache, types) if not keep(node) else None
            if body is None:
                out_nodes.append(node)
                continue
            changed = grew = True
            expanded = _expand(node, body, names)
            local = any(f.name == node.op_type and (f.domain or "") == (node.domain or "") for f in model.functions)
            # body nodes that are functions again go through the same test
            work[0:0] = expanded
            for n in expanded:
                inlined[id(n)] = inlined.get(id(node), node.op_type)
                depth[id(n)] = depth.get(id(node), 0) + (0 if local else 1)
                if not is_constant_node(n):
                    made[id(n)] = len(made)
        current = out_nodes
        if not grew or not any(is_context_dependent(model, n) and not keep(n) for n in current):
            break
    if not changed:
        return {}
    del graph.node[:]
    graph.node.extend(current)
    if rounds is not None:
        rounds.update({k: depth[id(n)] for k, n in enumerate(current) if depth.get(id(n))})
    if indices is not None:
        indices.update({k: (depth.get(id(n), 0), made[id(n)]) for k, n in enumerate(current) if id(n) in made})
    return {k: inlined[id(n)] for k, n in enumerate(current) if id(n) in inlined}


def ort_node_indices(made, loaded, added_between):
    """ORT's node index of each node an inlined body made, from ``made`` (``{key: (round, k)}``,
    what :func:`inline_functions` gives as ``indices``): after the ``loaded`` nodes of the graph
    as read come the bodies of model-local functions (inlined ahead of time), then the
    ``added_between`` nodes ORT's rewrites made before partitioning (EnsureUniqueDQForNodeUnit's
    copies), then the bodies of schema functions, round by round, each in the order made.
    Measured on onnxruntime 1.31.1 (profiler names of unnamed body nodes).

    >>> ort_node_indices({"a": (1, 0), "b": (0, 1), "c": (1, 2)}, loaded=10, added_between=1)
    {'b': 10, 'a': 12, 'c': 13}
    """
    out = {}
    for rank, (key, (round_, _)) in enumerate(sorted(made.items(), key=lambda kv: kv[1])):
        out[key] = loaded + rank + (added_between if round_ else 0)
    return out


def _with_nodes(model, nodes, path=()):
    """A copy of ``model`` whose main graph (the body at ``path``) lists ``nodes`` (for type inference mid-way)."""
    import onnx

    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    graph = _graph_at(copy, path)
    del graph.node[:]
    graph.node.extend(nodes)
    return copy


def _graph_at(model, path):
    """The graph of ``model`` at ``path`` (``((node position, body number), ...)``; ``()``: the main graph)."""
    from ..io.subgraphs import node_graphs

    graph = model.graph
    for position, body in path:
        graph = node_graphs(graph.node[position])[body]
    return graph


def inline_in_bodies(model, keep, held_round=None):
    """Inline, in place, the function nodes ``keep`` rejects inside every If/Loop/Scan body of ``model``'s
    main graph, a body's own bodies first.

    ORT inlines function nodes of subgraphs as it does those of the main graph: ``InlineNodes`` and
    ``InlineFunctionsAOTImpl`` (``onnxruntime/core/framework/graph_partitioner.cc``) recurse into every
    node's subgraphs first ("bottom up"), and ``Graph::InlineFunction`` (``onnxruntime/core/graph/graph.cc``)
    runs on the subgraph's own ``Graph``, so the prefix ``_inlfunc_<op>`` and its ``_token_<k>`` come from
    that body's name generator.  A schema function's body is inlined after a partitioning round (the
    ``InlineNodes`` loop, round + 1 of the node holding the body), a model-local one's ahead of time.

    Parameters
    ----------
    model : onnx.ModelProto
    keep : callable
        ``keep(node_proto) -> bool``: a provider claims the node, so it stays whole.
    held_round : dict, optional
        ``{main-graph node position: round}`` of the nodes an earlier inlining made (their bodies' nodes
        are inlined a round later still).

    Returns
    -------
    (dict, list, list)
        ``{(body scope, outputs of a node the body made): (op inlined, round)}`` (the scope as partsim's IR
        names it, ``<holder>/<attribute>``: :func:`partsim.io.subgraphs.body_outputs`), the function nodes inlined, as
        written (the NodeProtos ORT checks at load before it inlines anything), and the named
        function nodes kept whole.
    """
    from ..io.subgraphs import node_bodies

    made, replaced, kept = {}, [], []

    def walk(graph, path, base, scope):
        for k, n in enumerate(graph.node):
            for j, (attr, body) in enumerate(node_bodies(n)):
                walk(body, path + ((k, j),), base if path else (held_round or {}).get(k, 0),
                     f"{n.name}/{attr}" if n.name else None)
        if not path:
            return
        functions = [n for n in graph.node if is_context_dependent(model, n) or function_body(model, n) is not None]
        written = [n for n in functions if not keep(n)]
        kept.extend(n for n in functions if n.name and keep(n))
        if not written:
            return
        copies = [_copy(n) for n in written]
        rounds = {}
        for k, op in inline_functions(model, keep, NameGenerator.for_graph(graph), rounds, None, path).items():
            if scope is not None:  # the IR's scope of the body; an unnamed holder's is not known here
                made[(scope, tuple(_graph_at(model, path).node[k].output))] = (op, base + rounds.get(k, 0))
        replaced.extend(copies)

    walk(model.graph, (), 0, None)
    return made, replaced, kept


def _copy(node):
    import onnx

    out = onnx.NodeProto()
    out.CopyFrom(node)
    return out


def _expand(node, body, names):
    inputs, outputs, body_nodes, defaults = body
    prefix = names.node_name("_inlfunc_" + node.op_type)
    rename = {}
    for k, formal in enumerate(inputs):
        rename[formal] = node.input[k] if k < len(node.input) else ""
    for k, formal in enumerate(outputs):
        rename[formal] = node.output[k] if k < len(node.output) else ""
    given = {a.name: a for a in node.attribute}
    result = []
    for bn in body_nodes:
        n = _bind_attributes(bn, given, defaults)
        for seq in (n.input, n.output):
            for k, t in enumerate(seq):
                if not t:
                    continue
                if t not in rename:
                    rename[t] = names.arg_name(f"{prefix}_{t}")
                seq[k] = rename[t]
        if n.name:
            n.name = f"{prefix}_{n.name}"
        result.append(n)
    return result


def is_context_dependent(model, node):
    """Whether ``node``'s op is an ONNX function whose body depends on the node (its types)."""
    if (node.domain or "") not in ("", "ai.onnx"):
        return False
    version = _opset_of(model, "")
    return version is not None and _has_context_dependent_body(node.op_type, version)


@lru_cache(maxsize=None)
def _has_context_dependent_body(op_type, version):
    import onnx

    try:
        return onnx.defs.get_schema(op_type, version, "").has_context_dependent_function
    except Exception:  # SchemaError: not an ONNX op
        return False


def value_types(model, bodies=False):
    """Tensor name -> ``onnx.TypeProto`` of the main graph (``bodies``: and of every If/Loop/Scan body, the main
    graph's names first), by ONNX's shape inference on a copy (the model itself is not changed); what a
    context-dependent function body is built from."""
    import onnx

    from ..io.subgraphs import all_graphs

    try:
        inferred = onnx.shape_inference.infer_shapes(model, check_type=False, strict_mode=False)
    except Exception:  # a model ONNX cannot infer: only the declared types
        inferred = model
    out = {}
    for g in (all_graphs(inferred.graph) if bodies else (inferred.graph,)):
        for vi in list(g.input) + list(g.value_info) + list(g.output):
            if vi.type.HasField("tensor_type") and vi.type.tensor_type.elem_type:
                out.setdefault(vi.name, vi.type)
        for t in g.initializer:
            out[t.name] = onnx.helper.make_tensor_type_proto(t.data_type, list(t.dims))
    return out


_tensor_names = graph_tensor_names
