"""`partsim render --format model-explorer`: node data for Google's AI Edge Model Explorer,
loaded back with that package's own classes (model_explorer.node_data_builder) and checked
against the ONNX file itself."""

import json

import onnx
import pytest
from onnx import helper

from tests.modelbuild import const, model, save, vi
from partsim.render import CPU_COLOR, OKABE_ITO
from tests.conftest import shared_path, as_written_cli


# These tests describe the graph as written (an ORT_DISABLE_ALL session): level disable unless asked
@pytest.fixture
def run_cli(run_cli):
    return as_written_cli(run_cli, commands=("simulate", "verify", "render", "blame"))


node_data_builder = pytest.importorskip(
    "model_explorer.node_data_builder",
    reason="ai-edge-model-explorer is not installed (pip install ai-edge-model-explorer; it is in the test extra)")


def _load_with_package(data):
    """The file as the package's ModelNodeData; raises on a field the package does not know."""
    graphs = {}
    for gid, g in data.items():
        rest = {k: v for k, v in g.items() if k != "results"}
        results = {k: node_data_builder.NodeDataResult(**v) for k, v in g["results"].items()}
        graphs[gid] = node_data_builder.GraphNodeData(results=results, **rest)
    return node_data_builder.ModelNodeData(graphsData=graphs)


def test_mobilenet_nnapi_node_data(tmp_path, run_cli):
    path = shared_path("corpus", "graph_only", "mobilenet_v2.ts.onnx")
    outs = []
    for k in range(2):
        out = tmp_path / f"me{k}.json"
        code, _, err = run_cli("render", path, "-p", "nnapi", "-o", out, "--format", "model-explorer")
        assert code == 0, err
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]  # same input, same bytes
    data = json.loads(outs[0])
    md = _load_with_package(data)
    assert json.loads(md.to_json_string()) == data  # the package writes back exactly this file

    proto = onnx.load(str(path), load_external_data=False)
    assert list(data) == [proto.graph.name]  # keyed by the ONNX graph name, as the ONNX adapter names it
    results = md.graphsData[proto.graph.name].results
    ran = [n for n in proto.graph.node if n.op_type != "Constant"]
    assert list(results) == [n.name for n in ran]  # one entry per node, by ONNX node name, in file order
    # independent: NNAPI's Conv rule wants constant weight and bias; the 39 Convs whose
    # inputs are computed (Identity of an initializer) run on the CPU, the rest on NNAPI
    inits = {i.name for i in proto.graph.initializer}
    on_cpu = {n.name for n in ran if n.op_type == "Conv" and any(t and t not in inits for t in n.input[1:])}
    assert len(on_cpu) == 39
    for n in ran:
        r = results[n.name]
        if n.name in on_cpu:
            assert r.value.startswith("CPUExecutionProvider · partition ") and r.bgColor == CPU_COLOR
            assert "non_constant_input: input 2" in r.value and "must be a constant initializer" in r.value
        else:
            assert r.value.startswith("NnapiExecutionProvider · partition ") and r.bgColor == OKABE_ITO[0]
    # a CPU Conv sits in a partition of its own: 39 different partition numbers
    assert len({results[x].value.split(" · ")[1] for x in on_cpu}) == 39


def test_unnamed_nodes_are_keyed_by_output_tensor(tmp_path, run_cli):
    """The viewer matches a key against a node's output tensor names too: nodes without a
    name (partsim calls them <Op>_<k>) or sharing one get their first output as key."""
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Sin", ["r"], ["s"], name="dup"),
             helper.make_node("MatMul", ["s", "w"], ["y"], name="dup")]
    m = model(nodes, [vi("x", [2, 4])], [vi("y", [2, 4])], [const("w", [4, 4])])
    m.graph.name = "tiny"
    path = save(m, str(tmp_path / "unnamed.onnx"))
    out = tmp_path / "me.json"
    code, _, err = run_cli("render", path, "--support", "Relu,MatMul", "-o", out)  # .json: model-explorer
    assert code == 0, err
    data = json.loads(out.read_text())
    results = _load_with_package(data).graphsData["tiny"].results
    assert list(results) == ["r", "s", "y"]
    assert results["r"].value == "EP · partition 0" and results["y"].value.startswith("EP · partition ")
    assert results["s"].value.startswith("CPUExecutionProvider · partition 1 · op_not_in_table")
