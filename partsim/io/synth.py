"""Seeded random layered DAG models, for benchmarks and for exploring fragmentation.

``synthesize(nodes=N, seed=S)`` builds a valid ONNX model (passes ``onnx.checker``;
shape inference types every tensor) of exactly N nodes: layers of ``width`` nodes,
each node reading one or two tensors from the previous ``reach`` layers.  All
tensors are ``float[1, 16]``; MatMul and Gemm share a handful of weight
initializers so the file stays small at a million nodes.  Same arguments → same bytes.
"""

import numpy as np

__all__ = ["synthesize", "DEFAULT_OPS"]

# unary and binary elementwise ops (shape-preserving on [1, 16]) plus the linear ones;
# a mix that mobile accelerators partly support (Erf, Mod, CumSum are common gaps)
DEFAULT_OPS = ("Add", "Mul", "Sub", "Relu", "Sigmoid", "Tanh", "MatMul", "Gemm", "Softmax", "Erf", "Abs",
               "Neg", "Exp", "Div", "Max")
_BINARY = {"Add", "Mul", "Sub", "Div", "Max", "Min", "Pow", "PRelu"}
_UNARY = {"Relu", "Sigmoid", "Tanh", "Softmax", "Erf", "Abs", "Neg", "Exp", "Log", "Sqrt", "Identity",
          "LeakyRelu", "Elu", "HardSigmoid", "Softplus", "Floor", "Ceil", "Round", "Sin", "Cos"}
_LINEAR = {"MatMul", "Gemm"}
SUPPORTED_OPS = tuple(sorted(_BINARY | _UNARY | _LINEAR))
WIDTH = 16
N_WEIGHTS = 8


def synthesize(nodes, seed=0, ops=DEFAULT_OPS, width=8, reach=3, opset=17):
    """Build the model.

    Parameters
    ----------
    nodes : int
        Exact number of nodes (>= 1).
    seed : int
    ops : sequence of str
        Op types to draw from (each one of :data:`SUPPORTED_OPS`).
    width : int
        Nodes per layer (the "branching" of the graph).
    reach : int
        How many earlier layers a node may read from (1 = a strict layer chain).

    Returns
    -------
    onnx.ModelProto

    Examples
    --------
    >>> m = synthesize(50, seed=1)
    >>> len(m.graph.node)
    50
    """
    import onnx
    from onnx import TensorProto, helper

    unknown = sorted(set(ops) - set(SUPPORTED_OPS))
    if unknown:
        raise ValueError(f"synth cannot build {', '.join(unknown)} (supported: {', '.join(SUPPORTED_OPS)})")
    if nodes < 1 or width < 1 or reach < 1:
        raise ValueError("nodes, width and reach must be positive")
    rng = np.random.default_rng(seed)
    ops = list(ops)
    op_idx = rng.integers(0, len(ops), size=nodes)
    pick = rng.random((nodes, 2))
    weights = []
    for k in range(N_WEIGHTS):
        w = (rng.standard_normal((WIDTH, WIDTH)) / np.sqrt(WIDTH)).astype(np.float32)
        weights.append(onnx.numpy_helper.from_array(w, f"W{k}"))
    bias = onnx.numpy_helper.from_array(np.zeros(WIDTH, np.float32), "B")
    graph = onnx.GraphProto()
    graph.name = f"synth_{nodes}_{seed}"
    graph.input.append(helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, WIDTH]))
    graph.initializer.extend(weights + [bias])
    layers = [["x"]]
    current = []
    consumed = set()
    for i in range(nodes):
        window = [t for layer in layers[-reach:] for t in layer]
        current.append(_add_node(graph, i, ops[op_idx[i]], window, pick[i], consumed))
        if len(current) == width:
            layers.append(current)
            current = []
    if current:
        layers.append(current)
    outputs = [t for layer in layers[1:] for t in layer if t not in consumed]
    for t in outputs:
        graph.output.append(helper.make_tensor_value_info(t, TensorProto.FLOAT, [1, WIDTH]))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="partsim synth")
    model.ir_version = 8
    return model


def _add_node(graph, i, op, window, pick, consumed):
    """Node ``i`` (``op``) reading one or two tensors of ``window`` (where ``pick`` points), its inputs added
    to ``consumed``; returns its output's name."""
    a = window[int(pick[0] * len(window))]
    name = f"n{i}_{op}"
    node = graph.node.add()
    node.op_type = op
    node.name = name
    node.output.append(name)
    if op in _BINARY:
        b = window[int(pick[1] * len(window))]
        node.input.extend([a, b])
        consumed.update((a, b))
    elif op in _LINEAR:
        node.input.extend([a, f"W{i % N_WEIGHTS}"])
        if op == "Gemm":
            node.input.append("B")
        consumed.add(a)
    else:
        node.input.append(a)
        consumed.add(a)
    return name
