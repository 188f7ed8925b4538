"""From an :class:`~partsim.sim.assign.Assignment` to the partitionSummary (docs/contract.md §4).

Counts fragments, partitions, transfers, feed transfers, Memcpy nodes and
conversion findings.  Pure: returns a JSON-ready dict with a stable order.
"""

from ..ir.graph import component_roots, formal_inputs
from ..ir.order import topological_order
from .assign import CPU
from .layout import graph_for_memcpy, handles_layout

__all__ = ["summarize", "memcpy_record", "SCHEMA_VERSION", "fragments_of", "LAYOUT_SENSITIVE_OPS"]

SCHEMA_VERSION = "1.0"

# ops whose meaning depends on NCHW vs NHWC (ORT's layout transformer rewrites these)
LAYOUT_SENSITIVE_OPS = frozenset({
    "Conv", "ConvTranspose", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool",
    "LpPool", "BatchNormalization", "InstanceNormalization", "LRN", "Resize", "DepthToSpace",
    "SpaceToDepth", "QLinearConv", "QLinearAveragePool", "QLinearGlobalAveragePool", "ConvInteger",
    "GridSample", "Upsample", "MaxUnpool", "RoiAlign",
})
_PRECISION_OF_DTYPE = {"float": "fp32", "float16": "fp16", "bfloat16": "bf16", "int8": "int8",
                       "uint8": "int8", "double": "fp64"}
_FLOATISH = frozenset({"float", "float16", "bfloat16"})


def fragments_of(model, provider):
    """Maximal weakly-connected same-provider node sets (docs/contract.md §1).

    Returns a list of node-index lists, ordered by their first node in topological
    order (members in topological order too).
    """
    n = len(model.nodes)
    in_edges = model.in_edges
    # weakly_connected_groups over every node with same=provider[p] == provider[c], without a call per edge
    root = component_roots(range(n), [(p, i) for i in range(n) for p, _ in in_edges(i) if provider[p] == provider[i]])
    groups = {}
    for i in topological_order(model):
        groups.setdefault(root[i], []).append(i)
    return list(groups.values())


def _boundary(model, members, graph_outputs):
    group_of = [-1] * len(model.nodes)
    for i in members:
        group_of[i] = 0
    return _boundaries(model, [members], graph_outputs, group_of)[0]


def _constant_names(model):
    """Names of initializers and Constant outputs (never a partition input), cached."""
    return model.derived("summary.constant_names", lambda: frozenset(
        t for t, v in model.values.items() if v.kind == "initializer" or v.kind == "constant"))


def _boundaries(model, groups, graph_outputs, group_of):
    """Per group: ``(inputs, outputs)``, the non-constant tensors entering it (explicit and
    implicit inputs) and the tensors leaving it (read by a node of another group, or a graph
    output), each once, in member order.  ``group_of``: per node index, its group (-1: none)."""
    producer, consumers = model.producer, model.consumers
    constants = _constant_names(model)
    nodes = model.nodes
    result = []
    for k, members in enumerate(groups):
        ins, outs = [], []
        seen_in, seen_out = set(), set()
        for i in members:
            node = nodes[i]
            for t in node.inputs + node.implicit_inputs if node.implicit_inputs else node.inputs:
                if not t or t in seen_in or t in constants:
                    continue
                p = producer.get(t)
                if p is not None and group_of[p] == k:
                    continue
                seen_in.add(t)
                ins.append(t)
            for t in node.outputs:
                if not t or t in seen_out:
                    continue
                leaves = t in graph_outputs
                if not leaves:
                    for c in consumers.get(t, ()):
                        if group_of[c] != k:
                            leaves = True
                            break
                if leaves:
                    seen_out.add(t)
                    outs.append(t)
        result.append((ins, outs))
    return result


def memcpy_record(a):
    """The summary's ``memcpy`` record of assignment ``a``: ``{fromHost, toHost, tensors}`` (:func:`_memcpy`);
    also what the final view counts (partsim.api), without summarizing the rest of that graph."""
    copies = _memcpy(a.model, a, a.resolution.tables)
    return {"fromHost": sum(1 for _, d in copies if d == "fromHost"),
            "toHost": sum(1 for _, d in copies if d == "toHost"),
            "tensors": sorted(({"tensor": t, "direction": d} for t, d in copies),
                              key=lambda x: (x["direction"], x["tensor"]))}


def _memcpy(model, a, tables):
    """Predict ORT's MemcpyFromHost / MemcpyToHost nodes: ``{(tensor, direction): True}``.

    Port of ``MemcpyTransformer`` (``onnxruntime/core/optimizer/transformer_memcpy.cc``,
    checked against onnxruntime main @735e69a).  Only the first provider of the session
    that is not CPU-based gets copies (the transformer stops after it), whether or not it
    took any node; nodes of a provider on the same device count as its own.  Each graph
    (main graph, every subgraph) is processed on its own, with explicit inputs only:

    * a device node's input at a port its kernel reads from host memory, and every input of
      any other node, is a *host input*; a device node's other inputs are *device inputs*;
    * a device node's output at a host-memory port, and every output of any other node, is
      a *host output*; a device node's other outputs are *device outputs*;
    * MemcpyFromHost for each host output that is also a device input, and for each input
      of the graph (and, in a subgraph, each outer-scope value of the parent node) that is
      both a device input and a host input;
    * MemcpyToHost for each device output that is also a host input.

    One copy per tensor and direction however many consumers.  Initializers are never
    copied by a node (a copy is made at session start); graph outputs are not consumers
    (they are fetched by the session); a graph input read only on the device is copied
    at feed time.
    """
    # providers on one device with each other (IsNodeCompatibleWithProvider compares the OrtDevice
    # type and vendor): the NVIDIA GPU EPs
    same_device = ({"CUDAExecutionProvider", "TensorrtExecutionProvider", "NvTensorRTRTXExecutionProvider"},)
    by_name = {t.provider: t for t in tables}
    device = next((t.provider for t in tables if not t.cpu_based), None)
    copies = {}
    if device is None:
        return copies
    group = next((g for g in same_device if device in g), {device})
    on_device = [p == device or (p in group and p in by_name and not by_name[p].cpu_based)
                 for p in a.provider]
    scopes = {}
    for n in model.nodes:
        scopes.setdefault(n.scope, []).append(n.index)
    # each graph as the device provider's layout transformation left it (sim/layout.py)
    layout = {r.scope: r for r in a.layout if r.provider == device and r.graph}
    for scope in sorted(scopes):
        members = scopes[scope]
        dev_in, host_in, dev_out, host_out = set(), set(), set(), set()
        for ins, outs, dev, host_ins, host_outs in graph_for_memcpy(model, a, members, layout.get(scope), on_device,
                                                                    by_name[device]):
            _by_memory(ins, dev, host_ins, dev_in, host_in)
            _by_memory(outs, dev, host_outs, dev_out, host_out)
        if scope:
            parent = model.nodes[members[0]].parent
            outer = set(model.nodes[parent].implicit_inputs) if parent is not None else set()
            inputs = formal_inputs(model, scope, members) | outer
        else:
            inputs = set(model.graph_inputs)
        for t in inputs:
            if t in dev_in and t in host_in:
                copies[(t, "fromHost")] = True
        for t in host_out & dev_in:
            copies[(t, "fromHost")] = True
        for t in dev_out & host_in:
            copies[(t, "toHost")] = True
    return copies


def _by_memory(tensors, on_device, host_ports, device, host):
    """Sort a node's port tensors into device- and host-memory sets (a device kernel's host ports are host)."""
    for k, t in enumerate(tensors):
        if t:
            (device if on_device and k not in host_ports else host).add(t)


def _conversions(model, a, table_of, transfers):
    out = []
    for t, src, dst in transfers:
        ta, tb = table_of[src], table_of[dst]
        v = model.value(t)
        pa, pb = ta.compute_precision, tb.compute_precision
        dtp = _PRECISION_OF_DTYPE.get(v.dtype)
        mismatch = None
        if v.dtype in _FLOATISH and pa != pb:
            mismatch = f"{pa} -> {pb}"
        elif dtp in ("fp16", "bf16", "int8") and dtp not in tb.precisions and tb.provider != CPU:
            mismatch = f"{v.dtype} tensor into a provider without {dtp}"
        if ta.layout == tb.layout and not mismatch:
            continue  # nothing to convert: the ops around the tensor do not matter
        p = model.producer[t]
        consumers = [c for c in model.consumers.get(t, ()) if a.provider[c] == dst]
        ops = {model.nodes[p].op_type} | {model.nodes[c].op_type for c in consumers}
        ort_converts = handles_layout(ta) or handles_layout(tb)  # ORT's layout transformer inserts the Transposes
        if ta.layout != tb.layout and (ops & LAYOUT_SENSITIVE_OPS) and v.rank in (None, 3, 4, 5) and not ort_converts:
            status = "present" if "Transpose" in ops else "missing"
            out.append({"kind": "layout", "tensor": t, "from": src, "to": dst, "status": status,
                        "detail": f"{ta.layout} -> {tb.layout}"})
        if mismatch:
            present = ops & {"Cast", "QuantizeLinear", "DequantizeLinear"}
            out.append({"kind": "precision", "tensor": t, "from": src, "to": dst,
                        "status": "present" if present else "missing", "detail": mismatch})
    return out


def summarize(a):
    """Build the partitionSummary dict for assignment ``a`` (see docs/contract.md §4).

    Examples
    --------
    >>> s = summarize(assignment)   # doctest: +SKIP
    >>> s["fragments"], s["transfers"]  # doctest: +SKIP
    (5, 4)
    """
    model = a.model
    tables = a.resolution.tables
    table_of = {t.provider: t for t in tables}
    rank = {t.provider: k for k, t in enumerate(tables)}
    prov = a.provider
    pos = {i: k for k, i in enumerate(topological_order(model))}
    names = [n.name for n in model.nodes]
    frags = fragments_of(model, prov)
    fragment_list = [{"id": k, "provider": prov[f[0]], "nodes": [names[i] for i in f]}
                     for k, f in enumerate(frags)]
    partitions = _partition_records(a, frags, pos, rank)
    transfers, feed = _transfers(a, table_of, pos, rank)
    transfer_list = [{"tensor": t, "from": s, "to": d, "bytes": model.value(t).nbytes} for t, s, d in transfers]
    undelegated = {}
    for p, why in zip(prov, a.reason):
        if p == CPU and why is not None:
            undelegated[why[0]] = undelegated.get(why[0], 0) + 1  # why[0]: its category
    caveats = [{"node": names[i], "opType": model.nodes[i].op_type, "provider": ep, "note": note}
               for i in sorted(a.caveats, key=pos.__getitem__) for ep, note in a.caveats[i]]
    delegated = len(prov) - prov.count(CPU)
    summary = {
        "schemaVersion": SCHEMA_VERSION,
        "model": {"path": model.path, "sha256": model.sha256, "nodeCount": len(model.nodes),
                  "opsets": {d or "ai.onnx": v for d, v in sorted(model.opsets.items())}},
        "requestedProviders": list(a.resolution.requested),
        "effectiveProviders": list(a.resolution.effective),
        "droppedProviders": [{"name": n, "reason": r} for n, r in a.resolution.dropped],
        "policy": a.policy,
        "nodes": _node_records(a),
        "fragments": len(fragment_list),
        "fragmentList": fragment_list,
        "partitions": partitions,
        "transfers": len(transfer_list),
        "feedTransfers": len(feed),
        "transferList": transfer_list,
        "memcpy": memcpy_record(a),
        "conversions": _conversions(model, a, table_of, transfers),
        "perProvider": _per_provider(a, fragment_list, partitions),
        "delegatedNodeCount": delegated,
        "partitionCount": sum(1 for p in partitions if p["provider"] != CPU),
        "undelegatedReasons": dict(sorted(undelegated.items())),
        "uncheckedCaveats": caveats,
        "insertedNodes": _inserted_records(a),
        "accelerated": delegated > 0,
        "status": a.status,
    }
    if a.failure:
        summary["failure"] = a.failure
    if model.warnings:
        summary["warnings"] = list(model.warnings)
    return summary


def _partition_records(a, frags, pos, rank):
    """What ORT hands each provider as one unit, in graph order: a compiling EP's groups, and each fragment
    of a kernel EP, with their boundary tensors."""
    model, prov, tables = a.model, a.provider, a.resolution.tables
    graph_outputs = set(model.graph_outputs)
    groups = [(ep, list(g)) for ep, g in a.partitions]
    compiled = set(ep for ep, _ in a.partitions) | {t.provider for t in tables if t.is_compiling}
    for f in frags:
        if prov[f[0]] not in compiled:
            groups.append((prov[f[0]], f))
    groups.sort(key=lambda eg: (min(pos[i] for i in eg[1]), rank.get(eg[0], 99)))
    ordered = [sorted(g, key=pos.__getitem__) for _, g in groups]
    group_of = [-1] * len(model.nodes)
    for k, g in enumerate(ordered):
        for i in g:
            group_of[i] = k
    if sum(len(g) for g in ordered) != len(model.nodes) or -1 in group_of:  # a node in two groups or none
        bounds = [_boundary(model, g, graph_outputs) for g in ordered]
    else:
        bounds = _boundaries(model, ordered, graph_outputs, group_of)
    return [{"id": k, "provider": ep, "nodes": [model.nodes[i].name for i in ordered[k]],
             "inputs": bounds[k][0], "outputs": bounds[k][1]} for k, (ep, _) in enumerate(groups)]


def _transfers(a, table_of, pos, rank):
    """``(transfers, feeds)``: each tensor made on one provider and read on another, once per reading
    provider, in graph order; each graph input read on a provider that is not CPU-based."""
    model, prov = a.model, a.provider
    transfer_set, feed = set(), set()
    producer, values = model.producer, model.values
    for t, cons in model.consumers.items():
        p = producer.get(t)
        if p is None:
            v = values.get(t)
            if v is not None and v.kind == "input":
                for c in cons:
                    if not table_of[prov[c]].cpu_based:
                        feed.add((t, prov[c]))
            continue
        src = prov[p]
        for c in cons:
            if prov[c] != src:
                transfer_set.add((t, src, prov[c]))
    return sorted(transfer_set, key=lambda x: (pos[model.producer[x[0]]], x[0], rank[x[2]])), feed


def _per_provider(a, fragment_list, partitions):
    """Nodes, partitions and fragments per provider (every provider of the list, in its order, first)."""
    per = {t.provider: {"nodes": 0, "partitions": 0, "fragments": 0} for t in a.resolution.tables}
    counts = {}
    for p in a.provider:
        counts[p] = counts.get(p, 0) + 1
    for p, n in counts.items():  # in order of first appearance, as the providers' entries are made
        per.setdefault(p, {"nodes": 0, "partitions": 0, "fragments": 0})["nodes"] += n
    for f in fragment_list:
        per[f["provider"]]["fragments"] += 1
    for p in partitions:
        per[p["provider"]]["partitions"] += 1
    return per


def _node_records(a):
    """One entry per node of the graph ORT partitions: provider, reason, and what the layout
    transformation did to it."""
    model, prov, reasons = a.model, a.provider, a.reason
    layout_names = {i: v for r in a.layout for i, v in r.converted.items()}
    layout_removed = {i for r in a.layout for i in r.removed}
    nodes = []
    for n in model.nodes:
        r = reasons[n.index]
        entry = {"name": n.name, "opType": n.op_type, "domain": n.domain, "provider": prov[n.index]}
        if r:
            entry["reason"], entry["reasonDetail"] = r[0], r[1]
        else:
            entry["reason"] = None
        if not n.schema_known:
            entry["schemaKnown"] = False
        if n.scope:
            entry["scope"] = n.scope
        if n.index in layout_names:  # recreated by ORT's NHWC layout transformation
            entry["ortName"], entry["ortDomain"] = layout_names[n.index]
        if n.index in layout_removed:  # taken out by the transpose optimizer of the layout transformation
            entry["ortRemoved"] = True
        nodes.append(entry)
    return nodes


def _inserted_records(a):
    """Nodes ORT adds that the model does not have (kept apart: "nodes" is one entry per model node)."""
    inserted = [{"name": name, "opType": "Transpose", "domain": "", "provider": ep, "origin": "inserted:layout",
                 "input": tensor} for r in a.layout for name, ep, tensor in r.transposes]
    inserted += [{"name": name, "opType": op, "domain": "", "provider": ep, "origin": "inserted:layout",
                  "input": tensor} for r in a.layout for name, op, ep, tensor in r.inserted]
    return inserted
