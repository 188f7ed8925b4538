"""ORT's name generator, ported once (partsim/sim/names.py), held to graph.cc's rules
(microsoft/onnxruntime onnxruntime/core/graph/graph.cc: Graph::GenerateNodeName, Graph::GenerateNodeArgName)."""

from onnx import helper

from partsim.sim.names import NameGenerator
from partsim.sim.transpose_opt import OptGraph


def test_a_free_base_is_returned_as_it_is():
    g = NameGenerator({"x"}, {"conv"})
    assert g.node_name("Transpose") == "Transpose" and g.arg_name("y") == "y"


def test_a_node_name_collides_with_node_names_only():
    """name_is_ok walks the graph's nodes and the names handed out for nodes: a tensor of that name does not
    block it, a node does."""
    g = NameGenerator({"t"}, {"n"})
    assert g.node_name("t") == "t"
    assert g.node_name("n") == "n_token_0"
    assert g.node_name("t") == "t_token_1"  # handed out before


def test_a_tensor_name_collides_with_tensor_names_only():
    g = NameGenerator({"t"}, {"n"})
    assert g.arg_name("n") == "n"
    assert g.arg_name("t") == "t_token_0"
    assert g.arg_name("n") == "n_token_1"


def test_one_counter_for_both_and_it_moves_only_on_a_collision():
    g = NameGenerator({"a"}, {"b"})
    assert [g.node_name("b"), g.arg_name("c"), g.arg_name("a"), g.node_name("b")] == \
        ["b_token_0", "c", "a_token_1", "b_token_2"]
    assert g.counter == 3


def test_the_counter_skips_names_that_are_taken():
    g = NameGenerator(set(), {"b", "b_token_0"})
    assert g.node_name("b") == "b_token_1" and g.counter == 2


def test_for_graph_reads_tensors_and_nodes_of_a_graph():
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "g",
                              [helper.make_tensor_value_info("x", 1, [1])], [helper.make_tensor_value_info("y", 1, [1])])
    g = NameGenerator.for_graph(graph)
    assert g.tensors == {"x", "y"} and g.nodes == {"relu"}
    assert g.node_name("relu") == "relu_token_0" and g.arg_name("x") == "x_token_1"


def test_the_transpose_optimizer_names_through_the_same_generator():
    opt = OptGraph(opset=17, names=NameGenerator({"x"}, {"Transpose"}))
    assert opt.node_name("Transpose") == "Transpose_token_0"
    assert opt.arg_name("x") == "x_token_1" and opt.names.counter == 2
