"""The OpenVINO plugin's graph probes (each decides one partitioning option or one failure after a claim); the
builders of ops the WebGPU/QNN builders do not make are in :mod:`partsim.gen.openvino_plugin_op_builders`.  Used by
:mod:`partsim.gen.openvino_plugin`, which runs them as real plugin sessions and derives the table.
"""

from .openvino_plugin_subgraph_probes import SUBGRAPH_PROBES
from .qnn_probes import _tp

__all__ = ["GRAPH_PROBES"]

def _graph(nodes, inputs, outputs, inits=(), opset=21):
    from onnx import helper as h

    m = h.make_model(h.make_graph(nodes, "probe_graph", inputs, outputs, list(inits)),
                     opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 10
    return m


def _vi(name, dtype="float", shape=(2, 4)):
    from onnx import helper as h

    return h.make_tensor_value_info(name, _tp(dtype), None if shape is None else list(shape))


def _single_not_last():
    """Relu A, then an LpPool (which the plugin leaves to the CPU: measured), then Relus C, D: A is a one-node
    cluster that is not the last and touches no later cluster."""
    from onnx import helper as h

    nodes = [h.make_node("Relu", ["x"], ["a"], name="A"),
             h.make_node("LpPool", ["a"], ["p"], name="LP", kernel_shape=[2, 2]),
             h.make_node("Relu", ["p"], ["c"], name="C"), h.make_node("Relu", ["c"], ["y"], name="D")]
    return _graph(nodes, [_vi("x", shape=(1, 2, 4, 4))], [_vi("y", shape=(1, 2, 3, 3))])


def _if_node():
    """An If on a run-time condition, both branches one float Relu/Neg of an outer tensor, inside a chain."""
    from onnx import helper as h

    then_g = h.make_graph([h.make_node("Relu", ["a"], ["t"], name="then_relu")], "then", [], [_vi("t")])
    else_g = h.make_graph([h.make_node("Neg", ["a"], ["e"], name="else_neg")], "else", [], [_vi("e")])
    nodes = [h.make_node("Relu", ["x"], ["a"], name="A"),
             h.make_node("If", ["cond"], ["b"], name="IF", then_branch=then_g, else_branch=else_g),
             h.make_node("Relu", ["b"], ["c"], name="C"), h.make_node("Relu", ["c"], ["y"], name="D")]
    return _graph(nodes, [_vi("x"), _vi("cond", "bool", [])], [_vi("y")])


def _if_outer_initializer():
    """An If whose then branch reads an initializer of the outer graph (fasterrcnn's If nodes do)."""
    import numpy as np
    from onnx import helper as h
    from onnx import numpy_helper

    w = numpy_helper.from_array(np.ones((2, 4), np.float32), "w")
    then_g = h.make_graph([h.make_node("Add", ["a", "w"], ["t"], name="then_add")], "then", [], [_vi("t")])
    else_g = h.make_graph([h.make_node("Neg", ["a"], ["e"], name="else_neg")], "else", [], [_vi("e")])
    nodes = [h.make_node("Relu", ["x"], ["a"], name="A"),
             h.make_node("If", ["cond"], ["b"], name="IF", then_branch=then_g, else_branch=else_g),
             h.make_node("Relu", ["b"], ["c"], name="C"), h.make_node("Relu", ["c"], ["y"], name="D")]
    return _graph(nodes, [_vi("x"), _vi("cond", "bool", [])], [_vi("y")], [w])


def _if_constant_branch():
    """fasterrcnn's If: the then branch is one Constant, the else branch reads an outer Constant node's output."""
    import numpy as np
    from onnx import helper as h
    from onnx import numpy_helper

    value = numpy_helper.from_array(np.ones((2, 4), np.float32), "v")
    then_g = h.make_graph([h.make_node("Constant", [], ["t"], name="then_const", value=value)], "then", [],
                          [_vi("t")])
    else_g = h.make_graph([h.make_node("Add", ["a", "k"], ["e"], name="else_add")], "else", [], [_vi("e")])
    nodes = [h.make_node("Constant", [], ["k"], name="K", value=value), h.make_node("Relu", ["x"], ["a"], name="A"),
             h.make_node("If", ["cond"], ["b"], name="IF", then_branch=then_g, else_branch=else_g),
             h.make_node("Relu", ["b"], ["c"], name="C"), h.make_node("Relu", ["c"], ["y"], name="D")]
    return _graph(nodes, [_vi("x"), _vi("cond", "bool", [])], [_vi("y")])


def _if_empty_constant_branch():
    """fasterrcnn's If as it is: the then branch is one Constant holding no element (torchvision's empty boxes,
    shape [0, 4]), the else branch reads an outer tensor."""
    import numpy as np
    from onnx import helper as h
    from onnx import numpy_helper

    empty = numpy_helper.from_array(np.zeros((0, 4), np.float32), "v")
    then_g = h.make_graph([h.make_node("Constant", [], ["t"], name="then_const", value=empty)], "then", [],
                          [_vi("t", shape=(None, 4))])
    else_g = h.make_graph([h.make_node("Neg", ["a"], ["e"], name="else_neg")], "else", [], [_vi("e", shape=(None, 4))])
    nodes = [h.make_node("Relu", ["x"], ["a"], name="A"),
             h.make_node("If", ["cond"], ["b"], name="IF", then_branch=then_g, else_branch=else_g),
             h.make_node("Relu", ["b"], ["c"], name="C"), h.make_node("Relu", ["c"], ["y"], name="D")]
    return _graph(nodes, [_vi("x"), _vi("cond", "bool", [])], [_vi("y", shape=(None, 4))])


def _split(length, parts, axis=0, in_if=False):
    """Relu A on x[length] -> Split-18 SP by ``num_outputs`` ``parts`` along ``axis`` -> Concat -> Relus C, D;
    ``in_if``: the Split and Concat are the then branch of an If IF whose else branch is a Neg (OpenVINO's ONNX
    frontend converts both branches, whichever runs)."""
    from onnx import helper as h

    outs = [f"s{i}" for i in range(parts)]
    body = [h.make_node("Split", ["a"], outs, name="SP", num_outputs=parts, axis=axis),
            h.make_node("Concat", outs, ["b"], name="CT", axis=0)]
    shape = (length,)
    if in_if:
        then_g = h.make_graph([body[0], h.make_node("Concat", outs, ["t"], name="CT", axis=0)], "then", [],
                              [_vi("t", shape=("T",))])
        else_g = h.make_graph([h.make_node("Neg", ["a"], ["e"], name="else_neg")], "else", [], [_vi("e", shape=("E",))])
        body = [h.make_node("If", ["cond"], ["b"], name="IF", then_branch=then_g, else_branch=else_g)]
    nodes = [h.make_node("Relu", ["x"], ["a"], name="A"), *body, h.make_node("Relu", ["b"], ["c"], name="C"),
             h.make_node("Relu", ["c"], ["y"], name="D")]
    inputs = [_vi("x", shape=shape)] + ([_vi("cond", "bool", [])] if in_if else [])
    return lambda: _graph(nodes, inputs, [_vi("y", shape=("Y",))], opset=18)


def _if_implicit_from_cpu():
    """An If whose else branch reads (only implicitly) the output of a node the EP leaves to the CPU (LpPool)."""
    from onnx import helper as h

    then_g = h.make_graph([h.make_node("Relu", ["a"], ["t"], name="then_relu")], "then", [], [_vi("t", shape=None)])
    else_g = h.make_graph([h.make_node("Add", ["a", "p"], ["e"], name="else_add")], "else", [],
                          [_vi("e", shape=None)])
    nodes = [h.make_node("LpPool", ["x"], ["p"], name="LP", kernel_shape=[2, 2]),
             h.make_node("Relu", ["x2"], ["a"], name="A"),
             h.make_node("If", ["cond"], ["b"], name="IF", then_branch=then_g, else_branch=else_g),
             h.make_node("Relu", ["b"], ["c"], name="C"), h.make_node("Relu", ["c"], ["y"], name="D")]
    return _graph(nodes, [_vi("x", shape=(1, 2, 4, 4)), _vi("x2", shape=(1, 2, 3, 3)), _vi("cond", "bool", [])],
                  [_vi("y", shape=None)])


def _if_branch_op(then_node, else_node, inits=()):
    """Relu A -> If (branches ``then_node`` / ``else_node``, each reading ``a`` and writing ``t`` / ``e``) ->
    Relus C, D: is an If whose branch holds a node the plugin does not take claimed?"""
    def build():
        from onnx import helper as h

        then_g = h.make_graph([then_node()], "then", [], [_vi("t", shape=None)])
        else_g = h.make_graph([else_node()], "else", [], [_vi("e", shape=None)])
        nodes = [h.make_node("Relu", ["x"], ["a"], name="A"),
                 h.make_node("If", ["cond"], ["b"], name="IF", then_branch=then_g, else_branch=else_g),
                 h.make_node("Relu", ["b"], ["c"], name="C"), h.make_node("Relu", ["c"], ["y"], name="D")]
        return _graph(nodes, [_vi("x", shape=(1, 2, 4, 4)), _vi("cond", "bool", [])], [_vi("y", shape=None)],
                      [init() for init in inits])
    return build


def _branch_node(op, out, *inputs, **attrs):
    from onnx import helper as h

    return lambda: h.make_node(op, ["a", *inputs], [out], name=f"{out}_{op}", **attrs)


def _int64(name, value):
    from onnx import numpy_helper

    return lambda: numpy_helper.from_array(__import__("numpy").array(value, "int64"), name)


def _sequence_chain():
    """Relu A -> SequenceConstruct SC -> SequenceAt SA -> Relus C, D: does the plugin take Sequence ops?"""
    from onnx import helper as h

    nodes = [h.make_node("Relu", ["x"], ["a"], name="A"), h.make_node("SequenceConstruct", ["a"], ["s"], name="SC"),
             h.make_node("SequenceAt", ["s", "zero"], ["b"], name="SA"),
             h.make_node("Relu", ["b"], ["c"], name="C"), h.make_node("Relu", ["c"], ["y"], name="D")]
    return _graph(nodes, [_vi("x")], [_vi("y", shape=None)], [_int64("zero", 0)()])


def _seq_vi(name, shape):
    from onnx import helper as h

    return h.make_value_info(name, h.make_sequence_type_proto(h.make_tensor_type_proto(_tp("float"), list(shape))))


def _if_sequence_constant():
    """ONNX's test_if_seq beside a Relu chain: both branches Constant -> SequenceConstruct, the If's sequence
    output a graph output."""
    import numpy as np
    from onnx import helper as h
    from onnx import numpy_helper

    def branch(p):
        value = numpy_helper.from_array(np.ones(2, np.float32), f"{p}x")
        return h.make_graph([h.make_node("Constant", [], [f"{p}x"], name=f"{p}_const", value=value),
                             h.make_node("SequenceConstruct", [f"{p}x"], [f"{p}s"], name=f"{p}_seq")], p, [],
                            [_seq_vi(f"{p}s", [2])])
    nodes = [h.make_node("If", ["cond"], ["s"], name="IF", then_branch=branch("t"), else_branch=branch("e")),
             h.make_node("Relu", ["x"], ["a"], name="A"), h.make_node("Relu", ["a"], ["c"], name="C"),
             h.make_node("Relu", ["c"], ["y"], name="D")]
    return _graph(nodes, [_vi("x"), _vi("cond", "bool", [])], [_seq_vi("s", [2]), _vi("y")])


def _unknown_input_output(shape):
    """Two Relus on an input of unknown rank writing a graph output declared ``shape``: does the compiled
    model's output (of unknown rank) meet the declared one?"""
    def build():
        from onnx import helper as h

        nodes = [h.make_node("Relu", ["x"], ["c"], name="C"), h.make_node("Relu", ["c"], ["y"], name="D")]
        return _graph(nodes, [_vi("x", shape=None)], [_vi("y", shape=shape)])
    return build


def _grid_sample_5d(mode, align):
    """A volumetric (5-D) GridSample, ``mode`` and ``align_corners`` as given, between Relus."""
    def build():
        import numpy as np
        from onnx import helper as h
        from onnx import numpy_helper

        grid = numpy_helper.from_array(np.zeros((1, 2, 3, 4, 3), np.float32), "grid")
        node = h.make_node("GridSample", ["a", "grid"], ["b"], name="P", mode=mode, align_corners=align)
        return _in_chain(node, [_vi("x", shape=(1, 1, 3, 4, 5))], _vi("y", shape=(1, 1, 2, 3, 4)), [grid])
    return build


def _maxpool_ceil(size, out, opset=21):
    """MaxPool kernel 1, stride 2, ceil_mode 1 on a ``size`` x ``size`` input between Relus: when the last window
    would start past the input ONNX (opset 19+ shape inference) drops it, a plain ceil formula does not."""
    def build():
        from onnx import helper as h

        node = h.make_node("MaxPool", ["a"], ["b"], name="P", kernel_shape=[1, 1], strides=[2, 2], ceil_mode=1)
        return _in_chain(node, [_vi("x", shape=(1, 1, size, size))], _vi("y", shape=(1, 1, out, out)), opset=opset)
    return build


def _maxpool_ceil_output(size, out, opset=21):
    """Relu, then the MaxPool of :func:`_maxpool_ceil` writing the graph output (MaxPool-12, or -22 at 22)."""
    def build():
        from onnx import helper as h

        nodes = [h.make_node("Relu", ["x"], ["a"], name="A"),
                 h.make_node("MaxPool", ["a"], ["y"], name="P", kernel_shape=[1, 1], strides=[2, 2], ceil_mode=1)]
        return _graph(nodes, [_vi("x", shape=(1, 1, size, size))], [_vi("y", shape=(1, 1, out, out))], opset=opset)
    return build


def _if_before_producer():
    """An If listed before the node whose output its else branch reads (only implicitly): a valid graph ORT
    sorts, and fasterrcnn's shape."""
    from onnx import helper as h

    then_g = h.make_graph([h.make_node("Neg", ["x"], ["t"], name="then_neg")], "then", [], [_vi("t")])
    else_g = h.make_graph([h.make_node("Add", ["x", "a"], ["e"], name="else_add")], "else", [], [_vi("e")])
    nodes = [h.make_node("If", ["cond"], ["b"], name="IF", then_branch=then_g, else_branch=else_g),
             h.make_node("Relu", ["x"], ["a"], name="A"),
             h.make_node("Relu", ["b"], ["c"], name="C"), h.make_node("Relu", ["c"], ["y"], name="D")]
    return _graph(nodes, [_vi("x"), _vi("cond", "bool", [])], [_vi("y")])


def _if_scalar_branch():
    """fasterrcnn's If, rebuilt: the then branch a Constant, the else branch ReduceMax/Cast/Add/Mul/Unsqueeze
    over a scalar an outer Gather makes, with Constants inside the branch."""
    import numpy as np
    from onnx import helper as h
    from onnx import numpy_helper

    def const(name, value, dtype):
        return h.make_node("Constant", [], [name], name=f"c_{name}",
                           value=numpy_helper.from_array(np.array(value, dtype), name))
    then_g = h.make_graph([const("t", [0.0], np.float32)], "then", [], [_vi("t", shape=[1])])
    else_nodes = [h.make_node("ReduceMax", ["a"], ["m"], name="e_max", keepdims=0),
                  h.make_node("Cast", ["m"], ["mf"], name="e_cast", to=1), const("one", 1.0, np.float32),
                  h.make_node("Add", ["mf", "one"], ["s"], name="e_add"), h.make_node("Mul", ["s", "g"], ["p"],
                                                                                      name="e_mul"),
                  const("ax", [0], np.int64), h.make_node("Unsqueeze", ["p", "ax"], ["e"], name="e_unsq")]
    else_g = h.make_graph(else_nodes, "else", [], [_vi("e", shape=[1])])
    idx = numpy_helper.from_array(np.array(0, np.int64), "idx")
    nodes = [h.make_node("Relu", ["x"], ["a"], name="A"), h.make_node("Gather", ["a", "idx"], ["g0"], name="G"),
             h.make_node("ReduceMax", ["g0"], ["g"], name="GM", keepdims=0),
             h.make_node("If", ["cond"], ["b"], name="IF", then_branch=then_g, else_branch=else_g),
             h.make_node("Relu", ["b"], ["y"], name="D")]
    return _graph(nodes, [_vi("x"), _vi("cond", "bool", [])], [_vi("y", shape=[1])], [idx])


def _loop():
    """A Loop of 3 trips adding 1 to a float carried value, between Relus."""
    import numpy as np
    from onnx import helper as h
    from onnx import numpy_helper

    one = numpy_helper.from_array(np.array(1.0, np.float32), "one")
    body = h.make_graph([h.make_node("Identity", ["cond_in"], ["cond_out"], name="b_cond"),
                         h.make_node("Add", ["v_in", "one"], ["v_out"], name="b_add")], "body",
                        [h.make_tensor_value_info("i", _tp("int64"), []), _vi("cond_in", "bool", []),
                         _vi("v_in", shape=(2, 4))],
                        [_vi("cond_out", "bool", []), _vi("v_out", shape=(2, 4))])
    trips = numpy_helper.from_array(np.array(3, np.int64), "trips")
    node = h.make_node("Loop", ["trips", "", "a"], ["b"], name="P", body=body)
    return _in_chain(node, [_vi("x")], _vi("y"), [trips, one])


def _scan():
    """A Scan summing the rows of a [3, 4] float input (ONNX's scan_sum, opset 9 form), between Relus."""
    from onnx import helper as h

    body = h.make_graph([h.make_node("Add", ["s_in", "row"], ["s_out"], name="b_add"),
                         h.make_node("Identity", ["s_out"], ["scan_out"], name="b_id")], "body",
                        [_vi("s_in", shape=(4,)), _vi("row", shape=(4,))],
                        [_vi("s_out", shape=(4,)), _vi("scan_out", shape=(4,))])
    nodes = [h.make_node("Relu", ["x"], ["a"], name="A"), h.make_node("Relu", ["x0"], ["s0"], name="A0"),
             h.make_node("Scan", ["s0", "a"], ["b", "ys"], name="P", body=body, num_scan_inputs=1),
             h.make_node("Relu", ["b"], ["c"], name="C"), h.make_node("Relu", ["c"], ["y"], name="D")]
    return _graph(nodes, [_vi("x", shape=(3, 4)), _vi("x0", shape=(4,))], [_vi("y", shape=(4,)),
                                                                           _vi("ys", shape=(3, 4))])


def _pad(mode):
    def build():
        import numpy as np
        from onnx import helper as h
        from onnx import numpy_helper

        pads = numpy_helper.from_array(np.array([0, 1, 0, 1], np.int64), "pads")
        nodes = [h.make_node("Relu", ["x"], ["a"], name="A"), h.make_node("Pad", ["a", "pads"], ["b"], name="P",
                                                                          mode=mode),
                 h.make_node("Relu", ["b"], ["c"], name="C"), h.make_node("Relu", ["c"], ["y"], name="D")]
        return _graph(nodes, [_vi("x")], [_vi("y", shape=(2, 6))], [pads])
    return build


def _unknown_rank():
    """A chain of four Relus on an input of unknown rank (no shape at all)."""
    from onnx import helper as h

    nodes = [h.make_node("Relu", [s], [t], name=f"R{k}") for k, (s, t) in enumerate(
        (("x", "a"), ("a", "b"), ("b", "c"), ("c", "y")))]
    return _graph(nodes, [_vi("x", shape=None)], [_vi("y", shape=None)])


def _conv_integer_scalar_zp():
    """ConvInteger (uint8 x, uint8 w) with a rank-0 run-time zero point, then Cast and Relus."""
    import numpy as np
    from onnx import helper as h
    from onnx import numpy_helper

    w = numpy_helper.from_array(np.ones((2, 3, 3, 3), np.uint8), "w")
    nodes = [h.make_node("ConvInteger", ["x", "w", "xzp"], ["ci"], name="CI"),
             h.make_node("Cast", ["ci"], ["f"], name="to_float", to=1),
             h.make_node("Relu", ["f"], ["c"], name="C"), h.make_node("Relu", ["c"], ["y"], name="D")]
    return _graph(nodes, [_vi("x", "uint8", (1, 3, 8, 8)), _vi("xzp", "uint8", [])],
                  [_vi("y", shape=(1, 2, 6, 6))], [w])


def _unsqueeze_runtime_axes():
    """Relu, then an Unsqueeze whose axes is a graph input (its output's rank is unknown), then Relus."""
    from onnx import helper as h

    nodes = [h.make_node("Relu", ["x"], ["a"], name="A"), h.make_node("Unsqueeze", ["a", "ax"], ["u"], name="U"),
             h.make_node("Relu", ["u"], ["c"], name="C"), h.make_node("Relu", ["c"], ["y"], name="D")]
    return _graph(nodes, [_vi("x"), _vi("ax", "int64", [1])], [_vi("y", shape=None)])


def _scalar_chain():
    """Four Relus on a rank-0 float input: does the plugin keep 1.24.1's rank-0 refusal?"""
    from onnx import helper as h

    nodes = [h.make_node("Relu", [s], [t], name=f"R{k}") for k, (s, t) in enumerate(
        (("x", "a"), ("a", "b"), ("b", "c"), ("c", "y")))]
    return _graph(nodes, [_vi("x", shape=[])], [_vi("y", shape=[])])


def _conv_escape():
    """LpPool (CPU), then a Conv whose output is a graph output and also feeds a Relu: 1.24.1 drops such a
    cluster (capability.cc, Conv/Identity output leaving the cluster)."""
    import numpy as np
    from onnx import helper as h
    from onnx import numpy_helper

    w = numpy_helper.from_array(np.ones((2, 2, 1, 1), np.float32), "w")
    nodes = [h.make_node("LpPool", ["x"], ["p"], name="LP", kernel_shape=[2, 2]),
             h.make_node("Conv", ["p", "w"], ["c"], name="CONV"), h.make_node("Relu", ["c"], ["r"], name="R"),
             h.make_node("Relu", ["r"], ["y"], name="D")]
    return _graph(nodes, [_vi("x", shape=(1, 2, 4, 4))], [_vi("c", shape=(1, 2, 3, 3)), _vi("y", shape=(1, 2, 3, 3))],
                  [w])


def _in_chain(node, inputs, out, inits=(), opset=21):
    """Relu A -> ``node`` (reads ``a``, writes ``b``) -> Relus C, D."""
    from onnx import helper as h

    nodes = [h.make_node("Relu", ["x"], ["a"], name="A"), node,
             h.make_node("Relu", ["b"], ["c"], name="C"), h.make_node("Relu", ["c"], ["y"], name="D")]
    return _graph(nodes, inputs, [out], inits, opset)


def _resize(mode):
    def build():
        import numpy as np
        from onnx import helper as h
        from onnx import numpy_helper

        inits = [numpy_helper.from_array(np.array([0, 0, 0.1, 0.1, 1, 1, 0.9, 0.9], np.float32), "roi"),
                 numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")]
        node = h.make_node("Resize", ["a", "roi", "scales"], ["b"], name="P", mode="linear",
                           coordinate_transformation_mode=mode)
        return _in_chain(node, [_vi("x", shape=(1, 1, 4, 4))], _vi("y", shape=(1, 1, 8, 8)), inits)
    return build


def _recurrent(op):
    def build():
        import numpy as np
        from onnx import helper as h
        from onnx import numpy_helper

        gates = {"RNN": 1, "GRU": 3, "LSTM": 4}[op]
        inits = [numpy_helper.from_array(np.ones((1, gates * 4, 3), np.float32), "W"),
                 numpy_helper.from_array(np.ones((1, gates * 4, 4), np.float32), "R")]
        node = h.make_node(op, ["a", "W", "R"], ["b", "yh"], name="P", hidden_size=4, layout=1)
        m = _in_chain(node, [_vi("x", shape=(2, 5, 3))], _vi("y", shape=None), inits)
        m.graph.output.append(_vi("yh", shape=None))
        return m
    return build


def _stft():
    import numpy as np
    from onnx import helper as h
    from onnx import numpy_helper

    step = numpy_helper.from_array(np.array(8, np.int64), "step")
    length = numpy_helper.from_array(np.array(16, np.int64), "length")
    node = h.make_node("STFT", ["a", "step", "", "length"], ["b"], name="P")
    return _in_chain(node, [_vi("x", shape=(1, 64, 1))], _vi("y", shape=None), [step, length])


def _alone(op, **attrs):
    """``op`` as the only node, reading a graph input and writing the graph output."""
    def build():
        from onnx import helper as h

        node = h.make_node(op, ["x"], ["y"], name="P", **attrs)
        return _graph([node], [_vi("x")], [_vi("y")])
    return build


def _zero_size_axes():
    """Relu -> ReduceSum whose axes is an empty graph input (shape [0]) -> Relus."""
    from onnx import helper as h

    node = h.make_node("ReduceSum", ["a", "axes"], ["b"], name="P", keepdims=1)
    return _in_chain(node, [_vi("x"), _vi("axes", "int64", [0])], _vi("y", shape=(1, 1)))


def _cut_out(op):
    """LpPool (CPU), then Relu -> ``op`` -> Cast -> Relu: is ``op`` claimed in a graph that is split (1.24.1's
    InsertNode cut NonZero and TopK out of every cluster)?"""
    def build():
        import numpy as np
        from onnx import helper as h
        from onnx import numpy_helper

        inits, ins = [], ["a"]
        if op == "TopK":
            inits.append(numpy_helper.from_array(np.array([2], np.int64), "k"))
            ins.append("k")
        nodes = [h.make_node("LpPool", ["x"], ["p"], name="LP", kernel_shape=[2, 2]),
                 h.make_node("Relu", ["p"], ["a"], name="A"),
                 h.make_node(op, ins, ["b"] + (["idx"] if op == "TopK" else []), name="P"),
                 h.make_node("Cast", ["b"], ["f"], name="CAST", to=1), h.make_node("Relu", ["f"], ["y"], name="D")]
        outs = [_vi("y", shape=None)] + ([_vi("idx", "int64", None)] if op == "TopK" else [])
        return _graph(nodes, [_vi("x", shape=(1, 2, 4, 4))], outs, inits)
    return build


#: name -> (opset, builder)
GRAPH_PROBES = {
    "single_not_last": (21, _single_not_last),
    "if_node": (21, _if_node),
    "if_outer_initializer": (21, _if_outer_initializer),
    "if_constant_branch": (21, _if_constant_branch),
    "if_implicit_from_cpu": (21, _if_implicit_from_cpu),
    "if_empty_constant_branch": (21, _if_empty_constant_branch),
    "if_before_producer": (21, _if_before_producer),
    # Split-18 by num_outputs of an uneven static length: chunks of ceil(7/4) leave the last one element (ran in
    # the 1.24.1 build), of ceil(4/5) none; 7 in 4 along axis -1; 4 in 5 in a branch of an If
    "split_uneven": (18, _split(7, 4)),
    "split_empty_last_chunk": (18, _split(4, 5)),
    "split_uneven_negative_axis": (18, _split(7, 4, axis=-1)),
    "if_split_empty_last_chunk": (18, _split(4, 5, in_if=True)),
    "if_scalar_branch": (21, _if_scalar_branch),
    # a branch node the plugin leaves to the CPU (LpPool, Det: measured) in either branch; Sequence ops inside
    "if_lppool_then_branch": (21, _if_branch_op(_branch_node("LpPool", "t", kernel_shape=[2, 2]),
                                                _branch_node("MaxPool", "e", kernel_shape=[2, 2]))),
    "if_lppool_else_branch": (21, _if_branch_op(_branch_node("MaxPool", "t", kernel_shape=[2, 2]),
                                                _branch_node("LpPool", "e", kernel_shape=[2, 2]))),
    "if_det_branch": (21, _if_branch_op(_branch_node("Det", "t"), _branch_node("ReduceMax", "e", "ax", keepdims=0),
                                        [_int64("ax", [2, 3])])),
    "if_sequence_constant": (21, _if_sequence_constant),
    "sequence_chain": (21, _sequence_chain),
    "unknown_input_static_output": (21, _unknown_input_output((2, 4))),
    "unknown_input_dynamic_output": (21, _unknown_input_output(("N", "C"))),
    "loop": (21, _loop),
    "scan": (21, _scan),
    "pad_constant": (21, _pad("constant")),
    "pad_reflect": (21, _pad("reflect")),
    "pad_edge": (21, _pad("edge")),
    "pad_wrap": (21, _pad("wrap")),
    "unknown_rank": (21, _unknown_rank),
    "conv_integer_scalar_zp": (21, _conv_integer_scalar_zp),
    "unsqueeze_runtime_axes": (21, _unsqueeze_runtime_axes),
    "scalar_chain": (21, _scalar_chain),
    "conv_escape": (21, _conv_escape),
    "resize_tf_crop_and_resize": (21, _resize("tf_crop_and_resize")),
    "resize_half_pixel_symmetric": (21, _resize("half_pixel_symmetric")),
    "resize_half_pixel": (21, _resize("half_pixel")),
    "rnn_batchwise": (21, _recurrent("RNN")),
    "gru_batchwise": (21, _recurrent("GRU")),
    "lstm_batchwise": (21, _recurrent("LSTM")),
    "stft": (21, _stft),
    "dropout_alone": (21, _alone("Dropout")),
    "identity_alone": (21, _alone("Identity")),
    "max_one_input_alone": (21, _alone("Max")),
    "sum_one_input_alone": (21, _alone("Sum")),
    "min_one_input_alone": (21, _alone("Min")),
    "mean_one_input_alone": (21, _alone("Mean")),
    "relu_alone": (21, _alone("Relu")),
    "zero_size_axes": (21, _zero_size_axes),
    "maxpool_ceil_reduce_by_one": (21, _maxpool_ceil(2, 1)),
    "maxpool_ceil": (21, _maxpool_ceil(3, 2)),
    "maxpool_ceil_reduce_by_one_output": (21, _maxpool_ceil_output(2, 1)),
    "maxpool_ceil_output": (21, _maxpool_ceil_output(3, 2)),
    "maxpool22_ceil_reduce_by_one_output": (22, _maxpool_ceil_output(2, 1, 22)),
    "maxpool22_ceil_output": (22, _maxpool_ceil_output(3, 2, 22)),
    "maxpool22_ceil_reduce_by_one": (22, _maxpool_ceil(2, 1, 22)),
    "gridsample5d_nearest_align0": (21, _grid_sample_5d("nearest", 0)),
    "gridsample5d_nearest_align1": (21, _grid_sample_5d("nearest", 1)),
    "gridsample5d_linear_align0": (21, _grid_sample_5d("linear", 0)),
    "gridsample5d_linear_align1": (21, _grid_sample_5d("linear", 1)),
    "nonzero_split_graph": (21, _cut_out("NonZero")),
    "topk_split_graph": (21, _cut_out("TopK")),
}
GRAPH_PROBES.update(SUBGRAPH_PROBES)  # an If or Loop whose subgraph reads an empty vector from the outer graph
