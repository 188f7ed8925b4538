"""Small ONNX models for tests, built with onnx.helper."""

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper


def save(model, path):
    onnx.save(model, path)
    return path


def model(nodes, inputs, outputs, inits=(), opset=17, extra_opsets=()):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    ops = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, v) for d, v in extra_opsets]
    m = helper.make_model(g, opset_imports=ops)
    m.ir_version = 8
    return m


def vi(name, shape, dtype=T.FLOAT):
    return helper.make_tensor_value_info(name, dtype, shape)


def const(name, shape, value=0.5, dtype=T.FLOAT):
    n = int(np.prod(shape)) if shape else 1
    return helper.make_tensor(name, dtype, shape, [value] * n)


def random_dag(seed, n_nodes, ops=("Add", "Mul", "Relu", "Sigmoid", "Sub", "Tanh")):
    """A seeded random DAG of elementwise ops on [2, 4] float tensors (one graph input)."""
    rng = np.random.default_rng(seed)
    tensors = ["x"]
    nodes = []
    for k in range(n_nodes):
        op = ops[int(rng.integers(len(ops)))]
        a = tensors[int(rng.integers(len(tensors)))]
        name = f"n{k}_{op}"
        if op in ("Add", "Mul", "Sub"):
            b = tensors[int(rng.integers(len(tensors)))]
            nodes.append(helper.make_node(op, [a, b], [name], name=name))
        else:
            nodes.append(helper.make_node(op, [a], [name], name=name))
        tensors.append(name)
    consumed = {i for n in nodes for i in n.input}
    outs = [t for t in tensors[1:] if t not in consumed] or [tensors[-1]]
    return model(nodes, [vi("x", [2, 4])], [vi(t, [2, 4]) for t in outs])
