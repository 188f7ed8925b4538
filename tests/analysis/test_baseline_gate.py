"""`verify --baseline`: a CI gate that a model change cannot slip past (issue 16).

Real corpus models, changed the way a model change really happens (built here with onnx):
the batch dimension made symbolic, an op the provider lacks inserted mid-graph, an op no
provider has appended.  The expected numbers come from two independent predictions
(before / after), never from the baseline code itself.
"""

import json
import xml.etree.ElementTree as ET

import onnx
import pytest
from onnx import helper

from tests.conftest import ROOT, shared_path, as_written_cli, predict_as_written as predict


# These tests describe the graph as written (an ORT_DISABLE_ALL session): level disable unless asked
@pytest.fixture
def run_cli(run_cli):
    return as_written_cli(run_cli)


CHAIN = ROOT / "fixtures" / "chain.onnx"


def corpus(name):
    return shared_path("corpus", "full", name)


def symbolic_batch(src, dst):
    """``src`` with dimension 0 of every graph input and output renamed ``batch`` (shapes
    recomputed by partsim's shape inference, stale value_info dropped)."""
    m = onnx.load(str(src), load_external_data=False)
    initializers = {i.name for i in m.graph.initializer}
    for v in list(m.graph.input) + list(m.graph.output):
        if v.name in initializers:
            continue
        dims = v.type.tensor_type.shape.dim
        if dims and dims[0].HasField("dim_value"):
            dims[0].dim_param = "batch"
    del m.graph.value_info[:]
    onnx.save(m, str(dst))
    return dst


def insert_after_first(src, dst, op_type, after="Relu", domain=""):
    """``src`` with a ``op_type`` node inserted on the output of the first ``after`` node."""
    m = onnx.load(str(src), load_external_data=False)
    nodes = list(m.graph.node)
    k = next(i for i, n in enumerate(nodes) if n.op_type == after)
    out = nodes[k].output[0]
    nodes[k].output[0] = out + "_pre"
    new = helper.make_node(op_type, [out + "_pre"], [out], name=f"inserted_{op_type}", domain=domain)
    nodes.insert(k + 1, new)
    del m.graph.node[:]
    m.graph.node.extend(nodes)
    del m.graph.value_info[:]
    if domain and all(o.domain != domain for o in m.opset_import):
        m.opset_import.append(helper.make_opsetid(domain, 1))
    onnx.save(m, str(dst))
    return dst


def _record(run_cli, model, baseline, *extra):
    code, out, err = run_cli("verify", model, *extra, "--baseline", baseline, "--update-baseline")
    assert code == 0, err
    return json.loads(baseline.read_text())


def _gate(run_cli, model, baseline, *extra):
    code, out, err = run_cli("verify", model, *extra, "--baseline", baseline, "-f", "json")
    return code, (json.loads(out)["baseline"] if out else None), err


def _moved(before, after, first):
    """Independent recount: nodes on ``first`` before and not after (by name)."""
    a = {n["name"]: n for n in after["nodes"]}
    return sorted(n["name"] for n in before["nodes"] if n["provider"] == first and n["name"] in a
                  and a[n["name"]]["provider"] != first)


def test_baseline_records_what_it_measured(tmp_path, run_cli):
    model = corpus("tiny_resnet.ts.onnx")
    base = _record(run_cli, model, tmp_path / "b.json", "-p", "nnapi")
    summary, _ = predict(model, ["nnapi"])
    assert base["providers"] == ["NnapiExecutionProvider", "CPUExecutionProvider"]
    assert base["level"] == "disable" and base["policy"] == "per-node"
    assert base["model"]["sha256"] == summary["model"]["sha256"]
    from partsim import __version__
    assert base["partsimVersion"] == __version__
    import hashlib
    nnapi_yaml = (ROOT / "rules" / "nnapi.yaml").read_bytes()
    assert base["tables"]["NnapiExecutionProvider"] == hashlib.sha256(nnapi_yaml).hexdigest()
    assert base["counts"]["firstProviderNodes"] == summary["perProvider"]["NnapiExecutionProvider"]["nodes"] == 29
    assert base["counts"]["partitionCount"] == summary["partitionCount"]
    # the unchanged model passes
    code, b, err = _gate(run_cli, model, tmp_path / "b.json", "-p", "nnapi")
    assert code == 0 and b["passed"] and not b["modelChanged"], err


def test_symbolic_batch_dim_fails_the_gate_and_names_the_nodes(tmp_path, run_cli):
    """The issue's case: tiny_unet on NNAPI, 16 delegated nodes -> 0 once the batch is symbolic.
    Counts only shrink, so a growth-only gate passed it."""
    model = tmp_path / "unet.onnx"
    model.write_bytes(corpus("tiny_unet.ts.onnx").read_bytes())
    before, _ = predict(model, ["nnapi"])
    _record(run_cli, model, tmp_path / "b.json", "-p", "nnapi")
    symbolic_batch(model, model)  # the model file changes in place, as in a real commit
    after, _ = predict(model, ["nnapi"])
    assert before["delegatedNodeCount"] == 16 and after["delegatedNodeCount"] == 0  # the premise
    assert after["fragments"] <= before["fragments"] and after["transfers"] <= before["transfers"]
    code, b, err = _gate(run_cli, model, tmp_path / "b.json", "-p", "nnapi")
    assert code == 1, err
    assert b["modelChanged"] is True
    failed = {f["rule"] for f in b["failures"]}
    assert {"firstProviderNodes", "accelerated"} <= failed
    assert not failed & {"fragments", "transfers"}  # nothing grew: only the new rules catch it
    assert [m["node"] for m in b["moved"]] == _moved(before, after, "NnapiExecutionProvider")
    assert len(b["moved"]) == 16 and {m["reason"] for m in b["moved"]} == {"dynamic_shape"}
    msg = next(f["message"] for f in b["failures"] if f["rule"] == "firstProviderNodes")
    assert "16 -> 0" in msg and "dynamic_shape 16" in msg and b["moved"][0]["node"] in msg
    # the table says so too, and the JUnit names the rule and every moved node
    code, out, _ = run_cli("verify", model, "-p", "nnapi", "--baseline", tmp_path / "b.json")
    assert code == 1 and "NOT accelerated" in out and "FAILED" in out
    code, out, _ = run_cli("verify", model, "-p", "nnapi", "--baseline", tmp_path / "b.json", "-f", "junit")
    assert code == 1
    suite = ET.fromstring(out)
    failing = {c.get("name"): c.find("failure") for c in suite.iter("testcase") if c.find("failure") is not None}
    assert set(failing) == {"firstProviderNodes", "accelerated"}
    assert suite.get("failures") == "2" and suite.get("tests") == "8"
    body = failing["firstProviderNodes"].text
    assert all(m["node"] in body for m in b["moved"])


def test_tiny_resnet_symbolic_batch_loses_nodes_while_counts_shrink(tmp_path, run_cli):
    model = tmp_path / "r.onnx"
    model.write_bytes(corpus("tiny_resnet.ts.onnx").read_bytes())
    before, _ = predict(model, ["nnapi"])
    _record(run_cli, model, tmp_path / "b.json", "-p", "nnapi")
    symbolic_batch(model, model)
    after, _ = predict(model, ["nnapi"])
    code, b, _ = _gate(run_cli, model, tmp_path / "b.json", "-p", "nnapi")
    assert code == 1
    assert [f["rule"] for f in b["failures"]] == ["firstProviderNodes"]
    assert [m["node"] for m in b["moved"]] == _moved(before, after, "NnapiExecutionProvider")
    assert len(b["moved"]) == before["delegatedNodeCount"] - after["delegatedNodeCount"] > 0


def test_inserted_unsupported_op_grows_partitions_transfers_and_memcpy(tmp_path, run_cli):
    """CUDA has no Asinh kernel: one inserted mid-graph splits the CUDA partition and copies
    its input to host and its output back."""
    model = tmp_path / "r.onnx"
    model.write_bytes(corpus("tiny_resnet.ts.onnx").read_bytes())
    before, _ = predict(model, ["cuda"])
    _record(run_cli, model, tmp_path / "b.json", "-p", "cuda")
    insert_after_first(model, model, "Asinh")
    after, _ = predict(model, ["cuda"])
    code, b, err = _gate(run_cli, model, tmp_path / "b.json", "-p", "cuda")
    assert code == 1, err
    failed = {f["rule"]: f for f in b["failures"]}
    expect = {k for k, a, z in [
        ("partitionCount", before["partitionCount"], after["partitionCount"]),
        ("fragments", before["fragments"], after["fragments"]),
        ("transfers", before["transfers"], after["transfers"]),
        ("memcpyFromHost", before["memcpy"]["fromHost"], after["memcpy"]["fromHost"]),
        ("memcpyToHost", before["memcpy"]["toHost"], after["memcpy"]["toHost"])] if z > a}
    assert expect >= {"partitionCount", "transfers", "memcpyFromHost", "memcpyToHost"}
    assert set(failed) == expect  # no node moved off CUDA, nothing else failed
    assert b["moved"] == [] and [a["node"] for a in b["added"]] == ["inserted_Asinh"]
    assert "inserted_Asinh (Asinh" in failed["memcpyToHost"]["message"]
    assert f"{before['partitionCount']} -> {after['partitionCount']}" in failed["partitionCount"]["message"]


def test_status_change_fails(tmp_path, run_cli):
    """An op no provider has a kernel for: ORT would refuse the session."""
    model = tmp_path / "r.onnx"
    model.write_bytes(corpus("tiny_resnet.ts.onnx").read_bytes())
    _record(run_cli, model, tmp_path / "b.json", "-p", "nnapi")
    insert_after_first(model, model, "Mystery", domain="com.example")
    after, _ = predict(model, ["nnapi"])
    assert after["status"] == "session_would_fail"
    code, b, _ = _gate(run_cli, model, tmp_path / "b.json", "-p", "nnapi")
    assert code == 1
    status = next(f for f in b["failures"] if f["rule"] == "status")
    assert status["baseline"] == "ok" and status["now"] == "session_would_fail"


@pytest.mark.parametrize("change, words", [
    (("-p", "coreml"), "other providers"),
    (("-p", "nnapi", "--optimize", "basic"), "other optimization level"),
    (("-p", "nnapi", "--policy", "whole-graph"), "other policy"),
    (("-p", "nnapi", "-r", "EDITED"), "other capability tables"),
])
def test_baseline_measured_differently_exits_2(tmp_path, run_cli, change, words):
    model = corpus("tiny_resnet.ts.onnx")
    base = tmp_path / "b.json"
    _record(run_cli, model, base, "-p", "nnapi")
    if "EDITED" in change:
        edited = tmp_path / "nnapi.yaml"
        edited.write_text((ROOT / "rules" / "nnapi.yaml").read_text() + "\n# edited\n")
        change = tuple(str(edited) if c == "EDITED" else c for c in change)
    before = base.read_bytes()
    code, out, err = run_cli("verify", model, *change, "--baseline", base)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and words in err and str(base) in err
    assert base.read_bytes() == before


def test_old_or_foreign_version_baseline_exits_2(tmp_path, run_cli):
    model = corpus("tiny_resnet.ts.onnx")
    base = tmp_path / "b.json"
    rec = _record(run_cli, model, base, "-p", "nnapi")
    base.write_text(json.dumps(dict(rec, partsimVersion="0.0.1")))
    code, _, err = run_cli("verify", model, "-p", "nnapi", "--baseline", base)
    assert code == 2 and "other partsim version" in err and len(err.strip().splitlines()) == 1
    # the format before issue 16 (counts only)
    base.write_text(json.dumps({"fragments": 1, "transfers": 0, "memcpyFromHost": 0, "memcpyToHost": 0,
                                "partitionCount": 1}))
    code, _, err = run_cli("verify", model, "-p", "nnapi", "--baseline", base)
    assert code == 2 and "does not record what it measured" in err


def test_adhoc_support_change_is_a_table_change(tmp_path, run_cli):
    base = tmp_path / "b.json"
    code, _, _ = run_cli("verify", CHAIN, "--support", "MatMul,Add,Relu", "--baseline", base, "--update-baseline")
    assert code == 0 and json.loads(base.read_text())["counts"]["fragments"] == 1
    code, _, _ = run_cli("verify", CHAIN, "--support", "MatMul,Add,Relu", "--baseline", base)
    assert code == 0
    code, _, err = run_cli("verify", CHAIN, "--support", "MatMul,Relu", "--baseline", base)
    assert code == 2 and "capability tables" in err


def test_junit_follows_ignore_counts(tmp_path, run_cli):
    """The defect: with --ignore-counts verify exited 0 while its JUnit reported the Memcpy counts
    as failures.  The document must fail exactly when the command does."""
    nodes = {"n0_MatMul": "EP", "n1_Add": "CPUExecutionProvider", "n2_Relu": "CPUExecutionProvider",
             "n3_MatMul": "EP", "n4_Add": "CPUExecutionProvider", "n5_Relu": "CPUExecutionProvider",
             "n6_MatMul": "EP"}
    obs = tmp_path / "obs.json"
    obs.write_text(json.dumps({"schemaVersion": "1.0", "level": "disable", "nodes": nodes,
                               "memcpy": {"fromHost": 0, "toHost": 0}}))  # partsim predicts 2 and 2
    argv = ("verify", CHAIN, "--support", "MatMul", "--observation", obs, "-f", "junit")
    code, out, _ = run_cli(*argv)
    assert code == 1 and ET.fromstring(out).get("failures") == "2"
    code, out, _ = run_cli(*argv, "--ignore-counts")
    suite = ET.fromstring(out)
    assert code == 0
    assert suite.get("failures") == "0" and not [c for c in suite.iter("testcase") if c.find("failure") is not None]
    assert any("not checked" in c.get("name") for c in suite.iter("testcase"))


def test_junit_with_observation_and_baseline_holds_both_suites(tmp_path, run_cli):
    model = corpus("tiny_resnet.ts.onnx")
    base = tmp_path / "b.json"
    _record(run_cli, model, base, "-p", "cpu")
    code, out, err = run_cli("verify", model, "-p", "cpu", "--observe", "--baseline", base, "-f", "junit")
    assert code == 0, err
    root = ET.fromstring(out)
    assert root.tag == "testsuites" and len(root.findall("testsuite")) == 2
    assert all(s.get("failures") == "0" for s in root.findall("testsuite"))
