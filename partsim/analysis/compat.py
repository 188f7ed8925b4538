"""Compatibility mode: ONNX Runtime's mobile usability checker, reproduced.

``partsim simulate MODEL --compat usability-checker`` gives the numbers that
``python -m onnxruntime.tools.check_onnx_model_mobile_usability MODEL`` prints,
so users can compare partsim with the tool they know.  The checker is not
imported; its analysis is re-implemented here on partsim's own wave algorithm
(:func:`partsim.sim.wave.create_supported_groups`).  Mirrored sources
(onnxruntime 1.31.1 Python wheel):

- ``onnxruntime/tools/mobile_helpers/usability_checker.py``: ``analyze_model``,
  ``checker``, ``check_shapes``, ``check_partitioning``,
  ``_check_partitioning_for_graph``, ``PartitioningInfo.suitability``,
  ``_SupportedOpsChecker``;
- ``onnxruntime/tools/onnx_model_utils.py``: ``optimize_model``,
  ``ModelProtoWithShapeInfo``, ``get_producer_consumer_maps``,
  ``is_fixed_size_tensor``;
- the op lists ``nnapi_supported_ops.md``, ``coreml_supported_neuralnetwork_ops.md``,
  ``coreml_supported_mlprogram_ops.md`` are read from the installed onnxruntime
  package, as the checker reads them.

Pipeline, as the checker does it:

1. weights materialized (graph-only models get seeded random weights, see
   :mod:`partsim.io.materialize`), then ORT's own optimizer at ORT_ENABLE_BASIC on
   the copy (``SessionOptions.optimized_model_filepath``, initializers written to
   ``external_data.pb``, CPU provider);
2. ``onnx.load`` (weights included) and ``onnx.shape_inference.infer_shapes``
   with ``strict_mode=True``;
3. per EP (NNAPI; CoreML NeuralNetwork and MLProgram with ``max_rank=5``) a
   first pass requiring fixed input sizes; when that pass is not rated YES and a
   graph input has a dynamic shape, a second pass that ignores shapes.

The checker's semantics, quirks included, are kept:

- a node is supported iff ``domain:op`` (empty domain read as ``ai.onnx``) is a
  row of the EP's md table (exact text, so ``ai.onnx:Argmax`` does not match
  ``ArgMax``), every input has a fixed size, and no input exceeds the EP's rank;
- an input has a fixed size if its ValueInfo is a tensor whose every dim has a
  ``dim_value > 0`` (a tensor without any shape counts as fixed: the checker
  tests the truth of a protobuf message, which is always true); otherwise if it
  is an initializer of the graph or an outer graph; anything else, including an
  empty optional input ``""``, is not fixed;
- the rank test only runs when the graph has ValueInfo in scope (in the second
  pass the main graph has none, its subgraphs do); a Transpose whose first
  attribute lists more than ``max_rank`` ints is over the rank anyway;
- producers and consumers are sets (one edge per node pair), built for the whole
  model: an outer value used inside a subgraph links its producer to the node
  that owns the subgraph; only ``GRAPH`` attributes (not ``GRAPHS``) are followed;
- every subgraph is analysed as a graph of its own and the counts are summed;
- suitability: one partition covering > 75% of the nodes is YES, > 50% MAYBE;
  two partitions covering > 75% MAYBE; anything else NO.
"""

import tempfile
from pathlib import Path

from ..errors import ModelError, UsageError
from ..runtime.optimizer import optimize_for_checker

__all__ = ["CHECKER_EPS", "usability_checker_analysis", "load_with_shape_info", "analyze_model_proto"]


# (checker name, ORT provider, CoreML format, op-list file, max_rank): usability_checker.py,
# check_nnapi_partitions / check_coreml_partitions (max_rank = 5 for CoreML, 999 default).
CHECKER_EPS = (
    ("NNAPI", "NnapiExecutionProvider", None, "nnapi_supported_ops.md", 999),
    ("CoreML NeuralNetwork", "CoreMLExecutionProvider", "NeuralNetwork", "coreml_supported_neuralnetwork_ops.md", 5),
    ("CoreML MLProgram", "CoreMLExecutionProvider", "MLProgram", "coreml_supported_mlprogram_ops.md", 5),
)


_SOURCE_DIR = ("tools", "mobile_helpers")


def _ort_version():
    import onnxruntime

    return onnxruntime.__version__


def _op_table(filename):
    """``{domain:op -> caveat}`` read from the md table shipped with onnxruntime.

    Same reading as the checker's ``_SupportedOpsChecker``: lines starting with
    ``|`` that split into exactly four pieces on ``|``; the first cell, taken as
    is, must contain ``:``; ``<br/>`` in the caveat becomes a space.
    """
    import onnxruntime

    path = Path(onnxruntime.__file__).resolve().parent.joinpath(*_SOURCE_DIR, filename)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read the usability checker's op list: {exc.strerror}", path) from None
    ops = {}
    for line in text.splitlines():
        if not line.startswith("|"):
            continue
        cells = line.strip().split("|")
        if len(cells) == 4 and ":" in cells[1]:
            ops[cells[1]] = cells[2].replace("<br/>", " ")
    return ops


def load_with_shape_info(path):
    """``onnx.load`` (with weights) + strict shape inference, as ``ModelProtoWithShapeInfo``."""
    import onnx

    path = Path(path)
    try:
        model = onnx.load(str(path))
    except Exception as exc:
        raise ModelError(f"onnx cannot load the model: {exc}", path) from None
    try:
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
        if len(model.graph.node) > 0 and len(inferred.graph.node) == 0:
            # > 2 GB: onnx silently returns an empty model; the checker then infers via a file
            with tempfile.TemporaryDirectory(prefix="partsim-shapes-") as tmp:
                out = Path(tmp) / path.name
                onnx.shape_inference.infer_shapes_path(str(path), str(out), strict_mode=True)
                inferred = onnx.load(str(out))
    except Exception as exc:
        raise ModelError(f"onnx shape inference (strict mode) fails, so does the usability checker: "
                         f"{str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__}",
                         path) from None
    return inferred


class _Node:
    __slots__ = ("proto", "graph", "producers", "consumers")

    def __init__(self, proto, graph):
        self.proto = proto
        self.graph = graph
        self.producers = set()
        self.consumers = set()


class _Structure:
    """Node ids and producer/consumer sets for a whole model (checker semantics)."""

    def __init__(self, main_graph):
        self.nodes = []          # id -> _Node
        self.graph_nodes = {}    # graph path -> [node ids in graph order]
        implicit = self._walk(main_graph, ())
        if implicit:
            raise ModelError("the usability checker refuses this model: values used but never defined: "
                             + ",".join(sorted(implicit)))

    def _walk(self, graph, path):
        graph_inputs = {i.name for i in graph.input}
        inits = {i.name for i in graph.initializer}
        producer = {}
        implicit = set()
        ids = self.graph_nodes.setdefault(path, [])
        for k, proto in enumerate(graph.node):
            nid = len(self.nodes)
            self.nodes.append(_Node(proto, graph))
            ids.append(nid)
            names = list(proto.input)
            for attr in proto.attribute:
                # ``g`` only, as the checker enters bodies (onnxruntime 1.31.1 tools/mobile_helpers/
                # usability_checker.py), not partsim.io.subgraphs' walk, which takes ``graphs`` too
                if attr.HasField("g"):
                    names.extend(self._walk(attr.g, path + ((k, attr.name),)))
            for name in names:
                if not name:
                    continue
                if name in producer:
                    src = producer[name]
                    self.nodes[src].consumers.add(nid)
                    self.nodes[nid].producers.add(src)
                elif name not in inits and name not in graph_inputs:
                    implicit.add(name)
            for o in proto.output:
                producer[o] = nid
        return implicit


def _is_fixed_size_tensor(vi):
    """is_fixed_size_tensor of onnx_model_utils.py (a tensor with no shape counts as fixed)."""
    if not vi.type.HasField("tensor_type"):
        return False
    return all(d.HasField("dim_value") and d.dim_value > 0 for d in vi.type.tensor_type.shape.dim)


def _domain_op(proto):
    return f"{proto.domain if proto.domain else 'ai.onnx'}:{proto.op_type}"


def _empty_info():
    return {"totalNodes": 0, "supportedNodes": 0, "partitions": 0, "partitionSizes": [],
            "unsupportedOps": set(), "nodesUnsupportedDueToOp": 0, "nodesUnsupportedDueToDynamicInput": 0,
            "nodesUnsupportedDueToRank": 0, "opsWithUnsupportedRank": set(), "subgraphs": 0,
            "nodesInSubgraphs": 0, "opsSeen": set(), "unsupportedNodes": []}


def _analyze_graph(structure, graph, path, ops, outer_inits, require_fixed, value_info, max_rank, info):
    """One graph (not its subgraphs): add its counts to ``info``; return its node count."""
    from ..sim.wave import create_supported_groups

    inits = {i.name for i in graph.initializer}
    ids = structure.graph_nodes.get(path, [])

    def fixed(name):
        if name in value_info:
            return _is_fixed_size_tensor(value_info[name])
        return name in inits or name in outer_inits

    supported = {}
    for nid in ids:
        p = structure.nodes[nid].proto
        dop = _domain_op(p)
        op_ok = dop in ops
        if op_ok:
            info["opsSeen"].add(dop)
        shape_ok = not require_fixed or all(fixed(i) for i in p.input)
        rank_ok = True
        if value_info:
            for i in p.input:
                vi = value_info.get(i) if i else None
                if vi is not None and vi.type.HasField("tensor_type") \
                        and len(vi.type.tensor_type.shape.dim) > max_rank:
                    rank_ok = False
                    break
        if p.op_type == "Transpose" and p.attribute and len(p.attribute[0].ints) > max_rank:
            rank_ok = False
        supported[nid] = op_ok and shape_ok and rank_ok
        if not supported[nid]:
            why = [r for r, ok in (("op", op_ok), ("dynamic_input", shape_ok), ("rank", rank_ok)) if not ok]
            info["unsupportedNodes"].append({"name": p.name, "opType": p.op_type, "domain": p.domain or "ai.onnx",
                                             "reasons": why})
        if not op_ok:
            info["unsupportedOps"].add(dop)
            info["nodesUnsupportedDueToOp"] += 1
        if not shape_ok:
            info["nodesUnsupportedDueToDynamicInput"] += 1
        if not rank_ok:
            info["nodesUnsupportedDueToRank"] += 1
            info["opsWithUnsupportedRank"].add(dop)

    nodes = structure.nodes
    try:
        groups = create_supported_groups(
            ids, {i: len(nodes[i].producers) for i in ids}, lambda i: sorted(nodes[i].consumers),
            supported.__getitem__)
    except ValueError as exc:
        raise ModelError(f"the usability checker cannot order this graph: {exc}") from None
    info["totalNodes"] += len(ids)
    info["supportedNodes"] += sum(len(g) for g in groups)
    info["partitions"] += len(groups)
    info["partitionSizes"].extend(len(g) for g in groups)
    return len(ids)


def _check_partitioning(structure, main_graph, ops, require_fixed, max_rank):
    """check_partitioning of usability_checker.py, summed over all graphs."""
    if require_fixed and len(main_graph.value_info) == 0 and len(main_graph.node) > 1:
        raise ModelError("the usability checker refuses this model: shape inference left no value_info "
                         "(it asks to run onnx.shape_inference.infer_shapes first)")
    info = _empty_info()

    def scope(graph, outer):
        vi = dict(outer)
        for v in graph.input:
            vi[v.name] = v
        for v in graph.output:
            vi[v.name] = v
        for v in graph.value_info:
            vi[v.name] = v
        return vi

    # depth first in node order, as _check_graph recurses (``g`` only, as in _Structure._walk); value_info
    # None: shapes ignored
    def visit(graph, path, outer_vi, outer_inits, is_main):
        value_info = {} if outer_vi is None else scope(graph, outer_vi)
        n = _analyze_graph(structure, graph, path, ops, outer_inits, require_fixed, value_info, max_rank, info)
        if not is_main:
            info["subgraphs"] += 1
            info["nodesInSubgraphs"] += n
        inner_inits = set(outer_inits) | {i.name for i in graph.initializer}
        for k, p in enumerate(graph.node):
            for attr in p.attribute:
                if attr.HasField("g"):
                    visit(attr.g, path + ((k, attr.name),), value_info, inner_inits, False)

    visit(main_graph, (), {} if require_fixed else None, set(), True)
    return info


def _suitability(info):
    """PartitioningInfo.suitability: YES / MAYBE / NO."""
    if info["totalNodes"] == 0:
        return "NO"
    pct = info["supportedNodes"] / info["totalNodes"] * 100
    if info["partitions"] == 1:
        return "YES" if pct > 75 else "MAYBE" if pct > 50 else "NO"
    if info["partitions"] == 2:
        return "MAYBE" if pct > 75 else "NO"
    return "NO"


_RANK = {"NO": 0, "MAYBE": 1, "YES": 2}


def _finish(info, ops):
    out = dict(info)
    seen = out.pop("opsSeen")
    out["unsupportedOps"] = sorted(out["unsupportedOps"])
    out["opsWithUnsupportedRank"] = sorted(out["opsWithUnsupportedRank"])
    out["caveats"] = [f"{op}:{ops[op]}" for op in sorted(seen) if ops[op]]
    out["suitability"] = _suitability(info)
    return out


def analyze_model_proto(model):
    """The checker's per-EP analysis of a model that already carries shape information.

    Parameters
    ----------
    model : onnx.ModelProto
        The optimized model after ``infer_shapes`` (see :func:`load_with_shape_info`).

    Returns
    -------
    dict
        ``{dynamicInputs, numDynamicValues, eps: {NAME: {...}}, usable}`` (JSON-ready).
    """
    graph = model.graph
    dynamic_inputs = [i.name for i in graph.input if not _is_fixed_size_tensor(i)]
    num_dynamic = len(dynamic_inputs) + sum(1 for o in graph.output if not _is_fixed_size_tensor(o)) \
        + sum(1 for v in graph.value_info if not _is_fixed_size_tensor(v))
    structure = _Structure(graph)
    eps = {}
    for name, provider, fmt, filename, max_rank in CHECKER_EPS:
        ops = _op_table(filename)
        first = _finish(_check_partitioning(structure, graph, ops, True, max_rank), ops)
        entry = dict(first, provider=provider, maxRank=(max_rank if max_rank < 999 else None),
                     opList=filename, ifFixedShapes=None)
        if fmt:
            entry["coremlFormat"] = fmt
        overall = first["suitability"]
        if first["suitability"] != "YES" and dynamic_inputs:
            second = _finish(_check_partitioning(structure, graph, ops, False, max_rank), ops)
            entry["ifFixedShapes"] = second
            if _RANK[second["suitability"]] > _RANK[overall]:
                overall = second["suitability"]
        entry["overallSuitability"] = overall
        eps[name] = entry
    return {
        "dynamicInputs": dynamic_inputs,
        "numDynamicValues": num_dynamic,
        "eps": eps,
        "usable": any(e["overallSuitability"] != "NO" for e in eps.values()),
    }


def usability_checker_analysis(model_path, seed=0, skip_optimize=False):
    """Reproduce ``check_onnx_model_mobile_usability MODEL`` on ``model_path``.

    Parameters
    ----------
    model_path : str or Path
    seed : int
        Seed for weights materialized for a graph-only model (they do not change
        the analysis, but ORT needs them to build a session).
    skip_optimize : bool
        The checker's ``--skip_optimize``: analyse the model as written.

    Returns
    -------
    dict
        JSON-ready: ``compat, source, model, optimization, dynamicInputs,
        numDynamicValues, usable, eps {NNAPI | CoreML NeuralNetwork |
        CoreML MLProgram: {partitions, supportedNodes, totalNodes,
        partitionSizes, unsupportedOps, nodesUnsupportedDueToOp,
        nodesUnsupportedDueToDynamicInput, nodesUnsupportedDueToRank,
        opsWithUnsupportedRank, subgraphs, nodesInSubgraphs, caveats,
        suitability, ifFixedShapes, overallSuitability, provider, ...}}``.
    """
    model_path = Path(model_path)
    with tempfile.TemporaryDirectory(prefix="partsim-compat-") as tmp:
        if skip_optimize:
            path = _materialized(model_path, Path(tmp), seed)
        else:
            path = optimize_for_checker(model_path, tmp, seed=seed)
        model = load_with_shape_info(path)
    result = analyze_model_proto(model)
    result.update({
        "compat": "usability-checker",
        "source": f"onnxruntime {_ort_version()} tools/mobile_helpers/usability_checker.py",
        "model": {"path": str(model_path)},
        "optimization": "none" if skip_optimize else "basic",
    })
    return result


def _materialized(model_path, tmp, seed):
    from ..io.materialize import materialize_weights

    return materialize_weights(model_path, tmp / "materialized", seed=seed)
