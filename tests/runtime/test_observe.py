"""Real ORT sessions in a child process: observe, providers, verify --observe."""

import json

import pytest

from partsim.runtime.observe import run_session
from tests.conftest import ROOT, shared_path

CHAIN = ROOT / "fixtures" / "chain.onnx"


def test_observe_records_every_node(run_cli, tmp_path):
    out = tmp_path / "obs.json"
    code, _, err = run_cli("observe", CHAIN, "-p", "CPUExecutionProvider", "--level", "disable", "-o", out)
    assert code == 0, err
    obs = json.loads(out.read_text())
    assert obs["state"] == "ok" and obs["source"] == "assignment_info"
    assert obs["nodes"] == {f"n{k}_{op}": "CPUExecutionProvider" for k, op in
                            enumerate(["MatMul", "Add", "Relu", "MatMul", "Add", "Relu", "MatMul"])}
    # the recorded observation verifies the CPU prediction exactly
    code, _, _ = run_cli("verify", CHAIN, "-p", "cpu", "--level", "disable", "--observation", out)
    assert code == 0
    # verify compares at one level: the default (all) against a disable observation is refused
    code, _, err = run_cli("verify", CHAIN, "-p", "cpu", "--observation", out)
    assert code == 2 and "across levels" in err


def test_providers_strict_names_both_dropped(run_cli):
    code, out, _ = run_cli("providers", "--request",
                           "CUDAExecutionProvider,FooExecutionProvider,CPUExecutionProvider", "--strict", "-f", "json")
    assert code == 1
    r = json.loads(out)
    assert r["granted"] == ["CPUExecutionProvider"]
    assert r["dropped"] == [{"name": "CUDAExecutionProvider", "reason": "not_available"},
                            {"name": "FooExecutionProvider", "reason": "unknown_provider"}]
    assert any("FooExecutionProvider" in w for w in r["warnings"])
    code, _, _ = run_cli("providers", "--request", "CPUExecutionProvider", "--strict")
    assert code == 0


def _misbehave(monkeypatch, how):
    """Every ORT child the test's misbehaving one (tests/misbehaving_child.py)."""
    from partsim.runtime import process

    monkeypatch.setattr(process, "CHILD", ROOT / "tests" / "misbehaving_child.py")
    monkeypatch.setenv("PARTSIM_TEST_CHILD", how)


def test_crash_and_timeout_are_reported_and_batch_goes_on(monkeypatch):
    _misbehave(monkeypatch, "crash")
    crashed = run_session(CHAIN, ["CPUExecutionProvider"])
    assert crashed["state"] == "crashed" and "killed by signal" in crashed["error"]
    _misbehave(monkeypatch, "hang")
    hung = run_session(CHAIN, ["CPUExecutionProvider"], timeout=1)  # never answers: any timeout is one, per try
    assert hung["state"] == "timeout"
    monkeypatch.undo()
    after = run_session(CHAIN, ["CPUExecutionProvider"])  # the next session of the batch still runs
    assert after["state"] == "ok" and len(after["assignment"]) > 0


@pytest.mark.parametrize("name", ["full/tiny_resnet.ts.onnx", "full/tiny_transformer.ts.onnx",
                                  "graph_only/resnet18.ts.onnx"])
def test_verify_observe_cpu_exact(run_cli, name):
    model = shared_path("corpus", *name.split("/"))
    code, out, err = run_cli("verify", model, "-p", "cpu", "--observe", "-f", "json")
    assert code == 0, (out, err)
    v = json.loads(out)["verify"]
    assert v["agreement"] == 1.0 and v["compared"] > 0


@pytest.mark.parametrize("name", ["full/tiny_transformer.ts.onnx", "graph_only/bert_tiny.ts.onnx"])
def test_optimize_basic_matches_a_real_basic_session(run_cli, name):
    # the prediction is made on ORT's own BASIC rewrite; the session runs at BASIC too
    model = shared_path("corpus", *name.split("/"))
    code, out, err = run_cli("verify", model, "-p", "cpu", "--level", "basic", "--observe", "-f", "json")
    assert code == 0, (out, err)
    v = json.loads(out)["verify"]
    assert v["agreement"] == 1.0 and v["unobserved"] == [] and v["unpredicted"] == []


def test_optimize_basic_folds_cuda_shape_subgraphs(run_cli):
    # docs/contract.md §5: swin_t has many CPU-preferred shape nodes and Memcpy at DISABLE_ALL, none after BASIC
    model = shared_path("corpus", "graph_only", "swin_t.ts.onnx")
    _, raw, _ = run_cli("simulate", model, "-p", "cuda", "--level", "disable", "-f", "json")
    _, basic, _ = run_cli("simulate", model, "-p", "cuda", "--optimize", "basic", "-f", "json")
    raw, basic = json.loads(raw), json.loads(basic)
    assert raw["memcpy"]["fromHost"] + raw["memcpy"]["toHost"] > 100
    assert raw["undelegatedReasons"].get("cpu_preferred", 0) > 100
    assert basic["memcpy"] == {"fromHost": 0, "toHost": 0, "tensors": []}
    assert basic["perProvider"]["CPUExecutionProvider"]["nodes"] == 0
    assert basic["model"]["sha256"] == raw["model"]["sha256"]  # still names the user's file


def test_verbose_placement_log_is_recorded():
    rec = run_session(CHAIN, ["CPUExecutionProvider"])
    assert rec["placement"] == {"CPUExecutionProvider": {"count": 7, "nodes": "all"}}


def test_parse_placement_of_a_split_graph():
    from partsim.runtime.child_observe import parse_placement

    text = ("2026-11-29 [V:onnxruntime:, session_state.cc:1234 VerifyEachNodeIsAssignedToAnEp] "
            "Node(s) placed on [CUDAExecutionProvider]. Number of nodes: 2\n"
            " MatMul (n0_MatMul)\n Relu (n2_Relu)\n"
            "2026-11-29 [V:onnxruntime:, session_state.cc:1234 VerifyEachNodeIsAssignedToAnEp] "
            "Node(s) placed on [CPUExecutionProvider]. Number of nodes: 1\n"
            " Add (n1_Add)\n"
            "2026-11-29 [V:onnxruntime:, other.cc:1] something else\n")
    assert parse_placement(text) == {
        "CUDAExecutionProvider": {"count": 2, "nodes": [["MatMul", "n0_MatMul"], ["Relu", "n2_Relu"]]},
        "CPUExecutionProvider": {"count": 1, "nodes": [["Add", "n1_Add"]]}}


def test_memory_ceiling_stops_a_runaway_session(monkeypatch):
    _misbehave(monkeypatch, "hog")
    # 512 MiB: the hog (plain Python, no onnxruntime) meets it after two allocations; at 2 GiB the two tries
    # zeroed 4 GB and took 9.5 s of CPU (benchmarks/suite_cpu.py)
    hog = run_session(CHAIN, ["CPUExecutionProvider"], memory_limit=512 * 1024**2, timeout=60)
    assert hog["state"] == "crashed" and "MemoryError" in hog["error"]
    monkeypatch.undo()
    assert run_session(CHAIN, ["CPUExecutionProvider"])["state"] == "ok"


def _nnapi_absent():
    import onnxruntime as ort

    if "NnapiExecutionProvider" in ort.get_available_providers():
        pytest.skip("this onnxruntime build has NNAPI: nothing is dropped here")


def test_observe_table_shows_dropped_provider_and_ort_warning(run_cli, tmp_path):
    """A session asked for NNAPI on a build without it: ORT warns and runs on the CPU.  The
    table says so, with ORT's own warning text (caught here from a session made directly)."""
    import warnings

    import onnxruntime as ort

    _nnapi_absent()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sess = ort.InferenceSession(str(CHAIN), providers=["NnapiExecutionProvider", "CPUExecutionProvider"])
    assert sess.get_providers() == ["CPUExecutionProvider"]
    ort_warning = next(str(w.message) for w in caught if "NnapiExecutionProvider" in str(w.message))
    code, out, err = run_cli("observe", CHAIN, "-p", "nnapi", "-f", "table")
    assert code == 0, err  # the observation itself succeeded: it records what ORT did
    lines = out.splitlines()
    assert "granted   CPUExecutionProvider" in lines
    assert any(line.startswith("dropped   NnapiExecutionProvider: not_available") for line in lines), out
    assert f"warning   {ort_warning}" in lines
    code, out, _ = run_cli("observe", CHAIN, "-p", "nnapi", "-f", "json")
    obs = json.loads(out)
    assert obs["dropped"] == [{"name": "NnapiExecutionProvider", "reason": "not_available"}]
    assert ort_warning in obs["warnings"] and set(obs["nodes"].values()) == {"CPUExecutionProvider"}


def test_verify_cannot_check_a_provider_this_machine_lacks(run_cli, tmp_path):
    """verify -p nnapi --observe on a PC: the session would run on the CPU and 'agree' on a
    fraction of nodes; instead verify says it cannot check NNAPI here and exits 2 (not 1,
    which means the prediction disagrees with a real session; not 0, which is a pass)."""
    _nnapi_absent()
    model = shared_path("corpus", "full", "tiny_resnet.ts.onnx")
    for fmt in ("table", "json", "junit"):
        code, out, err = run_cli("verify", model, "-p", "nnapi", "--observe", "-f", fmt)
        assert code == 2 and out == "", (fmt, out)
        assert err.count("\n") == 1 and "cannot check NnapiExecutionProvider here" in err
        assert "agreement" not in err and "FAILED" not in err
    # the same for an observation recorded where NNAPI was dropped
    obs = tmp_path / "obs.json"
    code, _, err = run_cli("observe", model, "-p", "nnapi", "-o", obs)
    assert code == 0, err
    code, out, err = run_cli("verify", model, "-p", "nnapi", "--observation", obs)
    assert code == 2 and out == "" and "cannot check NnapiExecutionProvider with this observation" in err
    # the CPU prediction can be checked with that very session: it ran on the CPU
    code, out, err = run_cli("verify", model, "-p", "cpu", "--observation", obs)
    assert code == 0 and out.rstrip().endswith("PASSED"), (out, err)
