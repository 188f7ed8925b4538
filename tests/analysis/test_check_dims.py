"""`partsim check` with `dims` and `expect` in the config, and its three-line failures (issue 29).

A zoo of symbolic-batch models (a corpus BERT with batch/seq, the corpus U-Net with its batch
made symbolic) gates on NNAPI and QNN only once the dims are fixed; every count is cross-checked
against an independent `predict(..., dims=...)` of the same file.
"""

import json
import shutil

import pytest

from partsim import predict
from tests.conftest import shared_path
from tests.analysis.test_baseline_gate import symbolic_batch


@pytest.fixture
def zoo(tmp_path):
    models = tmp_path / "models"
    models.mkdir()
    shutil.copy(shared_path("corpus", "graph_only", "bert_tiny.ts.onnx"), models / "bert.onnx")
    symbolic_batch(shared_path("corpus", "full", "tiny_unet.ts.onnx"), models / "unet.onnx")
    shutil.copy(shared_path("corpus", "full", "tiny_resnet.ts.onnx"), models / "resnet.onnx")
    return tmp_path


def check(run_cli, zoo, text, *extra, fmt="json"):
    (zoo / "partsim.toml").write_text(text)
    code, out, err = run_cli("check", "--config", zoo / "partsim.toml", "-f", fmt, "--jobs", "1", *extra)
    return code, (json.loads(out) if fmt == "json" and out else out), err


DIMS = {"bert.onnx": {"batch": 1, "seq": 16}, "unet.onnx": {"batch": 1}, "resnet.onnx": {}}


@pytest.mark.parametrize("provider", ["nnapi", "qnn"])
def test_zoo_gates_on_the_accelerator_only_through_dims(zoo, run_cli, provider):
    base = f'[[check]]\nmodels = ["models/*.onnx"]\nproviders = ["{provider}"]\naccelerated = true\n'
    code, doc, err = check(run_cli, zoo, base)
    assert code == 1, err
    failed = {r["model"] for r in doc["results"] if not r["passed"]}
    assert "models/unet.onnx" in failed  # a symbolic batch keeps the U-Net off the accelerator
    code, doc, err = check(run_cli, zoo, base + "dims = {batch = 1, seq = 16}\n")
    assert code == 0, err
    for r in doc["results"]:
        name = r["model"].split("/")[-1]
        assert r["dims"] == DIMS[name]
        truth, _ = predict(zoo / "models" / name, [provider], dims=DIMS[name] or None)
        first = truth["effectiveProviders"][0]
        assert r["counts"]["firstProviderNodes"] == sum(n["provider"] == first for n in truth["nodes"])
        assert r["counts"]["transfers"] == truth["transfers"]
        assert r["counts"]["firstProviderPartitions"] == truth["perProvider"][first]["partitions"]
        assert r["accelerated"] is truth["accelerated"] is True


def test_model_dims_override_and_expect(zoo, run_cli):
    text = ('[[check]]\nname = "npu"\nmodels = ["models/*.onnx"]\nproviders = ["nnapi"]\naccelerated = true\n'
            'max_partitions = 2\ndims = {batch = 1, seq = 16}\n\n'
            '[check.model."models/bert.onnx"]\ndims = {seq = 8}\n'
            'expect = {accelerated = false, reason = "LayerNormalization has no NNAPI kernel"}\n\n'
            '[check.model."models/unet.onnx"]\n'
            'expect = {accelerated = false, reason = "the decoder upsamples"}\n')
    code, doc, err = check(run_cli, zoo, text)
    by = {r["model"]: r for r in doc["results"]}
    assert by["models/bert.onnx"]["dims"] == {"batch": 1, "seq": 8}
    truth, _ = predict(zoo / "models" / "bert.onnx", ["nnapi"], dims={"batch": 1, "seq": 8})
    assert by["models/bert.onnx"]["counts"]["transfers"] == truth["transfers"]
    # bert is accelerated (some nodes on NNAPI) though expected not: the expect fails, and
    # max_partitions is not applied to a model expected on the CPU
    bert = by["models/bert.onnx"]
    assert truth["accelerated"] and not bert["passed"]
    assert [b["budget"] for b in bert["budgets"]] == ["expect"]
    unet = by["models/unet.onnx"]  # batch fixed at 1 by the check: accelerated, expected not
    assert unet["accelerated"] and not unet["passed"]
    assert code == 1
    code, text_out, _ = check(run_cli, zoo, text.replace("accelerated = false, reason = \"the",
                                                         "accelerated = true, reason = \"the"), fmt="table")
    assert "FAIL npu models/bert.onnx: accelerated now, expected not; expected: LayerNormalization has no" in text_out
    assert "models/unet.onnx" not in "".join(ln for ln in text_out.splitlines() if ln.startswith("FAIL"))
    assert "expected accelerated: npu models/unet.onnx: the decoder upsamples" in text_out


def test_failure_is_three_short_lines_whose_command_runs(zoo, run_cli):
    code, out, err = check(run_cli, zoo, '[[check]]\nmodels = ["models/bert.onnx"]\nproviders = ["nnapi"]\n'
                                         'level = "disable"\nmax_partitions = 1\ndims = {batch = 1, seq = 16}\n',
                           fmt="table")
    assert code == 1, err
    fail = out[out.index("\nFAIL ") + 1:out.index("\ncheck: FAIL")].strip().splitlines()
    assert len(fail) == 3 and all(len(line) <= 200 for line in fail)
    truth, _ = predict(zoo / "models" / "bert.onnx", ["nnapi"], dims={"batch": 1, "seq": 16}, level="disable")
    parts = truth["perProvider"]["NnapiExecutionProvider"]["partitions"]
    assert fail[0] == f"FAIL nnapi models/bert.onnx: {parts} partitions on NnapiExecutionProvider, budget 1"
    off = [n for n in truth["nodes"] if n["provider"] != "NnapiExecutionProvider"]
    top = max({n["reason"] for n in off}, key=lambda r: (sum(n["reason"] == r for n in off), r))
    assert fail[1].startswith(f"why: {top} (")
    command = fail[2].split("next: ", 1)[1].split(" (what to change)")[0]
    assert command == "partsim blame models/bert.onnx -p nnapi --level disable --dim batch=1 --dim seq=16"
    import os
    here = os.getcwd()
    os.chdir(zoo)
    try:
        code, blamed, err = run_cli(*command.split()[1:])
    finally:
        os.chdir(here)
    assert code == 0, err
    assert "LayerNormalization" in blamed or top in blamed


def test_symbolic_shape_failure_names_the_dims(zoo, run_cli):
    code, out, _ = check(run_cli, zoo, '[[check]]\nmodels = ["models/unet.onnx"]\nproviders = ["qnn"]\n'
                                       'accelerated = true\n', fmt="table")
    assert code == 1
    lines = out[out.index("\nFAIL ") + 1:].splitlines()
    assert lines[1].startswith("why: dynamic_shape (")
    assert lines[2].startswith("next: fix the dims: dims = {batch = <size>} in the check (config line 1)")


def test_lock_records_the_dims(zoo, run_cli):
    text = '[[check]]\nmodels = ["models/unet.onnx"]\nproviders = ["nnapi"]\ndims = {batch = 1}\n'
    assert check(run_cli, zoo, text, "--update")[0] == 0
    assert json.loads((zoo / "partsim.lock.json").read_text())["entries"]["nnapi :: models/unet.onnx"]["dims"] \
        == {"batch": 1}
    assert check(run_cli, zoo, text)[0] == 0
    code, _, err = check(run_cli, zoo, text.replace("batch = 1", "batch = 2"))
    assert code == 2 and "other dims" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("extra, message, line", [
    ("dims = {batch = 0}\n", "dims.batch must be a positive whole number", 4),
    ("dims = {batch = true}\n", "dims.batch must be a positive whole number", 4),
    ("dims = [1]\n", "dims must be a table", 4),
    ("dims = {btach = 1}\n", "dims btach: none of its models has that symbolic dimension", 4),
    ('[check.model."models/nope.onnx"]\ndims = {batch = 1}\n', "is none of this check's models", 4),
    ('[check.model."models/unet.onnx"]\ndims = {seq = 1}\n', "dims seq: no graph input has that symbolic", 0),
    ('[check.model."models/unet.onnx"]\nexpected = 1\n', "unknown key 'expected'", 4),
    ('[check.model."models/unet.onnx"]\nexpect = {accelerated = false}\n', "expect must be", 4),
    ('[check.model."models/unet.onnx"]\nexpect = {accelerated = "no", reason = "x"}\n', "must be true or false", 4),
    ('[check.model."models/unet.onnx"]\nexpect = {accelerated = false, reason = " "}\n', "must say why", 4),
])
def test_config_mistakes_are_one_line(zoo, run_cli, extra, message, line):
    code, out, err = check(run_cli, zoo, '[[check]]\nmodels = ["models/*.onnx"]\nproviders = ["nnapi"]\n' + extra)
    assert code == 2 and not out
    assert message in err and len(err.strip().splitlines()) == 1
    if line:
        assert f"partsim.toml:{line}" in err


def test_expectations_in_junit_and_markdown(zoo, run_cli):
    import xml.etree.ElementTree as ET

    text = ('[[check]]\nname = "npu"\nmodels = ["models/*.onnx"]\nproviders = ["nnapi"]\naccelerated = true\n'
            'dims = {batch = 1, seq = 16}\n\n[check.model."models/unet.onnx"]\ndims = {batch = 2}\n'
            'expect = {accelerated = true, reason = "the exported batch is 2"}\n')
    code, out, err = check(run_cli, zoo, text, fmt="junit")
    assert code == 0, err
    cases = {c.get("name"): c for c in ET.fromstring(out).iter("testcase")}
    assert cases["models/unet.onnx"].findtext("system-out") == "expected accelerated: the exported batch is 2"
    assert cases["models/resnet.onnx"].find("system-out") is None
    code, out, _ = check(run_cli, zoo, text, fmt="markdown")
    assert "- **npu** `models/unet.onnx` — expected accelerated: the exported batch is 2" in out
    code, doc, _ = check(run_cli, zoo, text)
    assert {r["model"]: r["dims"] for r in doc["results"]}["models/unet.onnx"] == {"batch": 2}


def test_a_zoo_of_linked_models_keeps_their_names(tmp_path, run_cli):
    """Models that are symbolic links to files elsewhere (a zoo linking them in) are named as the config
    names them, and their per-model settings apply (before: the link was resolved, the model named by its
    target's absolute path, and `[check.model."models/x.onnx"]` matched no model)."""
    store = tmp_path / "store"
    store.mkdir()
    symbolic_batch(shared_path("corpus", "full", "tiny_unet.ts.onnx"), store / "unet.onnx")
    zoo = tmp_path / "zoo"
    (zoo / "models").mkdir(parents=True)
    (zoo / "models" / "unet.onnx").symlink_to(store / "unet.onnx")
    text = ('[[check]]\nmodels = ["models/*.onnx"]\nproviders = ["qnn"]\naccelerated = true\n\n'
            '[check.model."models/unet.onnx"]\ndims = {batch = 1}\n')
    code, doc, err = check(run_cli, zoo, text)
    assert code == 0, err
    (r,) = doc["results"]
    assert r["model"] == "models/unet.onnx" and r["dims"] == {"batch": 1} and r["accelerated"] is True
