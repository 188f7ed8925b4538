"""The input tensors of a compiled partition, as the QNN EP sets them up, and when there are none.

ORT hands a compiling EP each partition as one fused node whose inputs are, in order, every
explicit input of the partition's nodes (walked in the partition's node order) that no earlier
node of it produces, first occurrence first (``onnxruntime/core/providers/partitioning_utils.cc``
``MakeComputeCapability``).  onnxruntime-qnn then

- drops the constant initializers (``builder/qnn_model.cc`` ``SetGraphInputOutputInfo``:
  ``IsConstantInitializer``), and orders the rest by the model's own graph inputs when every one
  of those is an input of this partition, else keeps the fused order (``ResolveGraphInputOutputOrder``);
- takes the QNN tensor of each name in that order and stops at the first name its op builders
  made no tensor for (``builder/qnn_model_wrapper.cc`` ``GetGraphInputOutputTensorWrapper``:
  "Model input or output name not exist: ... Could cause execution error", then ``break``);
- refuses a graph whose input tensor list came out empty (``QnnModel::SetupTensors``; 2.7.0 says
  "Having zero graph inputs is not supported on this backend", and session creation fails).

A builder makes no tensor for an input it reads only for its type: CastLike's second input
(onnxruntime-qnn 2.7.0's Cast builder, "QNN Cast node must have 1 input (Cast) or 2 inputs
(CastLike)"; measured: the affine_grid ``_expanded`` node tests, whose partition's first input is
the ``theta`` that only CastLikes read).  The table lists such inputs
(``partitioning.type_only_inputs``).  The nodes QNN refuses for a dtype of a model graph output
(``partitioning.refused_graph_output_dtypes``) or for an int64 tensor passed from a graph input to a graph output
(``partitioning.int64_io_passthrough_ops``) are found here too.  Pure.
"""

__all__ = ["compiled_inputs", "no_graph_input", "refused_input_dtype",
           "graph_output_dtype_nodes", "needs_constant", "dynamic_input", "int64_io_nodes", "int64_io_failure",
           "int64_output_casts", "graph_io_node_refusals", "partition_refusals"]

from .zero_size import zero_size_failure


def _fused_inputs(model, group):
    """The non-constant tensors ``group`` reads that no member makes, in first-read order."""
    produced, seen, order = set(), set(), []
    for i in group:
        node = model.nodes[i]
        for t in node.inputs:
            if t and t not in produced and t not in seen:
                seen.add(t)
                if not model.value(t).is_constant:
                    order.append(t)
        produced.update(t for t in node.outputs if t)
    return order


def compiled_inputs(model, group):
    """The non-constant inputs of the fused node ORT makes of ``group`` (node indices in the
    partition's order), in the order the QNN EP sets them up."""
    order = _fused_inputs(model, group)
    declared = [t for t in model.graph_inputs if not model.value(t).is_constant]
    if declared and all(t in order for t in declared):
        return declared + [t for t in order if t not in set(declared)]
    return order


def no_graph_input(model, group, type_only=None):
    """Why the compiled graph of ``group`` gets no input tensor (a session refusal), or ``None``.

    ``type_only`` maps an op type to the input positions its builder reads only for their type.
    """
    inputs = compiled_inputs(model, group)
    if not inputs:
        return "every input of the partition is a constant initializer"
    first = inputs[0]
    type_only = type_only or {}
    for i in group:
        node = model.nodes[i]
        skip = set(type_only.get(node.op_type, ()))
        if any(t == first and k not in skip for k, t in enumerate(node.inputs)):
            return None
    readers = sorted({model.nodes[i].op_type for i in group if first in model.nodes[i].inputs})
    return (f"its first input '{first}' is read only for its type (by {', '.join(readers)}), so QNN makes no "
            "tensor for it and stops collecting graph inputs there")


def refused_input_dtype(model, group, dtypes):
    """Why the compiled graph of ``group`` cannot take one of its inputs, or ``None``: an input
    (not a constant initializer) of a dtype in ``dtypes``.

    onnxruntime-qnn 2.7.0 cannot register a float64 graph input tensor ("Failed to pre-register
    input: x ... error code: 7004", then "Failed to compose Qnn graph"): measured with
    RandomUniformLike, the one builder seen claiming a double input (``test_bernoulli``, whose
    body reads the double ``x``; the same node after a Cast to double inside the partition runs).
    """
    if not dtypes:
        return None
    for t in compiled_inputs(model, group):
        dt = model.value(t).dtype
        if dt in dtypes:
            return (f"its input '{t}' is {dt}, which the backend cannot take as a graph input (QNN: \"Failed to "
                    "compose Qnn graph\")")
    return None


def graph_output_dtype_nodes(model, dtypes):
    """``{node index: tensor}``: the main-graph nodes that write or read a graph output of the model whose
    dtype is in ``dtypes`` (``partitioning.refused_graph_output_dtypes``).

    Measured on onnxruntime-qnn 2.7.0 (HTP emulator, soc_model 60; tests/gen/test_qnn_refusals.py): QNN
    leaves such a node to the CPU (no session failure), for every op tried: a Cast to double (from bool,
    float, float16, int32, int64, uint8) or a RandomUniformLike of dtype double writing a double graph
    output, and a Cast reading one (``test_bernoulli_double_expanded``'s last Cast); the same Casts to
    double are claimed when a QNN Cast or Add reads their output inside the partition.
    """
    if not dtypes:
        return {}
    out = {}
    for t in model.graph_outputs:
        if model.value(t).dtype not in dtypes:
            continue
        for n in model.nodes:
            if not n.scope and (t in n.outputs or t in n.inputs):
                out.setdefault(n.index, t)
    return out


def _int64_io(model, node, inputs, outputs):
    """``(input, output)`` of a node whose int64 input 0 is in ``inputs`` (not a constant) and whose output 0 is in
    ``outputs``, or ``None``."""
    if not node.inputs or not node.outputs or not node.inputs[0] or not node.outputs[0]:
        return None
    t_in, t_out = node.inputs[0], node.outputs[0]
    value = model.value(t_in)
    if value.dtype != "int64" or value.is_constant or t_in not in inputs or t_out not in outputs:
        return None
    return t_in, t_out


def int64_io_nodes(model, ops):
    """``{node index: (input, output)}``: the main-graph nodes of ``ops`` (``partitioning.int64_io_passthrough_ops``)
    whose int64 input 0 is a graph input of the model and whose output 0 is a graph output of it.

    onnxruntime/onnxruntime-qnn ``transpose_op_builder.cc`` (``ProcessAttributesAndOutputs``, main @cee6c0d): the
    EP keeps int64 only on graph inputs and outputs (a native int64 tensor becomes int32, ``qnn_def.h``
    ``QnnTensorWrapper``), casts an int64 graph input to int32 for the node (``base_op_builder.cc``
    ``ProcessInt64Tensors``: ``<name>_cast_int32``), and when such an input feeds a Transpose whose output is a
    graph output plans a Cast back to int64 from a tensor no node writes.  GetCapability validates on the model's
    graph I/O: the node is left to the CPU.  Measured on 2.7.0 (tests/gen/test_qnn_refusals.py): graph input ->
    Transpose -> graph output on the CPU; Add -> Transpose -> graph output, graph input -> Transpose -> Add, both
    on QNN.
    """
    if not ops:
        return {}
    inputs = {t for t in model.graph_inputs if not model.value(t).is_constant}
    outputs = set(model.graph_outputs)
    out = {}
    for n in model.nodes:
        if not n.scope and n.op_type in ops and not n.domain:
            io = _int64_io(model, n, inputs, outputs)
            if io:
                out[n.index] = io
    return out


def _fused_outputs(model, group):
    """The tensors ``group``'s members make that a graph output or a node outside the group reads."""
    members = set(group)
    graph_outputs = set(model.graph_outputs)
    out = set()
    for i in group:
        for t in model.nodes[i].outputs:
            if t and (t in graph_outputs or any(c not in members for c in model.consumers.get(t, ()))):
                out.add(t)
    return out


def int64_io_failure(model, group, ops):
    """Why the compiled graph of ``group`` does not compose, or ``None``: a claimed node of ``ops`` whose int64
    input 0 comes from outside the partition and whose output 0 leaves it (the rule of :func:`int64_io_nodes` on
    the fused node's inputs and outputs, ``qnn_model.cc`` ComposeGraph: "Failed to compose Qnn graph").  Measured on
    2.7.0: Shape (CPU) -> Transpose -> graph output fails the session; Shape -> Add -> Transpose -> graph output runs.
    """
    if not ops:
        return None
    inputs, outputs = set(_fused_inputs(model, group)), _fused_outputs(model, group)
    for i in group:
        node = model.nodes[i]
        io = _int64_io(model, node, inputs, outputs) if node.op_type in ops and not node.domain else None
        if io:
            return (f"{node.name} ({node.op_type}) reads the int64 partition input '{io[0]}' and writes the partition "
                    f"output '{io[1]}', which its builder cannot compose (QNN: \"Failed to compose Qnn graph\")")
    return None


def graph_io_node_refusals(model, table):
    """``{node index: why}``: the main-graph nodes ``table``'s provider leaves to the next one for a tensor of the
    model's graph I/O (``refused_graph_output_dtypes``, ``int64_io_passthrough_ops``,
    ``int64_graph_output_casts_from``)."""
    ep = table.provider
    out = {i: (f"{ep} takes no node writing or reading the graph output '{t}' ({model.value(t).dtype}; "
               "refused_graph_output_dtypes)")
           for i, t in graph_output_dtype_nodes(model, table.option("refused_graph_output_dtypes")).items()}
    for i, (t_in, t_out) in int64_io_nodes(model, table.option("int64_io_passthrough_ops")).items():
        out.setdefault(i, f"{ep} takes no {model.nodes[i].op_type} from the int64 graph input '{t_in}' to the graph "
                          f"output '{t_out}' (int64_io_passthrough_ops)")
    sources = table.option("int64_graph_output_casts_from")
    for i, t in (int64_output_casts(model, sources) if sources is not None else {}).items():
        out.setdefault(i, f"{ep} takes a Cast to the int64 graph output '{t}' only from {', '.join(sources)} "
                          "(int64_graph_output_casts_from)")
    return out


def int64_output_casts(model, sources):
    """``{node index: output}``: the main-graph Casts writing an int64 graph output of the model from an input dtype
    not in ``sources`` (``partitioning.int64_graph_output_casts_from``).

    onnxruntime-qnn ``cast_op_builder.cc``: a graph output keeps its int64 QNN type (a native int64 tensor becomes
    int32), and the HTP validates a Cast to int64 only from int32 or int64.  Measured on 2.7.0 (soc_model 60,
    tests/gen/test_qnn_refusals.py): from float, float16, uint8 or bool the Cast runs on the CPU; from int32 or
    int64 on QNN; from float to a tensor a CPU node reads (a partition output, not the model's) on QNN.
    """
    outputs = set(model.graph_outputs)
    out = {}
    for n in model.nodes:
        if n.scope or n.op_type != "Cast" or n.domain or not n.outputs or n.outputs[0] not in outputs:
            continue
        if model.value(n.outputs[0]).dtype == "int64" and n.inputs and model.value(n.inputs[0]).dtype not in sources:
            out[n.index] = n.outputs[0]
    return out


def needs_constant(model, group, option):
    """Why the compiled graph of ``group`` cannot be built, or ``None``: a node whose inputs listed in
    ``option`` (``{op type: [input positions]}``) are present but not constant initializers.

    onnxruntime-qnn 2.7.0's STFT builder claims the node whatever its inputs are, then reads
    ``frame_step`` / ``frame_length`` as initializer data: fed at run time, the process dies
    (SIGSEGV; ``test_stft``, ``test_stft_with_window``), and a run-time ``window`` fails the
    graph's finalize (``QNN_COMMON_ERROR_...``).  Measured: ``tests/gen/test_qnn_refusals.py``.
    """
    for i in group:
        node = model.nodes[i]
        for k in (option or {}).get(node.op_type, ()):
            if k < len(node.inputs) and node.inputs[k] and not model.value(node.inputs[k]).is_constant:
                return (f"{node.name} ({node.op_type}) reads input {k} '{node.inputs[k]}' at run time, which its "
                        "builder needs as a constant initializer (QNN: the process crashes or the graph does "
                        "not finalize)")
    return None


def _symbolic(model, t):
    """A tensor whose shape ORT knows with a dimension that has no value (the rank known, a dim symbolic or
    unknown): ``GetShape`` gives -1 there.  A tensor without any shape gives no dims to test."""
    shape = model.value(t).shape
    return shape is not None and not model.value(t).is_static


def dynamic_input(model, group):
    """Why the compiled graph of ``group`` cannot be set up, or ``None``: an input of the fused node (not a
    constant initializer; ORT's order, ``partitioning_utils.cc`` MakeComputeCapability) whose shape has a
    dimension without a value.

    onnxruntime-qnn 2.7.0 ``builder/qnn_model.cc`` ``SetGraphInputOutputInfo`` refuses it when it composes
    the graph ("Dynamic shape is not supported yet, for input: <name>"), and the session fails whole: there
    is no fallback.  It checks the fused node's outputs the same way after the inputs ("... for output"); a
    claimed node whose inputs are static has had static outputs in every graph tried (ORT merges a graph
    output's declared symbolic dims with the inferred ones), so only the inputs are checked here.

    Most builders refuse a node with such an input already in GetCapability (the table's ``static_shape``);
    the few that look at no shape (``reciprocal_op_builder.cc``, ``tan_op_builder.cc``: IsOpSupported checks
    the input count and type only; GRU on 2.7.0) claim it, and the session fails (measured on real sessions:
    magika's LayerNorm Reciprocal, a GRU encoder; tests/gen/test_qnn_dynamic.py).
    """
    for t in _fused_inputs(model, group):
        if _symbolic(model, t):
            return f"its input '{t}' has a dynamic shape (QNN: \"Dynamic shape is not supported yet, for input: {t}\")"
    return None


def partition_refusals(model, group, table):
    """``[(why, nodes)]``: the reasons the backend of ``table``'s provider cannot build the partition
    ``group`` it claimed (each a session refusal), from the table's ``partitioning`` options."""
    ep = table.provider
    names = ", ".join(model.nodes[i].name for i in group[:5]) + (" …" if len(group) > 5 else "")
    out = []
    failed = zero_size_failure(model, group, table.option("zero_size_tensors"), ep)
    if failed:
        out.append(failed)
    bad_input = (refused_input_dtype(model, group, table.option("refused_graph_input_dtypes"))
                 or needs_constant(model, group, table.option("build_needs_constant_inputs"))
                 or int64_io_failure(model, group, table.option("int64_io_passthrough_ops")))
    if bad_input:
        out.append((f"{ep} claims a partition ({names}): {bad_input}", tuple(group)))
    dynamic = dynamic_input(model, group) if table.option("static_partition_io") else None
    if dynamic:
        out.append((f"{ep} claims a partition ({names}): {dynamic}; the session fails", tuple(group)))
    empty = (no_graph_input(model, group, table.option("type_only_inputs"))
             if table.option("refuse_all_constant_input_groups") else None)
    if empty:
        out.append((f"{ep} claims a partition ({names}): {empty}; its compiled graph has no input tensor, which "
                    "the backend refuses (\"Having zero graph inputs is not supported on this backend\")",
                    tuple(group)))
    return out
