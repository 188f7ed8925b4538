"""From a model file to the graph ORT partitions at a level, for a provider list.

The steps, in ORT's order (``../shared/ORT-PIPELINE.md``): EP-aware function inlining,
EnsureUniqueDQForNodeUnit, then (``basic`` and above) ORT's own optimizer through
:func:`partsim.runtime.ort_pipeline.pipeline_graph`.  Returns the partsim IR of that graph and the
``origin`` of every node.
"""

import hashlib
from dataclasses import dataclass, field, replace
from typing import Mapping

from ..errors import ModelError
from ..io.subgraphs import body_outputs
from .ort_node_order import fields_key as _key, name_unnamed as _name_unnamed, node_key as _node_key
from .ort_node_order import orts_index_order as _orts_index_order
from .function_claims import body_function_claims, claimers, function_claims, inline_bodies, untyped_functions
from ..sim.facts import NO_FACTS, SessionFacts

__all__ = ["prepare", "PreparedGraph", "Prepared", "WrittenSource", "function_claims"]

CPU = "CPUExecutionProvider"


def _written_names(original, proto):
    """Every node and tensor name of the model as written (``original``: its node names)."""
    written = set(original)
    for n in proto.graph.node:
        written.update(n.input[:])
        written.update(n.output[:])
    written.update(t.name for t in proto.graph.initializer)
    return written


def _name_counter(model, written):
    """Where ``Graph``'s name counter stands when partitioning starts: ORT's rewrites before it (inlining,
    Level 1) named nodes and values ``<base>_token_<k>`` from one counter (``Graph::GenerateNodeName`` /
    ``GenerateNodeArgName``, graph/graph.cc), which the layout transformation continues; names the model
    as written has (``written()``: :func:`_written_names`, asked only when some name has a token) do not
    count."""
    import re

    token = re.compile(r"_token_(\d+)$")
    found = []
    for names in ([n.name for n in model.nodes], model.values):
        for name in names:
            if "_token_" in name:
                m = token.search(name)
                if m:
                    found.append((name, int(m.group(1))))
    if not found:
        return 0
    written_names = written()
    return max((k for name, k in found if name not in written_names), default=-1) + 1


@dataclass(frozen=True)
class PreparedGraph:
    """The prepare stage's record: the graph ORT partitions at ``level``, and what ORT's pipeline knew.

    model
        The partsim IR of that graph (read-only).
    origins
        Node name -> origin (``model``, ``inlined:<op>``, ``fused:<transformer>`` …).
    level
        The level it was prepared at.
    failure
        ORT's message when ORT itself cannot build the session ("" otherwise).
    notes
        Warnings for the summary.
    facts
        :class:`~partsim.sim.facts.SessionFacts`: name counter, partitioning rounds, nodes rewritten after
        partitioning, nodes ORT pinned — what the simulation needs beyond the graph.
    whole_functions
        Function nodes kept whole because a requested provider's table claims them.
    typed_functions
        Context-dependent function nodes kept whole, whose dtypes a later pass checks
        (:func:`partsim.runtime.function_claims.untyped_functions`).
    stand_in
        Absent external-data files, when ORT's optimizer ran on stand-in weights (``None``: none).
    """

    model: object
    origins: Mapping = field(default_factory=dict)
    level: str = "disable"
    failure: str = ""
    notes: tuple = ()
    facts: SessionFacts = NO_FACTS
    whole_functions: frozenset = frozenset()
    stand_in: object = None
    source: object = None  # WrittenSource: what the model as written gave (ORT's levels; reused by a second pass)
    typed_functions: frozenset = frozenset()  # context-dependent function nodes kept whole (level disable)

    @property
    def pinned(self):
        return self.facts.pinned


Prepared = PreparedGraph  # the older name


def _written_keys(original):
    """``{key: ORT node index}`` of the main-graph nodes of the model as written.  A node is keyed by
    its name, an unnamed one by its first output (kept through ORT's rewrites).  ORT's index is
    the node's position when the graph was loaded, Constant nodes not counted (they become
    initializers, ``graph.cc``)."""
    return _Written(original).read_nodes()[0]


def _loaded_count(proto):
    """How many nodes ORT's graph has when ``proto`` is loaded (Constant nodes become initializers)."""
    return _Written(proto).read_nodes()[1]


def _inline(proto, resolution, unclaimed, names=None, rounds=None):
    """partsim's EP-aware inlining of ``proto`` in place (the function nodes no provider of
    ``resolution`` claims, and those of ``unclaimed``): ``({new position: op inlined}, {key of a
    node a body made: (round, order made)})`` (:func:`partsim.sim.inline.ort_node_indices`)."""
    from ..sim.inline import inline_functions

    opset = next((o.version for o in proto.opset_import if (o.domain or "") == ""), None)
    cache, indices = {}, {}
    made = inline_functions(proto, lambda n: n.name not in unclaimed and bool(
        claimers(proto, n, resolution.tables, opset, cache)), names, rounds, indices)
    return made, {_node_key(proto.graph.node[k]): order for k, order in indices.items()}


def prepare(path, level, resolution, seed=0, shown_as=None, notes=(), child=None, modify=None, early=None,
            source=None):
    """The graph ORT partitions for ``resolution``'s providers at ``level``, as partsim IR.

    Parameters
    ----------
    path : str or Path
    level : {"disable", "basic", "extended", "all"}
    resolution : partsim.rules.resolve.Resolution
    shown_as, notes
        As :func:`partsim.io.load.load_model`: a rewritten copy names the user's file.
    child : partsim.runtime.process.OrtProcess, optional
        The optimizer's child process if the caller started it (:func:`start_child`); closed here.
    modify : callable, optional
        ``modify(proto) -> proto``: a change made to the model as read (fixed dimensions, another
        opset) before the pipeline; the external-data files stay the model's own.
    early : OptimizerRun, optional
        ORT's session the caller began already (:func:`partsim.runtime.ort_pipeline.begin_early`);
        closed here.
    source : WrittenSource, optional
        What an earlier call on the same file found in the model as written (its ``PreparedGraph.source``;
        the final view's second pass): the model is not checked or read for it again.
    """
    if early is not None and (level == "disable" or modify is not None):
        early.close()
        early = None
    if level != "disable" and early is None:
        from .ort_pipeline import begin_early, start_child

        if child is None:
            from ..io.cache import cache_enabled

            # it imports onnxruntime while partsim reads and checks the model; a session begun at once with
            # the cache on starts it with its request, after the cache was asked (a warm run starts none)
            child = start_child(lazy=modify is None and cache_enabled())
        if modify is None:
            # ORT's session gets its request now, from the file's bytes, before partsim imports onnx
            early = begin_early(path, level, [(t.provider, t.is_compiling) for t in resolution.tables], child)
            if early is not None:
                child = None  # the early run holds it now
    try:
        prepared = _prepare(path, level, resolution, seed, shown_as, notes, child, modify, early=early, source=source)
    finally:
        if child is not None:
            child.close()
        if early is not None:
            early.close()
    # ORT partitions, then inlines the function nodes no provider took and partitions again, until
    # none is left (graph_partitioner.cc PartitionOnnxFormatModel, InlineNodes): a function node a
    # provider's table claims but that provider refuses (a dynamic shape, a rejected group) is
    # inlined in the next round.  The rounds' assignments are predicted in one pass.
    unclaimed = set()
    for _ in range(4):
        left = (_untaken_functions(prepared, resolution) | untyped_functions(prepared, resolution)) - unclaimed
        if not left:
            break
        unclaimed |= left
        prepared = _prepare(path, level, resolution, seed, shown_as, notes, None, modify, frozenset(unclaimed),
                            source=source)
    return prepared


def _untaken_functions(prepared, resolution):
    """Names of the function nodes kept whole that no provider would take (CPU fallback without a
    CPU kernel)."""
    if not prepared.whole_functions or prepared.failure:
        return set()
    from ..sim.assign import simulate

    m = prepared.model
    a = simulate(m, resolution, facts=prepared.facts)
    cpu = next((t for t in resolution.tables if t.provider == CPU), None)
    # a node the CPU has a kernel for in other types (fp16 Softsign) is not inlined: ORT's
    # InsertCastTransformer runs it on the CPU in float (insert_cast_transformer.cc), seen on real
    # CPU sessions at every level
    return {n.name for n in m.nodes if n.name in prepared.whole_functions and a.provider[n.index] == CPU
            and n.index not in a.rules and not (cpu is not None and cpu.rules_for(n.domain, n.op_type))}


@dataclass(frozen=True)
class WrittenSource:
    """What the model file as written gave one preparation at an ORT level, for a second one on the same bytes (the
    final view's pass): its node names and ops, ORT's node indices, every name, the external-data sizes and
    stand-ins.  Nothing here depends on the level or the providers."""

    sha256: str
    original: Mapping  # node name -> (domain, op)
    unnamed: Mapping  # first output of an unnamed node -> (domain, op)
    keys: Mapping  # node key -> ORT node index (:func:`_written_keys`)
    names: frozenset  # every node and tensor name (:func:`_written_names`)
    sizes: Mapping  # external-data file -> bytes read from it
    stand_in: object = None


@dataclass(frozen=True)
class _Ask:
    """What one preparation is asked for (:func:`prepare`'s arguments, ``unclaimed``: the function nodes
    inlined this round)."""

    path: object
    level: str
    resolution: object
    seed: int = 0
    shown_as: object = None
    notes: tuple = ()
    modify: object = None
    unclaimed: frozenset = frozenset()


@dataclass
class _Written:
    """The model as written (its proto, bytes and digest; ``source``: what an earlier pass on the same bytes
    found) and what it tells the graph ORT partitions (filled while it is prepared)."""

    proto: object
    data: bytes = b""
    sha256: str = ""
    source: object = None  # WrittenSource of an earlier pass on these bytes, or None
    original: dict = field(default_factory=dict)  # node name -> (domain, op) of the model's own nodes
    unnamed: dict = field(default_factory=dict)  # first output -> (domain, op) of its unnamed nodes
    whole: set = field(default_factory=set)  # function nodes kept whole
    inlined_outputs: dict = field(default_factory=dict)  # outputs of a node an inlined body made -> op
    round_outputs: dict = field(default_factory=dict)  # outputs of a schema-body node -> its round
    names: object = None  # every name of the model as written (:func:`_written_names`), when computed
    # per main-graph node, from read_nodes: (domain, op); the unnamed ones' positions; whether one is a DQ
    ops: list = field(default_factory=list)
    unnamed_at: list = field(default_factory=list)
    maybe_dq: bool = False
    has_bodies: bool = False  # a main-graph node holds an If/Loop/Scan body
    typed: set = field(default_factory=set)  # context-dependent function nodes kept whole
    # read_nodes(rows=True): per main-graph node what the IR build reads of it (:func:`partsim.io.load.model_from_proto`'s
    # ``rows``), and the positions of the nodes holding graphs or of an op whose graphs ONNX's inference enters
    rows: object = None
    body_at: list = field(default_factory=list)
    sizes: object = None  # external-data file -> bytes the model reads from it (:func:`_external_sizes`)
    load_refusal: str = ""  # ORT's refusal at load of a function node partsim inlines (it is gone from the IR)

    def adopt(self, source):
        """Take the node names, ops and every name from an earlier pass's :class:`WrittenSource`."""
        self.original, self.unnamed, self.names = dict(source.original), dict(source.unnamed), source.names

    def to_source(self, keys, sizes):
        """What this pass found, for a second pass on the same bytes (:class:`WrittenSource`)."""
        return WrittenSource(self.sha256, dict(self.original), dict(self.unnamed), dict(keys), self.names, sizes)

    def read_nodes(self, names=False, rows=False):
        """One walk of the model as written, before any rewrite: its own nodes by name (unnamed ones by first
        output, bodies included), and ``{key: ORT node index}`` of its main-graph nodes (:func:`_written_keys`),
        returned with how many nodes ORT loads (:func:`_loaded_count`); ``names``: every node and tensor
        name too (:func:`_written_names`, into ``self.names``); ``rows``: per node what the shape-value
        propagation and the IR build read of it (into ``self.rows`` and ``self.body_at``)."""
        from ..io.subgraphs import all_nodes, attribute_graphs
        from ..io.load import INFERRED_BODY_OPS

        original, unnamed, keys, seen = self.original, self.unnamed, {}, set()
        graph, index = self.proto.graph, 0
        ops, unnamed_at, read, body_at = [], [], [] if rows else None, []
        self.ops, self.unnamed_at, self.rows, self.body_at = ops, unnamed_at, read, body_at
        for k, n in enumerate(graph.node):
            # repeated fields read as lists: iterating the field itself ends in a formatted IndexError
            name, outputs, op, raw_domain, attrs = n.name, n.output[:], n.op_type, n.domain, n.attribute[:]
            domain = raw_domain or ""
            pair = (domain, op)
            ops.append(pair)
            if names:
                seen.update(n.input[:])
                seen.update(outputs)
            first = outputs[0] if outputs else ""
            if name:
                original[name] = pair
            else:
                unnamed_at.append(k)
                if outputs:
                    unnamed[first] = pair
            if op != "Constant" or domain not in ("", "ai.onnx"):  # sim/names.loaded_nodes
                keys.setdefault(_key(name, first, domain, op), index)
                index += 1
                if op == "DequantizeLinear":
                    self.maybe_dq = True
                if rows:  # (NodeProto, op, raw domain, inputs, name, outputs, attributes)
                    read.append((n, op, raw_domain, n.input[:], name, outputs, attrs))
            elif rows:  # a Constant: no inputs read
                read.append((n, op, raw_domain, None, name, outputs, attrs))
            bodies = attribute_graphs(attrs) if attrs else None
            if rows and (bodies or op in INFERRED_BODY_OPS):
                body_at.append(k)
            if bodies:
                self.has_bodies = True
                for inner in (m for g in bodies for m in all_nodes(g)):
                    if inner.name:
                        original[inner.name] = (inner.domain or "", inner.op_type)
                    elif inner.output:
                        unnamed[inner.output[0]] = (inner.domain or "", inner.op_type)
        if names:
            seen.update(original)
            seen.update(t.name for t in graph.initializer)
            self.names = frozenset(seen)
        return keys, index


def _prepare(path, level, resolution, seed, shown_as, notes, child, modify=None, unclaimed=frozenset(), early=None,
             source=None):
    """One partitioning round of :func:`prepare` (``unclaimed``: function nodes inlined this time);
    ``source``: what an earlier call found in the same file (:class:`WrittenSource`)."""
    from ..io.read import read_model_proto

    ask = _Ask(path, level, resolution, seed, shown_as, notes, modify, frozenset(unclaimed))
    proto, data = read_model_proto(path, check_node_text=False)  # the IR build below checks node text
    sha256 = hashlib.sha256(data).hexdigest()
    if modify is not None:
        proto = modify(proto)
        data = proto.SerializeToString()
    if source is not None and (source.sha256 != sha256 or modify is not None):
        source = None  # another file's (or a changed one's): read this one
    written = _Written(proto, data, sha256, source)
    if level == "disable":
        model = _as_written(ask, written)
        return PreparedGraph(model, _origins(model, written), level, "", (), _facts(model, written, None),
                             frozenset(written.whole), None, typed_functions=frozenset(written.typed))
    from ..io.materialize import absent_external_data, external_data_ends, external_tensors, stand_in_note

    # ORT's session needs the weights (absent ones are stand-ins): the external tensors, checked, read once
    if source is not None:
        stand_in, written.sizes = source.stand_in, source.sizes
    else:
        entries = external_tensors(proto, path)
        stand_in, written.sizes = absent_external_data(entries, path), external_data_ends(entries)
        del entries
    summary_notes = (stand_in_note(stand_in),) if stand_in else ()
    got = _optimized(ask, written, child, early)
    if isinstance(got, PreparedGraph):  # ORT failed: predicted on the graph as written
        return got
    model, result, found = got
    return PreparedGraph(model, _origins(model, written), level, "", summary_notes, _facts(model, written, result),
                         frozenset(written.whole), stand_in,
                         None if found is None else replace(found, stand_in=stand_in))


def _as_written(ask, written):
    """The IR of the graph as written after ORT's EP-aware inlining and EnsureUniqueDQForNodeUnit (level
    ``disable``); ``written`` gets the model's own nodes, the nodes kept whole and what inlining made."""
    from ..io.load import ORT_DEFAULT_ONNX_OPSET, model_from_proto
    from ..sim.names import NameGenerator
    from ..sim.refusals import proto_load_refusal
    from ..sim.inline import is_context_dependent, ort_node_indices
    from ..sim.unique_dq import ensure_unique_dq

    proto, resolution, unclaimed = written.proto, ask.resolution, ask.unclaimed
    keys, loaded = written.read_nodes(rows=True)  # before inlining rewrites the proto
    claims = function_claims(proto, resolution.tables, written.ops)
    # function nodes kept whole that the CPU does not claim: the ones ORT may inline in a later
    # partitioning round, when their provider refuses them (a CPU kernel takes the others)
    written.whole.update(proto.graph.node[k].name for k, (_, eps) in claims.items()
                         if eps and CPU not in eps and proto.graph.node[k].name not in unclaimed)
    written.typed.update(n.name for k, (_, eps) in claims.items() for n in [proto.graph.node[k]]
                         if eps and n.name and n.name not in unclaimed and is_context_dependent(proto, n))
    unnamed_at = written.unnamed_at
    rewritten = False  # whether the proto still is the one ``written.data`` parses to
    if unclaimed or any(not eps for _, eps in claims.values()):
        inlined = [proto.graph.node[k] for k, (_, eps) in sorted(claims.items()) if not eps or proto.graph.node[k].name
                   in unclaimed]  # ORT refuses them as written (at load) before it inlines anything
        written.load_refusal = proto_load_refusal(proto, inlined, ORT_DEFAULT_ONNX_OPSET)
        names = NameGenerator.for_graph(proto.graph)
        rounds = {}
        made, made_keys = _inline(proto, resolution, unclaimed, names, rounds)
        written.inlined_outputs = {tuple(proto.graph.node[k].output): op for k, op in made.items()}
        written.round_outputs = {tuple(proto.graph.node[k].output): r for k, r in rounds.items()}
        if written.has_bodies:
            inline_bodies(proto, resolution.tables, unclaimed, written, rounds)
        copies = ensure_unique_dq(proto, names)
        keys.update(ort_node_indices(made_keys, loaded, len(copies)))
        unnamed_at, rewritten = None, True  # the list changed
    else:
        if written.has_bodies:
            inline_bodies(proto, resolution.tables, unclaimed, written)
            rewritten = True  # function nodes inside the bodies may have been inlined
        if written.maybe_dq and ensure_unique_dq(proto):
            unnamed_at, rewritten = None, True  # copies made: positions moved
    if _name_unnamed(proto, keys, unnamed_at):
        rewritten = True
    # nothing rewrote the proto: ONNX's inference reads the file's bytes, the IR build the nodes as read above
    return model_from_proto(proto, str(ask.path), written.sha256, shown_as=ask.shown_as, notes=ask.notes,
                            serialized=None if rewritten or not written.data else written.data,
                            rows=None if rewritten else (written.rows, written.body_at))


def _made_key(n):
    """An IR node's key in what inlining made: its outputs, in a body ``(scope, outputs as written)``."""
    return (n.scope, body_outputs(n.scope, n.outputs)) if n.scope else tuple(n.outputs)


def _origins(model, written):
    """Node name -> origin (``model``, ``inlined:<op>``, ``fused:<transformer>`` …) in the graph prepared."""
    from ..sim.pipeline import origin_of

    origins, original, inlined = {}, written.original, written.inlined_outputs
    for n in model.nodes:
        if n.name in original:  # a node of the model as written, or one ORT rewrote under its name
            origins[n.name] = origin_of(n.name, n.domain, n.op_type, original)
        elif n.outputs and written.unnamed.get(n.outputs[0]) == (n.domain, n.op_type):
            origins[n.name] = "model"
        elif _made_key(n) in inlined:
            origins[n.name] = f"inlined:{inlined[_made_key(n)]}"
        elif any(t.startswith("_inlfunc_") for t in n.inputs + n.outputs):
            op = next(t for t in n.inputs + n.outputs if t.startswith("_inlfunc_"))[len("_inlfunc_"):].split("_")[0]
            origins[n.name] = f"inlined:{op}"
        else:
            origins[n.name] = origin_of(n.name, n.domain, n.op_type, original)
    return origins


def _facts(model, written, result):
    """The session facts the simulation needs beyond the graph (``result``: ORT's pipeline, ``None`` at
    ``disable``)."""
    counter = _name_counter(model, lambda: written.names if written.names is not None
                            else _written_names(written.original, written.proto))
    # later rounds form their own partitions (sim/rounds.py)
    rounds = {n.index: written.round_outputs[_made_key(n)] for n in model.nodes
              if _made_key(n) in written.round_outputs} if written.round_outputs else {}
    pinned = dict.fromkeys(result.pinned, CPU) if result is not None and result.pinned else {}
    # sim/qnn_tensors.py: nodes the EPs never saw in this form
    later = result.cpu_pass_nodes if result is not None and result.cpu_pass_nodes else ()
    unnamed = [n.index for n in model.nodes if n.outputs and written.unnamed.get(n.outputs[0]) == (n.domain, n.op_type)
               ] if written.unnamed else []
    return SessionFacts(counter, rounds, frozenset(later), pinned, frozenset(unnamed), written.load_refusal)


def _optimized(ask, written, child, early):
    """ORT's optimized graph for ``ask.level`` as IR, ORT's pipeline result and the :class:`WrittenSource`
    found: ``(model, PipelineResult, WrittenSource)``, or the :class:`PreparedGraph` of the graph as written
    when ORT could not build the session."""
    from .ort_pipeline import pipeline_graph

    proto, source, sizes = written.proto, written.source, written.sizes
    built = {}  # the optimized graph's IR and what the model as written gives it

    def check():
        # partsim's own checks, while ORT's session runs: a bad model is a usage error (exit 2,
        # ORT's answer is dropped), not ORT's failure; and what the model as written gives the
        # optimized graph's IR, ready before ORT's answer comes
        if source is not None:  # found by an earlier pass on the same bytes
            written.adopt(source)
            built["keys"] = dict(source.keys)
            return
        from ..io.load import model_from_proto

        model_from_proto(proto, str(ask.path), written.sha256, infer_shapes=False)
        built["keys"] = written.read_nodes(names=True)[0]
        if ask.modify is None:  # a changed copy's facts are no other pass's
            built["source"] = written.to_source(built["keys"], sizes)

    def kept_now():
        """The function nodes a requested provider claims (kept whole): found while ORT's
        session already runs on the model as written, restarted only when there are some."""
        found = function_claims(proto, ask.resolution.tables)
        written.whole.update(proto.graph.node[k].name for k, (_, eps) in found.items()
                             if eps and CPU not in eps and proto.graph.node[k].name
                             and proto.graph.node[k].name not in ask.unclaimed)
        # the same inside If/Loop/Scan bodies (level disable: inline_bodies)
        written.whole.update(n.name for n, eps in body_function_claims(proto, ask.resolution.tables)
                             if eps and CPU not in eps and n.name not in ask.unclaimed)
        return sorted(written.whole)

    effective = [(t.provider, t.is_compiling) for t in ask.resolution.tables]
    result = pipeline_graph(ask.path, ask.level, effective, kept_now, proto=proto, data=written.data,
                            cpu_nodes_of=lambda optimized: _cpu_nodes_of(_build_optimized(optimized, written, built,
                                                                                          ask), ask.resolution),
                            child=child, meanwhile=check, early=early, sizes=sizes)
    if result.proto is None:
        return _unoptimized(ask, result)
    try:
        return _build_optimized(result.proto, written, built, ask), result, built.get("source", source)
    except ModelError as exc:
        raise ModelError(f"partsim cannot read ORT's optimized graph: {exc}", ask.path) from None


def _unoptimized(ask, result):
    """The graph as written, when ORT's session for ``ask.level`` failed (``result``)."""
    prepared = prepare(ask.path, "disable", ask.resolution, ask.seed, ask.shown_as, ask.notes, modify=ask.modify)
    if result.missing_kernel and any(t.provider != CPU for t in ask.resolution.tables):
        # the CPU-only session lacks a kernel another requested provider may have: no
        # oracle for this graph; predicted on the graph as written instead
        return replace(prepared, level=ask.level, notes=prepared.notes + (
            f"ORT's {result.ort_level} rewrite could not be computed without the requested providers "
            f"({result.failure[:200]}); predicted on the graph as written (level disable)",))
    return replace(prepared, level=ask.level,
                   failure=f"ONNX Runtime cannot build the session ({result.ort_level}): {result.failure}")


def _build_optimized(optimized, written, built, ask):
    """The IR of ORT's optimized graph in ORT's node order, built once per proto (``built``: the cache)."""
    from ..io.load import model_from_proto
    from ..sim.inline import ort_node_indices
    from ..sim.unique_dq import ensure_unique_dq

    if built.get("proto") is optimized:
        return built["model"]
    proto = written.proto
    built["proto"] = optimized
    if "keys" not in built:
        built["keys"] = _written_keys(proto)
    keys = built["keys"]
    order = _orts_index_order(optimized, keys)
    if any(not n.name and _node_key(n) not in keys for n in optimized.graph.node) and "inlined" not in built:
        # unnamed nodes ORT's inlining made: their indices, from partsim's own inlining
        # of a copy (the same bodies, tensor names and order)
        import onnx

        copy = onnx.ModelProto()
        copy.CopyFrom(proto)
        made_keys = _inline(copy, ask.resolution, ask.unclaimed)[1]
        # Level 1's new nodes come before the schema bodies too: not counted (not known)
        built["inlined"] = ort_node_indices(made_keys, _loaded_count(proto), len(ensure_unique_dq(copy)))
        keys.update(built["inlined"])
    _name_unnamed(optimized, keys)
    built["model"] = model_from_proto(optimized, str(ask.path), written.sha256, shown_as=ask.shown_as,
                                      notes=ask.notes, index_order=order)
    return built["model"]


def _cpu_nodes_of(m, resolution):
    """The nodes partitioning leaves on the CPU in the optimized graph ``m`` (IR), and its value types."""
    from ..sim.assign import simulate
    from .layout_region import layout_region

    a = simulate(m, resolution)
    names = {n.name for n in m.nodes if a.provider[n.index] == CPU and not n.scope}
    region = layout_region(m, a.layout, names)  # Level 2 sees the CPU nodes the layout transformation left
    names -= {m.nodes[i].name for r in a.layout for i in r.removed + r.touched}  # (as rewired: in ``region``)
    types = {t: (v.dtype, v.shape) for t, v in m.values.items() if v.dtype}
    return names, types, region
