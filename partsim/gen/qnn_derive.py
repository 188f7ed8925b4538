"""Deriving the QNN table's rules from probe evidence: what QNN claimed, per op, dtype, rank and attribute
(see :mod:`partsim.gen.qnn`).
"""

from .qnn_probes import (ATTR_ONLY, DTYPES, DYNAMIC_POSITIONS, DYNAMIC_SIDE, LAYOUT_REFUSAL, QNN_LAYOUT_CHECKS,
                         SIDE_DTYPE, _allowed)


# Cast outputs the QNN EP 2.7.0 leaves to the CPU (measured; see derive_rules)
CAST_REFUSED_OUTPUTS = ("int8", "int16", "uint16")


def qdq_unit_types(fates):
    """``{(op, ((port, dtype), ...)): fate}`` of the QDQ node-unit probes -> ``{op: [accepted port dtypes]}`` for
    the ops of which some combination was refused (a unit matching none of its op's entries is refused
    whole).  A unit claimed and then refused after the NHWC conversion counts as accepted (the node-unit
    check passed); a probe without a session says nothing."""
    by_op = {}
    for key, fate in sorted(fates.items()):
        if fate is None:
            continue
        op, combo = key
        by_op.setdefault(op, {"yes": [], "no": 0})
        if fate in (True, "layout_refusal"):
            by_op[op]["yes"].append(dict(sorted(combo)))
        else:
            by_op[op]["no"] += 1
    return {op: v["yes"] for op, v in sorted(by_op.items()) if v["no"]}


def _claimed(rec, node_name):
    if LAYOUT_REFUSAL in rec.get("create_error", "") and f"'{node_name}_token_" in rec["create_error"]:
        return "layout_refusal"  # claimed, converted to NHWC, then refused: ORT fails the session
    for ep, members in rec.get("assignment") or []:
        for m in members:
            if m[0] == node_name or m[0].startswith(node_name + "_token_"):
                return ep == "QNNExecutionProvider"
    return None


def _explained_after_layout(path, node_name):
    """Whether the node ``node_name`` of the model at ``path`` fails one of the QNN table's layout checks
    (``partitioning.layout_checks``): its refusal after the NHWC conversion is that check's, not its op's."""
    from ..io.load import load_model
    from ..sim.layout_checks import LAYOUT_CHECKS

    try:
        model = load_model(path)
    except Exception:  # a model partsim cannot read says nothing here
        return False
    node = next((n for n in model.nodes if n.name == node_name), None)
    return node is not None and any(LAYOUT_CHECKS[c](model, node) for c in QNN_LAYOUT_CHECKS)


def _features(path):
    """(op, domain, dtype of input 0, rank of input 0, node name) of a one-node model, or None."""
    import onnx

    try:
        m = onnx.shape_inference.infer_shapes(onnx.load(path, load_external_data=False))
    except Exception:
        return None
    nodes = [n for n in m.graph.node if n.op_type != "Constant"]
    if len(nodes) != 1:
        return None
    n = nodes[0]
    types = {}
    for v in list(m.graph.input) + list(m.graph.value_info) + list(m.graph.output):
        t = v.type.tensor_type
        if v.type.HasField("tensor_type"):
            types[v.name] = (t.elem_type, len(t.shape.dim) if t.HasField("shape") else None)
    for i in m.graph.initializer:
        types[i.name] = (i.data_type, len(i.dims))
    first = n.input[0] if n.input else (n.output[0] if n.output else "")
    inits = {i.name for i in m.graph.initializer}
    # a side input fed at run time (ONNX node tests feed every input so) is a reason of its own
    dyn_side = any(t and t not in inits for t in n.input[1:])
    elem, rank = types.get(first, (0, None))
    names = {v: k for k, v in onnx.TensorProto.DataType.items()}
    dtype = {"FLOAT": "float", "FLOAT16": "float16", "DOUBLE": "double", "BOOL": "bool"}.get(
        names.get(elem, ""), names.get(elem, "").lower() or None)
    attrs = {}
    for a in n.attribute:
        v = onnx.helper.get_attribute_value(a)
        if isinstance(v, bytes):
            v = v.decode(errors="replace")
        if isinstance(v, (int, float, str)):
            attrs[a.name] = v
    for k, t in enumerate(n.input):
        if k and t and types.get(t, (0,))[0]:  # the dtype of each side input (see _attr_conditions)
            name = names.get(types[t][0], "")
            attrs[f"{SIDE_DTYPE}{k}"] = {"FLOAT": "float", "FLOAT16": "float16", "DOUBLE": "double",
                                         "BOOL": "bool"}.get(name, name.lower())
    if dyn_side:
        attrs[DYNAMIC_SIDE] = "models"
        attrs[DYNAMIC_POSITIONS] = ",".join(str(k) for k, t in enumerate(n.input) if k and t and t not in inits)
    return n.op_type, n.domain, dtype, rank, n.name, attrs


def derive_rules(evidence):
    """``[(op, domain, dtype, rank, claimed)]`` -> ``{(domain, op): [predicate dicts]}``.

    Per op: the dtypes QNN claimed at least once; dtypes with the same claimed rank range share a
    rule; the range is written only where a refused rank of that dtype lies outside it.  An op
    never claimed maps to ``[]``.  A case whose fate is :data:`ATTR_ONLY` counts for the attribute
    conditions only.
    """
    by_op, cases, refusals = _evidence_by_op(evidence)
    out = {key: _op_rules(key, by_op[key], cases.get(key, ())) for key in sorted(by_op)}
    for key in sorted(refusals):
        # dtypes for which some node was claimed before the layout transformation and refused after it;
        # those claimed whole are matched by the rules above first
        for dtype, ranks in sorted(refusals[key].items()):
            known = sorted(r for r in ranks if r is not None)
            if not known:
                out.setdefault(key, []).append({"types": {"i0": [dtype]}, "layout_refusal": True})
                continue
            # one rule per run of refused ranks with no claimed rank inside: a node of a claimed rank that the
            # rules above refuse (GridSample's cubic mode at rank 4) is left to the CPU, not a layout refusal
            claimed = {x for x in by_op.get(key, {}).get(dtype, {}).get("yes", ()) if x is not None}
            runs = [[known[0]]]
            for r in known[1:]:
                if any(runs[-1][-1] < c < r for c in claimed):
                    runs.append([r])
                else:
                    runs[-1].append(r)
            for run in runs:
                out.setdefault(key, []).append({"types": {"i0": [dtype]}, "layout_refusal": True,
                                                "rank_inputs": [0], "min_rank": run[0], "max_rank": run[-1]})
    return out


def _evidence_by_op(evidence):
    """``(by_op, cases, refusals)``: per (domain, op), the claimed and refused ranks of each dtype, the cases
    the attribute conditions read, and the ranks refused after the layout conversion."""
    by_op, cases, refusals = {}, {}, {}
    for op, domain, dtype, rank, claimed, *rest in evidence:
        if claimed is None or dtype is None:
            continue
        if claimed == "layout_refusal":
            refusals.setdefault((domain, op), {}).setdefault(dtype, set()).add(rank)
            # a rank refused after the layout conversion bounds the range of the claimed ranks (GridSample:
            # 4-D taken, 5-D refused in NHWC form), so that the layout-refusal rule below can match it
            by_op.setdefault((domain, op), {}).setdefault(dtype, {"yes": set(), "no": set()})["no"].add(rank)
            continue
        if claimed == ATTR_ONLY:
            cases.setdefault((domain, op), []).append((dtype, rank, False, rest[0] if rest else {}))
            continue
        by_op.setdefault((domain, op), {}).setdefault(dtype, {"yes": set(), "no": set()})[
            "yes" if claimed else "no"].add(rank)
        cases.setdefault((domain, op), []).append((dtype, rank, claimed, rest[0] if rest else {}))
    return by_op, cases, refusals


def _op_rules(key, ranks_of_dtype, op_cases):
    """One op's rules: its dtypes grouped by the claimed rank range, with its attribute conditions."""
    groups = {}
    for dtype, r in sorted(ranks_of_dtype.items()):
        yes = {x for x in r["yes"] if x is not None}
        if not r["yes"]:
            continue
        lo, hi = (min(yes), max(yes)) if yes else (None, None)
        no = {x for x in r["no"] if x is not None}
        lo_w = lo if lo is not None and any(x < lo for x in no) else None
        hi_w = hi if hi is not None and any(x > hi for x in no) else None
        groups.setdefault((lo_w, hi_w), []).append(dtype)
    rules = []
    for (lo, hi), dtypes in sorted(groups.items(), key=lambda kv: (kv[1][0], str(kv[0]))):
        rule = {"types": {"i0": sorted(dtypes, key=DTYPES.index if all(d in DTYPES for d in dtypes) else str)}}
        if lo is not None or hi is not None:
            rule["rank_inputs"] = [0]
            if lo is not None:
                rule["min_rank"] = lo
            if hi is not None:
                rule["max_rank"] = hi
        rules.append(rule)
    conds, dtype_vetoes = _attr_conditions(rules, op_cases, _attr_defaults(key[1], key[0]))
    if conds:
        for rule in rules:
            rule["attrs"] = conds
    for k, bad in sorted(dtype_vetoes.items()):
        if key[0]:
            continue  # no ONNX schema to list the other dtypes of
        # no dtype left (the only one the schema allows was refused): the input must be absent
        # (Attention's nonpad_kv_seqlen)
        allowed = [d for d in _allowed(key[1], k) if d not in bad]
        for rule in rules:
            rule["types"][f"i{k}"] = allowed
    if key in (("", "Cast"), ("", "CastLike")):
        # the probes cast to float (float itself to float16); a Cast to bfloat16 is left to the CPU (measured on
        # onnxruntime-qnn 2.7.0, tests/gen/test_qnn_refusals.py), and the types outside DTYPES have no QNN
        # data type at all.  Cast to int8, int16 or uint16 is left to the CPU too, from every input dtype tried
        # (float, float16, int32, int64, uint8, bool), whether its output is a graph output or read by a QNN Cast
        # back to float (probes on 2.7.0, soc_model 60; tests/gen/test_qnn_refusals.py); CastLike at
        # ORT_DISABLE_ALL with a run-time type input became a Cast, so its own outputs were not told apart
        refused = CAST_REFUSED_OUTPUTS if key == ("", "Cast") else ()
        for rule in rules:
            rule["types"]["o0"] = [d for d in DTYPES if d not in refused]
    if key == ("", "Pow"):
        # the probes feed the exponent the base's dtype; QNN's ElementWisePower was never seen taking
        # another one (the pow_types_float32_int32/int64 node tests are left to the CPU)
        for rule in rules:
            rule["types"]["i1"] = list(rule["types"]["i0"])
    return rules


def usable_evidence(evidence):
    """The cases of ``evidence`` (``(op, domain, dtype, rank, fate, attrs)``) that say something about the
    op's dtype, rank and attributes, with the private markers dropped from ``attrs``.

    A node whose side inputs come at run time may be refused for that reason alone, so such a refusal is
    left out, unless QNN claimed a ``--models`` node of the same op whose run-time side inputs include
    all of these positions (the ONNX node tests feed every input at run time: QNN took
    ``test_resize_downsample_scales_linear`` with its scales so, hence its refusal of the antialiased
    variant is the attribute's doing).  Claims (also ones refused after the NHWC conversion) always count;
    a model without a session that does not load (fate ``None``) says nothing (the local-window
    Attention node tests, invalid graphs, had vetoed ``is_causal=1`` so); one QNN left to a CPU
    without a kernel for it (:data:`partsim.gen.qnn_probes.NO_KERNEL`) is a refusal (``qnn_table``).
    """
    claimed_dyn = {}
    for op, domain, dtype, rank, fate, attrs in evidence:
        if fate is True and attrs.get(DYNAMIC_SIDE) == "models":
            claimed_dyn.setdefault((domain, op), []).append(_positions(attrs))
    out = []
    for op, domain, dtype, rank, fate, attrs in evidence:
        if DYNAMIC_SIDE in attrs and fate not in (True, "layout_refusal", None):  # None: no session, no fact
            if attrs[DYNAMIC_SIDE] != "models" or not any(
                    _positions(attrs) <= seen for seen in claimed_dyn.get((domain, op), ())):
                continue
            fate = ATTR_ONLY  # not a reason to narrow the dtypes or ranks
        out.append((op, domain, dtype, rank, fate,
                    {k: v for k, v in attrs.items() if k not in (DYNAMIC_SIDE, DYNAMIC_POSITIONS)}))
    return out


def _positions(attrs):
    return frozenset(int(k) for k in str(attrs.get(DYNAMIC_POSITIONS, "")).split(",") if k)


def _static_output(model):
    import onnx

    try:
        m = onnx.shape_inference.infer_shapes(model, data_prop=True)
    except Exception:
        return False
    out = m.graph.output[0].type.tensor_type
    return out.HasField("shape") and all(d.HasField("dim_value") for d in out.shape.dim)


def _attr_defaults(op, domain):
    """Scalar attribute defaults of the op's schema (newest version)."""
    import onnx

    try:
        schema = onnx.defs.get_schema(op, domain=domain or "")
    except Exception:
        return {}
    out = {}
    for name, a in schema.attributes.items():
        if a.default_value is not None and a.default_value.name:
            v = onnx.helper.get_attribute_value(a.default_value)
            if isinstance(v, bytes):
                v = v.decode(errors="replace")
            if isinstance(v, (int, str)):
                out[name] = v
    return out


def _covers(rule, dtype, rank):
    if dtype not in rule["types"]["i0"]:
        return False
    if rank is None:
        return True
    return rule.get("min_rank", rank) <= rank <= rule.get("max_rank", rank)


def _attr_conditions(rules, cases, defaults=None):
    """``not_in`` conditions for attribute values seen only on nodes QNN refused although their dtype
    and rank are covered by ``rules`` (and never on a node it claimed; an attribute a claimed node
    leaves out counts with its schema default, ``defaults``).

    A refused node may carry several such values while one of them is the reason: the values are
    chosen greedily, the one explaining most refused nodes not yet explained first, and a value
    that explains no further node is not vetoed (the ArgMax node tests refused for
    ``select_last_index=1`` also use ``axis=-1``, which QNN takes).  Float values explain a refusal
    but are never written (a float is not a ``not_in`` value).  The dtypes of side inputs
    (:data:`SIDE_DTYPE` pseudo attributes of ``--models`` cases) compete the same way; returns
    ``(conditions, {input index: vetoed dtypes})`` (Attention with a bool ``attn_mask``).
    """
    seen_yes, refused = {}, []
    defaults = defaults or {}
    for dtype, rank, claimed, attrs in cases:
        if not claimed and not any(_covers(r, dtype, rank) for r in rules):
            continue  # refused for its dtype or rank already
        if claimed:
            for name, value in defaults.items():
                if name not in attrs:
                    seen_yes.setdefault(name, set()).add(value)
        norm = {name: (round(v, 6) if isinstance(v, float) else v) for name, v in attrs.items()}
        if claimed:
            for name, value in norm.items():
                seen_yes.setdefault(name, set()).add(value)
        else:
            refused.append(norm)
    candidates = {}  # (name, value) -> indices of the refused nodes it could explain
    for k, attrs in enumerate(refused):
        for name, value in attrs.items():
            if value not in seen_yes.get(name, set()):
                candidates.setdefault((name, value), set()).add(k)
    explained, chosen = set(), []
    while True:
        best = max(sorted(candidates, key=lambda nv: (nv[0], str(nv[1]))),
                   key=lambda nv: len(candidates[nv] - explained), default=None)
        if best is None or not candidates[best] - explained:
            break
        explained |= candidates.pop(best)
        chosen.append(best)
    bad_by_name, dtype_vetoes = {}, {}
    for name, value in chosen:
        if name.startswith(SIDE_DTYPE):
            dtype_vetoes.setdefault(int(name[len(SIDE_DTYPE):]), set()).add(value)
        else:
            bad_by_name.setdefault(name, []).append(value)
    conds = []
    for name in sorted(bad_by_name):
        bad = sorted(v for v in bad_by_name[name] if isinstance(v, (int, str)))
        if bad and all(type(v) is type(bad[0]) for v in bad):
            conds.append({"name": name, "not_in": bad})
    return conds, dtype_vetoes


