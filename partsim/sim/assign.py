"""Per-node provider assignment, as ORT's graph partitioner does it.

ORT (``onnxruntime/core/framework/graph_partitioner.cc``) asks each provider in
priority order for its capabilities on the nodes still unassigned.  A kernel EP
(CPU, CUDA, XNNPACK, WebGPU) claims single nodes it has a kernel for; a compiling
EP (NNAPI, CoreML, QNN, OpenVINO, TensorRT, ...) claims whole groups formed by the
wave algorithm (:mod:`partsim.sim.wave`), all-or-nothing.  The CPU EP comes last
and takes the rest.
"""

from dataclasses import dataclass, field, replace

from ..ir.order import topological_order
from ..rules.providers import CPU
from .cpu_preferred import cpu_preferred_nodes
from .facts import NO_FACTS
from .graph_io import reclaim_graph_io
from .if_branches import ifs_with_unsupported_branch
from .layout import layout_pass
from .refusals import compiled_graph_failures, kernel_creation_failures, load_refusal, whole_model_refusal
from ..rules.table import OpRule
from .match import Matcher, Rejection, accepts_other_dtypes
from .node_groups import node_group_members
from .ov_clusters import claim_ov_clusters
from .qdq import find_node_units
from .qnn_tensors import quantized_tensor_verdicts, unit_types_refusal
from .graph_inputs import graph_io_node_refusals, partition_refusals
from .plugin_groups import rejected_group
from .rounds import partition_rounds
from .wave import create_supported_groups
from .zero_size import zero_size_fallbacks

__all__ = ["Assignment", "simulate", "POLICIES", "CPU"]

POLICIES = ("per-node", "whole-graph")


@dataclass(frozen=True)
class Assignment:
    """Where every node goes, and why.

    Attributes
    ----------
    provider : tuple of str
        Per node index.
    reason : tuple
        Per node: ``None`` when it is on the first provider of the list, else a
        :class:`Rejection` (category, detail) explaining why not.
    partitions : tuple of (str, tuple of int)
        Groups claimed by compiling EPs, in claim order.
    rules : dict
        Node -> OpRule that accepted it on its provider (host-memory ports).
    caveats : dict
        Node -> tuple of (provider, note): caveats the table could not check.
    status : str
        ``ok`` or ``session_would_fail``.
    failure : str
        Why the session would fail (empty when ok).
    """

    model: object
    resolution: object  # partsim.rules.resolve.Resolution
    policy: str
    provider: tuple
    reason: tuple
    partitions: tuple
    rules: dict = field(repr=False)
    caveats: dict = field(repr=False)
    status: str = "ok"
    failure: str = ""
    failure_nodes: tuple = ()
    layout: tuple = ()  # LayoutResult per NHWC provider (partsim.sim.layout)


def _excluded_by_stop_ops(model, stop_ops):
    """ORT's ``CreateExcludedNodeSet``: stop ops and everything downstream."""
    excluded = set()
    stack = [n.index for n in model.nodes if n.op_type in stop_ops]
    while stack:
        i = stack.pop()
        if i in excluded:
            continue
        excluded.add(i)
        stack.extend(c for c, _ in model.out_edges(i))
    return excluded


def simulate(model, resolution, policy="per-node", pinned=None, facts=None):
    """Assign every node of ``model`` to a provider.

    Parameters
    ----------
    model : Model
    resolution : Resolution
        From :func:`partsim.rules.resolve.resolve_providers`.
    policy : {"per-node", "whole-graph"}
        ``whole-graph`` predicts failure when any node would need the CPU
        fallback (ORT's ``session.disable_cpu_ep_fallback=1``).
    pinned : dict, optional
        Node name -> provider for nodes ORT assigns itself after partitioning (the new
        nodes of a Level 2/3 transformer keep the EP of the nodes they replace).
    facts : SessionFacts, optional
        What ORT's pipeline knew before partitioning (:class:`partsim.sim.facts.SessionFacts`, from the
        prepare stage; its ``pinned`` is used when ``pinned`` is not given).  ``None``: a graph as written.

    Returns
    -------
    Assignment
    """
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r} (choose from {', '.join(POLICIES)})")
    facts = facts if facts is not None else NO_FACTS
    w = _Claims.start(model, resolution, facts)
    _pin(w, pinned if pinned is not None else facts.pinned)
    last = len(resolution.tables) - 1
    for k, table in enumerate(resolution.tables):
        if table.provider == CPU and k == last:
            break  # the CPU fallback below takes the rest
        _claim_for(w, table)
    no_kernel = _cpu_fallback(w, resolution)
    if w.first == CPU:
        w.first_reason = [None] * len(model.nodes)
    layout, layout_refused = layout_pass(model, resolution.tables, w.assigned, w.rules, w.late, facts.name_counter,
                                         facts.unnamed)
    for r in layout:  # the second GetCapability sees the graph the layout transformation left (sim/graph_io.py)
        reclaim_graph_io(model, r, w.io_held.get(r.provider, {}), w.assigned, w.rules, w.partitions)
    status, failure, failure_nodes = _session_status(w, resolution, policy, layout_refused, no_kernel)
    reasons = tuple(None if w.assigned[i] == w.first else w.first_reason[i] or Rejection(
        "claimed_by_higher_priority", "taken by another provider before the first choice could")
                    for i in range(len(model.nodes)))
    return Assignment(model, resolution, policy, tuple(w.assigned), reasons, tuple(w.partitions), w.rules,
                      {k: tuple(v) for k, v in w.caveats.items()}, status, failure, failure_nodes, layout)


@dataclass
class _Claims:
    """The partitioner's working state while :func:`simulate` asks one provider after another."""

    model: object
    facts: object
    order: list  # topological order of node indices
    pos: list  # node index -> position in ``order``
    scopes: dict
    first: str  # the first provider asked for
    assigned: list
    first_reason: list  # per node: why the first provider did not take it (None: not known yet)
    rules: dict = field(default_factory=dict)  # node -> the OpRule that accepted it on its provider
    caveats: dict = field(default_factory=dict)
    partitions: list = field(default_factory=list)
    refused: list = field(default_factory=list)  # why ORT would refuse the session after a compiling EP's claims
    # node-group members without a rule of their own: seen claimed only after the NHWC layout
    # transformation (q_tiny_resnet.ts.dyn's ConvIntegers keep their layout and name on QNN)
    late: set = field(default_factory=set)
    io_held: dict = field(default_factory=dict)  # provider -> {node: rule} left out only for graph I/O quantization

    @classmethod
    def start(cls, model, resolution, facts):
        n = len(model.nodes)
        order = topological_order(model)
        pos = [0] * n
        for k, i in enumerate(order):
            pos[i] = k
        first = resolution.tables[0].provider if resolution.tables else CPU
        return cls(model, facts, order, pos, model.scope_members(), first, [None] * n, [None] * n)

    def note_reason(self, i, provider, why):
        if provider == self.first and self.first_reason[i] is None:
            self.first_reason[i] = why


def _pin(w, pinned):
    """Nodes ORT assigns itself after partitioning (``pinned``: name -> provider) keep their provider."""
    for node in w.model.nodes if pinned else ():
        ep = pinned.get(node.name)
        if ep is not None:
            w.assigned[node.index] = ep
            if ep != w.first:
                w.first_reason[node.index] = Rejection(
                    "claimed_by_higher_priority", f"made on {ep} by a Level 2/3 transformer that runs after "
                    "partitioning; ORT gives new nodes the provider of the nodes they replace")


def _matches(w, table):
    """The unassigned nodes ``table`` has a rule for: ``{node: OpRule}`` (reasons noted for the others)."""
    ep, model, nodes = table.provider, w.model, w.model.nodes
    matched = {}
    match = Matcher.of(table, model).match
    for i in w.order:
        if w.assigned[i] is not None:
            continue
        rule, why = match(nodes[i])
        if rule is None:
            w.note_reason(i, ep, why)
        else:
            matched[i] = rule
    max_rank = table.option("max_tensor_rank")
    if max_rank:
        over = {i: _rank_over(model, nodes[i], max_rank) for i in matched}
        for i in [i for i, r in over.items() if r]:
            del matched[i]  # the node groups below may still take it with its group
            w.note_reason(i, ep, Rejection("rank", f"a tensor of rank {over[i]} "
                                           f"(the provider takes rank <= {max_rank})"))
    return matched


def _claim_for(w, table):
    """One provider's GetCapability over the nodes still unassigned: a compiling EP's groups, a kernel EP's nodes."""
    ep, model, nodes = table.provider, w.model, w.model.nodes
    unused = whole_model_refusal(model, table)
    if unused:
        for i in w.order:
            if w.assigned[i] is None:
                w.note_reason(i, ep, Rejection(*unused))
        return
    matched = _matches(w, table)
    if table.is_compiling:
        if table.option("node_groups"):  # fusions claimed as a whole (sim/node_groups.py)
            mains = [i for i in w.order if not nodes[i].scope and w.assigned[i] is None]
            for i in node_group_members(model, table.option("node_groups"), mains, matched):
                if i not in matched:  # a member without a builder of its own (ConvInteger, Erf ...)
                    matched[i] = OpRule(op=nodes[i].op_type, domain=nodes[i].domain)
                    if nodes[i].op_type == "ConvInteger":
                        w.late.add(i)
        w.refused.extend(_claim_groups(w, table, matched, w.io_held.setdefault(ep, {})))
    else:
        tentative = [i for i in w.order if i in matched]
        moved = set()
        if table.option("cpu_preferred_shape_nodes"):
            moved = cpu_preferred_nodes(model, w.pos, tentative, matched, w.assigned)
        for i in tentative:
            if i in moved:
                w.note_reason(i, ep, Rejection("cpu_preferred",
                                               "small shape computation on CPU tensors; ORT keeps it on the CPU"))
                continue
            w.assigned[i] = ep
            w.rules[i] = matched[i]
    for i, rule in matched.items():
        if w.assigned[i] == ep and rule.notes:
            w.caveats.setdefault(i, []).append((ep, rule.notes))


def _cpu_fallback(w, resolution):
    """The CPU takes every node left; returns ``[(node, why)]`` of those it has no kernel for."""
    model = w.model
    cpu_table = next((t for t in resolution.tables if t.provider == CPU), None)
    no_kernel = []
    cpu_match = Matcher.of(cpu_table, model).match if cpu_table is not None else None
    for i in w.order:
        if w.assigned[i] is not None:
            continue
        w.assigned[i] = CPU
        if cpu_match is None:
            continue
        rule, why = cpu_match(model.nodes[i])
        if rule is None:
            rule = _float32_behind_casts(model, cpu_table, model.nodes[i], why)
        if rule is None:
            no_kernel.append((i, why))
        else:
            w.rules[i] = rule
            if rule.notes:
                w.caveats.setdefault(i, []).append((CPU, rule.notes))
    return no_kernel


def _session_status(w, resolution, policy, layout_refused, no_kernel):
    """``(status, failure, failure nodes)`` of the session, in the order ORT meets them: its refusals at load
    (sim/refusals.py), then the whole-graph policy, a provider's refusal, a node with no kernel, and the
    refusals at kernel creation."""
    model, first = w.model, w.first
    refusal = load_refusal(model, resolution.tables, w.facts)
    if refusal:  # Model::Model / Graph::Resolve: before any provider is asked
        return "session_would_fail", refusal, ()
    cpu_fallback = [i for i in w.order if w.assigned[i] == CPU and first != CPU]
    if policy == "whole-graph" and cpu_fallback and any(t.provider != CPU for t in resolution.tables):
        names = [model.nodes[i].name for i in cpu_fallback]
        return "session_would_fail", (
            f"{len(names)} node(s) would need the CPU fallback, which the whole-graph policy "
            f"(session.disable_cpu_ep_fallback=1) forbids: {', '.join(names[:5])}"
            + (" …" if len(names) > 5 else "")), tuple(cpu_fallback)
    if w.refused or layout_refused:
        failure, failure_nodes = (w.refused or layout_refused)[0]
        return "session_would_fail", failure, failure_nodes
    if no_kernel:
        i, why = no_kernel[0]
        node = model.nodes[i]
        failure = (f"no provider has a kernel for {len(no_kernel)} node(s), e.g. "
                   f"{node.name} ({node.qualified_op}): {why.detail}")
        # what ORT says: with a device provider its Memcpy transformer meets the unassigned node first
        # (transformer_memcpy.cc, seen with CUDA 1.31.1), else the kernel lookup fails (session_state.cc)
        if any(t.provider != CPU for t in resolution.tables):
            failure += f"; ORT: Provider type for {node.op_type} node with name '{node.name}' is not set."
        else:
            failure += (f"; ORT: Could not find an implementation for {node.op_type}"
                        f"({node.since_version}) node with name '{node.name}'")
        return "session_would_fail", failure, tuple(i for i, _ in no_kernel)
    created = kernel_creation_failures(model, w.assigned, w.rules, w.order) or compiled_graph_failures(
        model, w.assigned, resolution.tables, w.order)
    if created:
        return "session_would_fail", created[0][1], tuple(i for i, _ in created)
    return "ok", "", ()


def _rank_over(model, node, limit):
    """The highest known rank above ``limit`` among ``node``'s inputs and outputs, else 0."""
    worst = 0
    for t in node.inputs + node.outputs:
        v = model.values.get(t) if t else None
        if v is not None and v.shape is not None and len(v.shape) > limit:
            worst = max(worst, len(v.shape))
    return worst


def _claim_groups(w, table, matched, held=None):
    """Claim the provider's groups, scope by scope; returns session refusals.  ``held`` (a dict, filled in)
    gets the nodes left out only for graph I/O quantization, with their rules: the layout transformation may
    move them off the graph I/O."""
    model, ep, refused = w.model, table.provider, []
    excluded, io_excluded = _exclusions(w, table, matched)

    def supported(i):
        return w.assigned[i] is None and i in matched and i not in excluded and i not in io_excluded

    for scope, members in w.scopes.items():
        if table.option("subgraphs") == "unsupported" and scope:
            for i in members:
                if i in matched:
                    w.note_reason(i, ep, Rejection("group_rejected", f"{ep} does not take nodes inside subgraphs"))
            continue
        units = _scope_units(w, table, scope, members, matched, excluded)
        if table.option("clusters") == "topological_runs":
            refused.extend(claim_ov_clusters(model, table, scope, members, supported, matched, w.assigned,
                                              w.rules, w.partitions, w.note_reason, w.facts.partition_rounds))
            continue
        if units:
            reps, in_count, down, unit_of = _unit_wave_inputs(model, members, units)

            def unit_supported(r):
                return all(supported(m) for m in unit_of[r])

            unit_members = unit_of.__getitem__
        else:  # plain nodes: the wave's inputs depend on the graph only, so they are computed once
            reps, unit_of, unit_members = members, None, None
            in_count, down = model.scope_edges(scope)
            flags = dict.fromkeys(members, False)
            for i in members:
                if i in matched and w.assigned[i] is None and i not in excluded and i not in io_excluded:
                    flags[i] = True
            unit_supported = flags.__getitem__  # supported(i), looked up without a Python call
        refused.extend(_claim_rounds(w, table, scope, members, matched, units, unit_of,
                                     (reps, in_count, down, unit_supported, unit_members)))
    if held is not None:
        held.update((i, matched[i]) for i in sorted(io_excluded - excluded) if w.assigned[i] is None)
    return refused


def _exclusions(w, table, matched):
    """Nodes ``table``'s provider leaves out before forming groups: ``(excluded, left out for graph I/O
    quantization)`` (the second kept apart: sim/graph_io.py may take them back)."""
    model, ep = w.model, table.provider
    excluded, io_excluded = set(), set()
    stop_ops = set(table.option("stop_ops", ()) or ())
    if stop_ops:
        excluded = _excluded_by_stop_ops(model, stop_ops)
    if table.option("offload_graph_io_quantization"):
        for i in _graph_io_quantization(model):
            if i in matched:
                io_excluded.add(i)
                w.note_reason(i, ep, Rejection("group_rejected", "quantization of a graph input/output is left to "
                                               "the CPU (offload_graph_io_quantization)"))
    why_if = table.option("unsupported_branch_refuses_if")
    for i, why in sorted(ifs_with_unsupported_branch(model, matched, ep).items()) if why_if else ():
        excluded.add(i)  # sim/if_branches.py
        w.note_reason(i, ep, Rejection("group_rejected", f"{why} ({why_if})"))
    zero_size = table.option("zero_size_tensors")
    if zero_size is not None:  # sim/zero_size.py
        for i, t in zero_size_fallbacks(model, list(matched), zero_size).items():
            excluded.add(i)
            w.note_reason(i, ep, Rejection("group_rejected", f"{ep} refuses {model.nodes[i].op_type} with the "
                                           f"zero-size tensor '{t}' (measured on onnxruntime-qnn 2.7.0)"))
    for i in excluded:
        if i in matched:
            w.note_reason(i, ep, Rejection("stop_op_downstream", "downstream of a stop op of this provider"))
    for i, why in graph_io_node_refusals(model, table).items():
        if i in matched:  # sim/graph_inputs.py
            excluded.add(i)
            w.note_reason(i, ep, Rejection("dtype", why))
    return excluded, io_excluded


def _scope_units(w, table, scope, members, matched, excluded):
    """The QDQ node units of one scope (``{target: members}``; empty without ``qdq_node_units``), with the
    nodes the provider refuses for their quantized tensors added to ``excluded`` (and admitted ones to
    ``matched``)."""
    model, ep = w.model, table.provider
    units = find_node_units(model, members) if table.option("qdq_node_units", False) else {}
    for t, unit in sorted(units.items()) if table.option("qdq_unit_types") else ():
        why = unit_types_refusal(model, t, unit, table.option("qdq_unit_types"))
        for i in unit if why else ():
            if i in matched:
                excluded.add(i)
                w.note_reason(i, ep, Rejection("group_rejected", why))
    if table.option("quantized_tensor_types") and not scope:  # sim/qnn_tensors.py
        # nodes already placed (an earlier provider took them) or rewritten by a Level 2/3 transformer
        # after partitioning (pipeline: the EP validated their earlier form) register no tensor here
        later = w.facts.rewritten_after_partitioning
        bad, admitted, dissolved = quantized_tensor_verdicts(
            model, [i for i in members if w.assigned[i] is None and model.nodes[i].name not in later], units, table)
        for t in dissolved:
            del units[t]
        for i, why in sorted(bad.items()):
            if i in matched:
                excluded.add(i)
                w.note_reason(i, ep, Rejection("group_rejected", why))
        for i in admitted:
            rule = None if i in matched else accepts_other_dtypes(table, model.nodes[i], model)
            if rule is not None:
                matched[i] = replace(rule, notes=(rule.notes + " " if rule.notes else "") + (
                    "on a quantized input: the output takes its data type and quantization"))
    elif table.option("lone_dq_needs_quantized_input") and not scope:
        in_unit = {m for u in units.values() for m in u}
        for i in members:
            n = model.nodes[i]
            if i in matched and i not in in_unit and n.op_type == "DequantizeLinear" and not n.domain:
                p = model.producer.get(n.inputs[0]) if n.inputs else None
                if p is not None and model.nodes[p].op_type != "QuantizeLinear":
                    excluded.add(i)
                    w.note_reason(i, ep, Rejection(
                        "group_rejected", f"a DequantizeLinear alone whose input comes from "
                        f"{model.nodes[p].op_type} (not a QuantizeLinear): the HTP backend refuses it "
                        "(seen on real QNN 2.7.0 sessions)"))
    return units


def _claim_rounds(w, table, scope, members, matched, units, unit_of, wave):
    """ORT's partitioning rounds over one scope: a later round's nodes (inlined function bodies) form
    partitions of their own (sim/rounds.py); ``wave`` is the wave algorithm's inputs.  Returns refusals."""
    model, ep, refused = w.model, table.provider, []
    reps, in_count, down, unit_supported, unit_members = wave
    for in_round in partition_rounds(w.facts.partition_rounds, members, unit_of if units else None):
        round_supported = unit_supported if in_round is None else (
            lambda r, s=unit_supported, f=in_round: f(r) and s(r))
        if table.option("plugin_group_check") and not scope:
            bad = rejected_group(model, members, units, round_supported)
            if bad is not None:  # ORT takes no group of this EP (sim/plugin_groups.py)
                why = ("ORT refused the node groups this plugin EP formed: "
                       + (f"the group with {model.nodes[bad[0]].name} is not one partition (a path leaves it and "
                          "comes back; ORT: \"set nodes that cannot be fused together\")" if bad else
                          "its partition walk did not visit every node")
                       + ", so every node of the graph goes to the next provider")
                for i in members:
                    if i in matched and (in_round is None or in_round(i)):
                        w.note_reason(i, ep, Rejection("group_rejected", why))
                continue
        groups = create_supported_groups(reps, in_count, down.__getitem__, round_supported,
                                         lambda real: _group_kept(w, table, real), unit_members=unit_members)
        if table.option("single_node_cluster_only_last") and len(groups) > 1:
            kept = []
            for k, g in enumerate(groups):
                if len(g) == 1 and k != len(groups) - 1:
                    w.note_reason(g[0], ep, Rejection("group_rejected",
                                                      "a one-node cluster that is not the last stays on the CPU"))
                else:
                    kept.append(g)
            groups = kept
        for g in groups:
            for i in g:
                w.assigned[i] = ep
                w.rules[i] = matched[i]
            w.partitions.append((ep, tuple(g)))
            refused.extend(partition_refusals(model, g, table))  # sim/graph_inputs.py
    return refused


def _group_kept(w, table, real):
    """Whether the provider keeps a group the wave closed (its size, a lone op it rejects, all-constant
    inputs); the reason is noted on each member when it does not."""
    model = w.model
    min_nodes = table.option("min_nodes", 1) or 1
    if len(real) < min_nodes:
        why = f"group of {len(real)} node(s) is below the minimum of {min_nodes}"
    elif len(real) == 1 and model.nodes[real[0]].op_type in set(table.option("reject_single_ops", ()) or ()):
        why = f"a single {model.nodes[real[0]].op_type} is not worth a partition"
    elif table.option("drop_all_constant_input_groups", False) and _all_inputs_constant(model, real):
        why = "every input of the group is a constant initializer"
    elif _all_trivial(model, real, table.option("trivial_ops")):
        why = "every node of the group is a trivial op (shape or cheap element-wise): not worth a partition"
    else:
        return True
    for i in real:
        w.note_reason(i, table.provider, Rejection("group_rejected", why))
    return False


def _all_trivial(model, real, trivial):
    """Are all nodes of the group ops the provider calls trivial (CoreML: its builders' IsTrivial)?"""
    return bool(trivial) and all(model.nodes[i].op_type in trivial and not model.nodes[i].domain for i in real)


def _float32_behind_casts(model, cpu_table, node, why):
    """The CPU rule a float16 node no provider took runs under: ORT's InsertCastTransformer
    (``optimizer/insert_cast_transformer.cc``, every level) casts its float16 inputs to float32,
    assigns it to the CPU and casts its outputs back, so a float32 kernel of the op is enough.  Not
    for nodes with subgraphs (the transformer leaves them alone).  ``None`` when it does not apply."""
    if why is None or why.category != "dtype" or node.op_type in ("If", "Loop", "Scan"):
        return None
    if not any(model.value(t).dtype == "float16" for t in node.inputs if t):
        return None
    for rule in cpu_table.rules_for(node.domain, node.op_type):
        if not rule.types or any("float" in allowed for allowed in rule.types.values()):
            return replace(rule, notes=(rule.notes + " " if rule.notes else "") + (
                "float16 inputs: ORT runs it in float32 between the Casts it inserts (InsertCastTransformer)"))
    return None


def _graph_io_quantization(model):
    """QuantizeLinear nodes reading a graph input and DequantizeLinear nodes writing a graph output
    (onnxruntime/onnxruntime-qnn ``qnn_execution_provider.cc``: with ``offload_graph_io_quantization``,
    the default, QNN leaves them to another EP)."""
    inputs, outputs = set(model.graph_inputs), set(model.graph_outputs)
    out = set()
    for n in model.nodes:
        if n.scope or n.domain not in ("", "com.microsoft"):
            continue
        if n.op_type == "QuantizeLinear" and n.inputs and n.inputs[0] in inputs:
            out.add(n.index)
        elif n.op_type == "DequantizeLinear" and n.outputs and n.outputs[0] in outputs:
            out.add(n.index)
    return out


def _unit_wave_inputs(model, members, units):
    """The wave's inputs when QDQ node units stand in for their members."""
    member_set = set(members)
    rep = {i: i for i in members}
    for target, unit in units.items():
        for m in unit:
            rep[m] = target
    reps = [i for i in members if rep[i] == i]
    unit_of = {r: units.get(r, (r,)) for r in reps}
    in_count, down = {}, {}
    for r in reps:
        inside = set(unit_of[r])
        cnt = 0
        dl = []
        for m in unit_of[r]:
            for p, _ in model.in_edges(m):
                if p in member_set and p not in inside:
                    cnt += 1
            for c, _ in model.out_edges(m):
                if c in member_set and c not in inside:
                    dl.append(rep[c])
        in_count[r] = cnt
        down[r] = dl
    return reps, in_count, down, unit_of


def _all_inputs_constant(model, group):
    members = set(group)
    for i in group:
        for t in model.nodes[i].inputs:
            if not t:
                continue
            p = model.producer.get(t)
            if p is not None and p in members:
                continue
            if not model.value(t).is_constant:
                return False
    return True
