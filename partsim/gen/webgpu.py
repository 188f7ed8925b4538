"""The WebGPU table, measured: probe the real WebGPU plugin EP with one-node models and write what it claims.

``partsim rules import webgpu -o rules/webgpu.yaml`` (needs ``onnxruntime-ep-webgpu`` and ``make webgpu``,
see ``partsim/runtime/plugin_eps.py`` and ``partsim/runtime/webgpu_host.py``):

1. *Dtype probes.*  For each op of the QNN probe set (``partsim/gen/qnn_probes.py``, whose one-node builders
   it reuses) and :data:`EXTRA_OPS`, at each schema version the opsets of :data:`PROBE_OPSETS` resolve to,
   every dtype the schema allows on the probed input: a rank-4 static model.  ``Cast`` is probed for every
   (from, to) pair.  The plugin is a kernel EP, so a claim depends on (op, since-version, dtypes) only.
2. *Partitioning probes.*  Shape -> Cast -> Mul (does GetCapability drop ORT's CPU-preferred shape nodes?)
   and every layout-sensitive op it claims (does ORT convert it to NHWC?).
3. *Table.*  The base is the source-read table (kernel registrations, ``partsim/gen/ep_webgpu.py``).  Every
   rule of a probed op gets the dtypes claimed at its version (a version older than the probes: those of
   the oldest probed one); a probed version nothing claimed loses its rule; a claimed version without a
   registration in the base (the plugin is newer) gets one.  Ops never probed keep their source rule.

All sessions at ORT_DISABLE_ALL with the plugin's default options (``preferredLayout`` NHWC,
``enableInt64`` off).  Same evidence -> same table, byte for byte (everything is sorted).
"""

import json

from .qnn_probes import BINARY, DTYPES, PROBE_OPS, QLINEAR, UNARY, _tp, build_probe
from .qnn_probes import allowed_at as _allowed_at

__all__ = ["PROBE_OPSETS", "VARIANTS", "probe_specs", "build_spec", "derive_table", "finish_table", "webgpu_table"]

WEBGPU = "WebGpuExecutionProvider"
#: opsets the probes are built at: each op is probed at every schema version these resolve to
#: (onnxruntime 1.31.1 loads models up to opset 25 here)
PROBE_OPSETS = (21, 22, 23, 24, 25)
#: element-wise ops keep their inputs and attributes across versions: probed at every version since opset 7
ELEMENTWISE_OPSETS = tuple(range(7, 26))
EXTRA_OPS = ("Range", "ConstantOfShape", "TopK", "RMSNormalization", "LpNormalization", "GRU", "LSTM", "RNN", "DFT",
             "RotaryEmbedding", "Trilu", "Compress", "Upsample")
#: ops whose kernels came after the source table (onnxruntime/core/providers/webgpu/rnn/{gru,lstm}.cc,
#: math/dft.cc, llm/rotary_embedding.cc, tensor/{trilu,compress,upsample}.cc): probed at every schema version since
#: opset 7, as element-wise ops
NEWER_OPS = ("GRU", "LSTM", "RNN", "DFT", "RotaryEmbedding", "Trilu", "Compress", "Upsample")
RANGE_TYPES = ("float", "double", "int16", "int32", "int64")
#: ops the NHWC layout transformation may convert (onnx_transpose_optimization GetLayoutSensitiveOps)
LAYOUT_OPS = ("AveragePool", "BatchNormalization", "Conv", "ConvTranspose", "DepthToSpace", "GlobalAveragePool",
              "GlobalMaxPool", "GridSample", "InstanceNormalization", "LRN", "LpPool", "MaxPool", "Resize",
              "SpaceToDepth")


def _schema(op, opset):
    import onnx

    try:
        return onnx.defs.get_schema(op, opset)
    except Exception:  # no such op at that opset
        return None


def _probed_input(op):
    """Index of the input the one-node builder gives the probed dtype (``x``)."""
    return 1 if op == "Where" else 0


def probe_specs():
    """Every probe as a tuple ``(kind, op, since, opset, *dtypes)``, sorted and without repeats."""
    specs = set()
    ops = sorted(set(PROBE_OPS) - set(QLINEAR) - {"DynamicQuantizeLinear", "MatMulInteger"}) + list(EXTRA_OPS)
    for op in ops:
        seen = set()
        for opset in ELEMENTWISE_OPSETS if op in UNARY or op in BINARY or op in NEWER_OPS else PROBE_OPSETS:
            schema = _schema(op, opset)
            if schema is None or schema.since_version in seen:
                continue
            seen.add(schema.since_version)
            if op == "Cast":
                _, types = _allowed_at(schema, 0)
                specs.update(("cast", op, schema.since_version, opset, a, b) for a in types for b in types if a != b)
                continue
            if op == "Range":
                types = RANGE_TYPES
            elif op == "ConstantOfShape":
                types = DTYPES
            elif op in ("TopK", "RMSNormalization", "LpNormalization") or op in NEWER_OPS:
                types = _allowed_at(schema, 0)[1]
            else:
                types = _allowed_at(schema, _probed_input(op))[1]
            specs.update(("dtype", op, schema.since_version, opset, d) for d in types)
            if op == "Pow":  # the exponent has a constraint of its own (T1)
                specs.update(("pow_exponent", op, schema.since_version, opset, d)
                             for d in _allowed_at(schema, 1)[1])
    specs.update(("layout", op, 0, 21, "float") for op in LAYOUT_OPS)
    specs.add(("layout_dynamic", "Conv", 0, 21, "float"))
    specs.add(("cpu_preferred", "Mul", 0, 17, "float"))
    return sorted(specs)


def _extra_model(op, dtype, opset):
    from onnx import helper as h

    if op in ("TopK", "RMSNormalization", "LpNormalization"):
        return _norm_or_topk(op, dtype, opset)
    if op in NEWER_OPS:
        return _newer_op_model(op, dtype, opset)
    if op == "Range":  # scalars start, limit, delta of one dtype, fed at run time
        ins = [h.make_tensor_value_info(n, _tp(dtype), []) for n in ("start", "limit", "delta")]
        node = h.make_node("Range", ["start", "limit", "delta"], ["y"], name="n0_Range")
        out = h.make_tensor_value_info("y", _tp(dtype), None)
    else:  # ConstantOfShape with a value of the probed dtype
        import numpy as np
        from onnx import numpy_helper

        from .qnn_probes import _np

        ins = [h.make_tensor_value_info("shape", _tp("int64"), [2])]
        value = numpy_helper.from_array(np.array([1], dtype=_np(dtype)), "value")
        node = h.make_node("ConstantOfShape", ["shape"], ["y"], name="n0_ConstantOfShape", value=value)
        out = h.make_tensor_value_info("y", _tp(dtype), None)
    g = h.make_graph([node], f"probe_{op}", ins, [out])
    return h.make_model(g, opset_imports=[h.make_opsetid("", opset)])


def _norm_or_topk(op, dtype, opset):
    """TopK (K = 2 on the last axis), RMSNormalization (scale over the last axis), LpNormalization."""
    import numpy as np
    from onnx import helper as h
    from onnx import numpy_helper

    from .qnn_probes import _np

    shape = [2, 3, 4, 5]
    x = h.make_tensor_value_info("x", _tp(dtype), shape)
    inits, outs = [], [h.make_tensor_value_info("y", _tp(dtype), None)]
    if op == "TopK":
        inits.append(numpy_helper.from_array(np.array([2], np.int64), "k"))
        node = h.make_node("TopK", ["x", "k"], ["y", "idx"], name="n0_TopK")
        outs.append(h.make_tensor_value_info("idx", _tp("int64"), None))
    elif op == "RMSNormalization":
        inits.append(numpy_helper.from_array(np.ones(5, _np(dtype)), "scale"))
        node = h.make_node("RMSNormalization", ["x", "scale"], ["y"], name="n0_RMSNormalization", axis=-1)
    else:
        node = h.make_node("LpNormalization", ["x"], ["y"], name="n0_LpNormalization")
    g = h.make_graph([node], f"probe_{op}", [x], outs, inits)
    return h.make_model(g, opset_imports=[h.make_opsetid("", opset)])


def _newer_op_model(op, dtype, opset):
    """GRU/LSTM/RNN (sequence 2, batch 1, input 3, hidden 4; X, W, R only), DFT (a real signal [1, 8, 1] on its
    default axis), RotaryEmbedding (X [1, 2, 3, 8] with cos/sin caches [1, 3, 4], no position ids), Trilu (no k),
    Compress (a constant condition on axis 0) and Upsample (scales 1, 1, 2, 2; an attribute before version 9) on
    X [2, 3, 4, 4]."""
    import numpy as np
    from onnx import helper as h
    from onnx import numpy_helper

    from .qnn_probes import _np

    inits, attrs = [], {}
    if op in ("GRU", "LSTM", "RNN"):
        gates = {"RNN": 1, "GRU": 3, "LSTM": 4}[op]
        x = h.make_tensor_value_info("x", _tp(dtype), [2, 1, 3])
        inits = [numpy_helper.from_array(np.full((1, gates * 4, k), 0.1, _np(dtype)), n) for n, k in (("w", 3), ("r", 4))]
        attrs["hidden_size"] = 4
    elif op == "DFT":
        x = h.make_tensor_value_info("x", _tp(dtype), [1, 8, 1])
    elif op in ("Trilu", "Compress", "Upsample"):
        x = h.make_tensor_value_info("x", _tp(dtype), [2, 3, 4, 4])
        if op == "Compress":
            inits, attrs = [numpy_helper.from_array(np.array([True, False]), "condition")], {"axis": 0}
        elif op == "Upsample" and opset >= 9:
            inits = [numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")]
        elif op == "Upsample":
            attrs["scales"] = [1.0, 1.0, 2.0, 2.0]
    else:
        x = h.make_tensor_value_info("x", _tp(dtype), [1, 2, 3, 8])
        inits = [numpy_helper.from_array(np.full((1, 3, 4), 0.5, _np(dtype)), n) for n in ("cos", "sin")]
    node = h.make_node(op, ["x"] + [t.name for t in inits], ["y"], name=f"n0_{op}", **attrs)
    g = h.make_graph([node], f"probe_{op}", [x], [h.make_tensor_value_info("y", _tp(dtype), None)], inits)
    return h.make_model(g, opset_imports=[h.make_opsetid("", opset)])


def _dynamic_layout_model():
    """Conv on an input with a symbolic batch dimension: are the layout Transposes around it, whose shapes are not
    static, taken by WebGPU (QNN's are static-only)?"""
    import numpy as np
    from onnx import helper as h
    from onnx import numpy_helper

    x = h.make_tensor_value_info("x", _tp("float"), ["N", 3, 8, 8])
    w = numpy_helper.from_array(np.full((4, 3, 3, 3), 0.1, np.float32), "w")
    node = h.make_node("Conv", ["x", "w"], ["y"], name="n0_Conv")
    g = h.make_graph([node], "probe_layout_dynamic", [x], [h.make_tensor_value_info("y", _tp("float"), None)], [w])
    return h.make_model(g, opset_imports=[h.make_opsetid("", 21)])


def _cpu_preferred_model():
    """Shape -> Cast(float) -> Mul: ORT's GetCpuPreferredNodes marks the Mul for the CPU."""
    import numpy as np
    from onnx import helper as h
    from onnx import numpy_helper

    nodes = [h.make_node("Shape", ["x"], ["s"], name="shape"), h.make_node("Cast", ["s"], ["f"], name="cast", to=1),
             h.make_node("Mul", ["f", "two"], ["y"], name="mul")]
    g = h.make_graph(nodes, "probe_cpu_preferred", [h.make_tensor_value_info("x", _tp("float"), [2, 3, 4])],
                     [h.make_tensor_value_info("y", _tp("float"), None)],
                     [numpy_helper.from_array(np.full(3, 2.0, np.float32), "two")])
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17)])


def build_spec(spec):
    """The ModelProto of one probe."""
    kind, op, _since, opset, *dtypes = spec
    if kind == "cpu_preferred":
        m = _cpu_preferred_model()
    elif kind == "layout_dynamic":
        m = _dynamic_layout_model()
    elif kind == "cast":
        from onnx import helper as h

        m = build_probe("Cast", dtypes[0], 4)
        node = m.graph.node[0]
        del node.attribute[:]
        node.attribute.append(h.make_attribute("to", _tp(dtypes[1])))
        m.graph.output[0].type.tensor_type.elem_type = _tp(dtypes[1])
    elif kind == "pow_exponent":
        m = build_probe("Pow", "float", 4)
        m.graph.input[1].type.tensor_type.elem_type = _tp(dtypes[0])
    elif op in EXTRA_OPS:
        m = _extra_model(op, dtypes[0], opset)
    else:
        m = build_probe(op, dtypes[0], 4)
    m.opset_import[0].version = opset
    m.ir_version = 10
    return m


def _on_webgpu(rec, op):
    """Nodes of type ``op`` the session put on WebGPU, as ``[(name, domain)]``."""
    return [(n[0], n[2]) for ep, nodes in rec.get("assignment") or () if ep == WEBGPU for n in nodes if n[1] == op]


def _fate(rec, op):
    """``claimed``, ``refused`` or ``unusable`` (the model did not load: no evidence either way)."""
    if rec.get("assignment") is not None:
        return "claimed" if _on_webgpu(rec, op) else "refused"
    err = str(rec.get("create_error") or "")
    if "Load model" in err or "INVALID" in err or "session child" in err or "no record" in err:
        return "unusable"
    return "refused"


def derive_table(base, evidence):
    """The measured table from the source table ``base`` (a dict) and ``evidence`` ``[(spec, record)]``."""  # noqa: D401
    claims, probed = {}, {}  # (op, since) -> {constraint: set(dtypes)} / probed with usable evidence
    cast_pairs, keep_nchw, converted, cpu_pref_applied, dynamic_transposes = {}, set(), set(), None, None
    for spec, rec in evidence:
        kind, op, since, opset, *dtypes = spec
        fate = _fate(rec, op)
        if fate == "unusable":
            continue
        if kind == "cpu_preferred":
            cpu_pref_applied = fate != "claimed"
        elif kind == "layout_dynamic":
            dynamic_transposes = any(n[1] == "Transpose" for ep, nodes in rec.get("assignment") or ()
                                     if ep == WEBGPU for n in nodes)
        elif kind == "layout":
            if fate == "claimed":
                nhwc = any(d == "com.ms.internal.nhwc" for _, d in _on_webgpu(rec, op))
                (converted if nhwc else keep_nchw).add(op)
        elif kind == "pow_exponent":
            probed.setdefault((op, since), None)
            if fate == "claimed":
                claims.setdefault((op, since), {}).setdefault("i1", set()).add(dtypes[0])
        elif kind == "cast":
            probed.setdefault((op, since), None)
            if fate == "claimed":
                cast_pairs.setdefault(since, set()).add((dtypes[0], dtypes[1]))
        else:
            probed.setdefault((op, since), None)
            if fate == "claimed":
                # ports, not constraint names: a rule typed at one version then reads the same at older ones
                # (Identity's T became V at version 14)
                key = "o0" if op == "ConstantOfShape" else f"i{_probed_input(op)}"
                claims.setdefault((op, since), {}).setdefault(key, set()).add(dtypes[0])
    for since, pairs in cast_pairs.items():
        claims[("Cast", since)] = {"i0": {a for a, _ in pairs}, "o0": {b for _, b in pairs}}
    ops = _merge_rules(base["ops"], claims, probed)
    table = dict(base)
    table["ops"] = ops
    part = dict(base.get("partitioning") or {})
    part["cpu_preferred_shape_nodes"] = bool(cpu_pref_applied)
    if keep_nchw:
        part["layout_keep_ops"] = sorted(keep_nchw)
    if dynamic_transposes is not None:  # the nodes the layout transformation adds: taken whatever their shapes
        part["layout_inserted_static_only"] = not dynamic_transposes
    table["partitioning"] = part
    table["source"] = dict(
        base["source"], generated_by="partsim rules import webgpu",
        description="ORT WebGPU EP kernel registrations (webgpu_execution_provider.cc, webgpu_contrib_kernels.cc) "
                    "narrowed, typed and extended by real onnxruntime-ep-webgpu 0.4.0 sessions (onnxruntime 1.31.1, "
                    "Mesa lavapipe) on one-node probes (partsim/gen/webgpu.py)")
    summary = (f"{len(evidence)} probe sessions: {len(probed)} (op, version) pairs probed, {len(claims)} claimed; "
               f"converted to NHWC: {', '.join(sorted(converted)) or 'none'}")
    table["notes"] = [summary] + _notes(cpu_pref_applied, cast_pairs)
    return table


def _notes(cpu_pref_applied, cast_pairs):
    notes = ["Dtypes measured (plugin default enableInt64=0: int64 tensors stay on the CPU but for the shape-like "
             "inputs the kernels read from host memory); ops never probed keep their registrations (versions only)."]
    if cpu_pref_applied is False:
        notes.append("The plugin computes ORT's CPU-preferred shape nodes (it logs 'Force fallback to CPU') but "
                     "claims them anyway: measured with Shape -> Cast -> Mul, the Mul runs on WebGPU.")
    for since, pairs in sorted(cast_pairs.items()):
        froms = {a for a, _ in pairs}
        tos = {b for _, b in pairs}
        if {(a, b) for a in froms for b in tos if a != b} != pairs:
            notes.append(f"Cast-{since}: the claimed (from, to) pairs are not every combination of T1 x T2.")
    return notes


def _covers(rule, since):
    lo, hi = rule.get("versions") or (1, None)
    return since == lo if hi is None else lo <= since <= hi


# Host-memory ports of WebGPU kernels (KernelDefBuilder InputMemoryType/OutputMemoryType(OrtMemTypeCPU[Input], k)),
# read from microsoft/onnxruntime onnxruntime/core/providers/webgpu/ (main, the plugin is built from it):
# tensor/{shape_op (11125cc), reshape (7119266), squeeze (48e91dc), slice (fb4be0b), expand (351da84), unsqueeze
# (e28808c), tile (00d771a), pad (034efdc), resize (cca1026), split (0bc4189), trilu (87ce87a), compress
# (ddcc738)}.cc, math/{top_k (0fd948f),
# unary_elementwise_ops (Clip), dft (3fb5430)}.cc, generator/{constant_of_shape (cdcb07a), range}.cc,
# reduction/reduction_ops.cc (076cc6c), controlflow/if.cc (2d623e8).  (op, first, last since-version,
# host_inputs, host_outputs); a rule takes the entry whose range holds its first version.  CumSum's axis is not
# a host port there.
HOST_PORTS = (
    ("Shape", 1, None, (), (0,)), ("Reshape", 5, None, (1,), ()), ("Squeeze", 13, None, (1,), ()),
    ("Unsqueeze", 13, None, (1,), ()), ("Slice", 10, None, (1, 2, 3, 4), ()), ("Expand", 8, None, (1,), ()),
    ("Tile", 6, None, (1,), ()), ("Pad", 11, 17, (1, 2), ()), ("Pad", 18, None, (1, 2, 3), ()),
    ("Resize", 10, 10, (1,), ()), ("Resize", 11, None, (1, 2, 3), ()), ("Split", 1, None, (1,), ()),
    ("TopK", 10, None, (1,), ()), ("Clip", 11, None, (1, 2), ()), ("ConstantOfShape", 9, None, (0,), ()),
    ("Trilu", 14, None, (1,), ()), ("Compress", 9, None, (1,), ()),
    ("Range", 11, None, (0, 1, 2), ()), ("If", 1, None, (0,), ()), ("DFT", 17, 19, (1,), ()),
    ("DFT", 20, None, (1, 2), ()), ("ReduceSum", 13, None, (1,), ()), ("ReduceMax", 18, None, (1,), ()),
    ("ReduceMin", 18, None, (1,), ()),
) + tuple((op, 18, None, (1,), ()) for op in ("ReduceMean", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum",
                                              "ReduceSumSquare", "ReduceLogSumExp"))


def _with_host_ports(rule):
    if rule.get("domain"):
        return rule
    since = rule["versions"][0]
    for op, first, last, host_in, host_out in HOST_PORTS:
        if op == rule["op"] and first <= since and (last is None or since <= last):
            if host_in:
                rule["host_inputs"] = list(host_in)
            if host_out:
                rule["host_outputs"] = list(host_out)
    return rule


def _merge_rules(base_ops, claims, probed):
    """Base rules with measured dtypes; rules of probed versions nothing claimed dropped; claimed versions the
    base lacks added."""
    probed_ops = {op for op, _ in probed}
    out = []
    for rule in base_ops:
        op = rule["op"]
        if rule.get("domain") or op not in probed_ops:
            out.append(dict(rule))
            continue
        mine = sorted(s for (o, s) in probed if o == op and _covers(rule, s))
        if mine:
            got = [claims.get((op, s)) for s in mine]
            if not any(got):
                continue  # probed there, never claimed
            types = _union(g for g in got if g)
        else:  # older than every probe: the kernel's dtypes as measured at the oldest probed version
            oldest = min(s for (o, s) in probed if o == op)
            types = claims.get((op, oldest))
            if not types:
                out.append(dict(rule))
                continue
        out.append(dict(rule, types={k: sorted(v) for k, v in sorted(types.items())}))
    for (op, since), types in sorted(claims.items()):
        if any(r["op"] == op and not r.get("domain") and _covers(r, since) for r in out):
            continue
        rule = {"op": op, "versions": [since, None], "types": {k: sorted(v) for k, v in sorted(types.items())}}
        if op in LAYOUT_OPS:
            rule["layout_sensitive"] = True
        out.append(rule)
    out.sort(key=lambda r: (r.get("domain", ""), r["op"], r["versions"][0]))
    return [_with_host_ports(r) for r in out]


def _union(dicts):
    res = {}
    for d in dicts:
        for k, v in d.items():
            res.setdefault(k, set()).update(v)
    return res


#: table variants: provider options the probes run with (``partsim rules import webgpu --variant int64``)
VARIANTS = {"": {}, "int64": {"enableInt64": "1"}}


def webgpu_table(python=None, work=None, evidence_out=None, variant=""):
    """YAML text of the measured WebGPU table (real plugin sessions in a child process); ``variant``
    ``int64``: the sessions run with ``enableInt64=1`` and the table is the ``webgpu:int64`` variant."""
    if variant not in VARIANTS:
        from ..errors import UsageError

        raise UsageError(f"webgpu: --variant must be one of {', '.join(repr(v) for v in VARIANTS)}")
    from .ep_webgpu import _webgpu
    from .qnn import probe_specs_as_models
    from .yamlout import dump_table

    evidence = probe_specs_as_models(probe_specs(), build_spec, WEBGPU, "partsim-webgpu-probes-", python, work,
                                     ep_options=VARIANTS[variant])
    if evidence_out:
        from ..report.output import atomic_write

        atomic_write(evidence_out, "".join(json.dumps({"spec": list(s), "record": r}) + "\n" for s, r in evidence))
    if not any(r.get("assignment") is not None for _, r in evidence):
        from ..errors import UsageError

        raise UsageError(f"no WebGPU session could be created: {evidence[0][1].get('create_error', '?')}")
    header = "webgpu: measured by partsim/gen/webgpu.py (real onnxruntime-ep-webgpu sessions on one-node probes)."
    return dump_table(finish_table(derive_table(_webgpu(), evidence), variant), header)


def finish_table(table, variant):
    """The default table (``default_variant``) or the named variant."""
    if variant:
        return _as_variant(table, variant)
    out = {}
    for k, v in table.items():
        out[k] = v
        if k == "aliases":
            out["default_variant"] = True  # -p webgpu: this one, not webgpu:int64
    return out


def _as_variant(table, variant):
    """The table as the named variant: probes made with the provider options of :data:`VARIANTS`."""
    out = {}
    for k, v in table.items():
        out[k] = v
        if k == "aliases":
            out["variant"] = variant
    opts = ", ".join(f"{k}={v}" for k, v in VARIANTS[variant].items())
    out["notes"] = [f"Variant {variant}: every probe session ran with the provider option {opts} (select it with "
                    f"-p webgpu:{variant} or --ep-option {opts})."] + list(table["notes"])
    return out
