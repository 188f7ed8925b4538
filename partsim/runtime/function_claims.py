"""Which providers claim a function node, the check ORT's inlining makes through each provider's
GetCapability before it inlines the node's body (``graph_partitioner.cc`` ``InlineFunctionsAOT``,
``PartitionOnnxFormatModel``): by op, domain and schema version; a context-dependent function's dtypes are
checked on the graph built (:func:`untyped_functions`).  The same test inside If/Loop/Scan bodies
(:func:`inline_bodies`): ORT's inlining recurses into them."""

__all__ = ["function_claims", "body_function_claims", "claimers", "inline_bodies", "untyped_functions"]

CPU = "CPUExecutionProvider"


def _covers(rule, since):
    v = rule.versions
    if v is None or since is None:
        return True
    start, end = v
    return since == start if end is None else start <= since <= end


def claimers(proto, node, tables, opset, cache):
    """Providers of ``tables`` whose table has a rule for ``node``'s op at its schema version."""
    import onnx

    key = (node.domain or "", node.op_type)
    if key not in cache:
        since = None
        if key[0] in ("", "ai.onnx") and opset is not None:
            try:
                since = onnx.defs.get_schema(node.op_type, opset, "").since_version
            except Exception:  # onnx.defs.SchemaError: not an ONNX op (a model-local function)
                since = None
        cache[key] = [t.provider for t in tables if any(_covers(r, since) for r in t.rules_for(*key))]
    return cache[key]


def function_claims(proto, tables, ops=None):
    """For each function node of ``proto``'s main graph: which of ``tables`` (RuleTables)
    claim it (:func:`claimers`).  ``ops``: per node ``(domain, op_type)``, when the caller read them
    already (:meth:`partsim.runtime.pipeline._Written.read_nodes`).

    Returns ``{node position: (op_type, [providers claiming it])}``.
    """
    from ..sim.inline import function_body, is_context_dependent

    cache, claims, out, plain = {}, {}, {}, set()
    opset = next((o.version for o in proto.opset_import if (o.domain or "") == ""), None)
    nodes = proto.graph.node
    for k, key in enumerate(ops if ops is not None else [(n.domain or "", n.op_type) for n in nodes]):
        if key in plain:
            continue
        n = nodes[k]
        # a context-dependent function (LayerNormalization, CastLike ...) is a function node; its
        # body, built from the node's input types, is only needed where it is inlined
        if not is_context_dependent(proto, n) and function_body(proto, n, cache) is None:
            plain.add(key)
            continue
        out[k] = (n.op_type, claimers(proto, n, tables, opset, claims))
    return out


def body_function_claims(proto, tables):
    """``[(NodeProto, [providers claiming it])]`` for the named function nodes inside ``proto``'s If/Loop/Scan
    bodies, nested ones too (:func:`claimers`): what a CPU-only session at a level above ``disable`` must keep
    whole where a requested provider claims the node, as ORT's inlining keeps it (``graph_partitioner.cc``
    ``InlineNodes`` / ``InlineFunctionsAOTImpl`` recurse into subgraphs and inline only what no provider
    claimed)."""
    from ..io.subgraphs import all_graphs
    from ..sim.inline import function_body, is_context_dependent

    opset = next((o.version for o in proto.opset_import if (o.domain or "") == ""), None)
    cache, claims, out = {}, {}, []
    for g in list(all_graphs(proto.graph))[1:]:
        for n in g.node:
            if n.name and (is_context_dependent(proto, n) or function_body(proto, n, cache) is not None):
                out.append((n, claimers(proto, n, tables, opset, claims)))
    return out


def inline_bodies(proto, tables, unclaimed, written, held_round=None):
    """ORT's inlining inside If/Loop/Scan bodies (:func:`partsim.sim.inline.inline_in_bodies`), with the test the
    main graph's function nodes get: a node is inlined when no provider of ``tables`` claims it, or when its name is
    in ``unclaimed`` (its provider refused it in an earlier round).  ``written``
    (:class:`partsim.runtime.pipeline._Written`) gets what the bodies made (origin, round), ORT's refusal at load of
    a node inlined, and the names of the nodes kept whole that the CPU does not claim (a later round may inline
    them); ``held_round``: the round of main-graph nodes an earlier inlining made."""
    from ..io.load import ORT_DEFAULT_ONNX_OPSET
    from ..sim.inline import inline_in_bodies, is_context_dependent
    from ..sim.refusals import proto_load_refusal

    opset = next((o.version for o in proto.opset_import if (o.domain or "") == ""), None)
    cache = {}

    def claimed(n):
        return claimers(proto, n, tables, opset, cache)

    made, replaced, kept = inline_in_bodies(proto, lambda n: n.name not in unclaimed and bool(claimed(n)), held_round)
    written.whole.update(n.name for n in kept if CPU not in claimed(n))
    written.typed.update(n.name for n in kept if is_context_dependent(proto, n))
    if replaced and not written.load_refusal:
        written.load_refusal = proto_load_refusal(proto, replaced, ORT_DEFAULT_ONNX_OPSET)
    for key, (op, round_) in made.items():
        written.inlined_outputs[key] = op
        if round_:
            written.round_outputs[key] = round_


def untyped_functions(prepared, resolution):
    """Names of the context-dependent function nodes kept whole (``prepared.typed_functions``: Attention,
    RMSNormalization, CastLike ...) that no table of ``resolution`` has a rule for in the node's dtypes.

    Each EP's GetCapability looks its kernels up with their type constraints (``kernel_registry.cc``
    ``VerifyKernelDef``), and ``Node::TryGetFunctionProto`` (``graph.cc``) builds a context-dependent body from the
    node itself, so ORT inlines such a node when no EP took it (``graph_partitioner.cc`` ``InlineNodes``, after the
    first round); :func:`claimers` asks for op and version only, so these nodes are found on the graph built, whose
    dtypes are known, and inlined in :func:`partsim.runtime.pipeline.prepare`'s next pass.  Real onnxruntime 1.31.1
    CPU sessions: bfloat16 and double Attention-23 and bfloat16 RMSNormalization-23 are inlined, bfloat16
    LayerNormalization-17 is not (its CPU kernel takes it).  A node with a fixed body keeps the op-and-version test:
    float16, bfloat16 and double Softsign-22 (a body written for opset 18) stay whole on such sessions."""
    if not prepared.typed_functions or prepared.failure:
        return set()
    from ..sim.match import accepts_dtypes

    m, out = prepared.model, set()
    for n in m.nodes:
        if n.name not in prepared.typed_functions:
            continue
        rules = [r for t in resolution.tables for r in t.rules_for(n.domain, n.op_type) if _covers(r, n.since_version)]
        if rules and not any(accepts_dtypes(r, n, m) for r in rules):
            out.add(n.name)
    return out
