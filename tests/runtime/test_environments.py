"""Environments that observe real sessions (issue 29): the extras, `partsim doctor`, one line (exit 2)
for a missing runtime or a provider without a table, stand-in weights said in the summary."""

import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, shared_path

OPENVINO_PY = ROOT / ".venv-openvino" / "bin" / "python"
if not OPENVINO_PY.is_file():  # a worktree beside the main checkout uses the main checkout's venv
    OPENVINO_PY = ROOT.parent / "main" / ".venv-openvino" / "bin" / "python"
HAS_QNN = importlib.util.find_spec("onnxruntime_qnn") is not None


def extras():
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]


def test_extras_name_the_plugin_packages_this_machine_runs():
    from importlib.metadata import PackageNotFoundError, version

    from packaging.requirements import Requirement

    for extra, package in (("qnn", "onnxruntime-qnn"), ("webgpu", "onnxruntime-ep-webgpu"),
                           ("openvino", "onnxruntime-ep-openvino")):
        (req,) = [Requirement(r) for r in extras()[extra]]
        assert req.name == package
        try:
            installed = version(package)
        except PackageNotFoundError:
            continue
        if req.marker is None or req.marker.evaluate():
            assert req.specifier.contains(installed), (extra, installed)


def test_doctor_observes_cpu_and_qnn_for_real(run_cli):
    code, out, err = run_cli("doctor", "-f", "json", "--openvino-python", sys.executable)
    doc = json.loads(out)
    rows = {r["table"]: r for r in doc["providers"]}
    assert list(rows) == ["cpu", "qnn", "openvino", "openvino:1.24", "webgpu"]
    assert [r["provider"] for r in doc["providers"]] == [
        "CPUExecutionProvider", "QNNExecutionProvider", "OpenVINOExecutionProvider", "OpenVINOExecutionProvider",
        "WebGpuExecutionProvider"]
    assert rows["cpu"]["state"] == "observable"
    assert rows["qnn"]["state"] == ("observable" if HAS_QNN else "missing")
    # this interpreter's onnxruntime has no OpenVINO EP built in: ORT drops the request, which is "missing"
    assert rows["openvino:1.24"]["state"] == "missing"
    assert rows["openvino:1.24"]["fix"].startswith("make openvino")
    assert code == (0 if len(doc["observable"]) == 5 else 1)
    for r in doc["providers"]:
        assert (r["state"] == "observable") == (r["fix"] == "") or r["state"] == "not_tried"


def test_doctor_table_and_a_missing_plugin(run_cli):
    if not OPENVINO_PY.is_file():
        pytest.skip(f"{OPENVINO_PY} is absent: `make openvino` makes it")
    from partsim.runtime.observe import probe_provider

    r = probe_provider("OpenVINOExecutionProvider", str(OPENVINO_PY))
    assert r["state"] == "observable" and r["runtime"].startswith("onnxruntime 1.24")
    r = probe_provider("QNNExecutionProvider", str(OPENVINO_PY))  # that venv has no onnxruntime-qnn
    assert r["state"] == "missing" and r["fix"] == 'pip install "partsim[qnn]"'
    code, out, _ = run_cli("doctor", "--openvino-python", OPENVINO_PY)
    lines = out.splitlines()
    assert re.match(r"OpenVINOExecutionProvider\s+openvino:1\.24\s+observable\s+onnxruntime 1\.24", lines[5])
    assert re.match(r"CPUExecutionProvider\s+cpu\s+observable", lines[2])
    code, _, err = run_cli("doctor", "--openvino-python", "/nonexistent/python")
    assert code == 2 and "no such file" in err


@pytest.mark.parametrize("command", ["verify", "observe"])
def test_missing_runtime_is_one_line_exit_2(run_cli, tmp_path, command):
    if not OPENVINO_PY.is_file():
        pytest.skip(f"{OPENVINO_PY} is absent: an interpreter without onnxruntime-qnn is needed")
    model = ROOT / "partsim" / "data" / "one_relu.onnx"
    args = ["--observe"] if command == "verify" else ["-o", tmp_path / "obs.json"]
    code, out, err = run_cli(command, model, "-p", "qnn", "--python", OPENVINO_PY, *args)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "cannot observe QNNExecutionProvider here: onnxruntime-qnn is not installed" in err
    assert 'pip install "partsim[qnn]"' in err
    assert not (tmp_path / "obs.json").exists()


@pytest.mark.parametrize("command, extra", [("determinism", ()),
                                            ("run-compare", ("--abs-tol", "1e-4", "--rel-tol", "1e-3"))])
def test_missing_runtime_in_numeric_commands_is_one_line_exit_2(run_cli, command, extra):
    if not OPENVINO_PY.is_file():
        pytest.skip(f"{OPENVINO_PY} is absent: an interpreter without onnxruntime-qnn is needed")
    model = ROOT / "partsim" / "data" / "one_relu.onnx"
    code, out, err = run_cli(command, model, "-p", "qnn", "--python", OPENVINO_PY, *extra)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "cannot run QNNExecutionProvider here: onnxruntime-qnn is not installed" in err
    assert 'pip install "partsim[qnn]"' in err


def test_stand_in_weights_are_said(run_cli):
    model = shared_path("corpus", "graph_only", "resnet18.ts.onnx")
    import onnx

    proto = onnx.load(str(model), load_external_data=False)
    external = [t for t in proto.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL]
    files = sorted({e.value for t in external for e in t.external_data if e.key == "location"})
    assert files and not any((Path(model).parent / f).exists() for f in files)
    code, out, _ = run_cli("simulate", model, "-p", "nnapi", "-f", "json")
    s = json.loads(out)
    assert s["standInWeights"] == {"files": files, "tensors": len(external)}
    assert any("stand-in" in w and files[0] in w for w in s["warnings"])
    code, out, _ = run_cli("simulate", model, "-p", "nnapi")
    assert any(line.startswith("note ") and "stand-in values" in line for line in out.splitlines())
    code, out, _ = run_cli("simulate", model, "-p", "nnapi", "--level", "disable", "-f", "json")
    assert "standInWeights" not in json.loads(out)  # the graph as written: no weight is read
    full = shared_path("corpus", "full", "tiny_resnet.ts.onnx")
    code, out, _ = run_cli("simulate", full, "-p", "nnapi", "-f", "json")
    assert "standInWeights" not in json.loads(out)


def test_a_pip_installed_partsim_is_told_pip_and_partsim_commands(monkeypatch, tmp_path):
    """Without a checkout (no Makefile beside the package) every fix is a command a pip user can run, and the
    WebGPU environment lives in the user's data folder; in the checkout, `make` targets."""
    from partsim.runtime import observe, webgpu_host

    plugin_missing = "onnxruntime-ep-openvino is not installed in this interpreter (No module named x)"
    assert observe.in_checkout()
    assert observe.fix_for("OpenVINOExecutionProvider", plugin_missing).startswith("make openvino-plugin")
    monkeypatch.setattr(observe, "_CHECKOUT", tmp_path)
    monkeypatch.setattr(webgpu_host, "_checkout", lambda: None)
    monkeypatch.delenv("PARTSIM_WEBGPU_HOME", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert not observe.in_checkout()
    assert webgpu_host.home() == str(tmp_path / "data" / "partsim" / "webgpu")
    why = webgpu_host.missing()
    assert "run `partsim doctor --setup webgpu`" in why
    assert observe.fix_for("WebGpuExecutionProvider", why).startswith("partsim doctor --setup webgpu")
    assert observe.fix_for("OpenVINOExecutionProvider", plugin_missing) == 'pip install "partsim[openvino]"'
    for provider in ("OpenVINOExecutionProvider:1.24", "WebGpuExecutionProvider", "QNNExecutionProvider"):
        assert "make " not in observe.fix_for(provider), provider
