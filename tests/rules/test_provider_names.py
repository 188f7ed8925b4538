"""Strict provider names (issue 16): one normalisation, "did you mean", no silent CPU-only answer."""

import json

import pytest

from partsim import predict
from partsim.errors import UsageError
from partsim.rules.providers import ALIASES, KNOWN_PROVIDERS, canonical_name, suggest_provider
from tests.conftest import ROOT, run_subprocess, shared_path

CHAIN = ROOT / "fixtures" / "chain.onnx"


def test_canonical_name_is_case_insensitive_for_aliases_and_ort_names():
    for alias, real in ALIASES.items():
        assert canonical_name(alias.upper()) == real
    for real in KNOWN_PROVIDERS:
        assert canonical_name(real.lower()) == real and canonical_name(f"  {real.upper()} ") == real
    assert canonical_name("Foo") == "Foo"


def test_every_normaliser_is_the_same_function():
    """run-compare's resolver was case-sensitive for full names (`cudaexecutionprovider` stayed
    unknown); the simulator's accepted it.  Both now give the same answer."""
    from partsim.numerics.run_compare import resolve_providers as numerics_resolve
    from partsim.rules.resolve import resolve_providers as sim_resolve
    from partsim.api import load_tables

    for name in ("cudaexecutionprovider", "OPENVINO", "Nnapi", "coremlexecutionprovider"):
        sim = sim_resolve([name], load_tables()).effective[0]
        assert numerics_resolve([name])[0] == sim == canonical_name(name)


@pytest.mark.parametrize("typo, hint", [("nnpai", "nnapi"), ("coremll", "coreml"), ("openvno", "openvino"),
                                        ("NnapiExecutionProvdier", "NnapiExecutionProvider"),
                                        ("tensorrrt", "tensorrt")])
def test_suggestions(typo, hint):
    assert suggest_provider(typo) == f"did you mean {hint}?"


def test_no_suggestion_for_an_unrelated_name():
    # the common "ExecutionProvider" suffix does not make every ORT name "close"
    assert suggest_provider("FooExecutionProvider") == ""


@pytest.mark.parametrize("command", ["simulate", "verify", "render", "blame", "whatif"])
@pytest.mark.parametrize("request_, words", [("nnpai", "did you mean nnapi?"),
                                             ("FooExecutionProvider", "'FooExecutionProvider'"),
                                             ("", "empty"), (",", "empty")])
def test_commands_refuse_unknown_or_empty_provider_lists(tmp_path, run_cli, command, request_, words):
    extra = {"verify": ["--observe"], "render": ["-o", str(tmp_path / "x.svg")],
             "whatif": ["--optimize", "basic"]}.get(command, [])
    code, out, err = run_cli(command, CHAIN, "-p", request_, *extra)
    assert code == 2 and out == "", err
    assert len(err.strip().splitlines()) == 1 and words in err
    assert not (tmp_path / "x.svg").exists()


def test_the_program_prints_one_line_no_traceback():
    r = run_subprocess("simulate", CHAIN, "-p", "nnpai")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip().splitlines() == [
        "partsim: error: unknown provider 'nnpai': neither ORT nor a capability table knows it; did you mean nnapi?"]


def test_predict_takes_a_single_string_as_one_name():
    model = shared_path("corpus", "full", "tiny_resnet.ts.onnx")
    one, _ = predict(model, "nnapi")
    listed, _ = predict(model, ["nnapi"])
    assert one == listed
    assert one["effectiveProviders"] == ["NnapiExecutionProvider", "CPUExecutionProvider"]
    assert one["delegatedNodeCount"] == 29
    with pytest.raises(UsageError, match="did you mean"):
        predict(model, "nnpai")
    with pytest.raises(UsageError, match="unknown provider 'nnapi,coreml'"):
        predict(model, "nnapi,coreml")  # one string is one name, not a list
    with pytest.raises(UsageError, match="empty"):
        predict(model, [])
    cpu, _ = predict(model)  # no request at all: CPU only, as ORT
    assert cpu["effectiveProviders"] == ["CPUExecutionProvider"]


def test_known_provider_without_table_and_variants_still_work(run_cli):
    code, out, err = run_cli("simulate", CHAIN, "-p", "dml", "-f", "json")
    assert code == 2 and out == "" and "no capability table for DmlExecutionProvider" in err
    code, out, _ = run_cli("simulate", CHAIN, "-p", "coreml:neuralnetwork", "-f", "json")
    assert code == 0
    code, _, _ = run_cli("simulate", CHAIN, "--support", "MatMul", "--support-name", "MyNPU", "-p", "MyNPU,cpu")
    assert code == 0


def test_providers_command_still_reports_ort_dropping_the_name(run_cli):
    """The seed experiment: ORT itself silently drops an unknown name; `partsim providers` shows it."""
    code, out, _ = run_cli("providers", "--request", "FooExecutionProvider,CPUExecutionProvider", "-f", "json")
    r = json.loads(out)
    assert {"name": "FooExecutionProvider", "reason": "unknown_provider"} in r["dropped"]
