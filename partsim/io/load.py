"""Load an ONNX file into a :class:`partsim.ir.model.Model`.

Weights are not read (``load_external_data=False``), so graph-only models whose
weight file is absent load fine.  External-data locations are still checked: one
that points outside the model's folder is refused, and never opened.
"""

import hashlib

from ..errors import ModelError
from ..ir.schemas import normalize_domain
from .build import DYNAMIC_DIM, MAX_DIM, _Builder
from .read import read_model_proto
from .shape_inference import _infer_shapes_as_listed, _infer_shapes_sorted
from .subgraphs import node_graphs

# The ai.onnx opset ORT gives a model that imports none (onnxruntime 1.31.1 writes ai.onnx 26 into
# such a model; "Current official support for domain ai.onnx is till opset 26").
ORT_DEFAULT_ONNX_OPSET = 26

__all__ = ["load_model", "model_from_proto"]


def load_model(path, infer_shapes=True, shown_as=None, notes=()):
    """Load an ONNX model file into partsim's IR.

    Parameters
    ----------
    path : str or Path
    infer_shapes : bool, optional
        Run ONNX shape inference (default True).  Failures are kept as warnings.
    shown_as : (str, str), optional
        ``(path, sha256)`` the model reports instead of its own: a rewritten copy of
        the user's file (ORT's optimizer output, a what-if variant) names the original.
    notes : sequence of str, optional
        Warnings the model carries from the start (what was done to it).

    Returns
    -------
    Model

    Raises
    ------
    ModelError
        Unreadable, truncated or invalid file, cyclic graph, tensors consumed but
        never produced, duplicate producers, unsafe external-data paths.
    """
    proto, data = read_model_proto(path, check_node_text=False)
    sha256 = hashlib.sha256(data).hexdigest()
    # hand the only references over, so the parsed proto and the bytes can be freed once shapes are inferred
    box = [proto, data if infer_shapes else None]
    del proto, data
    return _build_from_box(box, str(path), sha256, infer_shapes, shown_as, notes)


def model_from_proto(proto, path="<memory>", sha256="", infer_shapes=True, shown_as=None, notes=(),
                     index_order=None, serialized=None, rows=None):
    """Build the IR from an in-memory ``onnx.ModelProto`` (the proto is not modified).

    External-data locations are checked against ``path``'s folder unless ``path`` is
    ``"<memory>"``.  ``index_order`` (main-graph node positions of a proto listed in topological
    order) gives the IR's node order instead of the listing; shapes are inferred on the listing.
    ``serialized``: the proto's bytes when the caller has them (the file's, when nothing rewrote it):
    ONNX's inference reads them instead of a new serialization.  ``rows``: ``(rows, positions)`` as
    :meth:`partsim.runtime.pipeline._Written.read_nodes` reads the proto's main-graph nodes, when nothing changed
    them since: per node ``(NodeProto, op, raw domain, inputs or None, name, outputs, attributes)``, and the
    positions of the nodes holding graphs (ONNX's inference may add to those: they are read from its answer);
    the shape-value propagation and the IR build take the nodes from there instead of reading them again.
    """
    if index_order is not None and infer_shapes and _listed_in_order(proto.graph):
        _check_declared_dims(proto, path)
        warnings, listed = [], {}
        inferred = _infer_shapes_as_listed(proto, warnings, listed)
        return _try_build(inferred, path, sha256, warnings, list(index_order), False, shown_as, notes, listed)[0]
    if index_order is not None:
        import onnx

        reordered = onnx.ModelProto()
        reordered.CopyFrom(proto)
        del reordered.graph.node[:]
        reordered.graph.node.extend(proto.graph.node[k] for k in index_order)
        proto = reordered
    return _build_from_box([proto, serialized if index_order is None else None], path, sha256, infer_shapes,
                           shown_as, notes, rows if index_order is None else None)


def _listed_in_order(graph):
    """Whether every main-graph node comes after the producers of its inputs."""
    later = {o for n in graph.node for o in n.output[:] if o}
    for n in graph.node:
        for t in n.input[:]:
            if t in later:
                return False
        later.difference_update(n.output[:])
    return True


def _build_from_box(box, path, sha256, infer_shapes, shown_as=None, notes=(), rows=None):
    """Build from ``box = [proto, its bytes or None]``; when the box held the only references, each proto is
    freed as soon as it is no longer needed (a million-node model is ~0.5 GB per copy).

    Shape inference runs on the graph as listed.  ``onnx.shape_inference`` visits nodes in
    file order, so when the builder meets a node reading a tensor that a later node makes
    (a graph not listed in topological order), the inference is redone on a sorted copy,
    as ORT sorts before it infers; sorted files (nearly all) pay nothing for the check.
    """
    serialized = box.pop()
    proto = box.pop()
    if infer_shapes:
        if _check_declared_dims(proto, path, rows):
            serialized = None  # a dimension cleared in memory: the bytes are not this proto's
        # the main graph's value infos as the propagation read them (and its nodes as read already)
        warnings, listed = [], {} if rows is None else {"written": rows}
        inferred = _infer_shapes_as_listed(proto, warnings, listed, serialized)
        del proto, serialized
        proto = inferred
        del inferred
        model, builder = _try_build(proto, path, sha256, warnings, None, True, shown_as, notes, listed)
        if model is not None:
            return model
        proto = builder.proto  # listed out of order: infer again on a sorted copy
        del builder
        warnings = []
        proto, file_order = _infer_shapes_sorted(proto, warnings)
        return _try_build(proto, path, sha256, warnings, file_order, False, shown_as, notes)[0]
    return _try_build(proto, path, sha256, [], None, False, shown_as, notes)[0]


def _try_build(proto, path, sha256, warnings, file_order, resort, shown_as=None, notes=(), listed=None):
    opsets = {}
    for o in proto.opset_import:
        if o.domain.__class__ is not str:
            raise ModelError(f"an opset import domain is not valid UTF-8 text: {o.domain[:60]!r}", path)
        opsets[normalize_domain(o.domain)] = int(o.version)
    implied = frozenset() if "" in opsets else frozenset([""])
    if implied:  # ORT adds the import itself (onnxruntime/core/graph/model.cc: missing domains get
        opsets[""] = ORT_DEFAULT_ONNX_OPSET  # their newest opset), e.g. for an ai.onnx.ml-only model
        warnings.append(f"no opset import for the default ONNX domain: ai.onnx {ORT_DEFAULT_ONNX_OPSET} "
                        "assumed, as onnxruntime 1.31.1 does")
    builder = _Builder(proto, path, sha256, opsets, warnings, file_order, resort, shown_as, notes, listed)
    builder.implied_opsets = implied
    del proto
    try:
        return builder.build(), builder
    except ModelError as exc:
        if exc.path is None:
            exc.path = path
        raise


def _check_declared_dims(proto, path, rows=None):
    """Impossible declared dimensions are refused before ONNX shape inference sees them; a declared -1 is
    cleared (in memory).  Returns whether one was.  ``rows``: as :func:`model_from_proto` takes them."""
    cleared = False
    graphs = [proto.graph]
    nodes_read = rows  # the main graph's (the first one popped)
    while graphs:
        g = graphs.pop()
        for vi in list(g.input) + list(g.output) + list(g.value_info):
            tt = vi.type.tensor_type if vi.type.WhichOneof("value") == "tensor_type" else None
            if tt is None or not tt.HasField("shape"):
                continue
            for d in tt.shape.dim[:]:
                if d.WhichOneof("value") == "dim_value" and d.dim_value == DYNAMIC_DIM:
                    d.Clear()  # in memory only: shape inference sees an unknown dimension
                    cleared = True
                elif d.WhichOneof("value") == "dim_value" and not 0 <= d.dim_value <= MAX_DIM:
                    raise ModelError(f"tensor {vi.name!r} has an impossible dimension {d.dim_value}", path)
        for t in g.initializer[:]:
            for d in t.dims[:]:
                if not 0 <= d <= MAX_DIM:
                    raise ModelError(f"tensor {t.name!r} has an impossible dimension {d}", path)
        if nodes_read is not None:  # the main graph's ops read already: its nodes with bodies
            nodes = g.node
            for k in nodes_read[1]:
                if nodes_read[0][k][1] in INFERRED_BODY_OPS:
                    graphs.extend(node_graphs(nodes[k]))
            nodes_read = None
            continue
        for n in g.node:
            if n.op_type in INFERRED_BODY_OPS:  # ONNX shape inference enters no other node's graphs
                graphs.extend(node_graphs(n))  # (the IR builder checks those)
    return cleared


# ops whose graph attributes ONNX shape inference enters (onnx/defs: If, Loop, Scan, SequenceMap)
INFERRED_BODY_OPS = frozenset({"If", "Loop", "Scan", "SequenceMap"})
