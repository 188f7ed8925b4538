"""EP-aware function inlining, as ORT's graph partitioner does it before partitioning.

``GraphPartitioner::InlineFunctionsAOT`` (``onnxruntime/core/framework/graph_partitioner.cc``)
asks every provider for its capabilities; a node whose op is an ONNX function (a schema with
a function body, or a model-local function) that no provider claims is replaced by its body.
``Graph::InlineFunction`` / ``function_utils.cc`` name what they add: one prefix per inlined
node, ``GenerateNodeName("_inlfunc_" + op_type)`` (``_inlfunc_HardSwish``,
``_inlfunc_HardSwish_token_0`` ...), the body's internal tensors ``<prefix>_<name>``, named
body nodes ``<prefix>_<name>``, unnamed ones stay unnamed; the function's inputs and outputs
become the node's own tensors.  Body nodes that are functions again are inlined in turn.

Pure: works on an in-memory ``onnx.ModelProto`` (main graph), reads no file.
"""

from .names import NameGenerator

__all__ = ["function_body", "inline_functions", "is_function_node"]


def _opset_of(model, domain):
    for o in model.opset_import:
        if (o.domain or "") == (domain or ""):
            return o.version
    return None


def function_body(model, node, _cache=None):
    """``(input names, output names, nodes, attribute defaults)`` of ``node``'s function body,
    or ``None`` when its op is not a function (or only a context-dependent one)."""
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
    return found


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


def inline_functions(model, keep, names=None):
    """Inline, in place, every function node of ``model``'s main graph for which ``keep(node)``
    is false (no provider claims it).  Returns ``{new node position: op_type inlined}``.

    Parameters
    ----------
    model : onnx.ModelProto
    keep : callable
        ``keep(node_proto) -> bool``: a provider claims the node, so it stays whole.
    names : NameGenerator, optional
        The graph's generator (shared with later steps); made from the graph's tensors if absent.
    """
    graph = model.graph
    if names is None:
        names = NameGenerator(_tensor_names(graph))
    cache = {}
    out_nodes, inlined = [], {}
    work = list(graph.node)
    changed = False
    while work:
        node = work.pop(0)
        body = function_body(model, node, cache) if not keep(node) else None
        if body is None:
            out_nodes.append(node)
            continue
        changed = True
        expanded = _expand(node, body, names)
        # body nodes that are functions again go through the same test
        work[0:0] = expanded
        for n in expanded:
            inlined[id(n)] = node.op_type
    if not changed:
        return {}
    del graph.node[:]
    graph.node.extend(out_nodes)
    return {k: inlined[id(n)] for k, n in enumerate(out_nodes) if id(n) in inlined}


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


def _tensor_names(graph):
    out = set()
    for vi in list(graph.input) + list(graph.output) + list(graph.value_info):
        out.add(vi.name)
    for t in graph.initializer:
        out.add(t.name)
    for n in graph.node:
        out.update(x for x in n.input if x)
        out.update(x for x in n.output if x)
    return out
