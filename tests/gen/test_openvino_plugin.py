"""The OpenVINO plugin EP for real: onnxruntime-ep-openvino 1.8.1 sessions against the default ``openvino`` table.

``make openvino-plugin`` (part of ``make test``) builds ``.venv-ovplugin`` and its interpreter
``.venv-ovplugin/harness/python``: the plugin itself on an Intel CPU, elsewhere the observation harness of
``tests/ovplugin_harness.py`` (a copy of the plugin library whose CPU-vendor comparison accepts this CPU; the
placement logic is the plugin's own).  Each check creates real plugin sessions now and compares them with
partsim's prediction; they skip, saying why, where the harness could not be made.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from onnx import TensorProto as T
from onnx import helper as h

from tests import ovplugin_harness as harness
from tests.modelbuild import UNEVEN_SPLITS, const, empty_subgraph_reads, model, save, split18, vi

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT.parent / "shared" / "corpus" / "full"
PLUGIN_PY = harness.PYTHON
WHY_NOT = harness.status()
needs_plugin = pytest.mark.skipif(WHY_NOT is not None, reason=f"no OpenVINO plugin sessions here: {WHY_NOT}")


def _cli(*args):
    return subprocess.run([sys.executable, str(ROOT / "cli.py"), *map(str, args)], capture_output=True, text=True,
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=600)


def _verify(path, tmp_path, level="disable", table="openvino"):
    out = tmp_path / (Path(path).stem + f".{level}.verify.json")
    proc = _cli("verify", path, "-p", table, "--observe", "--python", PLUGIN_PY, "--level", level,
                "--format", "json", "-o", out)
    assert out.exists(), proc.stderr
    return proc.returncode, json.loads(out.read_text())["verify"]


def _observe(path, tmp_path):
    out = tmp_path / (Path(path).stem + ".observed.json")
    proc = _cli("observe", path, "-p", "openvino", "--python", PLUGIN_PY, "--level", "disable", "-o", out)
    return proc, (json.loads(out.read_text()) if out.exists() else None)


def _predict(path, table="openvino"):
    proc = _cli("simulate", path, "-p", table, "--level", "disable", "-f", "json")
    return json.loads(proc.stdout)


def _relu(x, y, name):
    return h.make_node("Relu", [x], [y], name=name)


def _single_not_last(tmp_path):
    """Relu A, an LpPool (OpenVINO's frontend has none: CPU), then Relus C, D: A is a one-node cluster that is not
    the last.  The 1.24.1 build leaves it on the CPU; the plugin runs it as a partition of its own."""
    nodes = [_relu("x", "a", "A"), h.make_node("LpPool", ["a"], ["p"], name="LP", kernel_shape=[2, 2]),
             _relu("p", "c", "C"), _relu("c", "y", "D")]
    return save(model(nodes, [vi("x", [1, 2, 4, 4])], [vi("y", [1, 2, 3, 3])]), tmp_path / "single_not_last.onnx")


def _conv_chain(tmp_path):
    nodes = [h.make_node("Conv", ["x", "W"], ["c"], name="conv", pads=[1, 1, 1, 1]), _relu("c", "r", "relu"),
             h.make_node("MaxPool", ["r"], ["y"], name="pool", kernel_shape=[2, 2])]
    return save(model(nodes, [vi("x", [1, 3, 8, 8])], [vi("y", None)], [const("W", [4, 3, 3, 3])]),
                tmp_path / "conv_chain.onnx")


def _pad_wrap(tmp_path):
    nodes = [_relu("x", "a", "A"), h.make_node("Pad", ["a", "pads"], ["b"], name="P", mode="wrap"),
             _relu("b", "c", "C"), _relu("c", "y", "D")]
    return save(model(nodes, [vi("x", [2, 4])], [vi("y", [2, 6])], [h.make_tensor("pads", T.INT64, [4], [0, 1, 0, 1])]),
                tmp_path / "pad_wrap.onnx")


def test_harness_refuses_a_library_it_does_not_know(tmp_path, monkeypatch):
    """The copy is made only of 1.8.1's library with cmp $0x8086 at the known offset; else nothing is written."""
    pkg = tmp_path / "onnxruntime_ep_openvino"
    pkg.mkdir()
    lib = pkg / harness.LIBRARY
    lib.write_bytes(b"\0" * (harness.CMP_OFFSET + 16))
    monkeypatch.setattr(harness, "HARNESS", tmp_path / "harness")
    why = harness._patched_copy(pkg, 0x1022)
    assert why is not None and "is not onnxruntime-ep-openvino 1.8.1's library" in why
    assert not (tmp_path / "harness").exists()


@needs_plugin
def test_built_graphs_agree_with_real_plugin_sessions(tmp_path):
    for build in (_single_not_last, _conv_chain):
        path = build(tmp_path)
        rc, rep = _verify(path, tmp_path)
        assert rep["disagreements"] == [] and rep["agreeing"] == rep["compared"] > 0, (path, rep["disagreements"])
        assert rc == 0
    # the plugin's partitioning, not 1.24.1's: the one-node cluster A that is not the last runs on OpenVINO
    proc, obs = _observe(_single_not_last(tmp_path), tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert obs["nodes"]["A"] == "OpenVINOExecutionProvider" and obs["nodes"]["LP"] == "CPUExecutionProvider"
    assert [p["nodes"] for p in obs["partitions"] if p["provider"] == "OpenVINOExecutionProvider"] == [["A"], ["C", "D"]]
    legacy = _predict(_single_not_last(tmp_path), "openvino:1.24")
    assert {n["name"]: n["provider"] for n in legacy["nodes"]}["A"] == "CPUExecutionProvider"  # 1.24.1, not the plugin


def _maxpool22_ceil_shortened(tmp_path):
    """MaxPool-22, ceil_mode, whose last window would start past the input: ONNX's output is 1x1, OpenVINO's 2x2."""
    nodes = [h.make_node("MaxPool", ["x"], ["y"], name="P", kernel_shape=[1, 1], strides=[2, 2], ceil_mode=1)]
    return save(model(nodes, [vi("x", [1, 1, 2, 2])], [vi("y", [1, 1, 1, 1])], opset=22),
                tmp_path / "maxpool22_ceil.onnx")


def _unsqueeze_runtime_axes(tmp_path):
    nodes = [_relu("x", "a", "A"), h.make_node("Unsqueeze", ["a", "axes"], ["u"], name="U"), _relu("u", "y", "C")]
    return save(model(nodes, [vi("x", [2, 4]), vi("axes", [1], T.INT64)], [vi("y", None)], opset=21),
                tmp_path / "unsqueeze_axes.onnx")


def _if_branch_constant(rows):
    """fasterrcnn's If: the then branch one Constant of shape [rows, 4] (torchvision's empty boxes when 0), the
    else branch a Neg of an outer tensor, the If between Relus."""
    then_g = h.make_graph([h.make_node("Constant", [], ["t"], name="then_const",
                                       value=h.make_tensor("v", T.FLOAT, [rows, 4], [0.0] * (rows * 4)))],
                          "then", [], [vi("t", [None, 4])])
    else_g = h.make_graph([h.make_node("Neg", ["a"], ["e"], name="else_neg")], "else", [], [vi("e", [None, 4])])

    def build(tmp_path):
        nodes = [_relu("x", "a", "A"), h.make_node("If", ["cond"], ["b"], name="IF", then_branch=then_g,
                                                   else_branch=else_g), _relu("b", "y", "C")]
        return save(model(nodes, [vi("x", [2, 4]), vi("cond", [], T.BOOL)], [vi("y", [None, 4])]),
                    tmp_path / f"if_constant_{rows}.onnx")
    return build


_if_empty_constant_branch = _if_branch_constant(0)


@needs_plugin
def test_an_if_with_a_branch_constant_of_elements_runs(tmp_path):
    """The control of the refusal below: the same If, its Constant holding one row, runs on OpenVINO."""
    path = _if_branch_constant(1)(tmp_path)
    proc, obs = _observe(path, tmp_path)
    assert proc.returncode == 0 and obs["nodes"]["IF"] == "OpenVINOExecutionProvider", proc.stderr
    assert _predict(path)["status"] == "ok"


@needs_plugin
@pytest.mark.parametrize("build", [_pad_wrap, _maxpool22_ceil_shortened, _unsqueeze_runtime_axes,
                                   _if_empty_constant_branch])
def test_sessions_the_plugin_refuses_are_predicted_to_fail(build, tmp_path):
    path = build(tmp_path)
    proc, obs = _observe(path, tmp_path)
    assert proc.returncode == 1 and obs["state"] == "create_failed", proc.stderr
    assert _predict(path)["status"] == "session_would_fail"
    if build is _pad_wrap:  # 1.24.1 left Pad wrap to the CPU: not a refusal there
        assert _predict(path, "openvino:1.24")["status"] != "session_would_fail"


@needs_plugin
@pytest.mark.parametrize("level", ["disable", "all"])
def test_fasterrcnn_refused_by_the_plugin_is_predicted(level, tmp_path):
    """torchvision's fasterrcnn (graph only: the session runs on stand-in weights): the plugin claims its Ifs, whose
    then branch is a Constant of no element, and the session fails; predicted so at both levels."""
    path = ROOT.parent / "shared" / "corpus" / "graph_only" / "fasterrcnn_mobilenet_v3_large_320_fpn.ts.onnx"
    if not path.is_file():
        pytest.skip(f"{path} is absent (the shared corpus)")
    rc, rep = _verify(path, tmp_path, level)
    assert rc == 0, rep
    assert rep["passed"] and "a Constant of no element" in rep["refusal"]["predicted"], rep["refusal"]


@needs_plugin
@pytest.mark.parametrize("name", ["tiny_resnet.ts", "q_tiny_resnet.ts.qop", "tiny_transformer.dynamo"])
@pytest.mark.parametrize("level", ["disable", "all"])
def test_corpus_models_agree_at_both_levels(name, level, tmp_path):
    path = CORPUS / f"{name}.onnx"
    if not path.exists():
        pytest.skip(f"{path} is absent (../shared/corpus not mounted)")
    rc, rep = _verify(path, tmp_path, level)
    assert rep["disagreements"] == [] and rep["agreeing"] == rep["compared"] > 0, rep["disagreements"][:5]
    assert rc == 0


def test_a_machine_without_the_device_gets_one_line_and_exit_2(tmp_path):
    real = ROOT / ".venv-ovplugin" / "bin" / "python"
    if not real.exists():
        pytest.skip(f"{real} is absent: `make openvino-plugin` makes it")
    proc = _cli("observe", _conv_chain(tmp_path), "-p", "openvino", "--python", real, "-o", tmp_path / "o.json")
    if proc.returncode == 0:
        pytest.skip("this CPU is an Intel one: the plugin itself offers its device")
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    assert "offers no device" in proc.stderr and not (tmp_path / "o.json").exists()


def test_table_is_derived_from_its_recorded_probes():
    """rules/openvino.yaml is what the generator derives from the probe sessions recorded beside it."""
    import yaml

    from partsim.gen.openvino import openvino_table_dict
    from partsim.gen.openvino_plugin import EVIDENCE, derive_table, read_evidence
    from partsim.gen.yamlout import dump_table

    evidence = read_evidence(ROOT / EVIDENCE)
    table = derive_table(openvino_table_dict(), evidence)
    shipped = yaml.safe_load((ROOT / "rules" / "openvino.yaml").read_text())
    assert yaml.safe_load(dump_table(table)) == shipped
    assert shipped["default_variant"] and shipped["variant"] == "1.8"


@needs_plugin
def test_verify_warns_when_the_table_describes_the_other_build(tmp_path):
    path = _conv_chain(tmp_path)
    proc = _cli("verify", path, "-p", "openvino:1.24", "--observe", "--python", PLUGIN_PY, "-o", tmp_path / "v.json")
    assert "describes onnxruntime-openvino but the session ran onnxruntime-ep-openvino" in proc.stderr
    assert proc.stderr.count("warning") == 1 and "compare with -p openvino\n" in proc.stderr
    proc = _cli("verify", path, "-p", "openvino", "--observe", "--python", PLUGIN_PY, "-o", tmp_path / "w.json")
    assert proc.returncode == 0 and "warning" not in proc.stderr


@needs_plugin
@pytest.mark.parametrize("case", sorted(UNEVEN_SPLITS))
def test_uneven_splits_follow_real_plugin_sessions(case, tmp_path):
    """uneven_split_fails on the plugin (its probes split_uneven, split_empty_last_chunk,
    split_uneven_negative_axis, if_split_empty_last_chunk), checked on more lengths: unlike 1.24.1 the plugin
    claims a top-level Split whose last chunk is empty, and it fails."""
    args, _, fails = UNEVEN_SPLITS[case]
    path = save(split18(*args), tmp_path / f"{case}.onnx")
    proc, obs = _observe(path, tmp_path)
    assert obs is not None, proc.stderr
    assert (obs["state"] == "create_failed") == fails == (_predict(path)["status"] == "session_would_fail"), obs


@needs_plugin
@pytest.mark.parametrize("case", sorted(empty_subgraph_reads()))
def test_subgraphs_reading_an_empty_input_follow_real_plugin_sessions(case, tmp_path):
    """zero_size_subgraph_input_fails (probes if_implicit_empty_input, loop_implicit_empty_input and their
    controls), checked again with a Scan body and an If nested in a branch: each session fails exactly where
    partsim predicts it ("Input names mismatch": the plugin drops the empty input)."""
    build, fails = empty_subgraph_reads()[case]
    path = save(build(), tmp_path / f"{case}.onnx")
    proc, obs = _observe(path, tmp_path)
    assert obs is not None, proc.stderr
    assert (obs["state"] == "create_failed") == fails == (_predict(path)["status"] == "session_would_fail"), obs
    if fails:
        assert "Input names mismatch" in obs["error"], obs["error"]
