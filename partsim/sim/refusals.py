"""Sessions ORT refuses although every node has a provider: at model load, or when a kernel
that its provider claimed is created.

Load (onnxruntime 1.31.1; checked against the ONNX node tests recorded with it):

- ``Model::Model`` (``onnxruntime/core/graph/model.cc``) refuses an IR version above the
  newest it knows: "Unsupported model IR version: 14, max supported IR version: 13".
- ``ValidateOpsetForDomain`` (``onnxruntime/core/graph/model_load_utils.h``) refuses an
  ai.onnx opset above the newest official one: "Current official support for domain ai.onnx
  is till opset 26" (opset 27 "is under development").
- ``Graph::VerifyNodeAndOpMatch`` (``onnxruntime/core/graph/graph.cc``) checks every node against the
  schema ORT's registry resolves it to (``OpSchema::Verify``): an attribute that schema lacks is "an
  invalid model" ("Unrecognized attribute: left_window_size for operator Attention": opset 25's
  Attention in onnx 1.23, which ORT 1.31.1 resolves to its Attention-24).  The attribute names come
  from ORT's registry (``partsim/data/contrib_schemas.json``, :func:`partsim.ir.schemas.ort_attributes`),
  checked only when that snapshot describes the ORT predicted.

Kernel creation: a table rule's ``kernel_requires`` lists what the kernel's constructor
enforces (``ORT_ENFORCE`` / ``ORT_THROW``); the provider's ``GetCapability`` does not look,
so the node is claimed, the constructor throws, and ``InferenceSession::Initialize`` fails
("Exception during initialization") -- there is no fallback to another provider.
"""

from ..sim.match import _attr_ok

__all__ = ["load_refusal", "kernel_creation_failures", "compiled_graph_failures", "ORT_MAX_IR_VERSION",
           "ORT_MAX_ONNX_OPSET"]

ORT_MAX_IR_VERSION = 13  # onnxruntime 1.31.1; other releases: partsim.versions.load_limits
ORT_MAX_ONNX_OPSET = 26


def load_refusal(model, tables=(), facts=None):
    """Why ORT would refuse to load ``model`` at all, or ``None`` (``facts``: what the model as written showed
    before partsim inlined its functions, :attr:`SessionFacts.load_refusal`).  A table whose provider comes
    with its own ORT build (onnxruntime-openvino 1.24.1) may lower the newest ai.onnx opset
    (``partitioning.runtime_max_onnx_opset``)."""
    opset = model.opsets.get("")
    for t in tables:
        limit = t.option("runtime_max_onnx_opset") if hasattr(t, "option") else None
        # a file without an ai.onnx import gets that ORT's own newest opset (measured: the ai.onnx.ml-only node tests
        # ran on onnxruntime-openvino 1.24.1)
        if opset is not None and limit is not None and opset > limit and "" not in model.implied_opsets:
            return (f"ORT refuses the model at load: ai.onnx opset {opset}, the ORT build {t.provider} ships "
                    f"({t.source.get('version', 'its package')}) supports up to {limit} "
                    f"(model_load_utils.h: ValidateOpsetForDomain)")
    from ..versions import load_limits

    release, max_ir, max_opset = load_limits()  # of the ORT predicted (partsim.versions.LOAD_LIMITS)
    if max_ir is not None and model.ir_version > max_ir:
        return (f"ORT refuses the model at load: IR version {model.ir_version}, the newest onnxruntime "
                f"{release} supports is {max_ir} (onnxruntime/core/graph/model.cc)")
    if opset is not None and max_opset is not None and opset > max_opset:
        return (f"ORT refuses the model at load: ai.onnx opset {opset}, official support in onnxruntime "
                f"{release} ends at {max_opset} (model_load_utils.h: ValidateOpsetForDomain)")
    return _unrecognized_attribute(model, release) or (facts.load_refusal if facts is not None else None) or None


# Schemas of onnxruntime 1.31.1's registry whose node ORT does not refuse for an attribute it does not know,
# measured (tests/sim/test_refusals.py probes every schema of the installed ORT with a node carrying an unknown
# attribute): the ones it accepts (LayerNormalization-17's AllowUncheckedAttributes, onnx/defs/nn/defs.cc; the
# experimental ONNX ops ORT keeps; Constant, which becomes an initializer before any check) and the ones whose
# probe fails for another reason first (so nothing is known: not refused here).  Every other schema refuses.
_NOT_CHECKED = frozenset(
    [("", op, v) for op, vs in (("Affine", (1, 10)), ("Crop", (1, 10)), ("GRUUnit", (1, 10)), ("ImageScaler", (1, 10)),
                                ("ParametricSoftplus", (1, 10)), ("Scale", (1, 10)), ("ScaledTanh", (1, 10)),
                                ("GivenTensorFill", (1, 10)), ("DynamicSlice", (1, 10)), ("LayerNormalization", (1, 17)),
                                ("SimplifiedLayerNormalization", (1,)), ("Scatter", (11,)), ("Upsample", (10,)),
                                ("CausalConvWithState", (27,)), ("LinearAttention", (27,)), ("Range", (27,)))
     for v in vs]
    + [("ai.onnx.ml", "TreeEnsembleClassifier", 5), ("ai.onnx.ml", "TreeEnsembleRegressor", 5)]
    + [("com.microsoft", op, 1) for op in ("BiasDropout", "BitmaskBiasDropout", "BitmaskDropout", "EPContext",
                                          "QOrderedLayerNormalization", "Snpe")])


def _unrecognized_attribute(model, release):
    """ORT's refusal of the first node (file order, bodies included) with an attribute the schema in ORT's
    registry lacks, or ``None`` (also when the snapshot describes another release than ``release``)."""
    return unrecognized_attribute(((n.name, n.domain, n.op_type, n.attrs) for n in model.nodes), model.opsets,
                                  release)


def proto_load_refusal(proto, nodes, default_onnx_opset):
    """ORT's refusal at load of one of ``nodes`` (NodeProtos of ``proto`` as written: the function nodes partsim
    inlines before it builds the IR; ORT checks them before it inlines anything), or ``""``."""
    from ..ir.schemas import normalize_domain
    from ..versions import load_limits

    opsets = {normalize_domain(o.domain): o.version for o in proto.opset_import}
    opsets.setdefault("", default_onnx_opset)
    return unrecognized_attribute(((n.name, normalize_domain(n.domain), n.op_type, [a.name for a in n.attribute])
                                   for n in nodes), opsets, load_limits()[0]) or ""


def unrecognized_attribute(nodes, opsets, release):
    """:func:`_unrecognized_attribute` over ``(name, domain, op type, attribute names)`` of ``nodes`` (also the
    function nodes of a proto that partsim inlines before it builds the IR: ORT refuses them at load, before
    it inlines anything)."""
    from ..ir.schemas import ort_attributes

    for name, domain, op_type, attrs in nodes:
        if not attrs:
            continue
        found = ort_attributes(domain, op_type, opsets.get(domain))
        if (found is None or found[2].issuperset(attrs) or found[0] != release or op_type == "Constant"
                or (domain, op_type, found[1]) in _NOT_CHECKED):
            continue
        unknown = sorted(set(attrs) - found[2])[0]
        qualified = f"{domain}:{op_type}" if domain else op_type
        return (f"ORT refuses the model at load: node {name} ({qualified}) has attribute "
                f"{unknown!r}, which {op_type}-{found[1]}, the schema onnxruntime {release} resolves "
                f"it to at opset {opsets.get(domain)}, does not have (graph.cc VerifyNodeAndOpMatch: "
                f"\"Unrecognized attribute: {unknown} for operator {op_type}\")")
    return None


def kernel_creation_failures(model, assigned, rules, order):
    """``[(node index, why)]`` for nodes whose provider's kernel constructor would throw."""
    out = []
    for i in order:
        rule = rules.get(i)
        if rule is None or not (rule.kernel_requires or rule.compile_failure):
            continue
        node = model.nodes[i]
        if rule.compile_failure:
            out.append((i, f"{assigned[i]} claims {node.name} ({node.qualified_op}) and fails to compile it: "
                           f"{rule.compile_failure}"))
            continue
        for cond in rule.kernel_requires:
            bad = _attr_ok(cond, node)
            if bad:
                why = dict(cond).get("why", "")
                out.append((i, f"{assigned[i]} cannot create the kernel of {node.name} ({node.qualified_op}): "
                               f"{bad}" + (f" ({why})" if why else "")))
                break
    return out


def whole_model_refusal(model, table):
    """``(reason category, why)`` when ORT asks ``table``'s provider for no node of ``model`` at all, else
    ``None``: an NHWC provider and an opset its layout transformation does not support
    (:func:`partsim.sim.layout.layout_opset_refusal`), or a graph input of no known rank where the table says
    the provider then takes nothing (``partitioning.unknown_rank_input_refuses_model``, measured)."""
    from .layout import layout_opset_refusal

    why = layout_opset_refusal(model, table)
    if why:
        return "opset_version", why
    option = table.option("unknown_rank_input_refuses_model")
    if option:
        for t in model.graph_inputs:
            v = model.value(t)
            # a tensor (io/build.py writes other types as seq(...), optional(...), map(...): they have no shape)
            if v.shape is None and not v.is_constant and v.dtype and not v.dtype.startswith(("seq(", "map(", "optional(")):
                return "dynamic_shape", f"graph input {t!r} has no known rank, and {table.provider} then takes " \
                                        f"no node of the model ({option})"
    return None


def compiled_graph_failures(model, assigned, tables, order):
    """``[(node index, why)]`` for nodes a compiling EP claims whose compiled graph then fails (the OpenVINO
    plugin, measured on its probe sessions, partsim/gen/openvino_plugin.py; table options
    ``passthrough_fail_ops``, ``zero_size_input_fails``, ``dynamic_rank_fails``):

    - a node of ``passthrough_fail_ops`` with one input, a graph input, whose output is a graph output: OpenVINO
      returns the input as the output and the compiled model loses the input's name ("Input names mismatch");
    - a node reading a graph input with a zero-sized dimension (the same message: OpenVINO drops the input),
      also one whose subgraph reads such an input from the outer graph (``zero_size_subgraph_input_fails``);
    - an Unsqueeze of run-time axes (its output's rank is unknown to OpenVINO, whose CPU plugin needs ranks);
    - a Reduce* whose axes come from a Range of run-time bounds on the same provider (OpenVINO 1.24.1's ONNX
      frontend needs the axes tensor's shape, and its own shape inference cannot tell that Range's length);
    - a node reading a tensor of no known rank that another provider made (OpenVINO 1.24.1: its CPU plugin
      takes no partition input of dynamic rank);
    - a MaxPool-22 with ``ceil_mode`` whose output ONNX shortens by one (the last window would start past the
      input): OpenVINO computes the plain ceil size ("I/O size mismatch"; MaxPool-12 ran in the same case);
    - an If with a branch holding a Constant of no element (torchvision's empty boxes in fasterrcnn's NMS
      branches): OpenVINO's ONNX frontend fails on the If ("parent_value.get_node() != nullptr");
    - a Split-18 by ``num_outputs`` of a static length it cannot cut as ONNX does (:func:`_uneven_split`), itself
      claimed or in a branch of a claimed If (OpenVINO converts an If's branches whichever runs).
    """
    options = {}
    for t in tables:
        opts = {k: t.option(k) for k in ("passthrough_fail_ops", "zero_size_input_fails", "dynamic_rank_fails",
                                         "pool_ceil_output_fails", "empty_constant_branch_fails",
                                         "dynamic_reduce_axes_fails", "unknown_rank_partition_input_fails",
                                         "uneven_split_fails", "zero_size_subgraph_input_fails")}
        if any(opts.values()):
            options[t.provider] = opts
    if not options:
        return []
    inputs, outputs = set(model.graph_inputs), set(model.graph_outputs)
    out = []
    for i in order:
        opts = options.get(assigned[i])
        if opts is None:
            continue
        why = _compiled_failure(model, model.nodes[i], opts, inputs, outputs, assigned)
        if why:
            out.append((i, f"{assigned[i]} claims {model.nodes[i].name} ({model.nodes[i].qualified_op}) and its "
                           f"compiled graph fails: {why}"))
    return out


def _compiled_failure(model, node, opts, inputs, outputs, assigned):
    given = [t for t in node.inputs if t]
    if (node.op_type in (opts["passthrough_fail_ops"] or ()) and len(given) == 1 and given[0] in inputs
            and node.outputs and node.outputs[0] in outputs):
        return "its output is its graph input unchanged (measured: 'Input names mismatch')"
    if opts["zero_size_input_fails"]:
        # an empty vector (shape [0]: the probe's ReduceSum axes, the node tests' split_zero_size_splits input);
        # a node reading an input with a zero among other dimensions was created and ran (the node tests
        # reduce_*_empty_set [2, 0, 4], tril_zero and triu_zero [3, 0, 5] on the plugin)
        for t in given:
            if t in inputs and model.value(t).shape == (0,):
                return f"graph input {t!r} is an empty vector (shape [0]) ({opts['zero_size_input_fails']})"
    if opts["zero_size_subgraph_input_fails"]:
        # the same drop when only a subgraph reads the input (the node's implicit inputs, nested subgraphs too:
        # plugin probes if_implicit_empty_input, loop_implicit_empty_input; a Scan body failed the same way); an
        # empty vector a node makes (a Slice to nothing) or an initializer read so ran
        for t in node.implicit_inputs:
            if t in inputs and model.value(t).shape == (0,):
                return f"its subgraph reads graph input {t!r}, an empty vector (shape [0]), from the outer graph " \
                       f"({opts['zero_size_subgraph_input_fails']})"
    if opts["pool_ceil_output_fails"] and node.op_type == "MaxPool" and not node.domain and (
            node.since_version or 0) >= 22:
        from .layout_checks import LAYOUT_CHECKS

        why = LAYOUT_CHECKS["pool_ceil_output"](model, node)
        if why:
            return f"{why.replace('QNN', 'OpenVINO')} ({opts['pool_ceil_output_fails']})"
    if opts["empty_constant_branch_fails"] and node.op_type == "If" and not node.domain:
        empty = _empty_branch_constant(model, node)
        if empty:
            return f"its branch holds {empty!r}, a Constant of no element ({opts['empty_constant_branch_fails']})"
    if opts["uneven_split_fails"]:
        for split in [node] + (_branch_nodes(model, node) if node.op_type == "If" and not node.domain else []):
            why = _uneven_split(model, split)
            if why:
                where = "" if split is node else f"its branch holds {split.name}, "
                return f"{where}{why} ({opts['uneven_split_fails']})"
    if opts["dynamic_rank_fails"] and node.op_type == "Unsqueeze" and len(node.inputs) > 1 and node.inputs[1]:
        # the measured case: OpenVINO knows the output's rank only when the axes are constant
        if not model.value(node.inputs[1]).is_constant:
            return f"its axes are read at run time, so OpenVINO cannot know the output's rank " \
                   f"({opts['dynamic_rank_fails']})"
    if opts["unknown_rank_partition_input_fails"]:
        for t in given:
            made_by = model.producer.get(t)
            if made_by is not None and assigned[made_by] != assigned[node.index] and model.value(t).shape is None:
                return f"it reads {t!r}, made on {assigned[made_by]} with no known rank " \
                       f"({opts['unknown_rank_partition_input_fails']})"
    if (opts["dynamic_reduce_axes_fails"] and node.op_type.startswith("Reduce") and not node.domain
            and len(node.inputs) > 1 and node.inputs[1]):
        made_by = model.producer.get(node.inputs[1])
        rng = model.nodes[made_by] if made_by is not None else None
        # OpenVINO infers the shapes of its own subgraph: a Range of run-time bounds there has a length it cannot
        # tell (ORT's data propagation may know it: the subgraph's declared types do not reach that far)
        if (rng is not None and rng.op_type == "Range" and not rng.domain and assigned[made_by] == assigned[node.index]
                and not all(model.value(t).is_constant for t in rng.inputs if t)):
            return f"its axes come from {rng.name} (a Range of run-time bounds on the same provider), whose length " \
                   f"OpenVINO cannot tell ({opts['dynamic_reduce_axes_fails']})"
    return None


def _empty_branch_constant(model, node):
    """The first constant of no element (a zero in its shape) that one of ``node``'s branches outputs or reads,
    else ``None`` (the branches are the IR scopes ``<node>/then_branch`` and ``<node>/else_branch``).  One the
    branch reads from the outer graph (an implicit input of ``node``) does not count: an If whose branch reads an
    empty initializer of the outer graph ran (plugin probe if_implicit_empty_initializer)."""
    members, outer = model.scope_members(), set(node.implicit_inputs)
    for scope in (f"{node.name}/then_branch", f"{node.name}/else_branch"):
        tensors = list(model.scope_outputs.get(scope, ()))
        tensors += [t for i in members.get(scope, ()) for t in model.nodes[i].inputs if t]
        for t in tensors:
            v = model.values.get(t)
            if v is not None and v.is_constant and v.shape and 0 in v.shape and t not in outer:
                return t
    return None


def _branch_nodes(model, node):
    """The nodes of ``node``'s subgraphs, nested ones too."""
    from ..ir.graph import holders

    return [n for n in model.nodes if node.index in holders(model, n)]


def _uneven_split(model, node):
    """Why OpenVINO's ONNX frontend cannot convert ``node``, a Split-18 by ``num_outputs`` whose input has a
    static length L at ``axis`` that ``num_outputs`` k does not divide, else ``None``.  Measured on real sessions
    (both OpenVINO builds; tests/gen/test_openvino.py): written with a negative axis, the frontend makes
    OpenVINO's Split, which needs k to divide L ("dimension_at_axis % num_splits == 0"); otherwise it cuts chunks
    of ceil(L/k) as ONNX does and fails when that leaves the last output no element or fewer ("The split number
    is invalid", utils/split.cpp; L 4, k 5 and L 6, k 4 failed, L 7, k 4 and L 5, k 2 ran).  A dynamic length,
    a divisible one or a ``split`` input converted."""
    if node.op_type != "Split" or node.domain or (node.since_version or 0) < 18 or "num_outputs" not in node.attrs:
        return None
    if len(node.inputs) > 1 and node.inputs[1]:
        return None
    shape = model.value(node.inputs[0]).shape if node.inputs and node.inputs[0] else None
    k, axis = node.attrs["num_outputs"], node.attrs.get("axis", 0)
    if not shape or not isinstance(k, int) or k < 1 or not -len(shape) <= axis < len(shape):
        return None
    length = shape[axis]
    if not isinstance(length, int) or length % k == 0:
        return None
    if axis < 0:
        return f"{node.name} splits length {length} in {k} (not evenly) along a negative axis {axis}: OpenVINO " \
               f"makes its Split, which needs even parts"
    last = length - -(-length // k) * (k - 1)
    if last <= 0:
        return f"{node.name} splits length {length} in {k}: chunks of {-(-length // k)} leave the last output " \
               f"{last} elements"
    return None
