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


def split18(length, parts, axis=0, in_if=False, dtype=T.INT64):
    """A Split-18 SP by ``num_outputs`` ``parts`` of graph input x (shape ``[length]``; ``None``: symbolic) along
    ``axis``, its outputs concatenated; ``in_if``: in the then branch of an If IF (else: Identity of x), as in
    AffineGrid's function body."""
    outs = [f"s{i}" for i in range(parts)]
    split = helper.make_node("Split", ["x"], outs, name="SP", num_outputs=parts, axis=axis)
    x = vi("x", ["L" if length is None else length], dtype)
    if not in_if:
        nodes = [split, helper.make_node("Concat", outs, ["y"], name="CT", axis=0)]
        return model(nodes, [x], [vi("y", ["M"], dtype)], opset=18)
    then_g = helper.make_graph(
        [split, helper.make_node("Concat", outs, ["t"], name="CT", axis=0)], "then", [], [vi("t", ["T"], dtype)]
    )
    else_g = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["e"], name="ID")], "else", [], [vi("e", ["E"], dtype)]
    )
    nodes = [
        helper.make_node("If", ["c"], ["b"], name="IF", then_branch=then_g, else_branch=else_g),
        helper.make_node("Identity", ["b"], ["y"], name="Z"),
    ]
    return model(nodes, [x, vi("c", [], T.BOOL)], [vi("y", ["M"], dtype)], opset=18)


#: name -> (split18 arguments, fails on onnxruntime-openvino 1.24.1, fails on the OpenVINO plugin 1.8.1): measured
UNEVEN_SPLITS = {
    "if_4_in_5": ((4, 5, 0, True), True, True),  # chunks of 1 leave the last none (affine_grid_2d_expanded)
    "if_5_in_4": ((5, 4, 0, True), True, True),  # chunks of 2 leave the last -1 (affine_grid_3d_expanded)
    "if_7_in_4": ((7, 4, 0, True), False, False),  # 2, 2, 2, 1
    "if_symbolic_in_5": ((None, 5, 0, True), False, False),  # a length OpenVINO cannot know: converted
    "split_7_in_4_negative_axis": ((7, 4, -1), True, True),  # OpenVINO's own Split: needs even parts
    "split_7_in_4": ((7, 4), False, False),
    "split_8_in_4_negative_axis": ((8, 4, -1), False, False),
    "split_4_in_5": ((4, 5), False, True),  # 1.24.1 leaves a Split of an empty output to the CPU
}


def _scan_reads(shape):
    """Relu A on x[3] -> a Scan SC over x whose body adds ReduceSum(e) (e: an outer graph input of ``shape``)."""
    h = helper
    body = h.make_graph(
        [
            h.make_node("Identity", ["s_in"], ["s_out"], name="S_ID"),
            h.make_node("ReduceSum", ["e"], ["rs"], name="S_RS", keepdims=0),
            h.make_node("Add", ["xs", "rs"], ["ys"], name="S_ADD"),
        ],
        "body",
        [vi("s_in", [3]), vi("xs", [])],
        [vi("s_out", [3]), vi("ys", [])],
    )
    nodes = [
        h.make_node("Relu", ["x"], ["a"], name="A"),
        h.make_node("Scan", ["a", "x"], ["b", "sc"], name="SC", body=body, num_scan_inputs=1),
        h.make_node("Relu", ["b"], ["c"], name="C"),
        h.make_node("Relu", ["c"], ["y"], name="D"),
    ]
    m = model(nodes, [vi("x", [3]), vi("e", shape)], [vi("y", [3]), vi("sc", [3])], opset=21)
    m.ir_version = 10
    return m


def _nested_if_reads_empty_input():
    """The plugin probe if_implicit_empty_input's If inside the then branch of an outer If OUT."""
    from partsim.gen.openvino_plugin_subgraph_probes import SUBGRAPH_PROBES

    m = SUBGRAPH_PROBES["if_implicit_empty_input"][1]()
    inner = m.graph.node[1]
    inner.output[0] = "ib"
    then_g = helper.make_graph([inner], "outer_then", [], [vi("ib", ["T"])])
    else_g = helper.make_graph(
        [helper.make_node("Relu", ["a"], ["ob"], name="outer_relu")], "outer_else", [], [vi("ob", ["E"])]
    )
    outer = helper.make_node("If", ["cond"], ["b"], name="OUT", then_branch=then_g, else_branch=else_g)
    m.graph.node.remove(inner)
    m.graph.node.insert(1, outer)
    return m


def empty_subgraph_reads():
    """``{case: (model builder, the session fails)}``: subgraphs reading an outer [0] tensor, with the fates
    measured on real OpenVINO plugin 1.8.1 sessions (tests/gen/test_openvino_plugin.py checks them again)."""
    from partsim.gen.openvino_plugin_subgraph_probes import SUBGRAPH_PROBES

    cases = {name: (build, "empty_input" in name) for name, (_, build) in SUBGRAPH_PROBES.items()}
    cases["scan_implicit_empty_input"] = (lambda: _scan_reads([0]), True)
    cases["nested_if_implicit_empty_input"] = (_nested_if_reads_empty_input, True)
    return cases
