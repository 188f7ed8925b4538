"""End-to-end behaviour of `partsim simulate` on small real graphs."""

import json

import jsonschema
import networkx as nx
import numpy as np
import pytest
from onnx import TensorProto as T
from onnx import helper

from partsim.ir.schemas import lookup_schema
from tests.conftest import ROOT, run_subprocess, as_written_cli, predict_as_written as predict
from tests.modelbuild import const, model, random_dag, save, vi


# These tests describe the graph as written (an ORT_DISABLE_ALL session): level disable unless asked
@pytest.fixture
def run_cli(run_cli):
    return as_written_cli(run_cli)


SCHEMA = json.loads((ROOT / "partsim" / "data" / "summary.schema.json").read_text())


def recount(proto, node_provider):
    """Fragments and transfers recomputed from the ONNX proto and a name->provider map."""
    producer = {o: n.name for n in proto.graph.node for o in n.output}
    G = nx.Graph()
    G.add_nodes_from(node_provider)
    transfers = set()
    for n in proto.graph.node:
        for t in n.input:
            p = producer.get(t)
            if p is None:
                continue
            if node_provider[p] == node_provider[n.name]:
                G.add_edge(p, n.name)
            else:
                transfers.add((t, node_provider[n.name]))
    return nx.number_connected_components(G), len(transfers)


def test_seed_chain_five_fragments_four_handoffs(run_cli):
    code, out, err = run_cli("simulate", ROOT / "fixtures" / "chain.onnx", "--support", "MatMul", "-f", "json")
    assert code == 0, err
    s = json.loads(out)
    jsonschema.validate(s, SCHEMA)
    assert [n["provider"] for n in s["nodes"]] == ["EP", "CPUExecutionProvider", "CPUExecutionProvider", "EP",
                                                   "CPUExecutionProvider", "CPUExecutionProvider", "EP"]
    assert s["fragments"] == 5
    assert s["transfers"] == 4
    assert s["feedTransfers"] == 1  # the graph input x, counted apart
    assert s["accelerated"] is True
    assert s["undelegatedReasons"] == {"op_not_in_table": 4}


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("kind", ["kernel", "compiling"])
def test_random_models_recount(tmp_path, seed, kind):
    rng = np.random.default_rng(1000 + seed)
    proto = random_dag(seed, int(rng.integers(5, 40)))
    path = save(proto, tmp_path / "m.onnx")
    ops = ["Add", "Mul", "Relu", "Sigmoid", "Sub", "Tanh"]
    support = [o for o in ops if rng.random() < 0.5] or ["Relu"]
    s, _ = predict(path, support=support, support_kind=kind)
    jsonschema.validate(s, SCHEMA)
    prov = {n["name"]: n["provider"] for n in s["nodes"]}
    assert len(prov) == len(proto.graph.node)
    for n in proto.graph.node:
        if kind == "kernel":  # a kernel EP takes exactly its ops
            assert (prov[n.name] == "EP") == (n.op_type in support)
        else:  # a compiling EP never takes an unsupported op
            assert prov[n.name] == "CPUExecutionProvider" or n.op_type in support
    frags, transfers = recount(proto, prov)
    assert s["fragments"] == frags
    assert s["transfers"] == transfers
    assert sum(v["nodes"] for v in s["perProvider"].values()) == len(proto.graph.node)


def test_disconnected_groups_one_partition_two_fragments(tmp_path):
    # x -> Relu -> a ; x -> Relu -> b: both supported, same wave, no edge between them
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="r1"), helper.make_node("Relu", ["x"], ["b"], name="r2")]
    path = save(model(nodes, [vi("x", [2])], [vi("a", [2]), vi("b", [2])]), tmp_path / "m.onnx")
    s, _ = predict(path, support=["Relu"], support_kind="compiling")
    assert s["fragments"] == 2
    ep_parts = [p for p in s["partitions"] if p["provider"] == "EP"]
    assert len(ep_parts) == 1 and sorted(ep_parts[0]["nodes"]) == ["r1", "r2"]
    assert s["perProvider"]["EP"] == {"nodes": 2, "partitions": 1, "fragments": 2}


def test_wave_defers_border_node(tmp_path):
    # Relu(sup) -> Abs(unsup) -> Relu(sup), plus a parallel Relu(sup) from x:
    # the second Relu joins a second wave, the parallel one the first.
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="r1"),
             helper.make_node("Abs", ["a"], ["b"], name="abs"),
             helper.make_node("Relu", ["b"], ["c"], name="r2"),
             helper.make_node("Relu", ["x"], ["d"], name="r3")]
    path = save(model(nodes, [vi("x", [2])], [vi("c", [2]), vi("d", [2])]), tmp_path / "m.onnx")
    s, _ = predict(path, support=["Relu"], support_kind="compiling")
    groups = sorted(sorted(p["nodes"]) for p in s["partitions"] if p["provider"] == "EP")
    assert groups == [["r1", "r3"], ["r2"]]


def _if_model():
    then_g = helper.make_graph([helper.make_node("Relu", ["x"], ["t_out"], name="then_relu")], "then", [],
                               [vi("t_out", [2])])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["e_out"], name="else_neg")], "else", [],
                               [vi("e_out", [2])])
    nodes = [helper.make_node("ReduceSum", ["x"], ["s"], name="sum", keepdims=0),
             helper.make_node("Greater", ["s", "zero"], ["cond"], name="gt"),
             helper.make_node("If", ["cond"], ["y"], name="branch", then_branch=then_g, else_branch=else_g)]
    return model(nodes, [vi("x", [2])], [vi("y", [2])], [const("zero", [], 0.0)])


def test_if_subgraph_nodes_and_implicit_inputs(tmp_path):
    path = save(_if_model(), tmp_path / "if.onnx")
    s, a = predict(path, ["cpu"])
    names = {n["name"]: n for n in s["nodes"]}
    assert {"sum", "gt", "branch", "then_relu", "else_neg"} <= set(names)
    assert names["then_relu"]["scope"] == "branch/then_branch"
    branch = next(n for n in a.model.nodes if n.name == "branch")
    assert branch.implicit_inputs == ("x",)
    assert all(n["provider"] == "CPUExecutionProvider" for n in s["nodes"])
    # a provider taking only Relu takes the node inside the subgraph
    s2, _ = predict(path, support=["Relu"])
    assert {n["name"]: n["provider"] for n in s2["nodes"]}["then_relu"] == "EP"


def test_loop_subgraph(tmp_path):
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"], name="body_cond"),
         helper.make_node("Add", ["acc_in", "step"], ["acc_out"], name="body_add")],
        "body", [vi("i", [], T.INT64), vi("cond_in", [], T.BOOL), vi("acc_in", [2])],
        [vi("cond_out", [], T.BOOL), vi("acc_out", [2])])
    nodes = [helper.make_node("Loop", ["trip", "", "x"], ["y"], name="loop", body=body)]
    m = model(nodes, [vi("x", [2])], [vi("y", [2])],
              [const("trip", [], 3, T.INT64), const("step", [2], 1.0)])
    path = save(m, tmp_path / "loop.onnx")
    s, a = predict(path, support=["Add"])
    prov = {n["name"]: n["provider"] for n in s["nodes"]}
    assert prov == {"loop": "CPUExecutionProvider", "body_cond": "CPUExecutionProvider", "body_add": "EP"}
    assert next(n for n in a.model.nodes if n.name == "loop").implicit_inputs == ("step",)


def test_dynamic_shape_rule(tmp_path):
    table = tmp_path / "npu.yaml"
    table.write_text("provider: NnapiExecutionProvider\nkind: compiling\ncpu_based: true\n"
                     "source: {description: test, version: '1'}\ndefaults: {static_shape: true}\n"
                     "ops:\n  - op: Relu\n")
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="dyn"), helper.make_node("Relu", ["y"], ["b"], name="static")]
    path = save(model(nodes, [vi("x", ["batch", 4]), vi("y", [1, 4])], [vi("a", ["batch", 4]), vi("b", [1, 4])]),
                tmp_path / "m.onnx")
    s, _ = predict(path, ["nnapi"], rule_paths=[table])
    by = {n["name"]: n for n in s["nodes"]}
    assert by["static"]["provider"] == "NnapiExecutionProvider"
    assert by["dyn"]["provider"] == "CPUExecutionProvider" and by["dyn"]["reason"] == "dynamic_shape"


def test_unknown_domain_kept_and_flagged(tmp_path):
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="r"),
             helper.make_node("FancyOp", ["a"], ["b"], name="custom", domain="com.example")]
    m = model(nodes, [vi("x", [2])], [vi("b", [2])], extra_opsets=[("com.example", 1)])
    path = save(m, tmp_path / "m.onnx")
    s, _ = predict(path, support=["Relu"])
    custom = next(n for n in s["nodes"] if n["name"] == "custom")
    assert custom["schemaKnown"] is False and custom["domain"] == "com.example"
    assert custom["provider"] == "CPUExecutionProvider"
    # ORT has no kernel for it anywhere: creating the session would fail, and we say so
    assert s["status"] == "session_would_fail" and "custom" in s["failure"]


def test_whole_graph_policy_predicts_failure(run_cli):
    code, out, err = run_cli("simulate", ROOT / "fixtures" / "chain.onnx", "--support", "MatMul",
                             "--policy", "whole-graph", "-f", "json")
    assert code == 0, err
    s = json.loads(out)
    assert s["status"] == "session_would_fail"
    assert "4 node(s)" in s["failure"]
    code, out, _ = run_cli("simulate", ROOT / "fixtures" / "chain.onnx", "--support", "MatMul,Add,Relu",
                           "--policy", "whole-graph", "-f", "json")
    assert json.loads(out)["status"] == "ok"


def test_provider_that_claims_nothing_is_not_accelerated(run_cli):
    code, out, _ = run_cli("simulate", ROOT / "fixtures" / "chain.onnx", "--support", "Conv", "-f", "json")
    s = json.loads(out)
    assert code == 0
    assert s["accelerated"] is False and s["delegatedNodeCount"] == 0
    assert {n["provider"] for n in s["nodes"]} == {"CPUExecutionProvider"}
    assert s["fragments"] == 1 and s["transfers"] == 0


def test_unknown_and_duplicate_provider_names(run_cli):
    code, out, _ = run_cli("simulate", ROOT / "fixtures" / "chain.onnx", "-p",
                           "cpu,CPUExecutionProvider,cpu", "-f", "json")
    s = json.loads(out)
    assert code == 0
    assert s["droppedProviders"] == [] and s["effectiveProviders"] == ["CPUExecutionProvider"]
    assert s["accelerated"] is False
    # a name neither ORT nor a table knows: refused (issue 16), not a silent CPU-only prediction
    code, out, err = run_cli("simulate", ROOT / "fixtures" / "chain.onnx", "-p",
                             "FooExecutionProvider,cpu", "-f", "json")
    assert code == 2 and out == "" and "'FooExecutionProvider'" in err
    # ORT's own silent drop is still what the resolution models (partsim providers reports it)
    from partsim.api import load_tables
    from partsim.rules.resolve import resolve_providers
    r = resolve_providers(["FooExecutionProvider", "cpu"], load_tables())
    assert r.dropped == (("FooExecutionProvider", "unknown_provider"),)


def test_known_provider_without_table_is_refused(run_cli):
    """ORT knows DirectML, partsim has no table for it: exit 2 listing the tables (not a silent CPU-only
    "NOT accelerated"); the resolution still models ORT's own drop."""
    code, out, err = run_cli("simulate", ROOT / "fixtures" / "chain.onnx", "-p", "dml", "-f", "json")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "no capability table for DmlExecutionProvider" in err and "NnapiExecutionProvider" in err
    from partsim.api import load_tables
    from partsim.rules.resolve import resolve_providers
    r = resolve_providers(["dml"], load_tables())
    assert r.dropped == (("DmlExecutionProvider", "no_rules"),)


def test_schema_versions_resolved():
    assert lookup_schema("", "Relu", 17).since_version == 14
    assert lookup_schema("", "Relu", 13).since_version == 13
    assert lookup_schema("", "Relu", 6).since_version == 6
    assert lookup_schema("com.microsoft", "QLinearAdd", 1).since_version == 1
    assert lookup_schema("com.example", "Foo", 1) is None


def test_open_ended_kernel_matches_exact_version_only(tmp_path):
    # ORT rule: a kernel registered [14, ∞) serves since_version 14 only
    table = tmp_path / "t.yaml"
    table.write_text("provider: XnnpackExecutionProvider\nkind: kernel\ncpu_based: true\n"
                     "source: {description: test, version: '1'}\nops:\n  - {op: Relu, versions: [6, 12]}\n"
                     "  - {op: Relu, versions: [13, null]}\n")
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="r")]
    for opset, expected in ((12, "XnnpackExecutionProvider"), (13, "XnnpackExecutionProvider"),
                            (17, "CPUExecutionProvider")):
        path = save(model(nodes, [vi("x", [2])], [vi("y", [2])], opset=opset), tmp_path / f"m{opset}.onnx")
        s, _ = predict(path, ["xnnpack"], rule_paths=[table])
        assert s["nodes"][0]["provider"] == expected, opset
    assert s["nodes"][0]["reason"] == "opset_version"


def test_dtype_constraint(tmp_path):
    table = tmp_path / "t.yaml"
    table.write_text("provider: XnnpackExecutionProvider\nkind: kernel\ncpu_based: true\n"
                     "source: {description: test, version: '1'}\nops:\n  - {op: Relu, types: {T: [float]}}\n")
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="r32"), helper.make_node("Relu", ["d"], ["e"], name="r64")]
    path = save(model(nodes, [vi("x", [2]), vi("d", [2], T.DOUBLE)], [vi("y", [2]), vi("e", [2], T.DOUBLE)]),
                tmp_path / "m.onnx")
    s, _ = predict(path, ["xnnpack"], rule_paths=[table])
    by = {n["name"]: n for n in s["nodes"]}
    assert by["r32"]["provider"] == "XnnpackExecutionProvider"
    assert by["r64"]["reason"] == "dtype"


def test_json_is_byte_stable_across_processes(tmp_path):
    env_a = {"PYTHONHASHSEED": "1", "PATH": "/usr/bin:/bin"}
    env_b = {"PYTHONHASHSEED": "12345", "PATH": "/usr/bin:/bin"}
    outs = []
    for env in (env_a, env_b):
        r = run_subprocess("simulate", "fixtures/demo.onnx", "--support", "Conv,Relu", "-f", "json", env=env)
        assert r.returncode == 0, r.stderr
        outs.append(r.stdout)
    assert outs[0] == outs[1]


def test_cpu_table_covers_demo_ops():
    s, _ = predict(ROOT / "fixtures" / "demo.onnx", ["cpu"])
    assert s["status"] == "ok" and s["accelerated"] is False
    assert s["perProvider"] == {"CPUExecutionProvider": {"nodes": 16, "partitions": 1, "fragments": 1}}


def test_progress_lines_go_to_stderr_only(run_cli):
    code, out_quiet, err_quiet = run_cli("simulate", ROOT / "fixtures" / "chain.onnx", "--support", "MatMul",
                                         "-f", "json")
    assert code == 0 and err_quiet == ""  # auto: stderr is not a terminal here
    code, out, err = run_cli("--progress", "always", "simulate", ROOT / "fixtures" / "chain.onnx", "--support",
                             "MatMul", "-f", "json")
    assert code == 0 and out == out_quiet  # the payload is unchanged
    lines = err.strip().splitlines()
    assert lines[0].startswith("[partsim] loading") and "loaded 7 nodes" in lines[1]
    assert all(line.startswith("[partsim] ") for line in lines)


def test_cli_imports_only_the_command_it_runs():
    """`partsim simulate` loads its own module, not the JUnit writer, ORT runner or table importers."""
    import subprocess
    import sys

    probe = ("import sys, contextlib, io\n"
             "from partsim.cli import main\n"
             "with contextlib.redirect_stdout(io.StringIO()):\n"
             "    code = main(['simulate', 'fixtures/chain.onnx', '--support', 'MatMul'])\n"
             "print(code, sorted(m for m in sys.modules if m.startswith('partsim.')))\n")
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    code, mods = r.stdout.split(" ", 1)
    assert code == "0"
    assert "partsim.cli.simulate" in mods
    for heavy in ("partsim.cli.verify", "partsim.cli.observe", "partsim.report.verify_junit", "partsim.runtime.observe",
                  "partsim.gen.mobile_md", "partsim.numerics"):
        assert f"'{heavy}'" not in mods, heavy


def test_unknown_command_lists_every_command(run_cli):
    from partsim.cli import COMMANDS

    code, out, err = run_cli("bogus")
    assert code == 2 and out == ""
    for name in COMMANDS + ("providers",):
        assert f"'{name}'" in err
    code, out, _ = run_cli("providers", "--help")  # a command hosted in another command's module
    assert code == 0 and "--request" in out


def test_program_flushes_everything_before_its_fast_exit(tmp_path):
    """`partsim` ends with os._exit (no interpreter teardown): stdout, -o files and exit codes stay whole."""
    expected, _ = predict(ROOT / "fixtures" / "demo.onnx", ["nnapi"])
    r = run_subprocess("simulate", "fixtures/demo.onnx", "-p", "nnapi", "--level", "disable", "-f", "json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["nodes"] == expected["nodes"]
    out = tmp_path / "s.json"
    r = run_subprocess("simulate", "fixtures/demo.onnx", "-p", "nnapi", "--level", "disable", "-f", "json", "-o", out)
    assert r.returncode == 0 and r.stdout == ""
    assert json.loads(out.read_text())["nodes"] == expected["nodes"]
    r = run_subprocess("simulate", tmp_path / "missing.onnx")
    assert r.returncode == 2 and r.stdout == "" and len(r.stderr.strip().splitlines()) == 1
