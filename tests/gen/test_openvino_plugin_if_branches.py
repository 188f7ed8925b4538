"""An If whose branch holds a node the OpenVINO plugin does not take goes to the CPU (table option
``unsupported_branch_refuses_if``, partsim/sim/if_branches.py): checked against real onnxruntime-ep-openvino 1.8.1
sessions (the harness of tests/ovplugin_harness.py; skipped, saying why, where it is absent) and against the probe
sessions recorded beside the table (rules/sources/openvino-plugin-1.8.1-probes.jsonl)."""

import copy
from pathlib import Path

import pytest
from onnx import TensorProto as T
from onnx import helper as h

from partsim.gen.openvino_plugin import EVIDENCE, GRAPH_PROBES, UNSUPPORTED_BRANCH_PROBES, build_spec, fate
from partsim.gen.openvino_plugin import derive_table, read_evidence
from tests.gen.test_openvino_plugin import _observe, _predict, _verify, needs_plugin
from tests.modelbuild import model, save, vi

ROOT = Path(__file__).resolve().parents[2]
IF_SEQ = ROOT.parent / "shared" / "observed" / "nodes" / "models" / "test_if_seq.onnx"


def _pool_if(then_op, else_op, prefix):
    """An If on ``cond`` whose branches pool the outer tensor ``a`` (``then_op`` / ``else_op``, kernel 2x2)."""
    def branch(op, out):
        return h.make_graph([h.make_node(op, ["a"], [out], name=f"{out}_{op}", kernel_shape=[2, 2])], out, [],
                            [vi(out, None)])
    return h.make_node("If", ["cond"], [f"{prefix}o"], name=f"{prefix}IF", then_branch=branch(then_op, f"{prefix}t"),
                       else_branch=branch(else_op, f"{prefix}e"))


def _nested_if(inner_then):
    """Relu A -> If IF (then: an inner If pooling with ``inner_then`` / MaxPool; else: MaxPool) -> Relus C, D."""
    def build(tmp_path):
        then_g = h.make_graph([_pool_if(inner_then, "MaxPool", "i")], "then", [], [vi("io", None)])
        else_g = h.make_graph([h.make_node("MaxPool", ["a"], ["e"], name="e_mp", kernel_shape=[2, 2])], "else", [],
                              [vi("e", None)])
        nodes = [h.make_node("Relu", ["x"], ["a"], name="A"),
                 h.make_node("If", ["cond"], ["b"], name="IF", then_branch=then_g, else_branch=else_g),
                 h.make_node("Relu", ["b"], ["c"], name="C"), h.make_node("Relu", ["c"], ["y"], name="D")]
        return save(model(nodes, [vi("x", [1, 2, 4, 4]), vi("cond", [], T.BOOL)], [vi("y", None)], opset=21),
                    tmp_path / f"nested_if_{inner_then}.onnx")
    return build


def _probe_model(name):
    def build(tmp_path):
        return save(GRAPH_PROBES[name][1](), tmp_path / f"{name}.onnx")
    return build


@needs_plugin
@pytest.mark.parametrize("build, if_on", [
    *[pytest.param(_probe_model(n), "CPUExecutionProvider", id=n) for n in UNSUPPORTED_BRANCH_PROBES],
    pytest.param(_nested_if("LpPool"), "CPUExecutionProvider", id="nested_if_lppool"),  # two Ifs deep
    # the controls: every branch node taken
    pytest.param(_probe_model("if_node"), "OpenVINOExecutionProvider", id="if_node"),
    pytest.param(_nested_if("AveragePool"), "OpenVINOExecutionProvider", id="nested_if_averagepool")])
def test_if_placement_agrees_with_real_plugin_sessions(build, if_on, tmp_path):
    path = build(tmp_path)
    proc, obs = _observe(path, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert obs["nodes"]["IF"] == if_on and obs["nodes"]["A"] == "OpenVINOExecutionProvider"
    rc, rep = _verify(path, tmp_path)
    assert rep["disagreements"] == [] and rep["agreeing"] == rep["compared"] > 0, rep["disagreements"]
    predicted = {n["name"]: n for n in _predict(path)["nodes"]}
    assert predicted["IF"]["provider"] == if_on
    if if_on == "CPUExecutionProvider":
        assert "which OpenVINOExecutionProvider does not take" in predicted["IF"]["reasonDetail"]


@needs_plugin
def test_onnx_if_seq_agrees_with_a_real_plugin_session(tmp_path):
    """ONNX's node test test_if_seq (branches Constant -> SequenceConstruct, the If's sequence output the graph
    output): the plugin takes no SequenceConstruct, so the If stays on the CPU."""
    if not IF_SEQ.exists():
        pytest.skip(f"{IF_SEQ} is absent (../shared/observed not mounted)")
    rc, rep = _verify(IF_SEQ, tmp_path)
    assert rep["disagreements"] == [] and rep["agreeing"] == rep["compared"] > 0, rep["disagreements"]
    assert {n["name"]: n["provider"] for n in _predict(IF_SEQ)["nodes"]}["n0_If"] == "CPUExecutionProvider"


def _recorded():
    return read_evidence(ROOT / EVIDENCE)


def test_recorded_if_probes_are_predicted(tmp_path):
    """Every recorded If probe session (real plugin sessions, run by the generator) placed as partsim predicts."""
    evidence = _recorded()
    names = [n for n in GRAPH_PROBES if n.startswith("if_") and ("graph", n, 0, GRAPH_PROBES[n][0], "float") in evidence]
    assert set(UNSUPPORTED_BRANCH_PROBES) <= set(names)
    for name in names:
        spec = ("graph", name, 0, GRAPH_PROBES[name][0], "float")
        rec = evidence[spec]
        if rec.get("assignment") is None:
            continue  # a session that failed: tests/gen/test_openvino_plugin.py checks those
        path = save(build_spec(spec), tmp_path / f"{name}.onnx")
        predicted = {n["name"]: n["provider"] for n in _predict(path)["nodes"]}
        placed = {n[0] for _, nodes in rec["assignment"] for n in nodes}  # Constant nodes became initializers
        for node in build_spec(spec).graph.node:
            if node.name in placed:
                want = "OpenVINOExecutionProvider" if fate(rec, node.name) == "claimed" else "CPUExecutionProvider"
                assert predicted[node.name] == want, (name, node.name)


def test_option_is_derived_only_when_every_branch_probe_refused_the_if():
    """The generator sets ``unsupported_branch_refuses_if`` from the probes: had one of them been claimed (or the
    plain If refused), the option would not be derived."""
    from partsim.gen.openvino import openvino_table_dict

    evidence = _recorded()
    assert derive_table(openvino_table_dict(), evidence)["partitioning"]["unsupported_branch_refuses_if"]
    for flipped in ("if_det_branch", "if_node"):
        changed = copy.deepcopy(evidence)
        spec = ("graph", flipped, 0, GRAPH_PROBES[flipped][0], "float")
        groups = changed[spec]["assignment"]
        on = [n for _, nodes in groups for n in nodes]  # every node of the probe to one side
        side = "OpenVINOExecutionProvider" if flipped == "if_det_branch" else "CPUExecutionProvider"
        changed[spec]["assignment"] = [[side, on]]
        part = derive_table(openvino_table_dict(), changed)["partitioning"]
        assert "unsupported_branch_refuses_if" not in part, flipped
