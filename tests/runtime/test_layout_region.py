"""Level 2/3 on the CPU nodes as the NHWC layout transformation left them (partsim/runtime/layout_region.py), and no
layout transformation where the provider claims nothing (partsim/sim/layout.py): real QNN sessions (onnxruntime-qnn
2.7.0, HTP emulator, soc_model 60, ORT_ENABLE_ALL, profiled; skipped without onnxruntime-qnn) against both views.

The graph: a Transpose (0, 2, 1) of a tensor with a symbolic batch, a LayerNormalization written out in its ops, and a
MatMul; QNN takes none of it (dynamic shapes).  With a static Relu beside it QNN claims the Relu, so ORT runs the
layout transformation, whose transpose optimizer pushes the Transpose down to the MatMul through the unassigned
nodes; the CPU Transpose it leaves there is folded into the MatMul by Level 2 (``mm/MatmulTransposeFusion/``, as in
ppocrv6_rec_small).  Without the Relu QNN claims nothing, ORT skips the layout transformation
(``graph_partitioner.cc`` GetCapabilityForEP returns first), and the Transposes stay where Level 1 put them.
"""

import numpy as np
import pytest
from onnx import helper as h
from onnx import numpy_helper as nh

from tests.modelbuild import model, save, vi
from tests.gen.test_qnn import QNN, needs_qnn
from partsim.analysis.verify import compare, compare_final
from partsim.api import predict
from partsim.runtime.observe import observation_from_run, run_session

CPU = "CPUExecutionProvider"


def _f32(name, values):
    return nh.from_array(np.asarray(values, np.float32), name)


def _layer_norm_matmul(qnn_branch):
    nodes = [h.make_node("Transpose", ["x"], ["t"], name="tr", perm=[0, 2, 1]),
             h.make_node("ReduceMean", ["t"], ["m"], name="mean", axes=[-1]),
             h.make_node("Sub", ["t", "m"], ["d"], name="sub"),
             h.make_node("Mul", ["d", "d"], ["d2"], name="sq"),
             h.make_node("ReduceMean", ["d2"], ["v"], name="var", axes=[-1]),
             h.make_node("Add", ["v", "eps"], ["ve"], name="addeps"),
             h.make_node("Sqrt", ["ve"], ["s"], name="sqrt"),
             h.make_node("Div", ["d", "s"], ["nrm"], name="div"),
             h.make_node("MatMul", ["nrm", "w"], ["y"], name="mm")]
    ins, outs = [vi("x", ["n", 8, 6])], [vi("y", ["n", 6, 4])]
    if qnn_branch:
        nodes.append(h.make_node("Relu", ["z"], ["r"], name="relu"))
        ins.append(vi("z", [1, 4]))
        outs.append(vi("r", [1, 4]))
    return model(nodes, ins, outs, [_f32("eps", [1e-5]), _f32("w", np.ones((8, 4)))], opset=17)


@needs_qnn
@pytest.mark.parametrize("qnn_branch", [True, False], ids=["relu_on_qnn", "nothing_on_qnn"])
def test_level2_sees_the_cpu_nodes_the_layout_transformation_left(qnn_branch, tmp_path):
    path = save(_layer_norm_matmul(qnn_branch), tmp_path / "ln_matmul.onnx")
    rec = run_session(path, [QNN], "all", timeout=300, ep_options={"soc_model": "60"})
    assert rec["state"] == "ok", rec.get("error")
    obs = observation_from_run(rec, "all")
    summary, assignment = predict(str(path), ["qnn"], level="all")
    fused = "mm/MatmulTransposeFusion/"
    # the real session: the layout transformation ran (and Level 2 fused its Transpose) only with the Relu on QNN
    assert (fused in obs["finalNodes"]) == qnn_branch and (obs["nodes"].get("relu") == QNN) == qnn_branch
    assert compare(summary, assignment, obs)["agreement"] == 1.0
    final = compare_final(summary, obs)
    assert final["agreement"] == 1.0 and not final["unpredicted"], final
    assert (fused in {n["name"] for n in summary["finalNodes"]}) == qnn_branch
    # no layout transformation without a claim: nothing inserted, nothing taken out
    layout = [n for n in summary["insertedNodes"] if n["origin"] == "inserted:layout"]
    assert bool(layout) == qnn_branch and any(n.get("ortRemoved") for n in summary["nodes"]) == qnn_branch


def test_layout_region_lists_the_rewired_cpu_nodes_and_the_added_transposes():
    """The pure part: which nodes go to the CPU pass in their form after the layout transformation."""
    from partsim.io.load import model_from_proto
    from partsim.runtime.layout_region import layout_region, region_nodes
    from partsim.rules.load import builtin_tables
    from partsim.rules.resolve import resolve_providers
    from partsim.sim.assign import simulate

    m = model_from_proto(_layer_norm_matmul(True), "<memory>")
    a = simulate(m, resolve_providers(["qnn"], builtin_tables()))
    cpu = {n.name for n in m.nodes if a.provider[n.index] == CPU}
    region = layout_region(m, a.layout, cpu)
    assert region is not None and "tr" in region.replaced and "relu" not in region.replaced
    added = [n for n in region.nodes if n[4]]
    assert [dict(n[3]).get("perm") for n in added] == [(0, 2, 1)]  # the one before the MatMul
    assert added[0][2][0] in m.nodes[[x.name for x in m.nodes].index("mm")].inputs
    assert region_nodes(region, {}) is None  # a rewired node without its proto
    protos = region_nodes(region, {n.name: n for n in _layer_norm_matmul(True).graph.node})
    assert [p.op_type for p in protos if p.name == added[0][0]] == ["Transpose"]
    assert {p.name for p in protos} - {added[0][0]} <= cpu  # the others are CPU nodes of the graph, rewired
    nothing = model_from_proto(_layer_norm_matmul(False), "<memory>")
    b = simulate(nothing, resolve_providers(["qnn"], builtin_tables()))
    assert b.layout == () and layout_region(nothing, b.layout, {n.name for n in nothing.nodes}) is None
