"""The QNN (HTP) table, measured: probe the real QNN EP with single-op models and write what it claims.

``partsim rules import qnn -o rules/qnn.yaml`` (needs ``onnxruntime-qnn`` in the interpreter, see
``partsim/runtime/plugin_eps.py``):

1. *Probes.*  For each op of :data:`PROBE_OPS` (element-wise, broadcasting, reductions, Cast,
   Transpose, Where, ...), every input dtype its ONNX schema allows out of :data:`DTYPES` and every
   rank of :data:`RANKS`, a one-node model with static shapes (``probe_specs``; QOperator ops of
   :data:`partsim.gen.qnn_probes.QLINEAR` with their scales and zero points).  QDQ node units of :data:`~partsim.gen.qnn_probes.QDQ_OPS` with every
   combination of quantized port dtypes (``qdq_specs``) give the table's ``qdq_unit_types``.  Extra
   evidence: ``--models DIR`` (one-node ONNX models, e.g. ONNX's backend node tests) are run as well.
2. *Sessions.*  All models go through one ORT child (``partsim/runtime/ort_child.py probe``) that
   creates a QNN session per model and prints its assignment line by line; a model that crashes
   or hangs the emulator is recorded as such and the child is restarted after it.
3. *Table.*  The base is the source-read table (op builders of ``op_builder_factory.cc``,
   ``partsim/gen/ep_tables.py``).  For every op with evidence, the rule keeps the builder's
   predicates and gets the dtypes of input 0 QNN claimed and, per dtype set, the rank range it
   claimed (``min_rank``/``max_rank`` only where a refused rank lies outside it); an op QNN never
   claimed is dropped, an op it claimed without a builder in the list (e.g. ``Identity``) is
   added.  Evidence is summarised in the table's ``source.probes``.

Partition rules (``partitioning``) come from ``qnn_execution_provider.cc`` (onnxruntime/onnxruntime-qnn
``QnnEp::GetCapabilityImpl``): single Q/DQ partitions dropped, graph I/O quantization offloaded.
Same evidence -> same table, byte for byte (everything is sorted).
"""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from .qnn_probes import (ATTR_ONLY, DTYPES, DYNAMIC_SIDE, INT64_IO_PASSTHROUGH_OPS, LAYOUT_REFUSAL, NO_KERNEL,
                         PROBE_OPS, QNN_LAYOUT_CHECKS, RANKS, build_probe, build_qdq_probe, build_qnn_probe,
                         probe_specs, qdq_specs)
from .qnn_derive import (_claimed, _covers, _explained_after_layout, _features, derive_rules, qdq_unit_types,
                         usable_evidence)

__all__ = ["PROBE_OPS", "DTYPES", "RANKS", "probe_specs", "build_probe", "build_qnn_probe", "qdq_specs", "build_qdq_probe", "probe_models", "probe_specs_as_models",
           "derive_rules", "usable_evidence", "qdq_unit_types", "qnn_table"]

def probe_specs_as_models(specs, build, provider, prefix, python=None, work=None, ep_options=None, timeout=120.0):
    """Each spec's probe model (``build(spec)`` -> ModelProto) written to a temporary folder (``prefix``, inside
    ``work``) and run as a real session of plugin ``provider`` (:func:`probe_models`); returns ``[(spec, record)]``
    in the order of ``specs``, each record without its temporary ``model`` path."""
    with tempfile.TemporaryDirectory(prefix=prefix, dir=work) as tmp:
        paths = []
        for k, spec in enumerate(specs):
            path = Path(tmp) / f"p{k:05d}.onnx"
            path.write_bytes(build(spec).SerializeToString())
            paths.append(str(path))
        records = probe_models(paths, ep_options=ep_options, python=python, provider=provider, timeout=timeout)
    return [(spec, {k: v for k, v in records.get(p, {}).items() if k != "model"}) for spec, p in zip(specs, paths)]


def probe_models(paths, ep_options=None, python=None, timeout=60.0, level="ORT_DISABLE_ALL",
                 provider="QNNExecutionProvider"):
    """Create a real session of plugin ``provider`` (QNN by default) for each model in ``paths`` (the
    ORT child's ``probe`` sub-command, started again after a model that crashes it or takes more than
    ``timeout`` seconds); return ``{path: record}`` with ``assignment`` or ``create_error``."""
    from dataclasses import asdict

    from ..runtime.ort_protocol import ProbeRecord, ProbeRequest
    from ..runtime.process import ChildFailure, OrtProcess

    paths = [str(p) for p in paths]
    results, todo = {}, list(paths)
    while todo:
        fate = None
        with OrtProcess("probe", python) as child:
            child.submit(ProbeRequest(tuple(todo), dict(ep_options or {}), level, provider))
            try:
                for rec in child.records((ProbeRecord,), timeout):
                    if rec.model in todo:
                        results[rec.model] = {k: v for k, v in asdict(rec).items() if v is not None}
            except ChildFailure as exc:
                fate = "timeout" if exc.cause == "timeout" else "crashed"
        todo = [p for p in todo if p not in results]
        if todo and fate:  # the first model without a record took the child down
            results[todo[0]] = {"model": todo[0], "create_error": f"session child {fate}", "fate": fate}
            todo = todo[1:]
        elif todo:
            for p in todo:
                results[p] = {"model": p, "create_error": "no record from the session child"}
            todo = []
    return results


#: builders whose IsOpSupported looks at no shape, so GetCapability claims the node with a symbolic dim and the
#: session then fails (onnxruntime-qnn reciprocal_op_builder.cc, tan_op_builder.cc: input count and type only;
#: GRU on 2.7.0).  Measured with one-node graphs whose first dim is symbolic, every float op of PROBE_OPS: only
#: Reciprocal and Tan are claimed (tests/gen/test_qnn_dynamic.py), and GRU (an audio encoder's)
SHAPE_BLIND_OPS = ("GRU", "Reciprocal", "Tan")


def qnn_table(models=(), soc_model="60", python=None, ops=PROBE_OPS, ranks=RANKS, work=None, evidence_out=None,
              qdq=True):
    """YAML text of the measured QNN table (see the module docstring)."""
    from .ep_tables import QNN_PREDICATES, TABLES
    from .yamlout import dump_table

    with tempfile.TemporaryDirectory(prefix="partsim-qnn-probes-") as tmp:
        base_dir = Path(work or tmp)
        paths, expect, probes, qdq_paths = _write_probes(base_dir, ops, ranks, models, qdq)
        recs = probe_models(paths + list(qdq_paths), {"soc_model": str(soc_model)}, python=python)
    unit_types = qdq_unit_types({qdq_paths[p]: _claimed(recs[p], f"n0_{qdq_paths[p][0]}") for p in qdq_paths})
    evidence = _evidence(paths, expect, recs, probes)
    if evidence_out:  # the raw evidence, one JSON object per model (for review; not read back)
        with open(evidence_out, "w") as f:
            for p, e in zip(paths, evidence):
                rec = recs[p]
                f.write(json.dumps({"model": Path(p).name, "op": e[0], "domain": e[1], "dtype": e[2], "rank": e[3],
                                    "fate": e[4], "attrs": e[5], "error": rec.get("create_error", "")[:300]},
                                   sort_keys=True) + "\n")
    # nodes whose side inputs come at run time: a claim (also one refused after the NHWC conversion) is
    # evidence, a refusal may be for that reason alone
    dynamic = [e for e in evidence if e[5].get(DYNAMIC_SIDE) == 1]  # the probes (a --models case says "models")
    evidence = usable_evidence(evidence)
    derived = derive_rules(evidence)
    for op, domain, dtype, rank, fate, attrs in dynamic:
        # claimed with constant side inputs, refused when they come at run time (the output shapes declared
        # as before): the builder wants those inputs constant
        rules = [r for r in derived.get((domain, op)) or [] if not r.get("layout_refusal")]
        probe = build_probe(op, dtype, rank, ((DYNAMIC_SIDE, 1),))
        if fate is False and any(_covers(r, dtype, rank) for r in rules):
            fed = {v.name for v in probe.graph.input}  # the side inputs the dynamic variant feeds at run time
            side = [k for k, t in enumerate(probe.graph.node[0].input) if k and t in fed]
            for r in derived[(domain, op)]:
                r["const_inputs"] = side
    converted, claimed_sensitive = _layout_facts(recs)
    table = TABLES["qnn"]()
    ops_out = _merged_ops(table, derived, QNN_PREDICATES)
    claimed = sum(1 for e in evidence if e[4] in (True, "layout_refusal"))
    for rule in ops_out:
        if rule["op"] in SHAPE_BLIND_OPS and not rule.get("domain"):
            rule["static_shape"] = rule["static_outputs"] = False
    table["ops"] = ops_out
    table["source"] = dict(table["source"])
    table["source"]["description"] = ("QNN EP op builders (op_builder_factory.cc) narrowed and extended by real "
                                      "onnxruntime-qnn sessions on single-op probes (partsim/gen/qnn.py)")
    table["source"]["generated_by"] = "partsim rules import qnn" + "".join(f" --models {m}" for m in models)
    refused = sum(1 for e in evidence if e[4] is False or e[4] == ATTR_ONLY)
    no_session = sum(1 for e in evidence if e[4] is None)
    table["source"]["version"] = (f"onnxruntime {_ort_version(python)} + onnxruntime-qnn {_qnn_version(python)}, "
                                  f"HTP emulator soc_model {soc_model}; builders {table['source']['version']}")
    table["source"]["describes"] = {"onnxruntime": _ort_version(python), "onnxruntime-qnn": _qnn_version(python)}
    probe_note = (f"evidence: {len(paths)} one-node models ({claimed} claimed by QNN, {refused} left to the CPU, "
                  f"{no_session} without a session or a node of that name); {len(qdq_paths)} QDQ node-unit probes")
    _partitioning_facts(table, unit_types, converted, claimed_sensitive)
    table["notes"] = list(table["notes"]) + [probe_note,
        "dtypes and rank ranges per op measured on the x86-64 HTP emulator (soc_model "
        f"{soc_model}); a phone's HTP may differ (fp16 and int16 support depend on the architecture).",
        "Graph I/O quantization: a QuantizeLinear reading a graph input or a DequantizeLinear writing a graph "
        "output is left to the CPU (QNN provider option offload_graph_io_quantization, default on).",
    ]
    header = "qnn: generated by partsim/gen/qnn.py from real QNN sessions (see 'source')."
    return dump_table(table, header)


def _evidence(paths, expect, recs, probes):
    """``[(op, domain, dtype, rank, fate, attrs)]`` per model: what its session did with the node."""
    evidence = []
    for p in paths:
        op, domain, dtype, rank, name, attrs = expect[p]
        rec = recs[p]
        err = rec.get("create_error", "")
        fate = _claimed(rec, name) if "assignment" in rec or LAYOUT_REFUSAL in err else None
        if fate is None and NO_KERNEL in err and f"node with name '{name}'" in err and p not in probes:
            # a --models node QNN left to a CPU without a kernel for it: a refusal all the same (not
            # read from the probes: Where's are keyed by input 0, the bool condition, while the CPU
            # lacks the bool values they feed)
            fate = False
        if fate == "layout_refusal" and _explained_after_layout(p, name):
            fate = True  # claimed as it is; its NHWC form fails a check the table states (sim/layout_checks.py)
        evidence.append((op, domain, dtype, rank, fate, attrs))
    return evidence


def _merged_ops(table, derived, predicates):
    """The builders' rules of ``table`` narrowed and extended by the derived ones."""
    ops_out = []
    seen = set()
    for rule in table["ops"]:
        key = (rule.get("domain", ""), rule["op"])
        seen.add(key)
        if key not in derived or (not derived[key] and key[1] not in PROBE_OPS):
            # no evidence, or only refusals among the --models cases (their side inputs and attributes
            # are not the defaults): the builder's rule stands
            ops_out.append(rule)
            continue
        for d in derived[key]:
            merged = {k: v for k, v in rule.items() if k not in ("min_rank", "max_rank", "rank_inputs")
                      or not ("min_rank" in d or "max_rank" in d)}
            merged.update(d)
            if rule.get("attrs") and d.get("attrs"):  # the builder's conditions stay, the measured ones add
                merged["attrs"] = list(rule["attrs"]) + [a for a in d["attrs"] if a["name"] not in
                                                         {b["name"] for b in rule["attrs"]}]
            ops_out.append(merged)
    for key in sorted(set(derived) - seen):
        # an op the builder list lacks but the sessions show claimed: the builder checks known for it
        # (QNN_PREDICATES, e.g. Attention's inputs) still apply
        known = predicates.get(key[1], {}) if not key[0] else {}
        for d in derived[key]:
            ops_out.append({"op": key[1], **({"domain": key[0]} if key[0] else {}), **known, **d})
    # ORT's node units take com.microsoft QuantizeLinear/DequantizeLinear as they take ONNX's (node_unit.cc,
    # qdq_selectors.cc match both domains), and so does the QNN EP: the 16-bit QDQ models ORT's quantization
    # tools write (get_qnn_qdq_config, com.microsoft Q/DQ) ran whole on QNN 2.7.0 (four torchvision models)
    for rule in [r for r in ops_out if r["op"] in ("QuantizeLinear", "DequantizeLinear") and not r.get("domain")]:
        ops_out.append({**rule, "domain": "com.microsoft"})
    return ops_out


def _write_probes(base_dir, ops, ranks, models, qdq):
    """The probe models written into ``base_dir`` (and the ``--models`` ones found): ``(paths, expected
    features per path, the probe paths, {QDQ probe path: (op, port dtypes)})``."""
    import onnx

    paths, expect, probes = [], {}, set()
    for op, dtype, rank, variant in probe_specs(ops, ranks):
        tag = "".join(f".{k}={v}" for k, v in variant)
        p = base_dir / f"{op}.{dtype}.r{rank}{tag}.onnx"
        onnx.save(build_qnn_probe(op, dtype, rank, variant), str(p))
        paths.append(str(p))
        probes.add(str(p))
        expect[str(p)] = (op, "", dtype, rank, f"n0_{op}", dict(variant))
    for d in models:
        for p in sorted(Path(d).glob("*.onnx")):
            f = _features(str(p))
            if f is not None:
                paths.append(str(p))
                expect[str(p)] = f
    qdq_paths = {}
    for op, combo in (qdq_specs() if qdq else ()):
        p = base_dir / ("qdq." + op + "".join(f".{k}={v}" for k, v in combo) + ".onnx")
        onnx.save(build_qdq_probe(op, combo), str(p))
        qdq_paths[str(p)] = (op, combo)
    return paths, expect, probes, qdq_paths


def _layout_facts(recs):
    """Op types the sessions converted to NHWC for QNN, and the layout-sensitive ops QNN claimed as they are."""
    from ..sim.layout import LAYOUT_SENSITIVE_OPS

    converted, claimed_sensitive = set(), set()
    for rec in recs.values():
        for ep, members in rec.get("assignment") or []:
            converted.update(m[1] for m in members if m[2] == "com.ms.internal.nhwc")
            if ep == "QNNExecutionProvider":
                claimed_sensitive.update(m[1] for m in members if not m[2] and m[1] in LAYOUT_SENSITIVE_OPS)
        err = rec.get("create_error", "")
        if LAYOUT_REFUSAL in err and "OpType:" in err:
            converted.add(err.split("OpType:", 1)[1].split()[0])
    return converted, claimed_sensitive


def _partitioning_facts(table, unit_types, converted, claimed_sensitive):
    """The QNN table's partitioning facts: measured on real sessions or read from the EP's sources (each
    names where), and the layout and QDQ facts the probes showed."""
    from ..sim.layout import LAYOUT_SENSITIVE_OPS

    table["partitioning"] = dict(table["partitioning"])
    table["partitioning"]["offload_graph_io_quantization"] = True
    # seen on real sessions: tiny_resnet with a symbolic batch (only its weight Identities are claimed) and the
    # attention *_expanded node tests fail with "Having zero graph inputs is not supported on this backend"
    table["partitioning"]["refuse_all_constant_input_groups"] = True
    # the Cast builder reads CastLike's second input for its type only and makes no QNN tensor for it; a
    # partition whose first input is such a tensor gets none at all (qnn_model_wrapper.cc
    # GetGraphInputOutputTensorWrapper stops there; seen on the affine_grid *_expanded node tests)
    table["partitioning"]["type_only_inputs"] = {"CastLike": [1]}
    # no float64 graph input tensor ("Failed to pre-register input ... error code: 7004"; test_bernoulli, whose
    # RandomUniformLike reads a double graph input)
    table["partitioning"]["refused_graph_input_dtypes"] = ["double"]
    # no float64 graph output either (probes on onnxruntime-qnn 2.7.0, tests/gen/test_qnn_refusals.py): a Cast to
    # double from bool, float, float16, int32, int64 or uint8, or a RandomUniformLike of dtype double, writing a double
    # graph output is left to the CPU, as is a Cast reading one (test_bernoulli_double_expanded's n2_Cast), while the
    # same Cast to double is claimed when a QNN node reads its output (sim/graph_inputs.py graph_output_dtype_nodes)
    table["partitioning"]["refused_graph_output_dtypes"] = ["double"]
    # onnxruntime/onnxruntime-qnn transpose_op_builder.cc (ProcessAttributesAndOutputs, main @cee6c0d): an int64 input
    # 0 that is a graph input is cast to int32 (base_op_builder.cc ProcessInt64Tensors, "<name>_cast_int32"); when the
    # output is a graph output too the builder plans a Cast back to int64 from a tensor no node writes: GetCapability
    # refuses such a node on the model's graph I/O, and the graph of a partition whose input and output it is does not
    # compose (sim/graph_inputs.py int64_io_nodes; probes on 2.7.0, tests/gen/test_qnn_refusals.py)
    table["partitioning"]["int64_io_passthrough_ops"] = list(INT64_IO_PASSTHROUGH_OPS)
    # cast_op_builder.cc keeps an int64 output INT_64 only as a graph output (APP_READ; a native one becomes INT_32),
    # and the HTP validates a Cast to INT_64 only from int32 or int64: a Cast to int64 writing a graph output of the
    # model from float, float16, uint8 or bool is left to the CPU, from int32 or int64 taken; read by a CPU node
    # instead (a partition output) it is taken from float too (2.7.0, tests/gen/test_qnn_refusals.py)
    table["partitioning"]["int64_graph_output_casts_from"] = ["int32", "int64"]
    # the STFT builder reads frame_step/frame_length (and the window) as initializers without checking: fed at
    # run time the process crashes (test_stft, test_stft_with_window) or the graph does not finalize
    table["partitioning"]["build_needs_constant_inputs"] = {"STFT": [1, 2, 3]}
    # a partition whose fused node has an input or output of dynamic shape fails the session when QNN composes its
    # graph (qnn_model.cc SetGraphInputOutputInfo: "Dynamic shape is not supported yet, for input: ..."); only the
    # SHAPE_BLIND_OPS are claimed with one (sim/graph_inputs.py dynamic_input)
    table["partitioning"]["static_partition_io"] = True
    # onnxruntime-qnn 2.x is a plugin EP: its own copy of the partition wave forms the groups, ORT re-partitions
    # each and drops them all when one splits (ep_plugin_provider_interfaces.cc; seen on fasterrcnn, all CPU)
    table["partitioning"]["plugin_group_check"] = True
    # which 8/16-bit tensors reach the backend quantized: the first node unit that meets one registers it
    # (base_op_builder.cc ProcessInput), quantized only by a DQ/Q, a QDQ unit or a QOperator op; a lone DQ on a
    # plain tensor and a plain output written from a quantized input are refused (seen on
    # q_tiny_transformer.dynamo.{dyn,qop}; partsim/sim/qnn_tensors.py).  transpose_op_builder.cc: Transpose's
    # output takes the input's data type and quantization
    table["partitioning"]["quantized_tensor_types"] = True
    table["partitioning"]["quantized_passthrough_ops"] = ["Transpose"]
    # QnnEp::GetCapabilityImpl returns at once for a graph with a parent node: nothing inside If/Loop/Scan
    table["partitioning"]["subgraphs"] = "unsupported"
    # qnn_node_group/dq_matmul_integer_fusion.cc: DynamicQuantizeLinear + MatMulInteger (+ Cast, Muls, Add) as
    # one float MatMul; neither has a builder alone (seen on q_tiny_resnet.ts.dyn's classifier)
    table["partitioning"]["node_groups"] = ["dq_matmul_integer", "dq_conv_integer", "gelu",
                                           "reshape_transpose_rank6"]
    # probes whose side inputs come at run time (output shape unknown) were all refused, while a Reshape
    # whose shape input is computed from static shapes is claimed: the outputs must be static too
    table["defaults"] = {**table["defaults"], "static_outputs": True}
    if unit_types:  # the HTP backend validates a QDQ unit's quantized types as a whole
        table["partitioning"]["qdq_unit_types"] = unit_types
    extra = sorted(converted - LAYOUT_SENSITIVE_OPS)
    if extra:  # QnnEp::ShouldConvertDataLayoutForOpImpl asks for these too
        table["partitioning"]["layout_extra_ops"] = extra
    kept = sorted(claimed_sensitive - converted)
    if kept:  # layout-sensitive ops QNN claimed and ORT never converted for it (QLinearConv: its builder
        # transposes by itself, seen on q_tiny_resnet.ts.qop)
        table["partitioning"]["layout_keep_ops"] = kept
    # the pool builder computes a ceil_mode output size ONNX does not (sim/layout_checks.py; measured on the
    # maxpool/averagepool ceil node tests and tests/gen/test_qnn_refusals.py)
    table["partitioning"]["layout_checks"] = list(QNN_LAYOUT_CHECKS)
    # zero-size tensors: these builders refuse the node, the others take it and the graph then fails to compose
    # (sim/zero_size.py; measured on single-node graphs, tests/gen/test_qnn_refusals.py)
    table["partitioning"]["zero_size_tensors"] = {"fallback_ops": ["Reshape", "Slice", "Split"]}
    # the HTP takes no tensor of rank 6 or more, whatever the op (measured: no claimed node test has one,
    # 25 refused ones do; a Reshape to rank 6 between QNN nodes is refused), except inside a node group
    table["partitioning"]["max_tensor_rank"] = 5



def _ort_version(python):
    try:
        out = subprocess.run([python or sys.executable, "-c", "import onnxruntime as o; print(o.__version__)"],
                             capture_output=True, text=True, timeout=60)
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"


def _qnn_version(python):
    try:
        out = subprocess.run([python or sys.executable, "-c", "import onnxruntime_qnn as q; print(q.__version__)"],
                             capture_output=True, text=True, timeout=60, env=dict(os.environ))
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
