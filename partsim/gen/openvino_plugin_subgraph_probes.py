"""Graph probes of the OpenVINO plugin whose subgraph reads an outer value it is not given explicitly (an implicit
input of the If or Loop node ORT gives the plugin), merged into
:data:`partsim.gen.openvino_plugin_graphs.GRAPH_PROBES`.

They decide ``partitioning.zero_size_subgraph_input_fails``: the plugin drops a graph input that is an empty
vector (shape [0]) from the model it compiles, whether a claimed node reads it explicitly (probe
``zero_size_axes``) or a branch or body of a claimed If or Loop reads it from the outer graph; an empty vector
some node makes (a Slice to nothing) read the same way is kept.  And whether a branch reading an empty
initializer of the outer graph fails as one holding a Constant of no element does
(``partitioning.empty_constant_branch_fails``).
"""

from .qnn_probes import _tp

__all__ = ["SUBGRAPH_PROBES"]


def _vi(name, dtype="float", shape=(3,)):
    from onnx import helper as h

    return h.make_tensor_value_info(name, _tp(dtype), None if shape is None else list(shape))


def _chain(middle, inputs, inits=()):
    """Relu A on x[3] -> ``middle`` (reads ``a``, writes ``b``) -> Relus C, D."""
    from onnx import helper as h

    nodes = [h.make_node("Relu", ["x"], ["a"], name="A"), *middle,
             h.make_node("Relu", ["b"], ["c"], name="C"), h.make_node("Relu", ["c"], ["y"], name="D")]
    m = h.make_model(h.make_graph(nodes, "probe_graph", [_vi("x"), *inputs], [_vi("y", shape=("Y",))],
                                  list(inits)), opset_imports=[h.make_opsetid("", 21)])
    m.ir_version = 10
    return m


def _if_reads(outer, inputs, before=(), inits=()):
    """An If IF on ``cond`` whose then branch concatenates ``a`` and the outer tensor ``outer`` (an implicit
    input), the else branch a Neg of ``a``."""
    from onnx import helper as h

    then_g = h.make_graph([h.make_node("Concat", ["a", outer], ["t"], name="then_concat", axis=0)], "then", [],
                          [_vi("t", shape=("T",))])
    else_g = h.make_graph([h.make_node("Neg", ["a"], ["n"], name="else_neg")], "else", [], [_vi("n", shape=("N",))])
    node = h.make_node("If", ["cond"], ["b"], name="IF", then_branch=then_g, else_branch=else_g)
    return lambda: _chain([*before, node], [_vi("cond", "bool", []), *inputs], inits)


def _slice_to_nothing():
    """A Slice SL of x to no element (a [0] tensor some node makes), with its bounds."""
    from onnx import helper as h

    bounds = [h.make_tensor("starts", _tp("int64"), [1], [0]), h.make_tensor("ends", _tp("int64"), [1], [0])]
    return [h.make_node("Slice", ["x", "starts", "ends"], ["s"], name="SL")], bounds


def _loop_reads_empty_input():
    """A Loop LP of 2 trips whose body concatenates the carried value and the graph input ``e`` (shape [0])."""
    from onnx import helper as h

    body = h.make_graph([h.make_node("Identity", ["cond_in"], ["cond_out"], name="b_cond"),
                         h.make_node("Concat", ["v_in", "e"], ["v_out"], name="b_concat", axis=0)], "body",
                        [_vi("i", "int64", []), _vi("cond_in", "bool", []), _vi("v_in", shape=("V",))],
                        [_vi("cond_out", "bool", []), _vi("v_out", shape=("V",))])
    trips = h.make_tensor("trips", _tp("int64"), [], [2])
    node = h.make_node("Loop", ["trips", "", "a"], ["b"], name="LP", body=body)
    return _chain([node], [_vi("e", shape=(0,))], [trips])


def _if_reads_empty_initializer():
    from onnx import helper as h

    return _if_reads("ei", [], (), [h.make_tensor("ei", _tp("float"), [0], [])])()


def _if_reads_empty_tensor():
    nodes, bounds = _slice_to_nothing()
    return _if_reads("s", [], nodes, bounds)()


SUBGRAPH_PROBES = {
    # an empty vector graph input read only by a branch or a body; the same If reading a graph input of two
    # elements, and an empty vector a claimed Slice makes
    "if_implicit_empty_input": (21, _if_reads("e", [_vi("e", shape=(0,))])),
    "loop_implicit_empty_input": (21, _loop_reads_empty_input),
    "if_implicit_input": (21, _if_reads("e", [_vi("e", shape=(2,))])),
    "if_implicit_empty_tensor": (21, _if_reads_empty_tensor),
    # an empty initializer of the outer graph read by a branch (empty_constant_branch_fails: a Constant inside it)
    "if_implicit_empty_initializer": (21, _if_reads_empty_initializer),
}
