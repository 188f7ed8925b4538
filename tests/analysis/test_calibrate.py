"""partsim rules calibrate: an overlay learnt from real-session observations.

The 1.25-era CUDA table (fixtures/cuda-1.25-735e69a.yaml, the shipped table before issue 20)
is calibrated on one half of the CUDA 1.31.1 node observations and judged on the other half,
which it has not seen.  Agreement is always measured against the recorded sessions.
"""

import json
import shutil

import numpy as np
import onnxruntime as ort
import pytest
import yaml
from onnx import TensorProto as T
from onnx import helper

from tests.conftest import ROOT, shared_path
from partsim.api import load_tables
from partsim.analysis.calibrate import agreement, calibrate, read_cases, read_node_records, split_cases
from partsim.rules.load import layer_table, parse_table

OLD = ROOT / "fixtures" / "cuda-1.25-735e69a.yaml"


@pytest.fixture(scope="module")
def cuda_cases():
    return read_node_records(shared_path("observed", "nodes", "cuda-ort1.31.1.jsonl"))


@pytest.fixture(scope="module")
def trained(cuda_cases):
    """The overlay learnt on half 0 of the CUDA node observations over the 1.25-era table (one calibration
    shared by the tests that read it)."""
    return calibrate(split_cases(cuda_cases, 0), "cuda", load_tables([OLD]))


def _layered(tables, text):
    from partsim.analysis.calibrate import _with

    base = tables["CUDAExecutionProvider"][0]
    return _with(tables, base, layer_table(base, parse_table(text, "<overlay>")))


def test_calibrating_on_one_half_raises_agreement_on_the_other(cuda_cases, trained):
    old = load_tables([OLD])
    train, held_out = split_cases(cuda_cases, 0), split_cases(cuda_cases, 1)
    assert not {c.name for c in train} & {c.name for c in held_out}
    assert len(train) > 300 and len(held_out) > 300
    result = trained
    before = agreement(held_out, ["cuda", "cpu"], old)
    after = agreement(held_out, ["cuda", "cpu"], _layered(old, result["text"]))
    assert before["nodes"] == after["nodes"] > 1500
    assert before["share"] < 0.86  # docs/tables.md: 84.55 % -> 99.89 %
    assert after["share"] > 0.99
    # the report's own before/after is on the half it learnt from
    (obs,) = result["report"]["observations"]
    assert obs["agreeingAfter"] > obs["agreeingBefore"]
    assert obs["agreeingAfter"] == agreement(train, ["cuda", "cpu"], _layered(old, result["text"]))["agreeing"]


def test_overlay_is_lint_clean_with_provenance_and_layers_with_r(cuda_cases, trained, tmp_path, run_cli):
    result = trained
    assert calibrate(split_cases(cuda_cases, 0), "cuda", load_tables([OLD]))["text"] == result["text"]  # deterministic
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text(result["text"])
    code, out, err = run_cli("lint", "--strict", overlay)
    assert code == 0, out + err
    doc = yaml.safe_load(result["text"])
    assert doc["overlay"]["layers_over"] == OLD.name
    new_rules = [r for r in doc["ops"] if "provenance" in r]
    assert new_rules
    for r in new_rules:
        p = r["provenance"]
        assert p["observations"] and p["runtime"] == "onnxruntime 1.31.1" and p["change"] and p["evidence"]
    # -r layers it over the table of the same provider: the ops it does not name keep the base's
    # rules, host ports and hooks (the CPU-preferred pass still runs)
    layered = load_tables([OLD, overlay])["CUDAExecutionProvider"][0]
    base = load_tables([OLD])["CUDAExecutionProvider"][0]
    assert layered.rules_for("", "Conv") == base.rules_for("", "Conv")
    assert layered.option("cpu_preferred_shape_nodes") is True
    assert len(layered.rules_for("", "Identity")) > len(base.rules_for("", "Identity"))
    # a node of the evidence: CPU with the old table alone, CUDA (as observed) with the overlay
    change = next(c for c in result["report"]["changes"] if c["op"] == "Identity")
    where, node = change["evidence"][0].rsplit(" ", 1)
    case = next(c for c in cuda_cases if c.source == where)
    placed = {}
    for rules in ([OLD], [OLD, overlay]):
        code, out, _ = run_cli("simulate", case.model, "-p", "cuda", *sum((["-r", r] for r in rules), []),
                               "--level", "disable", "-f", "json")
        assert code == 0
        placed[len(rules)] = {n["name"]: n["provider"] for n in json.loads(out)["nodes"]}[node]
    assert placed == {1: "CPUExecutionProvider", 2: case.nodes[node]} and case.nodes[node] == "CUDAExecutionProvider"


def test_overlay_without_a_base_is_refused(tmp_path, run_cli):
    p = tmp_path / "o.yaml"
    p.write_text("provider: XnnpackExecutionProvider\nkind: kernel\nsource: {description: d, version: '1'}\n"
                 "overlay: {}\nops: [{op: Relu}]\nvariant: nosuch\n")
    model = shared_path("observed", "nodes", "models", "test_relu_expanded_ver18.onnx")
    code, _, err = run_cli("simulate", model, "-p", "xnnpack", "-r", p, "--level", "disable")
    assert code == 2 and "no table to layer over" in err and "Traceback" not in err


def _copy_case(src_dir, dst_dir, test, new_test):
    (dst_dir / "models").mkdir(exist_ok=True)
    shutil.copy(src_dir / "models" / f"{test}.onnx", dst_dir / "models" / f"{new_test}.onnx")


def _record(case, ep, nodes):
    return json.dumps({"case": f"node__{case}", "level": "ORT_DISABLE_ALL", "assignment": [[ep, nodes]],
                       "requested": ["CUDAExecutionProvider", "CPUExecutionProvider"],
                       "granted": ["CUDAExecutionProvider", "CPUExecutionProvider"]})


def test_contradicting_observations_are_reported_not_guessed(tmp_path):
    """Two identical Abs-13 float models, one seen on CUDA and one on CPU: no rule tells them
    apart, so calibrate writes no Abs rule and names both nodes.  The same node seen on two
    providers in two files is reported as a conflict and left out."""
    src = shared_path("observed", "nodes")
    d = tmp_path / "obs"
    d.mkdir()
    for name in ("abs_a", "abs_b"):
        _copy_case(src, d, "test_abs", f"test_{name}")
    _copy_case(src, d, "test_acos", "test_acos")
    node = [["n0_Abs", "Abs", ""]]
    (d / "one-ort1.31.1.jsonl").write_text("\n".join([
        _record("test_abs_a", "CUDAExecutionProvider", node),
        _record("test_abs_b", "CPUExecutionProvider", node),
        _record("test_acos", "CUDAExecutionProvider", [["n0_Acos", "Acos", ""]])]) + "\n")
    (d / "two-ort1.31.1.jsonl").write_text(_record("test_acos", "CPUExecutionProvider", [["n0_Acos", "Acos", ""]]) + "\n")
    cases = read_cases([d / "one-ort1.31.1.jsonl", d / "two-ort1.31.1.jsonl"])
    result = calibrate(cases, "cuda", load_tables())
    rep = result["report"]
    (c,) = [c for c in rep["contradictions"] if c["op"] == "Abs"]
    assert "n0_Abs" in c["why"] and "one-ort1.31.1.jsonl:2" in c["why"] and "one-ort1.31.1.jsonl:1" in c["why"]
    (conflict,) = rep["conflictingObservations"]
    assert conflict["node"] == "n0_Acos" and len(conflict["observed"]) == 2
    assert not any(ch["op"] in ("Abs", "Acos") for ch in rep["changes"])
    assert result["text"] == ""  # nothing learnt, nothing written


def test_a_kernel_the_device_has_is_learnt_from_one_observation(tmp_path, run_cli):
    """The shipped table has no CUDA Acos; one session that ran Acos-22 on CUDA gives the overlay
    an Acos-22 rule with the dtype seen, through the CLI, and the JSON report shows 0 -> 1."""
    src = shared_path("observed", "nodes")
    d = tmp_path / "obs"
    d.mkdir()
    _copy_case(src, d, "test_acos", "test_acos")
    obs = d / "dev-ort1.31.1.jsonl"
    obs.write_text(_record("test_acos", "CUDAExecutionProvider", [["n0_Acos", "Acos", ""]]) + "\n")
    out = tmp_path / "overlay.yaml"
    code, stdout, err = run_cli("rules", "calibrate", obs, "-p", "cuda", "--device", "H200", "-o", out, "-f", "json")
    assert code == 0, err
    rep = json.loads(stdout)
    assert rep["observations"][0]["agreeingBefore"] == 0 and rep["observations"][0]["agreeingAfter"] == 1
    (rule,) = yaml.safe_load(out.read_text())["ops"]
    assert rule["op"] == "Acos" and rule["versions"] == [22, None] and rule["types"] == {"T": ["float"]}
    assert rule["provenance"]["device"] == "H200"
    code, stdout, _ = run_cli("simulate", d / "models" / "test_acos.onnx", "-p", "cuda", "-r", out,
                              "--level", "disable", "-f", "json")
    assert json.loads(stdout)["nodes"][0]["provider"] == "CUDAExecutionProvider"


def test_reads_observed_json_and_ort_profiles(tmp_path):
    """shared/observed/<model>/observed.json (model.onnx beside it) and a real ORT profile."""
    cases = read_cases([shared_path("observed", "cuda", "bert_tiny.ts", "observed.json")])
    assert len(cases) == 1 and len(cases[0].nodes) > 100
    assert agreement(cases, ["cuda", "cpu"], load_tables())["share"] == 1.0
    x = helper.make_tensor_value_info("x", T.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", T.FLOAT, [2, 3])
    m = helper.make_model(helper.make_graph([helper.make_node("Relu", ["x"], ["r"], name="relu"),
                                             helper.make_node("Neg", ["r"], ["y"], name="neg")], "g", [x], [y]),
                          opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
    mp = tmp_path / "m.onnx"
    mp.write_bytes(m.SerializeToString())
    so = ort.SessionOptions()
    so.enable_profiling = True
    so.profile_file_prefix = str(tmp_path / "prof")
    s = ort.InferenceSession(str(mp), so, providers=["CPUExecutionProvider"])
    s.run(None, {"x": np.ones((2, 3), np.float32)})
    prof = s.end_profiling()
    (case,) = read_cases([prof], model=mp)
    assert case.nodes == {"relu": "CPUExecutionProvider", "neg": "CPUExecutionProvider"}


def test_bad_observation_is_one_line_exit_2(tmp_path, run_cli):
    p = tmp_path / "bad-ort1.31.1.jsonl"
    p.write_text("{not json\n")
    code, out, err = run_cli("rules", "calibrate", p, "-p", "cuda", "-o", tmp_path / "o.yaml")
    assert code == 2 and "not valid JSON" in err and "Traceback" not in err
    assert not (tmp_path / "o.yaml").exists()


def test_narrowing_learns_a_dtype_and_an_attribute_value(tmp_path):
    """Synthetic observations of a device whose Abs has no int8 kernel and whose ArgMax refuses
    keepdims=0: calibrate removes int8 from Abs-13 and vetoes keepdims=0 on ArgMax-13, and the
    overlay then predicts exactly what was observed."""
    d = tmp_path / "obs"
    (d / "models").mkdir(parents=True)

    def save(test, op, dtype, **attrs):
        x = vi_(dtype, [2, 3])
        out = helper.make_tensor_value_info("y", T.INT64 if op == "ArgMax" else dtype, None)
        m = helper.make_model(helper.make_graph([helper.make_node(op, ["x"], ["y"], name=f"n0_{op}", **attrs)],
                                                "g", [x], [out]),
                              opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
        (d / "models" / f"{test}.onnx").write_bytes(m.SerializeToString())

    def vi_(dtype, shape):
        return helper.make_tensor_value_info("x", dtype, shape)

    save("test_abs_f", "Abs", T.FLOAT)
    save("test_abs_i8", "Abs", T.INT8)
    save("test_argmax_k1", "ArgMax", T.FLOAT, keepdims=1)
    save("test_argmax_k0", "ArgMax", T.FLOAT, keepdims=0)
    obs = d / "dev-ort1.31.1.jsonl"
    obs.write_text("\n".join([
        _record("test_abs_f", "CUDAExecutionProvider", [["n0_Abs", "Abs", ""]]),
        _record("test_abs_i8", "CPUExecutionProvider", [["n0_Abs", "Abs", ""]]),
        _record("test_argmax_k1", "CUDAExecutionProvider", [["n0_ArgMax", "ArgMax", ""]]),
        _record("test_argmax_k0", "CPUExecutionProvider", [["n0_ArgMax", "ArgMax", ""]])]) + "\n")
    cases = read_cases([obs])
    tables = load_tables()
    assert agreement(cases, ["cuda", "cpu"], tables)["agreeing"] == 2
    result = calibrate(cases, "cuda", tables)
    changes = {c["op"]: c["change"] for c in result["report"]["changes"]}
    assert changes == {"Abs": "T -= int8", "ArgMax": "attribute keepdims not in [0]"}
    assert agreement(cases, ["cuda", "cpu"], _layered(tables, result["text"]))["agreeing"] == 4
    abs13 = [r for r in yaml.safe_load(result["text"])["ops"] if r["op"] == "Abs" and r["versions"][0] == 13]
    assert "int8" not in abs13[0]["types"]["T"] and "int16" in abs13[0]["types"]["T"]
