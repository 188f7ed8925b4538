"""The OpenVINO plugin EP table, measured: real ``onnxruntime-ep-openvino`` 1.8.1 sessions on one-node probes.

``partsim rules import openvino-plugin --python .venv-ovplugin/harness/python --evidence FILE.jsonl -o
rules/openvino.yaml`` (``make openvino-plugin``; on a non-Intel CPU the interpreter is the observation harness
of ``tests/ovplugin_harness.py``, whose plugin library differs from the shipped one in the CPU-vendor
comparison only).  The plugin's own sources were not found in the stored public repositories (its error
messages name ``third_party/openvino-plugin-ep/plugin/ov_compute.h``), so every fact here is measured:

1. *Op probes.*  The WebGPU probe set (:mod:`partsim.gen.webgpu`, the QNN one-node builders): every op partsim
   can build, at each schema version opsets 21-25 resolve to (element-wise ops: every version since opset 7),
   every dtype the schema allows on the probed input (Cast: every from/to pair; Pow: the exponent), plus
   ``bfloat16`` wherever the schema allows it.  Each probe graph also holds a separate chain of three float
   Relus (listed first): the EP's "small graph" rule (a graph of at most three nodes starting with one of
   ``ops_supported_only_in_model``) then never decides the probed node, which is judged on its own.
2. *Alone probes.*  The same op, float, newest version, as the only node: claimed with the chain but not alone
   -> ``small_graph_reject_ops``; a session failure alone -> recorded.
3. *Graph probes* (:data:`GRAPH_PROBES`): a one-node cluster that is not the last, control flow, Pad modes,
   an input of unknown rank, ConvInteger with a rank-0 zero point; each decides one partitioning option.

Support is read off ORT's assignment info (``session.record_ep_graph_assignment_info``): the probed node on
``OpenVINOExecutionProvider`` = claimed; on the CPU = refused; a session ORT refused after the EP claimed the
node (the EP's compile: "EP_FAIL", OpenVINO's frontend or plugin) = ``compile_failure`` (a model ORT
cannot load at all is no evidence).  The base of the table is the 1.24.1 table
(:func:`partsim.gen.openvino.openvino_table_dict`): ops never probed keep its rules.  Same evidence -> same
table, byte for byte.  The evidence file is also a cache: probes already in it are not run again.
"""

import json
from pathlib import Path

from .openvino_plugin_graphs import GRAPH_PROBES
from .openvino_plugin_op_builders import BF16, OWN_BUILDERS, U64
from .qnn_probes import DTYPES, _tp
from .webgpu import PROBE_OPSETS

__all__ = ["probe_specs", "build_spec", "derive_table", "openvino_plugin_table", "read_evidence", "GRAPH_PROBES",
           "EVIDENCE"]

OPENVINO = "OpenVINOExecutionProvider"
PLUGIN = "onnxruntime-ep-openvino 1.8.1 (OpenVINO 2026.4.1)"
#: the recorded probe sessions the shipped table is derived from (repository path)
EVIDENCE = "rules/sources/openvino-plugin-1.8.1-probes.jsonl"
#: the float chain every op probe carries (listed before the probed node)
CHAIN = ("c0_Relu", "c1_Relu", "c2_Relu")
#: graph probes of an If whose branch holds an op the plugin refuses (LpPool in either branch, Det, ONNX's
#: test_if_seq: Constant -> SequenceConstruct)
UNSUPPORTED_BRANCH_PROBES = ("if_lppool_then_branch", "if_lppool_else_branch", "if_det_branch",
                             "if_sequence_constant")


def _schema(op, opset):
    import onnx

    try:
        return onnx.defs.get_schema(op, opset)
    except Exception:  # no such op at that opset
        return None


def _allows(schema, k, dtype):
    if schema is None or len(schema.inputs) <= k:
        return False
    tc = schema.inputs[k].type_str
    for c in schema.type_constraints:
        if c.type_param_str == tc:
            return f"tensor({dtype})" in c.allowed_type_strs
    return tc == f"tensor({dtype})"


def probe_specs():
    """Every probe as a tuple ``(kind, op, since, opset, *dtypes)``, sorted and without repeats."""
    from .webgpu import _probed_input
    from .webgpu import probe_specs as webgpu_specs

    specs = set()
    newest = {}
    for spec in webgpu_specs():
        kind, op, since, opset, *dtypes = spec
        if kind not in ("dtype", "cast", "pow_exponent"):
            continue
        specs.add(spec)
        if kind == "dtype":
            newest[op] = max(newest.get(op, (0, 0)), (since, opset))
            # dtypes the QNN builders do not make: bfloat16 (from the float16 probe), uint64 (from the uint32 one)
            for made, src in ((BF16, "float16"), (U64, "uint32")):
                if dtypes[0] == src and _allows(_schema(op, opset), _probed_input(op), made):
                    specs.add(("dtype", op, since, opset, made))
        elif kind == "pow_exponent" and dtypes[0] == "uint32" and _allows(_schema(op, opset), 1, U64):
            specs.add(("pow_exponent", op, since, opset, U64))
        elif kind == "cast" and _allows(_schema(op, opset), 0, BF16):
            specs.add(("cast", op, since, opset, BF16, dtypes[1]) if dtypes[1] != BF16 else spec)
            specs.add(("cast", op, since, opset, dtypes[0], BF16))
    specs = {s for s in specs if not (s[0] == "cast" and s[4] == s[5])}
    for op, (dtypes, _build) in OWN_BUILDERS.items():
        seen = set()
        for opset in PROBE_OPSETS:
            schema = _schema(op, opset)
            if schema is not None and schema.since_version not in seen:
                seen.add(schema.since_version)
                specs.update(("dtype", op, schema.since_version, opset, d) for d in dtypes)
    for op, (since, opset) in newest.items():
        specs.add(("alone", op, since, opset, "float"))
    specs.update(("graph", name, 0, GRAPH_PROBES[name][0], "float") for name in GRAPH_PROBES)
    return sorted(specs)


def _retype(m, src, dst):
    """The probe with every tensor of dtype ``src`` made ``dst`` (bfloat16 from float16: same byte size, the
    data is no matter; uint64 from uint32: initializers converted)."""
    import numpy as np
    from onnx import TensorProto, numpy_helper

    a, b = {"float16": (TensorProto.FLOAT16, TensorProto.BFLOAT16),
            "uint32": (TensorProto.UINT32, TensorProto.UINT64)}[src]
    for vi in list(m.graph.input) + list(m.graph.output):
        if vi.type.tensor_type.elem_type == a:
            vi.type.tensor_type.elem_type = b
    for k, t in enumerate(m.graph.initializer):
        if t.data_type == a and b == TensorProto.UINT64:
            m.graph.initializer[k].CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t).astype(np.uint64), t.name))
        elif t.data_type == a:
            t.data_type = b
    for node in m.graph.node:
        for attr in node.attribute:
            if attr.name == "to" and attr.i == a:
                attr.i = b
            if attr.name == "value" and attr.t.data_type == a:
                if b == TensorProto.UINT64:
                    attr.t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(attr.t).astype(np.uint64)))
                else:
                    attr.t.data_type = b
    return m


def _cast_model(src, dst):
    from onnx import TensorProto
    from onnx import helper as h

    tp = {**{d: _tp(d) for d in DTYPES}, BF16: TensorProto.BFLOAT16}
    node = h.make_node("Cast", ["x"], ["y"], name="n0_Cast", to=tp[dst])
    g = h.make_graph([node], "probe_Cast", [h.make_tensor_value_info("x", tp[src], [2, 3, 4, 5])],
                     [h.make_tensor_value_info("y", tp[dst], [2, 3, 4, 5])])
    return h.make_model(g)


def _with_chain(m):
    """``m`` with three float Relus on an input of their own, listed first."""
    from onnx import helper as h

    names = ["z", "z0", "z1", "zz"]
    chain = [h.make_node("Relu", [names[k]], [names[k + 1]], name=CHAIN[k]) for k in range(3)]
    nodes = chain + list(m.graph.node)
    del m.graph.node[:]
    m.graph.node.extend(nodes)
    m.graph.input.append(h.make_tensor_value_info("z", _tp("float"), [3]))
    m.graph.output.append(h.make_tensor_value_info("zz", _tp("float"), [3]))
    return m


def build_spec(spec):
    """The ModelProto of one probe."""
    from .webgpu import build_spec as webgpu_build

    kind, op, since, opset, *dtypes = spec
    if kind == "graph":
        m = GRAPH_PROBES[op][1]()
    elif kind == "cast":
        m = _with_chain(_cast_model(*dtypes))
    elif kind == "alone":
        m = webgpu_build(("dtype", op, since, opset, "float"))
    elif op in OWN_BUILDERS:
        m = _with_chain(OWN_BUILDERS[op][1](dtypes[0], opset))
    elif dtypes[0] in (BF16, U64):
        src = "float16" if dtypes[0] == BF16 else "uint32"
        m = _with_chain(_retype(webgpu_build((kind, op, since, opset, src)), src, dtypes[0]))
    else:
        m = _with_chain(webgpu_build(spec))
    if kind != "graph":
        del m.opset_import[:]
        from onnx import helper as h

        m.opset_import.append(h.make_opsetid("", opset))
    m.ir_version = 10
    return m


# --- evidence ---------------------------------------------------------------------------------------------------

_UNUSABLE = ("Load model", "INVALID_GRAPH", "INVALID_ARGUMENT", "session child", "no record", "NOT_IMPLEMENTED")


def fate(rec, name):
    """``claimed``, ``refused``, ``failed`` (ORT refused the session after the EP claimed the node) or
    ``unusable`` (no evidence either way) for node ``name`` of a probe's record."""
    if rec.get("assignment") is not None:
        on = {n[0] for ep, nodes in rec["assignment"] if ep == OPENVINO for n in nodes}
        return "claimed" if name in on else "refused"
    err = str(rec.get("create_error") or "")
    if "Could not find an implementation" in err:
        return "refused"
    if "EP_FAIL" in err or "OpenVINO" in err:
        return "failed"
    return "unusable" if any(s in err for s in _UNUSABLE) or err else "unusable"


def probe_name(spec):
    return f"n0_{spec[1]}"


def read_evidence(path):
    """``{spec: record}`` of an evidence JSONL file written by :func:`write_evidence` (read bounded, each line
    checked against ``probe-evidence.schema.json``: a damaged file is one usage error naming it and the line)."""
    from ..io.structured import read_jsonl

    return {tuple(row["spec"]): row["record"] for _, row in read_jsonl(path, "probe-evidence", what="probe evidence")}


def run_probes(specs, python=None, cache=None, work=None):
    """``{spec: record}``: records of ``cache`` (an evidence JSONL file) reused, the rest run as real sessions."""
    from .qnn import probe_specs_as_models

    known = read_evidence(cache) if cache and Path(cache).is_file() else {}
    todo = [s for s in specs if s not in known]
    if todo:
        for spec, rec in probe_specs_as_models(todo, build_spec, OPENVINO, "partsim-ovplugin-probes-", python, work):
            if "create_error" in rec:
                rec["create_error"] = rec["create_error"][:300]
            known[spec] = rec
    return {s: known[s] for s in specs}


def _compact(rec):
    """The record without the Relu chain's placement (always the EP's where the session ran: no evidence)."""
    if rec.get("assignment") is None:
        return rec
    groups = [[ep, [n for n in nodes if n[0] not in CHAIN]] for ep, nodes in rec["assignment"]]
    return dict(rec, assignment=[g for g in groups if g[1]])


def write_evidence(path, evidence):
    from ..report.output import atomic_write

    atomic_write(path, "".join(json.dumps({"spec": list(s), "record": _compact(r)}, sort_keys=True) + "\n"
                               for s, r in sorted(evidence.items())))


# --- the table ----------------------------------------------------------------------------------------------------

def _first_since(op):
    from ..ir.schemas import onnx_schema_history

    sinces = [s.since_version for s in onnx_schema_history(op)]
    return min(sinces), max(sinces)


def _port(kind, op):
    from .webgpu import _probed_input

    if kind == "pow_exponent":
        return "i1"
    return "o0" if op == "ConstantOfShape" else f"i{_probed_input(op)}"


def _short(err):
    """The telling line of an ORT error (its first line, the ORT prefix dropped)."""
    line = " ".join(str(err).split())
    for cut in ("EP_FAIL : ", "[ONNXRuntimeError] : "):
        if cut in line:
            line = line.split(cut, 1)[1]
    return line[:160]


def _op_evidence(evidence):
    """Per (op, since): dtypes claimed and dtypes whose session failed (with the error), per port."""
    claims, fails, probed, cast_pairs = {}, {}, set(), {}
    for spec, rec in sorted(evidence.items()):
        kind, op, since, _opset, *dtypes = spec
        if kind not in ("dtype", "cast", "pow_exponent"):
            continue
        f = fate(rec, probe_name(spec))
        if f == "unusable":
            continue
        probed.add((op, since))
        if kind == "cast":
            if f == "claimed":
                cast_pairs.setdefault(since, set()).add((dtypes[0], dtypes[1]))
            elif f == "failed":
                fails.setdefault((op, since), {}).setdefault("i0", {})[dtypes[0]] = _short(rec["create_error"])
            continue
        port = _port(kind, op)
        if f == "claimed":
            claims.setdefault((op, since), {}).setdefault(port, set()).add(dtypes[0])
        elif f == "failed":
            fails.setdefault((op, since), {}).setdefault(port, {})[dtypes[0]] = _short(rec["create_error"])
    for since, pairs in cast_pairs.items():
        claims[("Cast", since)] = {"i0": {a for a, _ in pairs}, "o0": {b for _, b in pairs}}
    return claims, fails, probed


def _measured_rules(claims, fails, probed):
    """One rule per probed schema version range and outcome; failing dtypes first (ORT takes the first rule
    that matches)."""
    out = []
    for op in sorted({o for o, _ in probed}):
        sinces = sorted(s for o, s in probed if o == op)
        first, newest = _first_since(op)
        for k, since in enumerate(sinces):
            lo = first if k == 0 else since
            hi = sinces[k + 1] - 1 if k + 1 < len(sinces) else max(since, newest)
            bad = fails.get((op, since))
            if bad:
                errs = sorted({e for port in bad.values() for e in port.values()})
                out.append({"op": op, "versions": [lo, hi],
                            "types": {p: sorted(d) for p, d in sorted(bad.items())},
                            "compile_failure": f"measured: the plugin claims it and the session fails ({errs[0]})"})
            ok = claims.get((op, since))
            if ok:
                out.append({"op": op, "versions": [lo, hi], "types": {p: sorted(d) for p, d in sorted(ok.items())}})
    return out


def _graph_fates(evidence):
    """Per graph probe: ``(node name -> fate, error)``; ``__alone__``: op -> fate of its alone probe."""
    res = {"__alone__": {}}
    for spec, rec in evidence.items():
        if spec[0] == "alone":
            res["__alone__"][spec[1]] = fate(rec, probe_name(spec))
        if spec[0] != "graph":
            continue
        nodes = [n for n in build_spec(spec).graph.node]
        res[spec[1]] = ({n.name: fate(rec, n.name) for n in nodes}, _short(rec.get("create_error") or ""))
    return res


def _small_graph_ops(evidence, claims):
    """Ops claimed next to the Relu chain but refused as the only node of a graph."""
    out = []
    for spec, rec in sorted(evidence.items()):
        kind, op, since, _opset, _dtype = spec if len(spec) == 5 else (None,) * 5
        if kind == "alone" and fate(rec, probe_name(spec)) == "refused" and "float" in (
                claims.get((op, since)) or {}).get(_port("dtype", op), ()):
            out.append(op)
    return sorted(set(out))


def _graph_rules(graphs):
    """Rules the graph probes measured: Pad modes and If whose session fails after the EP claimed them."""
    rules, notes = [], []
    failing_pads = sorted(name[len("pad_"):] for name, got in graphs.items()
                          if name.startswith("pad_") and got[0].get("P") == "failed")
    if failing_pads:
        err = graphs[f"pad_{failing_pads[0]}"][1]
        rules.append({"op": "Pad", "attrs": [{"name": "mode", "in": failing_pads, "default": "constant"}],
                      "compile_failure": f"measured: a Pad of mode {', '.join(failing_pads)} is claimed and "
                                         f"OpenVINO's frontend fails ({err})"})
    failing_resize = sorted(name[len("resize_"):] for name, got in graphs.items()
                            if name.startswith("resize_") and got[0].get("P") == "failed")
    if failing_resize:
        err = graphs[f"resize_{failing_resize[0]}"][1]
        rules.append({"op": "Resize", "attrs": [{"name": "coordinate_transformation_mode", "in": failing_resize,
                                                 "default": "half_pixel"}],
                      "compile_failure": f"measured: a Resize of coordinate_transformation_mode "
                                         f"{', '.join(failing_resize)} is claimed and OpenVINO's frontend fails ({err})"})
    for op in ("RNN", "GRU", "LSTM"):
        fates, err = graphs.get(f"{op.lower()}_batchwise", ({}, ""))
        if fates.get("P") == "failed":  # measured with Y_h used; with Y alone the batchwise node ran (same probe)
            rules.append({"op": op, "attrs": [{"name": "layout", "in": [1], "default": 0}], "max_outputs": 1})
            rules.append({"op": op, "attrs": [{"name": "layout", "in": [1], "default": 0}],
                          "compile_failure": f"measured: a batchwise (layout 1) {op} whose Y_h is used is claimed "
                                             f"and the session fails ({err})"})
    grid = [graphs[n] for n in sorted(graphs) if n.startswith("gridsample5d_")]
    if grid and all(g[0].get("P") == "failed" for g in grid):  # every mode and align_corners probed
        rules.append({"op": "GridSample", "min_rank": 5, "rank_inputs": [0],
                      "compile_failure": f"measured: a volumetric (5-D) GridSample is claimed and OpenVINO's "
                                         f"frontend fails ({grid[0][1]})"})
    for op in ("Loop", "Scan"):  # control flow with a body: claimed as a whole (graph probes loop, scan)
        if graphs.get(op.lower(), ({}, ""))[0].get("P") == "claimed":
            rules.append({"op": op})
    if "if_node" in graphs:
        fates, err = graphs["if_node"]
        if fates.get("IF") == "failed":
            rules.append({"op": "If", "compile_failure": f"measured: an If is claimed and the session fails ({err})"})
        notes.append(f"If (graph probe if_node): {fates.get('IF')}.")
    seq = graphs.get("sequence_chain", ({}, ""))[0]
    if seq:
        notes.append(f"SequenceConstruct, SequenceAt (graph probe sequence_chain): {seq.get('SC')}, {seq.get('SA')}.")
    fates, err = graphs.get("unknown_input_static_output", ({}, ""))
    if fates.get("D") == "failed" and graphs.get("unknown_input_dynamic_output", ({}, ""))[0].get("D") == "claimed":
        notes.append("A claimed node whose graph output is declared with a static shape fails when OpenVINO "
                     f"cannot know the output's rank (an input of unknown shape: {err.split(' - ', 1)[-1]}); declared with "
                     "symbolic dimensions it runs (graph probes unknown_input_static_output, "
                     "unknown_input_dynamic_output; not simulated).")
    cut = [op for op, name in (("NonZero", "nonzero_split_graph"), ("TopK", "topk_split_graph"))
           if graphs.get(name, ({}, ""))[0].get("P") == "claimed"]
    if cut:
        notes.append(f"{' and '.join(cut)} are claimed in a graph the EP splits (1.24.1's InsertNode cut them out).")
    return rules, notes


def _op_of_alone(name):
    """The op of an ``<op>_alone`` / ``<op>_one_input_alone`` graph probe."""
    return {"dropout": "Dropout", "identity": "Identity", "max": "Max", "sum": "Sum", "min": "Min", "mean": "Mean",
            "relu": "Relu"}[name.split("_")[0]]


def _partitioning(base, graphs, small):
    part = dict(base["partitioning"])
    for measured_on_1_24 in ("dynamic_rank_fails", "dynamic_reduce_axes_fails", "unknown_rank_partition_input_fails",
                             "unknown_rank_input_refuses_model", "uneven_split_fails"):  # the plugin's are its own probes'
        part.pop(measured_on_1_24, None)
    fates = graphs.get("single_not_last", ({}, ""))[0]
    if fates.get("A") in ("claimed", "refused") and fates.get("LP") == "refused":
        part["single_node_cluster_only_last"] = fates["A"] == "refused"
    fates = graphs.get("conv_integer_scalar_zp", ({}, ""))[0]
    if fates.get("CI") == "claimed" and "ConvInteger" not in part["no_dimension_ops"]:
        part["no_dimension_ops"] = sorted(part["no_dimension_ops"] + ["ConvInteger"])
    fates, err = graphs.get("unsqueeze_runtime_axes", ({}, ""))
    if fates.get("U") == "failed" and graphs.get("unknown_rank", ({}, ""))[0].get("R0") == "claimed":
        # a graph input of unknown rank is fine (probe unknown_rank); a node whose output's rank is only known at
        # run time (an Unsqueeze of run-time axes) fails OpenVINO's CPU plugin
        part["dynamic_rank_fails"] = f"measured: a claimed node whose output has no known rank fails ({err[:120]})"
    part["small_graph_reject_ops"] = small
    passthrough = sorted(graphs[name][0]["P"] and _op_of_alone(name) for name in graphs
                         if name.endswith("_alone") and graphs[name][0].get("P") == "failed")
    if passthrough:  # the node's output is its graph input: the compiled model loses the input's name
        part["passthrough_fail_ops"] = passthrough
    fates, err = graphs.get("maxpool22_ceil_reduce_by_one", ({}, ""))
    if (fates.get("P") == "failed" and graphs.get("maxpool22_ceil_output", ({}, ""))[0].get("P") == "claimed"
            and graphs.get("maxpool_ceil_reduce_by_one_output", ({}, ""))[0].get("P") == "claimed"):
        # MaxPool-22 whose ceil_mode output ONNX shortens (the last window would start past the input) fails;
        # MaxPool-12 in the same case and MaxPool-22 otherwise ran
        part["pool_ceil_output_fails"] = f"measured: a MaxPool-22 whose ceil_mode output ONNX shortens by one " \
                                         f"fails ({err[:100]})"
    fates, err = graphs.get("zero_size_axes", ({}, ""))
    if fates.get("P") == "failed":
        part["zero_size_input_fails"] = f"measured: a claimed node reading a graph input with a zero-sized " \
                                        f"dimension fails ({err[:100]})"
    if (fates.get("P") == "failed"
            and all(graphs.get(n, ({}, ""))[0].get(node) == "failed"
                    for n, node in (("if_implicit_empty_input", "IF"), ("loop_implicit_empty_input", "LP")))
            and all(graphs.get(n, ({}, ""))[0].get("IF") == "claimed"
                    for n in ("if_implicit_input", "if_implicit_empty_tensor"))):
        # the same If reading a graph input of two elements, or an empty vector a claimed Slice makes, ran
        err = graphs["if_implicit_empty_input"][1]
        part["zero_size_subgraph_input_fails"] = f"measured: a claimed If or Loop whose branch or body reads an " \
                                                 f"empty vector graph input (shape [0]) from the outer graph " \
                                                 f"fails ({err[:100]})"
    fates, err = graphs.get("if_empty_constant_branch", ({}, ""))
    if fates.get("IF") == "failed" and graphs.get("if_constant_branch", ({}, ""))[0].get("IF") == "claimed":
        # the same If with a Constant of one or more elements ran (probe if_constant_branch)
        part["empty_constant_branch_fails"] = f"measured: a claimed If whose branch holds a Constant of no " \
                                              f"element fails ({err[:100]})"
        if graphs.get("if_implicit_empty_initializer", ({}, ""))[0].get("IF") == "claimed":
            part["empty_constant_branch_fails"] += "; one reading an empty initializer of the outer graph ran"
    fates, err = graphs.get("if_split_empty_last_chunk", ({}, ""))
    if (fates.get("IF") == "failed" and graphs.get("split_uneven", ({}, ""))[0].get("SP") == "claimed"
            and all(graphs.get(n, ({}, ""))[0].get("SP") == "failed"
                    for n in ("split_empty_last_chunk", "split_uneven_negative_axis"))):
        # an uneven Split-18 whose last chunk holds an element ran (probe split_uneven)
        part["uneven_split_fails"] = "measured: a Split-18 by num_outputs of an uneven static length fails along " \
                                     "a negative axis or when its last chunk holds no element, also in a branch of " \
                                     "a claimed If (OpenVINO's ONNX frontend: \"Model wasn't fully converted\", " \
                                     "Split-18)"
    branch_fates = [graphs.get(name, ({}, ""))[0].get("IF") for name in UNSUPPORTED_BRANCH_PROBES]
    if graphs.get("if_node", ({}, ""))[0].get("IF") == "claimed" and all(f == "refused" for f in branch_fates):
        # the same If with Relu/Neg branches is claimed (probe if_node): the branch's node decides
        part["unsupported_branch_refuses_if"] = "measured: an If whose branch holds a node the plugin does not " \
                                                "take (LpPool, Det, SequenceConstruct) is left to the CPU"
    alone = graphs.get("__alone__", {})
    if alone.get("Expand") == "claimed":  # 1.24.1's SpecialConditionForClusterSizeOne left a float Expand alone
        part["single_node_graph_checks"] = False
    if graphs.get("scalar_chain", ({}, ""))[0].get("R0") == "claimed":  # no rank-0 refusal (1.24.1 had one)
        part.pop("no_dimension_ops", None)
    fates = graphs.get("conv_escape", ({}, ""))[0]
    if fates.get("CONV") == "claimed" and fates.get("LP") == "refused":
        part.pop("escaping_output_ops", None)
    part.pop("unsupported_op_modes", None)  # 1.24.1's data_ops.cc op_list_: not measured on the plugin
    part.pop("runtime_max_onnx_opset", None)  # onnxruntime 1.31.1 loads opset 26
    return part


def derive_table(base, evidence):
    """The measured plugin table from the 1.24.1 table ``base`` (a dict) and ``evidence`` ``{spec: record}``."""
    claims, fails, probed = _op_evidence(evidence)
    graphs = _graph_fates(evidence)
    probed_ops = {op for op, _ in probed}
    special, graph_notes = _graph_rules(graphs)
    special_ops = {r["op"] for r in special if not r.get("attrs")}  # replace the op's rules; the others come first
    # every probed op the plugin claims, it claims for every dtype ORT can load: ops never probed keep 1.24.1's
    # op list without its dtype lists
    kept = [{k: v for k, v in r.items() if k != "types"} for r in base["ops"]
            if (r.get("domain") or r["op"] not in probed_ops) and not (not r.get("domain") and r["op"] in special_ops)]
    rest = _measured_rules(claims, fails, probed) + kept
    rest.sort(key=lambda r: (r.get("domain", ""), r["op"], r.get("versions", [0])[0], "compile_failure" not in r))
    ops = special + rest  # ORT-like first match: the measured special cases before the op's general rules
    table = {k: v for k, v in base.items() if k not in ("variant", "ops", "notes", "partitioning", "source")}
    table["variant"] = "1.8"
    table["default_variant"] = True
    table["source"] = {
        "description": "measured: real onnxruntime-ep-openvino 1.8.1 sessions (onnxruntime 1.31.1, device CPU, "
                       "INFERENCE_PRECISION_HINT f32) on one-node and graph probes (partsim/gen/openvino_plugin.py); "
                       "ops never probed keep the onnxruntime-openvino 1.24.1 rules (data_ops.cc)",
        "version": PLUGIN, "generated_by": "partsim rules import openvino-plugin",
        "describes": {"onnxruntime-ep-openvino": "1.8.1"}}
    table["partitioning"] = _partitioning(base, graphs, _small_graph_ops(evidence, claims))
    n_fail = sum(1 for r in ops if "compile_failure" in r)
    table["notes"] = [
        f"{len(evidence)} probe sessions: {len(probed)} (op, version) pairs probed, {len(claims)} claimed, "
        f"{n_fail} rules whose session fails after the claim.",
        "dtypes measured on the probed input (ports i0/o0; Pow's exponent i1): every probed op the plugin takes, "
        "it takes in every dtype the schema allows (float64 and bfloat16 too).  Ops never probed (com.microsoft "
        "ops, RNNs, NonMaxSuppression ...) keep the 1.24.1 op list, without dtype lists.",
    ] + graph_notes + ([n for n in base["notes"] if n.startswith("Rank-0")]
                       if "no_dimension_ops" in table["partitioning"] else [])
    table["ops"] = ops
    return table


def openvino_plugin_table(python=None, evidence=None, work=None):
    """YAML text of the measured plugin table (``evidence``: the probe cache, read and rewritten)."""
    from .openvino import openvino_table_dict
    from .yamlout import dump_table

    got = run_probes(probe_specs(), python=python, cache=evidence, work=work)
    if evidence:
        write_evidence(evidence, got)
    if not any(r.get("assignment") is not None for r in got.values()):
        from ..errors import UsageError

        first = next(iter(got.values()), {})
        raise UsageError(f"no OpenVINO plugin session could be created: {first.get('create_error', '?')}")
    header = ("OpenVINO plugin EP onnxruntime-ep-openvino 1.8.1 (OpenVINO 2026.4.1), device CPU: the default\n"
              "`openvino` table, measured by partsim/gen/openvino_plugin.py on real plugin sessions\n"
              "(evidence: rules/sources/openvino-plugin-1.8.1-probes.jsonl).  The legacy build: openvino-1.24.yaml.")
    return dump_table(derive_table(openvino_table_dict(), got), header)
