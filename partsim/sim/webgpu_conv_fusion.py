"""WebGPU's Conv+activation fusion after partitioning: which activations end inside a WebGPU Conv.

ORT's Level 2 ``ConvActivationFusion`` (``core/optimizer/conv_activation_fusion.cc``,
``ConvActivationSelector``) folds the lone consumer of a Conv into it when both sit on the same provider
and the consumer is an activation the provider's Conv kernel can apply.  For WebGPU nodes onnxruntime
1.31.1 takes more activations than for CPU nodes (microsoft/onnxruntime PR #32117, "Fuse eight more
activations into Conv", 2026-08: QuickGelu, HardSwish, Elu, Gelu, Gelu(tanh), Softplus, ThresholdedRelu,
Erf; the transpose-optimizer handlers that let the layout transformation's output Transpose move past the
contrib GELUs: PR #32118).  partsim's final view comes from a CPU-only session, whose ConvActivationFusion
applies the CPU list; this module adds what the WebGPU list takes beyond it, on the graph as partsim's
layout transformation left it (a Transpose between the Conv and the activation keeps them apart).

The selector is applied again to a Conv that already took an activation (the NHWC Conv keeps its op type,
so it is a target again): ``Conv -> Gelu -> Relu`` ends as one Conv carrying Relu, measured on a real
session (tests/sim/test_webgpu_fusions.py).  Pure: no I/O, no ORT.
"""

__all__ = ["WEBGPU_CONV_ACTIVATIONS", "conv_activation_folds"]

WEBGPU = "WebGpuExecutionProvider"

# (domain, op) of the activations a WebGPU Conv takes in onnxruntime 1.31.1 with onnxruntime-ep-webgpu
# 0.4.0: conv_activation_fusion.cc's list for CPU/JS/WebGPU nodes (Relu, Sigmoid, Tanh, LeakyRelu, Clip
# with constant bounds, HardSigmoid) and PR #32117's, each checked by a Conv -> activation -> Conv
# session on the plugin (tests/sim/test_webgpu_fusions.py measures the list again)
WEBGPU_CONV_ACTIVATIONS = frozenset({
    ("", "Relu"), ("", "Sigmoid"), ("", "Tanh"), ("", "LeakyRelu"), ("", "Clip"), ("", "HardSigmoid"),
    ("", "HardSwish"), ("", "Elu"), ("", "Gelu"), ("", "Softplus"), ("", "ThresholdedRelu"), ("", "Erf"),
    ("com.microsoft", "QuickGelu"), ("com.microsoft", "Gelu"), ("com.microsoft", "FastGelu"),
})
_CONVS = frozenset({("", "Conv"), ("com.microsoft", "FusedConv"), ("com.ms.internal.nhwc", "Conv")})


def _graph_of(model, layout):
    """The main graph as the layout transformation left it for WebGPU: ``[(model index or None, inputs,
    outputs)]`` (the model's own nodes where WebGPU's layout transformation did not run)."""
    result = next((r for r in layout or () if r.provider == WEBGPU and not r.scope), None)
    if result is not None and result.graph:
        return [(orig, ins, outs) for orig, _op, ins, outs, _ep in result.graph]
    return [(n.index, n.inputs, n.outputs) for n in model.nodes if not n.scope]


def _constant_bounds(model, node):
    """Clip's min/max are constants (or absent): ``GetClipConstantMinMax`` needs them known."""
    return all(not t or t in model.scalar_consts for t in node.inputs[1:3])


def conv_activation_folds(model, provider, layout):
    """``{activation node index: Conv node index}`` for the activations WebGPU's Conv takes over in
    ``model`` (the final graph partsim partitioned: ``provider`` per node index, ``layout`` the
    assignment's layout results).

    A Conv's output must have one consumer, no graph output, and that consumer must be one of
    :data:`WEBGPU_CONV_ACTIVATIONS` on WebGPU as the Conv is (``GetLoneConsumerNode``); the chain goes on
    from the activation's output while the next lone consumer is an activation too.
    """
    graph = _graph_of(model, layout)
    consumers: dict = {}
    for k, (_orig, ins, _outs) in enumerate(graph):
        for t in ins:
            if t:
                consumers.setdefault(t, []).append(k)
    folds = {}
    nodes, graph_outputs = model.nodes, set(model.graph_outputs)
    for orig, _ins, outs in graph:
        if orig is None or provider[orig] != WEBGPU or (nodes[orig].domain, nodes[orig].op_type) not in _CONVS:
            continue
        tensor = outs[0] if outs else ""
        while tensor and tensor not in graph_outputs and len(consumers.get(tensor, ())) == 1:
            nxt, _ins2, nxt_outs = graph[consumers[tensor][0]]
            if nxt is None or provider[nxt] != WEBGPU:
                break
            act = nodes[nxt]
            if (act.domain, act.op_type) not in WEBGPU_CONV_ACTIVATIONS or (
                    act.op_type == "Clip" and not _constant_bounds(model, act)):
                break
            folds[nxt] = orig
            tensor = nxt_outs[0] if nxt_outs else ""
    return folds
