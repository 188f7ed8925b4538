"""Issue #30: partsim follows ORT as it moves (docs/versions.md).

Run under both ends of the supported range (`make test`: the main venv has the lowest ORT, the second
venv .venv-ort-highest the highest; PARTSIM_OTHER_ORT_PYTHON names the other end's interpreter).
References are real ORT sessions (``partsim.runtime.observe.run_session``, in a child of the
interpreter whose ORT is meant), never partsim's own output.
"""

import json
import os
import re
import sys
from pathlib import Path

import pytest

from partsim.api import predict
from partsim.runtime.observe import observation_from_run, run_session
from partsim.versions import installed_ort, selected
from tests.conftest import ROOT, shared_path

CPU = "CPUExecutionProvider"
OTHER = os.environ.get("PARTSIM_OTHER_ORT_PYTHON")
NEEDS_OTHER = pytest.mark.skipif(not OTHER or not Path(OTHER).is_file(),
                                 reason="PARTSIM_OTHER_ORT_PYTHON (the other end of the ORT range, set by "
                                        "`make test`) is not set")


def _ort_version(python=None):
    """The onnxruntime version a real session of ``python`` reports (a child process)."""
    import subprocess

    out = subprocess.run([python or sys.executable, "-c", "import onnxruntime as o; print(o.__version__)"],
                         capture_output=True, text=True, timeout=120)
    return out.stdout.strip()


def _opset28_model(name, folder):
    """One node at ai.onnx opset 28 (onnx 1.23.2 knows it): kernels onnxruntime 1.32.0 added."""
    import onnx
    from onnx import TensorProto as T
    from onnx import helper as h

    if name == "bitshift_int32":  # signed BitShift is new in opset 28
        node = h.make_node("BitShift", ["x", "s"], ["y"], direction="LEFT")
        ins = [h.make_tensor_value_info("x", T.INT32, [4]), h.make_tensor_value_info("s", T.INT32, [4])]
        outs, inits = [h.make_tensor_value_info("y", T.INT32, [4])], []
    elif name == "celu":
        node = h.make_node("Celu", ["x"], ["y"])
        ins, outs, inits = [h.make_tensor_value_info("x", T.FLOAT, [4])], [h.make_tensor_value_info("y", T.FLOAT, [4])], []
    else:
        node = h.make_node("OneHot", ["x", "depth", "values"], ["y"])
        ins, outs = [h.make_tensor_value_info("x", T.INT64, [4])], [h.make_tensor_value_info("y", T.FLOAT, [4, 5])]
        inits = [h.make_tensor("depth", T.INT64, [], [5]), h.make_tensor("values", T.FLOAT, [2], [0.0, 1.0])]
    model = h.make_model(h.make_graph([node], name, ins, outs, initializer=inits),
                         opset_imports=[h.make_opsetid("", 28)])
    model.ir_version = 13
    onnx.checker.check_model(model, full_check=True)
    path = Path(folder) / f"{name}_opset28.onnx"
    onnx.save(model, str(path))
    return path


def _same_nodes(summary, obs):
    pred = {n["name"]: n["provider"] for n in summary["nodes"]}
    return pred == dict(obs["nodes"]), (pred, obs["nodes"])


def _check_against_real(path, python=None):
    """Predict ``path`` for the ORT of ``python`` and compare with a real session there."""
    with selected(None, python):
        summary, _ = predict(path, ["cpu"])
    rec = run_session(path, [CPU], "all", python=python, timeout=300)
    assert summary["ort"]["predicted"] == rec["runtime"].split()[-1]
    assert (summary["status"] == "ok") == (rec["state"] == "ok"), (summary.get("failure"), rec.get("error"))
    if rec["state"] == "ok":
        same, detail = _same_nodes(summary, observation_from_run(rec, "all"))
        assert same, detail
    else:  # the refusal partsim predicts names what ORT refuses: the opset
        assert "opset 28" in summary["failure"] and "opset 28" in (rec.get("error") or "") or \
            "Opset 28" in (rec.get("error") or ""), (summary["failure"], rec.get("error"))
    return summary, rec


@pytest.mark.parametrize("name", ["bitshift_int32", "celu", "onehot"])
def test_an_opset28_model_is_predicted_as_the_installed_ort_runs_it(name, tmp_path):
    # onnxruntime 1.31.1 refuses opset 28 at load (official support ends at 26), 1.32.0 runs it on the CPU
    _check_against_real(_opset28_model(name, tmp_path))


@NEEDS_OTHER
@pytest.mark.parametrize("name", ["bitshift_int32", "celu"])
def test_an_opset28_model_is_predicted_for_another_ort_with_python(name, tmp_path):
    summary, rec = _check_against_real(_opset28_model(name, tmp_path), OTHER)
    assert summary["ort"]["from"] == "--python"


def test_the_cpu_table_is_the_kernel_registry_of_the_ort_predicted():
    from partsim.gen.ort_kernels import kernel_table
    from partsim.rules.load import builtin_tables

    table = builtin_tables()[CPU][0]
    version = _ort_version()
    assert table.source["describes"] == {"onnxruntime": version}
    shipped = (ROOT / "rules" / "cpu.yaml").read_text()
    if f"onnxruntime: {version}\n" in shipped:  # the low end: the shipped table is the wheel's registry
        assert kernel_table() == shipped


def test_summary_and_table_state_the_ort_predicted_and_what_may_be_stale(run_cli, tmp_path):
    path = _opset28_model("celu", tmp_path)
    code, out, _ = run_cli("simulate", path, "-p", "xnnpack", "--format", "json")
    ort = json.loads(out)["ort"]
    assert code == 0 and ort["predicted"] == _ort_version() and ort["from"] == "installed"
    describes = {t["provider"]: t["describes"] for t in ort["tables"]}
    assert describes["XnnpackExecutionProvider"] == {"onnxruntime": "1.25.0"}
    # the XNNPACK table describes ORT's sources of 1.25.0: older than any release partsim supports
    assert any(s.startswith("XnnpackExecutionProvider: its table describes onnxruntime 1.25.0") for s in ort["mayBeStale"])
    code, out, _ = run_cli("simulate", path, "-p", "xnnpack")
    assert f"ort        onnxruntime {_ort_version()} (installed)" in out and "stale?     Xnnpack" in out


def test_dependencies_are_ranges_holding_both_tested_ends():
    from packaging.requirements import Requirement

    text = (ROOT / "pyproject.toml").read_text()
    deps = {Requirement(r).name: Requirement(r) for r in re.findall(r'^    "((?:onnx|onnxruntime)[<>=!,.0-9 ]+)"',
                                                                     text, re.M)}
    assert set(deps) == {"onnx", "onnxruntime"} and all("==" not in str(d.specifier) for d in deps.values())
    for name in ("ort-lowest", "ort-highest"):
        pins = dict(re.findall(r"^([a-z]+)==([0-9.]+)$", (ROOT / "constraints" / f"{name}.txt").read_text(), re.M))
        for package, version in pins.items():
            assert version in deps[package].specifier, (name, package, version)
    assert installed_ort()[1] in deps["onnxruntime"].specifier


@NEEDS_OTHER
def test_diff_between_the_two_ends_matches_real_sessions_on_corpus_models(tmp_path):
    # per model: partsim diff says "placement changed" exactly when real sessions of the two ORTs differ
    from partsim.analysis.upgrade import diff_summaries, parse_side, predict_side

    names = ["graph_only/mobilenet_v2.ts.onnx", "full/q_tiny_resnet.ts.qdq.onnx", "graph_only/bert_tiny.ts.onnx"]
    here, other = parse_side("installed"), parse_side(f"python={OTHER}")
    for name in names:
        model = shared_path("corpus", *name.split("/"))
        d = diff_summaries(predict_side(model, here, ["cpu"]), predict_side(model, other, ["cpu"]))
        real = [observation_from_run(run_session(model, [CPU], "all", python=p, timeout=300, run=False), "all")
                for p in (None, OTHER)]
        assert d["placementChanged"] == (real[0]["nodes"] != real[1]["nodes"]), (name, d["reasons"])
    model = _opset28_model("celu", tmp_path)
    d = diff_summaries(predict_side(model, here, ["cpu"]), predict_side(model, other, ["cpu"]))
    states = [run_session(model, [CPU], "all", python=p, run=False)["state"] for p in (None, OTHER)]
    assert d["placementChanged"] == (states[0] != states[1])
    if states[0] != states[1]:  # the load limit and the kernel a release added are both named
        assert any("opset 28" in r for r in d["reasons"]), d["reasons"]
        assert any(r.startswith("Celu: CPU kernels") and "28+" in r for r in d["reasons"]), d["reasons"]


@NEEDS_OTHER
def test_rules_refresh_regenerates_what_the_other_wheel_tells(run_cli, tmp_path):
    from partsim.gen.ort_kernels import kernel_table

    code, out, err = run_cli("rules", "refresh", "--python", OTHER, "--into", tmp_path, "--format", "json")
    assert code == 0, err
    report = json.loads(out)
    version = _ort_version(OTHER)
    assert report["onnxruntime"] == version and {Path(d["file"]).name for d in report["regenerated"]} == {
        "cpu.yaml", "nnapi.yaml", "contrib_schemas.json"}  # CoreML: from its op builders' source, not the wheel
    cpu = (tmp_path / "cpu.yaml").read_text()
    assert f"describes:\n    onnxruntime: {version}\n" in cpu and cpu != kernel_table()
    assert {d["file"] for d in report["notRegenerated"]} >= {"rules/cuda.yaml", "rules/qnn.yaml"}
    assert report["measured"]["maxOnnxOpset"] >= 26


def test_ort_option_refuses_what_is_not_a_release(run_cli, tmp_path):
    code, _, err = run_cli("simulate", _opset28_model("celu", tmp_path), "--ort", "latest")
    assert code == 2 and "release number" in err
    code, _, err = run_cli("--no-cache", "simulate", tmp_path / "celu_opset28.onnx", "--ort", "0.0.1")
    assert code == 2 and "cache" in err


def test_a_baseline_says_which_ort_it_was_predicted_for(tmp_path):
    from partsim.analysis.verify import baseline_record, check_baseline_context
    from partsim.errors import UsageError

    summary, _ = predict(_opset28_model("onehot", tmp_path), ["cpu"])
    record = baseline_record(summary)
    assert record["ort"]["onnxruntime"] == _ort_version()
    other = dict(record, ort={"onnxruntime": "1.0.0"})
    with pytest.raises(UsageError, match="partsim diff --from ort==1.0.0"):
        check_baseline_context(record, other)


def test_diff_counts_the_accelerator_nodes_a_change_costs_and_fails_on_them(tmp_path):
    # the same model under two tables stands in for two releases: what moved is counted and gated
    from partsim.analysis.upgrade import diff_document, diff_summaries, parse_side
    from partsim.report.diff_junit import render_diff_junit
    from partsim.report.diff_sarif import render_diff_sarif
    from partsim.report.diff_table import render_diff_table

    model = ROOT / "fixtures" / "demo.onnx"
    before, _ = predict(model, ["nnapi"], level="disable")
    shipped = (ROOT / "rules" / "nnapi.yaml").read_text()
    table = tmp_path / "nnapi.yaml"
    table.write_text(re.sub(r"(?ms)^- op: Conv\n.*?(?=^- op: )", "", shipped))
    after, _ = predict(model, ["nnapi"], [table], level="disable")
    convs = {n["name"] for n in before["nodes"] if n["opType"] == "Conv" and n["provider"] != CPU}
    assert convs
    d = diff_summaries(before, after)
    assert {c["node"] for c in d["changed"]} >= convs and d["lostAcceleratorNodes"] == len(
        [n for n in before["nodes"] if n["provider"] != CPU]) - len([n for n in after["nodes"] if n["provider"] != CPU])
    doc = diff_document([d], parse_side("installed"), parse_side("ort==1.32.0"))
    assert not doc["passed"] and "WORSE" in render_diff_table(doc)
    assert 'failures="1"' in render_diff_junit(doc) and "upgrade/loss" in render_diff_sarif(doc)


def test_an_observation_names_the_ort_and_plugin_releases_that_ran(tmp_path):
    from importlib import metadata

    from tests.conftest import run_subprocess

    try:
        qnn = metadata.version("onnxruntime-qnn")
    except metadata.PackageNotFoundError:
        pytest.skip("onnxruntime-qnn is not installed in this interpreter (the highest-ORT venv has none)")
    out = tmp_path / "obs.json"
    r = run_subprocess("observe", ROOT / "fixtures" / "demo.onnx", "-p", "qnn", "--format", "json", "-o", out)
    obs = json.loads(out.read_text())
    assert r.returncode == 0 and obs["state"] == "ok", r.stderr
    assert obs["runtime"] == f"onnxruntime {_ort_version()}" and obs["plugins"] == {"onnxruntime-qnn": qnn}


def test_diff_names_a_plugin_release_no_table_describes(run_cli):
    model = ROOT / "fixtures" / "demo.onnx"
    code, out, err = run_cli("diff", model, "-p", "qnn", "--level", "disable", "--from", "installed",
                             "--to", "installed,qnn==9.9.9")
    assert code == 2 and "no table describes onnxruntime-qnn 9.9.9 (the shipped one describes 2.7.0)" in err
    code, out, err = run_cli("diff", model, "-p", "qnn", "--level", "disable", "--from", "installed",
                             "--to", "installed,qnn==2.7.0", "--format", "json")
    assert code == 0 and json.loads(out)["models"][0]["placementChanged"] is False, err
