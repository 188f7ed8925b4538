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

    for extra, package in (("qnn", "onnxruntime-qnn"), ("webgpu", "onnxruntime-ep-webgpu")):
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
    rows = {r["provider"]: r for r in doc["providers"]}
    assert list(rows) == ["CPUExecutionProvider", "QNNExecutionProvider", "OpenVINOExecutionProvider",
                          "WebGpuExecutionProvider"]
    assert rows["CPUExecutionProvider"]["state"] == "observable"
    assert rows["QNNExecutionProvider"]["state"] == ("observable" if HAS_QNN else "missing")
    # this interpreter's onnxruntime has no OpenVINO EP: ORT drops the request, which is "missing"
    assert rows["OpenVINOExecutionProvider"]["state"] == "missing"
    assert rows["OpenVINOExecutionProvider"]["fix"].startswith("make openvino")
    assert code == (0 if len(doc["observable"]) == 4 else 1)
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
    assert re.match(r"OpenVINOExecutionProvider\s+observable\s+onnxruntime 1\.24", lines[4])
    assert re.match(r"CPUExecutionProvider\s+observable", lines[2])
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
