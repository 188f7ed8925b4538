"""The one walk over the model as written (``_Written.read_nodes`` in partsim/runtime/pipeline.py) against each
thing it finds worked out on its own: ORT's node indices (``sim.names.loaded_nodes``, Constants not counted), the
model's own nodes (``io.subgraphs.all_nodes``, bodies included), each main-graph node's op, the unnamed positions,
whether a DequantizeLinear is there, and the function claims made from the ops it read."""

import pytest
from onnx import TensorProto as T
from onnx import helper as h

from partsim.api import build_request, load_tables
from partsim.io.read import read_model_proto
from partsim.io.subgraphs import all_nodes
from partsim.rules.resolve import resolve_providers
from partsim.runtime.function_claims import function_claims
from partsim.runtime.pipeline import _node_key, _Written
from partsim.sim.names import loaded_nodes
from tests.conftest import shared_path


def _separately(proto):
    """Each fact by its own walk."""
    keys = {}
    for index, n in enumerate(loaded_nodes(proto.graph.node)):
        keys.setdefault(_node_key(n), index)
    original, unnamed = {}, {}
    for n in all_nodes(proto.graph):
        if n.name:
            original[n.name] = (n.domain, n.op_type)
        elif n.output:
            unnamed[n.output[0]] = (n.domain, n.op_type)
    nodes = proto.graph.node
    return {"keys": keys, "loaded": len(loaded_nodes(nodes)), "original": original, "unnamed": unnamed,
            "ops": [(n.domain, n.op_type) for n in nodes], "unnamed_at": [k for k, n in enumerate(nodes) if not n.name],
            "maybe_dq": any(n.op_type == "DequantizeLinear" for n in nodes)}


def _at_once(proto):
    written = _Written(proto)
    keys, loaded = written.read_nodes()
    return {"keys": keys, "loaded": loaded, "original": written.original, "unnamed": written.unnamed,
            "ops": written.ops, "unnamed_at": written.unnamed_at, "maybe_dq": written.maybe_dq}


def _nested_model():
    """Unnamed nodes, Constants (no ORT node), a DequantizeLinear, a node name used twice in the main graph,
    the If node's own name inside its body (the body's entry is recorded after the If's, as ORT's Graph builds
    subgraphs), a Loop body inside the If's branch, and a LayerNormalization (a function node)."""
    V = h.make_tensor_value_info
    inner = h.make_graph([h.make_node("Neg", ["x"], ["n"], name="if")], "inner", [], [V("n", T.FLOAT, [2])])
    loop_body = h.make_graph([h.make_node("Identity", ["c"], ["c2"]), h.make_node("Abs", ["x"], ["a"], name="abs")],
                             "loop_body", [V("i", T.INT64, []), V("c", T.BOOL, [])],
                             [V("c2", T.BOOL, []), V("a", T.FLOAT, [2])])
    then = h.make_graph([h.make_node("Loop", ["", ""], ["la"], body=loop_body), h.make_node("Sigmoid", ["x"], ["t"])],
                        "then", [], [V("t", T.FLOAT, [2])])
    nodes = [h.make_node("Constant", [], ["k"], value_ints=[1]),
             h.make_node("Constant", [], ["k2"], value_ints=[2], domain="ai.onnx"),
             h.make_node("Relu", ["x"], ["r"]),
             h.make_node("Tanh", ["r"], ["dup_out"], name="dup"),
             h.make_node("If", ["cond"], ["y"], name="if", then_branch=then, else_branch=inner),
             h.make_node("DequantizeLinear", ["q", "s"], ["dq"]),
             h.make_node("LayerNormalization", ["dq", "g"], ["ln"], name="ln"),
             h.make_node("Add", ["ln", "dq"], ["z"]),
             h.make_node("Tanh", ["z"], ["w"], name="dup")]  # the same name and op again: the first index kept
    g = h.make_graph(nodes, "main", [V("x", T.FLOAT, [2]), V("cond", T.BOOL, []), V("q", T.UINT8, [2]),
                                     V("s", T.FLOAT, []), V("g", T.FLOAT, [2])],
                     [V("y", T.FLOAT, [2]), V("w", T.FLOAT, [2])])
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17)])


def _tables(providers):
    requested, extra = build_request(providers)
    return resolve_providers(requested, load_tables(), extra).tables


def test_one_walk_finds_what_the_separate_walks_find_on_a_nested_graph():
    proto = _nested_model()
    once = _at_once(proto)
    assert once == _separately(proto)
    assert once["loaded"] == 7 and once["maybe_dq"]  # two Constants are no ORT nodes
    assert once["original"]["if"] == ("", "Neg")  # the If's body node, walked after the If itself
    assert once["keys"][("name", "dup", "", "Tanh")] == 1 and once["unnamed_at"] == [0, 1, 2, 5, 7]
    tables = _tables(["nnapi", "coreml"])
    claims = function_claims(proto, tables, once["ops"])
    assert claims == function_claims(proto, tables) and 6 in claims  # the LayerNormalization among them


@pytest.mark.parametrize("name", ["full/q_tiny_resnet.ts.qdq.onnx", "full/q_tiny_transformer.dynamo.qop.onnx",
                                  "graph_only/swin_t.ts.onnx", "graph_only/fasterrcnn_mobilenet_v3_large_320_fpn.ts.onnx",
                                  "graph_only/bert_tiny.dynamo.onnx", "graph_only/mobilenet_v2.dynamo.onnx"])
def test_one_walk_finds_what_the_separate_walks_find_on_corpus_models(name):
    proto, _ = read_model_proto(shared_path("corpus", *name.split("/")), check_node_text=False)
    once = _at_once(proto)
    assert once == _separately(proto)
    for providers in (["nnapi", "coreml"], ["qnn"], ["cuda"]):
        tables = _tables(providers)
        assert function_claims(proto, tables, once["ops"]) == function_claims(proto, tables)
