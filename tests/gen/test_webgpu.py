"""The WebGPU plugin EP for real: onnxruntime-ep-webgpu 0.4.0 sessions on Mesa's lavapipe (``make webgpu``).

Each check creates real WebGPU sessions now and compares them with partsim's prediction; they skip,
saying why, where the environment is missing (no ``make webgpu``, or neither a GPU nor root for the
session child's virtual one: partsim/runtime/webgpu_host.py).  The suite keeps to tiny graphs: the
first run of a model compiles its shaders (seconds each on lavapipe; Mesa's cache keeps later runs fast).
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from onnx import helper as h

from tests.modelbuild import const, model, save, vi

ROOT = Path(__file__).resolve().parents[2]
WEBGPU = "WebGpuExecutionProvider"


def _why_not():
    sys.path.insert(0, str(ROOT / "partsim" / "runtime"))
    try:
        import webgpu_host
    finally:
        sys.path.pop(0)
    try:
        import onnxruntime_ep_webgpu  # noqa: F401
    except ImportError:
        return "onnxruntime-ep-webgpu is not installed (make webgpu installs it)"
    return webgpu_host.missing()


WHY_NOT = _why_not()
needs_webgpu = pytest.mark.skipif(WHY_NOT is not None, reason=f"no WebGPU sessions here: {WHY_NOT}")


def _cli(*args, env=None):
    return subprocess.run([sys.executable, str(ROOT / "cli.py"), *map(str, args)], capture_output=True, text=True,
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}, timeout=600)


def _conv_relu(tmp_path):
    """Conv -> Relu -> MaxPool on a float NCHW input: WebGPU converts Conv and MaxPool to NHWC."""
    nodes = [h.make_node("Conv", ["x", "W"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             h.make_node("Relu", ["c"], ["r"], name="relu"),
             h.make_node("MaxPool", ["r"], ["y"], name="pool", kernel_shape=[2, 2])]
    return save(model(nodes, [vi("x", [1, 3, 8, 8])], [vi("y", None)], [const("W", [4, 3, 3, 3])]),
                tmp_path / "conv_relu.onnx")


def _shape_math(tmp_path):
    """Shape -> Cast(float) -> Mul: the Mul is what ORT's GetCpuPreferredNodes would send to the CPU."""
    nodes = [h.make_node("Shape", ["x"], ["s"], name="shape"), h.make_node("Cast", ["s"], ["f"], name="cast", to=1),
             h.make_node("Mul", ["f", "two"], ["y"], name="mul")]
    return save(model(nodes, [vi("x", [2, 3, 4])], [vi("y", None)], [const("two", [3], 2.0)]),
                tmp_path / "shape_math.onnx")


@needs_webgpu
def test_observe_records_the_plugin_and_the_nhwc_layout(tmp_path):
    """A real session: the plugin's package, version and options are recorded; Conv and MaxPool run in
    com.ms.internal.nhwc as <name>_token_<k> between layout Transposes, as partsim predicts node by node."""
    path = _conv_relu(tmp_path)
    r = _cli("observe", path, "-p", "webgpu", "--level", "disable", "--format", "json")
    assert r.returncode == 0, r.stderr
    obs = json.loads(r.stdout)
    assert obs["plugin"] == {"ep": WEBGPU, "package": "onnxruntime-ep-webgpu", "version": "0.4.0", "options": {}}
    nodes = obs["nodes"]  # name -> provider
    assert set(nodes.values()) == {WEBGPU}, nodes
    assert sum(name.startswith("Transpose") for name in nodes) == 2, sorted(nodes)  # in and out, Relu between
    assert {name.split("_token_")[0] for name in nodes if "_token_" in name and not name.startswith("Transpose")} \
        == {"conv", "pool"}, sorted(nodes)
    v = _cli("verify", path, "-p", "webgpu", "--level", "disable", "--observe", "--format", "json")
    res = json.loads(v.stdout)["verify"]
    assert v.returncode == 0 and res["agreement"] == 1.0, res["disagreements"][:5]


@needs_webgpu
def test_provider_options_reach_the_session(tmp_path):
    """preferredLayout=NCHW: the same graph runs without any layout Transpose, and the option is recorded."""
    path = _conv_relu(tmp_path)
    r = _cli("observe", path, "-p", "webgpu", "--level", "disable", "--ep-option", "preferredLayout=NCHW",
             "--format", "json")
    assert r.returncode == 0, r.stderr
    obs = json.loads(r.stdout)
    assert obs["plugin"]["options"] == {"preferredLayout": "NCHW"}
    assert sorted(obs["nodes"]) == ["conv", "pool", "relu"]


@needs_webgpu
def test_receipt_names_the_plugin_and_rebuilds_on_it(tmp_path):
    """receipt: every accelerator session (first, repeat, rebuild) is granted WebGPU, and the receipt
    names the plugin package as the EP's implementation, ORT itself as the runtime."""
    path = _conv_relu(tmp_path)
    r = _cli("receipt", path, "-p", "webgpu", "--abs-tol", "1e-4", "--rel-tol", "1e-3", "--format", "json")
    doc = json.loads(r.stdout)
    ep = doc["candidate"]["executionProvider"]
    assert ep["implementation"] == "onnxruntime-ep-webgpu" and ep["version"] == "0.4.0"
    assert doc["candidate"]["runtime"]["package"] == "onnxruntime"
    for cell in ("first", "repeat", "rebuild"):
        assert doc["lifecycle"][cell]["delegateState"] == "invoked", (cell, doc["lifecycle"][cell])
        assert doc["lifecycle"][cell]["rawTensorResult"] == "pass"


def test_without_the_environment_one_line_and_exit_2(tmp_path):
    """A machine without the WebGPU environment: observe says so in one line, exit 2, nothing on stdout."""
    path = _conv_relu(tmp_path)
    r = _cli("observe", path, "-p", "webgpu", "--level", "disable",
             env={"PARTSIM_WEBGPU_HOME": str(tmp_path / "nothing-here")})
    assert r.returncode == 2 and r.stdout == "" and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "WebGPU" in r.stderr or "webgpu" in r.stderr


@needs_webgpu
def test_shipped_table_is_what_the_plugin_claims(tmp_path):
    """rules/webgpu.yaml is measured (partsim/gen/webgpu.py): probing a sample of ops again on the real plugin
    derives the same rules for them (dtypes per version), the CPU-preferred behaviour and the NHWC ops kept NCHW."""
    import yaml

    from partsim.gen.ep_webgpu import _webgpu
    from partsim.gen.qnn import probe_models
    from partsim.gen.webgpu import build_spec, derive_table, probe_specs

    sample = {"Add", "Cast", "Gather", "Identity", "Min", "Pow", "Range", "Reshape", "Resize", "InstanceNormalization",
              "Mul"}
    specs = [s for s in probe_specs() if s[1] in sample and (s[0] != "cast" or s[4] in ("float", "int64", "bool"))]
    paths = []
    for k, spec in enumerate(specs):
        paths.append(str(tmp_path / f"p{k}.onnx"))
        (tmp_path / f"p{k}.onnx").write_bytes(build_spec(spec).SerializeToString())
    records = probe_models(paths, provider=WEBGPU, timeout=120.0)
    derived = derive_table(_webgpu(), [(s, records[p]) for s, p in zip(specs, paths)])
    shipped = yaml.safe_load((ROOT / "rules" / "webgpu.yaml").read_text())
    for op in sorted(sample - {"Resize", "InstanceNormalization", "Cast", "Mul"}):
        mine = [(r["versions"], r.get("types")) for r in derived["ops"] if r["op"] == op and not r.get("domain")]
        ship = [(r["versions"], r.get("types")) for r in shipped["ops"] if r["op"] == op and not r.get("domain")]
        assert mine == ship, op
    cast = [r["types"] for r in derived["ops"] if r["op"] == "Cast" and r.get("types")]
    # enableInt64=0: an int64 input stays on the CPU, a cast to int64 does not
    assert cast and all("int64" not in t["i0"] and "int64" in t["o0"] for t in cast), cast
    assert derived["partitioning"]["cpu_preferred_shape_nodes"] is shipped["partitioning"]["cpu_preferred_shape_nodes"]
    assert derived["partitioning"].get("layout_keep_ops") == shipped["partitioning"]["layout_keep_ops"]


@needs_webgpu
def test_cpu_preferred_nodes_stay_on_webgpu(tmp_path):
    """The plugin computes ORT's CPU-preferred shape nodes (it logs 'Force fallback to CPU') but claims
    them anyway: the float Mul after Shape -> Cast runs on WebGPU, the int64 Cast (no kernel) on the CPU."""
    path = _shape_math(tmp_path)
    r = _cli("verify", path, "-p", "webgpu", "--level", "disable", "--observe", "--format", "json")
    res = json.loads(r.stdout)["verify"]
    assert r.returncode == 0 and res["agreement"] == 1.0, res["disagreements"][:5]
    obs = _cli("observe", path, "-p", "webgpu", "--level", "disable", "--format", "json")
    placed = json.loads(obs.stdout)["nodes"]
    assert placed == {"shape": WEBGPU, "cast": "CPUExecutionProvider", "mul": WEBGPU}


@needs_webgpu
@pytest.mark.parametrize("option", ["preferredLayout=NCHW", "forceCpuNodeNames=relu"])
def test_ep_options_are_prediction_inputs(tmp_path, option):
    """--ep-option goes to the real session and to the prediction alike: NCHW (no layout Transposes) and a
    node forced to the CPU (its Memcpy pair) are predicted as the sessions place them."""
    path = _conv_relu(tmp_path)
    r = _cli("verify", path, "-p", "webgpu", "--level", "disable", "--observe", "--ep-option", option,
             "--format", "json")
    res = json.loads(r.stdout)["verify"]
    assert r.returncode == 0 and res["agreement"] == 1.0, res["disagreements"][:5]
    transposes = res["counts"].get(f"layoutTransposes.{WEBGPU}", {"predicted": 0, "observed": 0})
    assert transposes["predicted"] == transposes["observed"] == (0 if "NCHW" in option else 2)
    if "relu" in option:
        assert res["counts"]["memcpyToHost"] == {"predicted": 1, "observed": 1}


def test_unknown_webgpu_option_is_refused(tmp_path):
    """An option partsim cannot predict with is refused in one line (exit 2), not silently ignored."""
    path = _conv_relu(tmp_path)
    r = _cli("simulate", path, "-p", "webgpu", "--level", "disable", "--ep-option", "validationMode=full")
    assert r.returncode == 2 and r.stdout == "" and "validationMode" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def _shape_add(tmp_path):
    """Shape -> Add(int64) -> Reshape: the int64 Add is WebGPU's only with enableInt64=1."""
    nodes = [h.make_node("Shape", ["x"], ["s"], name="shape"), h.make_node("Add", ["s", "zero"], ["s1"], name="add"),
             h.make_node("Reshape", ["x", "s1"], ["y"], name="reshape")]
    return save(model(nodes, [vi("x", [2, 3, 4])], [vi("y", None)], [const("zero", [3], 0, dtype=7)]),
                tmp_path / "shape_add.onnx")


@needs_webgpu
@pytest.mark.parametrize("int64", ["0", "1"])
def test_enable_int64_selects_the_measured_int64_table(tmp_path, int64):
    """enableInt64=1: the session puts the int64 Add on WebGPU, and the prediction (the webgpu:int64 table,
    measured with that option) agrees; without it the Add is the CPU's."""
    path = _shape_add(tmp_path)
    r = _cli("verify", path, "-p", "webgpu", "--level", "disable", "--observe", "--ep-option", f"enableInt64={int64}",
             "--format", "json")
    res = json.loads(r.stdout)["verify"]
    assert r.returncode == 0 and res["agreement"] == 1.0, res["disagreements"][:5]
    s = _cli("simulate", path, "-p", "webgpu", "--level", "disable", "--ep-option", f"enableInt64={int64}",
             "--format", "json")
    placed = {n["name"]: n["provider"] for n in json.loads(s.stdout)["nodes"]}
    assert placed["add"] == (WEBGPU if int64 == "1" else "CPUExecutionProvider")


@needs_webgpu
@pytest.mark.parametrize("level", ["disable", "all"])
def test_corpus_cnn_at_both_levels(level):
    """A real model, as written and at ORT's default level: every node where the session put it (converted
    nodes under ORT's <name>_token_<k>), the layout Transposes and Memcpy nodes counted exactly."""
    from tests.conftest import shared_path

    path = shared_path("corpus", "full", "tiny_resnet.ts.onnx")
    r = _cli("verify", path, "-p", "webgpu", "--observe", "--level", level, "--format", "json")
    res = json.loads(r.stdout)["verify"]
    assert r.returncode == 0 and res["agreement"] == 1.0, res["disagreements"][:5]
    assert res["counts"][f"layoutTransposes.{WEBGPU}"] == {"predicted": 2, "observed": 2}
