"""partsim blame / whatif: lifted causes are re-simulated, and the numbers hold up against
counts made independently (by hand from the graph, with networkx on the ONNX proto, or by
simulating a rule table edited as YAML)."""

import json
from pathlib import Path

import networkx as nx
import onnx
import pytest
import yaml
from onnx import TensorProto as T
from onnx import helper

from tests.modelbuild import const, model, save, vi

ROOT = Path(__file__).resolve().parents[2]
SHARED = Path(__file__).resolve().parents[3] / "shared"


def _shared(*parts):
    p = SHARED.joinpath(*parts)
    if not p.exists():
        pytest.skip(f"{p} is absent: ../shared (the corpus) is not checked out beside the project")
    return p


# A kernel EP table written as YAML (not built by the code under test).  Add takes
# float16 only, so the float Add of the chain is rejected for its dtype; Sin is absent.
RULES = """\
provider: XnnpackExecutionProvider
kind: kernel
cpu_based: false
source: {description: test table, version: "1"}
ops:
  - op: MatMul
  - op: Relu
  - op: Reshape
  - op: Add
    types: {T: [float16]}
"""


def _independent_partitions(proto, on_ep):
    """Kernel-EP partitions = weakly-connected same-provider node sets (docs/contract.md §1),
    counted with networkx straight from the ONNX proto."""
    producer = {o: n.name for n in proto.graph.node for o in n.output}
    g = nx.Graph()
    for n in proto.graph.node:
        g.add_node(n.name)
        for t in n.input:
            p = producer.get(t)
            if p is not None and (p in on_ep) == (n.name in on_ep):
                g.add_edge(p, n.name)
    return nx.number_connected_components(g)


def _chain(tmp_path):
    """x -> MM -> Relu -> Sin -> MM -> Relu -> Sin -> MM -> Add -> y, all [2, 4] float."""
    names = ["mm0", "relu0", "sin0", "mm1", "relu1", "sin1", "mm2", "add"]
    nodes, prev = [], "x"
    for name in names:
        op = {"mm": "MatMul", "re": "Relu", "si": "Sin", "ad": "Add"}[name[:2]]
        ins = [prev, "w"] if op in ("MatMul", "Add") else [prev]
        out = "y" if name == "add" else f"{name}_out"
        nodes.append(helper.make_node(op, ins, [out], name=name))
        prev = out
    m = model(nodes, [vi("x", [2, 4])], [vi("y", [2, 4])], [const("w", [4, 4])])
    rules = tmp_path / "xnnpack.yaml"
    rules.write_text(RULES)
    return save(m, str(tmp_path / "chain.onnx")), m, rules


def test_blame_ranks_the_splitting_op_first_with_exact_partitions(tmp_path, run_cli):
    path, proto, rules = _chain(tmp_path)
    code, out, err = run_cli("blame", path, "-r", rules, "-p", "xnnpack", "--format", "json")
    assert code == 0, err
    r = json.loads(out)
    supported = {"mm0", "relu0", "mm1", "relu1", "mm2"}
    before = _independent_partitions(proto, supported)
    assert before == 6  # EP | Sin | EP | Sin | EP | Add
    assert r["baseline"]["partitions"] == before
    top = r["causes"][0]
    assert (top["kind"], top["cause"]) == ("opType", "Sin")
    assert sorted(top["nodes"]) == ["sin0", "sin1"]
    expected_sin = before - _independent_partitions(proto, supported | {"sin0", "sin1"})
    assert expected_sin == 4
    assert top["saved"]["partitions"] == expected_sin
    # transfers: 5 boundaries before, 1 (mm2 -> add) after
    assert top["saved"]["transfers"] == 4
    rows = {(c["kind"], c["cause"]): c for c in r["causes"]}
    expected_add = before - _independent_partitions(proto, supported | {"add"})
    assert rows[("opType", "Add")]["saved"]["partitions"] == expected_add == 1
    assert rows[("reason", "dtype")]["saved"]["partitions"] == expected_add
    assert rows[("reason", "op_not_in_table")]["saved"]["partitions"] == expected_sin
    # ranked: nodes on the accelerator after the lift never increase down the list (the graph
    # keeps its 8 nodes under every table lift)
    on_ep = [c["coverage"]["after"]["firstProviderNodes"] for c in r["causes"]]
    assert on_ep == sorted(on_ep, reverse=True) and on_ep[0] == 7
    # the table names the same cause first
    code, text, _ = run_cli("blame", path, "-r", rules, "-p", "xnnpack")
    assert code == 0
    first_row = next(line for line in text.splitlines() if line.strip().startswith("1 "))
    assert "Sin" in first_row and "op type" in first_row


def test_whatif_add_support_reproduces_blame(tmp_path, run_cli):
    path, proto, rules = _chain(tmp_path)
    code, out, err = run_cli("blame", path, "-r", rules, "-p", "xnnpack", "--format", "json")
    assert code == 0, err
    rows = {(c["kind"], c["cause"]): c for c in json.loads(out)["causes"]}
    for spec, key in (("Sin", ("opType", "Sin")), ("Add:float", ("opType", "Add"))):
        code, out, err = run_cli("whatif", path, "-r", rules, "-p", "xnnpack", "--add-support", spec,
                                 "--format", "json")
        assert code == 0, err
        w = json.loads(out)
        for k in ("partitions", "transfers", "memcpy", "boundaryBytes"):
            assert -w["change"][k] == rows[key]["saved"][k], (spec, k)
        ep = w["perProvider"]["XnnpackExecutionProvider"]
        assert ep["change"]["nodes"] == (2 if spec == "Sin" else 1)
    # a dtype other than the node's does not help
    code, out, _ = run_cli("whatif", path, "-r", rules, "-p", "xnnpack", "--add-support", "Add:int64",
                           "--format", "json")
    assert code == 0 and json.loads(out)["change"]["partitions"] == 0


def test_copy_bytes_and_time_from_the_transfer_list(tmp_path, run_cli):
    path, proto, rules = _chain(tmp_path)
    code, out, err = run_cli("blame", path, "-r", rules, "-p", "xnnpack", "--link", "1MB/s,10us",
                             "--format", "json")
    assert code == 0, err
    b = json.loads(out)["baseline"]
    # 5 boundary tensors of 2x4 float = 32 bytes each; the EP is a device EP so each is also
    # a Memcpy, counted once
    assert (b["transfers"], b["copies"], b["boundaryBytes"]) == (5, 5, 5 * 32)
    assert b["copyTimeUs"] == pytest.approx(5 * 32 / 1e6 * 1e6 + 5 * 10)
    for bad in ("fast", "12GB,8us", "12GB/s,8parsecs", "0GB/s"):
        code, _, err = run_cli("blame", path, "-r", rules, "-p", "xnnpack", "--link", bad)
        assert code == 2 and err.count("\n") == 1 and "--link" in err


def test_link_presets_state_their_numbers():
    from partsim.analysis.cost import LINK_PRESETS, parse_link

    # PCIe 4.0 x16: 16 GT/s x 16 lanes x 128/130 / 8 bits = 31.5 GB/s per direction
    assert parse_link("pcie4-x16").bandwidth == pytest.approx(31.5e9, rel=1e-3)
    assert parse_link("pcie5-x16").bandwidth == pytest.approx(63.0e9, rel=1e-3)
    assert parse_link("12GB/s,8us").latency == pytest.approx(8e-6)
    assert parse_link("1GiB/s").bandwidth == 1024**3
    assert all(p.source for p in LINK_PRESETS.values())


def _dynamic_middle(tmp_path):
    """x[2,4] -> Relu -> Add(+ y[N,4]) -> Reshape(const [2,4]) -> Relu -> out: the Add has a
    dynamic input until N is fixed (its output broadcasts to [2,4], so the Reshape is static)."""
    nodes = [helper.make_node("Relu", ["x"], ["r0"], name="relu0"),
             helper.make_node("Add", ["r0", "y"], ["a"], name="add"),
             helper.make_node("Reshape", ["a", "shape"], ["s"], name="reshape"),
             helper.make_node("Relu", ["s"], ["out"], name="relu1")]
    shape = helper.make_tensor("shape", T.INT64, [2], [2, 4])
    m = model(nodes, [vi("x", [2, 4]), vi("y", ["N", 4])], [vi("out", [2, 4])], [shape])
    rules = tmp_path / "static.yaml"
    rules.write_text(RULES.replace("ops:", "defaults: {static_shape: true}\nops:").replace(
        "  - op: Add\n    types: {T: [float16]}\n", "  - op: Add\n"))
    return save(m, str(tmp_path / "dyn.onnx")), m, rules


def test_fixing_a_symbolic_dim_is_resimulated(tmp_path, run_cli):
    path, proto, rules = _dynamic_middle(tmp_path)
    code, out, err = run_cli("blame", path, "-r", rules, "-p", "xnnpack", "--dim-value", "2", "--format", "json")
    assert code == 0, err
    r = json.loads(out)
    assert r["symbolicDims"] == {"N": ["y[0]"]} and r["fixedDims"] == {}
    before = _independent_partitions(proto, {"relu0", "reshape", "relu1"})
    after = _independent_partitions(proto, {"relu0", "add", "reshape", "relu1"})
    assert (before, after) == (3, 1)
    rows = {(c["kind"], c["cause"]): c for c in r["causes"]}
    assert rows[("dim", "N=2")]["saved"]["partitions"] == before - after
    assert rows[("dim", "N=2")]["nodes"] == ["add"]
    assert rows[("reason", "dynamic_shape")]["saved"]["partitions"] == before - after
    code, out, err = run_cli("whatif", path, "-r", rules, "-p", "xnnpack", "--fix-dim", "N=2", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["change"]["partitions"] == after - before
    # --dim fixes N in the model blamed (as simulate --dim): the baseline is the fixed model, nothing left to fix
    code, out, err = run_cli("blame", path, "-r", rules, "-p", "xnnpack", "--dim", "N=2", "--format", "json")
    assert code == 0, err
    r = json.loads(out)
    assert r["fixedDims"] == {"N": 2} and r["symbolicDims"] == {} and r["baseline"]["partitions"] == after
    assert not [c for c in r["causes"] if c["kind"] in ("dim", "dims")]
    # an unknown dim name, a bad value, no change at all: one-line usage errors
    for argv in (["--fix-dim", "M=2"], ["--fix-dim", "N=0"], []):
        code, _, err = run_cli("whatif", path, "-r", rules, "-p", "xnnpack", *argv)
        assert code == 2 and err.count("\n") == 1, argv


def test_whatif_provider_changes_and_opset_errors(tmp_path, run_cli):
    path, proto, rules = _chain(tmp_path)
    code, out, err = run_cli("whatif", path, "-r", rules, "-p", "xnnpack", "--drop-provider", "xnnpack",
                             "--format", "json")
    assert code == 0, err
    w = json.loads(out)
    assert w["after"]["providers"] == ["CPUExecutionProvider"] and not w["after"]["accelerated"]
    assert w["after"]["partitions"] == 1 and w["change"]["partitions"] == 1 - 6
    code, _, err = run_cli("whatif", path, "-r", rules, "-p", "xnnpack", "--reorder", "cuda")
    assert code == 2 and "--reorder" in err
    # opset 1 has no MatMul-on-this-graph conversion path: a clean error, not a traceback
    code, _, err = run_cli("whatif", path, "-r", rules, "-p", "xnnpack", "--opset", "1")
    assert code == 2 and err.count("\n") == 1 and "opset 1" in err
    code, out, err = run_cli("whatif", path, "-r", rules, "-p", "xnnpack", "--opset", "18", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["change"]["partitions"] == 0  # Relu/MatMul/Sin/Add: same support at opset 18
    # blame with the CPU first has nothing to blame
    code, _, err = run_cli("blame", path, "-p", "cpu")
    assert code == 2 and "accelerator" in err


def _edited_table(tmp_path, add_ops=(), drop_static_for=()):
    """rules/nnapi.yaml with ops added (any dtype, any shape), written as a new YAML file."""
    data = yaml.safe_load((ROOT / "rules" / "nnapi.yaml").read_text())
    for op in add_ops:
        data["ops"] = [r for r in data["ops"] if r["op"] != op] + [{"op": op, "static_shape": False}]
    out = tmp_path / "nnapi-edited.yaml"
    out.write_text(yaml.safe_dump(data, sort_keys=False))
    return out


def test_corpus_model_lifts_match_edited_tables(tmp_path, run_cli):
    """tiny_transformer on NNAPI: each op-type lift equals a simulation with the YAML table edited."""
    path = _shared("corpus", "full", "tiny_transformer.ts.onnx")
    from partsim.api import predict

    code, out, err = run_cli("blame", path, "-p", "nnapi", "--level", "disable", "--format", "json")
    assert code == 0, err
    r = json.loads(out)
    # ranked by coverage gained (exact share of nodes on NNAPI, recounted from the row's own
    # numbers), then accelerator partitions saved
    from fractions import Fraction

    keys = [(-Fraction(c["coverage"]["after"]["firstProviderNodes"], c["coverage"]["after"]["nodes"]),
             -c["saved"]["acceleratorPartitions"]) for c in r["causes"]]
    assert keys == sorted(keys)
    before, _ = predict(path, ["nnapi"], level="disable")
    assert r["baseline"]["partitions"] == len(before["partitions"])
    missing = sorted({n["opType"] for n in before["nodes"] if n["reason"] == "op_not_in_table"})
    assert missing  # LayerNormalization, Shape, Mod ... are not in NNAPI's list
    rows = {(c["kind"], c["cause"]): c for c in r["causes"]}
    for op in missing[:3]:
        edited, _ = predict(path, ["nnapi"], level="disable", rule_paths=[_edited_table(tmp_path, [op])])
        row = rows[("opType", op)]
        assert row["after"]["partitions"] == len(edited["partitions"]), op
        assert row["after"]["transfers"] == edited["transfers"], op
    edited, _ = predict(path, ["nnapi"], level="disable", rule_paths=[_edited_table(tmp_path, missing)])
    assert rows[("reason", "op_not_in_table")]["after"]["partitions"] == len(edited["partitions"])


def test_swin_memcpy_blamed_on_cpu_preferred_and_gone_at_basic(run_cli):
    path = _shared("corpus", "graph_only", "swin_t.ts.onnx")
    code, out, err = run_cli("blame", path, "-p", "cuda", "--optimize", "none", "--format", "json")
    assert code == 0, err
    r = json.loads(out)
    # docs/contract.md §5, observed on a GPU at ORT_DISABLE_ALL: 175 Memcpy nodes
    assert r["baseline"]["memcpy"] == 175
    assert set(r["reasons"]) == {"cpu_preferred"}
    assert r["memcpyCauses"] == {"cpu_preferred": 175}
    row = next(c for c in r["causes"] if c["kind"] == "reason")
    assert row["cause"] == "cpu_preferred" and len(row["memcpyAtNodes"]) == 175
    # ORT's own folding (level basic) and lifting the CPU-preferred pass both put every node on
    # CUDA in one partition; the level is the one the user can choose and it removes every
    # Memcpy, where lifting the pass adds 492 (its host outputs would be copied): level first
    level = r["causes"][0]
    assert (level["kind"], level["cause"], level["actionable"]) == ("level", "level basic", True)
    assert (row["rank"], row["actionable"], row["actionBy"]) == (2, False, "ort")
    assert level["coverage"]["after"]["percent"] == row["coverage"]["after"]["percent"] == 100.0
    assert level["saved"]["memcpy"] == 175 and row["saved"]["memcpy"] < 0
    # independent check of the attribution: every Memcpy tensor is an integer tensor (shape
    # arithmetic) or touches a node the CPU-preferred pass moved
    proto = onnx.load(str(path), load_external_data=False)
    inferred = onnx.shape_inference.infer_shapes(proto)
    int_types = {T.INT64, T.INT32, T.BOOL}
    dtype = {v.name: v.type.tensor_type.elem_type for v in inferred.graph.value_info}
    cpu_pref = set(row["nodes"])
    producer = {o: n.name for n in proto.graph.node for o in n.output}
    consumers = {}
    for n in proto.graph.node:
        for t in n.input:
            consumers.setdefault(t, set()).add(n.name)
    for c in row["memcpyAtNodes"]:
        t = c.rsplit(" (", 1)[0]
        touches = {producer.get(t)} | consumers.get(t, set())
        assert dtype.get(t) in int_types or touches & cpu_pref, t
    code, out, err = run_cli("whatif", path, "-p", "cuda", "--level", "disable", "--optimize", "basic",
                             "--format", "json")
    assert code == 0, err
    w = json.loads(out)
    assert w["before"]["memcpy"] == 175 and w["after"]["memcpy"] == 0
    assert w["after"]["transfers"] == 0 and w["change"]["memcpy"] == -175
    for k in ("partitions", "acceleratorPartitions", "transfers", "memcpy"):
        assert level["saved"][k] == -w["change"][k], k


def test_mobilenet_nnapi_top_cause_is_ort_folding(tmp_path, run_cli):
    """mobilenet_v2.ts on NNAPI: 39 Conv weights are computed (Identity of an initializer), so
    NNAPI rejects them; ORT's own basic level folds them into initializers.  The level is the
    remedy the user can choose, so it ranks above the two table lifts that tie with it."""
    import onnxruntime as ort

    from partsim.io.materialize import materialize_weights

    path = _shared("corpus", "graph_only", "mobilenet_v2.ts.onnx")
    code, out, err = run_cli("blame", path, "-p", "nnapi", "--level", "disable", "--format", "json")
    assert code == 0, err
    r = json.loads(out)
    top = r["causes"][0]
    assert (top["kind"], top["cause"], top["actionable"], top["actionBy"]) == ("level", "level basic", True, "session")
    rows = {(c["kind"], c["cause"]): c for c in r["causes"]}
    conv = rows[("opType", "Conv")]
    assert conv["actionable"] is False and conv["actionBy"] == "provider"
    assert rows[("reason", "non_constant_input")]["actionable"] is True
    # independent: ORT's own BASIC rewrite of the model, made here, leaves every Conv with
    # initializer weights (what NNAPI's rule asks) and has as many nodes as the level row counts
    copy = materialize_weights(path, tmp_path / "w", seed=0)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    so.optimized_model_filepath = str(tmp_path / "basic.onnx")
    so.add_session_config_entry("session.optimized_model_external_initializers_file_name", "basic.data")
    ort.InferenceSession(str(copy), so, providers=["CPUExecutionProvider"])
    opt = onnx.load(str(tmp_path / "basic.onnx"), load_external_data=False)
    inits = {i.name for i in opt.graph.initializer}
    convs = [n for n in opt.graph.node if n.op_type == "Conv"]
    assert len(convs) == 52 and all(all(t in inits for t in n.input[1:]) for n in convs)
    assert top["coverage"]["after"] == {"firstProviderNodes": len(opt.graph.node), "nodes": len(opt.graph.node),
                                        "percent": 100.0}
    assert top["coverage"]["before"]["firstProviderNodes"] == 100 and r["coverage"]["nodes"] == 139
    # accelerator partitions: 40 before, 1 after (the old ranking by all partitions saw 78)
    assert (r["baseline"]["acceleratorPartitions"], top["saved"]["acceleratorPartitions"]) == (40, 39)
    code, text, _ = run_cli("blame", path, "-p", "nnapi", "--level", "disable")
    assert code == 0
    first_row = next(line for line in text.splitlines() if line.strip().startswith("1 "))
    assert "level basic" in first_row and " you " in first_row
    last = text.rstrip().splitlines()
    assert last[-2].startswith("next step: level basic")
    assert last[-1].strip() == f"partsim whatif {path} -p nnapi --level disable --optimize basic"  # how to measure it


def test_ops_nnapi_never_runs_are_not_actionable(run_cli):
    """bert_tiny.ts on NNAPI: Shape has no NNAPI rule at any version (rules/nnapi.yaml, read
    here as YAML): its row says only the vendor can act; dynamic shapes are the user's."""
    path = _shared("corpus", "graph_only", "bert_tiny.ts.onnx")
    listed = {r["op"] for r in yaml.safe_load((ROOT / "rules" / "nnapi.yaml").read_text())["ops"]}
    assert "Shape" not in listed
    code, out, err = run_cli("blame", path, "-p", "nnapi", "--level", "disable", "--format", "json")
    assert code == 0, err
    rows = {(c["kind"], c["cause"]): c for c in json.loads(out)["causes"]}
    shape = rows[("opType", "Shape")]
    assert (shape["actionable"], shape["actionBy"]) == (False, "provider") and "any version" in shape["remedy"]
    assert rows[("reason", "op_not_in_table")]["actionable"] is False
    assert rows[("reason", "dynamic_shape")]["actionable"] is True
    for c in rows.values():
        if c["kind"] == "opType":
            assert c["actionable"] is False
        if c["kind"] in ("dim", "dims", "level", "level+dims"):
            assert c["actionable"] is True


def _two_dims(tmp_path):
    """Add(x[N,4], y[M,4]) -> Relu under a static-shape table: the Add keeps a dynamic input
    until both N and M are fixed."""
    nodes = [helper.make_node("Add", ["x", "y"], ["a"], name="add"),
             helper.make_node("Relu", ["a"], ["out"], name="relu")]
    m = model(nodes, [vi("x", ["N", 4]), vi("y", ["M", 4])], [vi("out", [None, 4])])
    rules = tmp_path / "static.yaml"
    rules.write_text(RULES.replace("ops:", "defaults: {static_shape: true}\nops:").replace(
        "  - op: Add\n    types: {T: [float16]}\n", "  - op: Add\n"))
    return save(m, str(tmp_path / "dims.onnx")), rules


def test_all_dims_together_and_the_opset_remedy(tmp_path, run_cli):
    path, rules = _two_dims(tmp_path)
    code, out, err = run_cli("blame", path, "-r", rules, "-p", "xnnpack", "--dim-value", "2", "--format", "json")
    assert code == 0, err
    r = json.loads(out)
    rows = {(c["kind"], c["cause"]): c for c in r["causes"]}
    both = rows[("dims", "M=2,N=2")]
    assert both["rank"] == 1 and both["actionable"] and sorted(both["nodes"]) == ["add", "relu"]
    assert both["coverage"]["after"]["percent"] == 100.0
    for one in ("N=2", "M=2"):  # one dim alone leaves the Add with a dynamic input: it stays on the CPU
        single = rows[("dim", one)]
        assert "add" not in single["nodes"] and single["coverage"]["gainPoints"] < 100 and single["rank"] > 1
    code, out, err = run_cli("whatif", path, "-r", rules, "-p", "xnnpack", "--fix-dim", "N=2,M=2", "--format", "json")
    assert code == 0, err
    assert -json.loads(out)["change"]["partitions"] == both["saved"]["partitions"]

    # Sign: CUDA registers only the opset-13 kernel (rules/cuda.yaml, from ORT's
    # docs/OperatorKernels.md); at opset 11 the node has schema version 9 and stays on the CPU
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="relu0"), helper.make_node("Sign", ["a"], ["b"], name="sign"),
             helper.make_node("Relu", ["b"], ["y"], name="relu1")]
    path = save(model(nodes, [vi("x", [2, 4])], [vi("y", [2, 4])], opset=11), str(tmp_path / "sign11.onnx"))
    sign = next(r for r in yaml.safe_load((ROOT / "rules" / "cuda.yaml").read_text())["ops"] if r["op"] == "Sign")
    assert sign["versions"] == [13, None]
    assert onnx.defs.get_schema("Sign", 11, "").since_version == 9
    code, out, err = run_cli("blame", path, "-p", "cuda", "--format", "json")
    assert code == 0, err
    r = json.loads(out)
    top = r["causes"][0]
    assert (top["kind"], top["cause"], top["actionable"], top["nodes"]) == ("opset", "opset 13", True, ["sign"])
    assert {(c["cause"], c["actionable"]) for c in r["causes"] if c["kind"] != "opset" and c["rank"] <= 3} == {
        ("Sign", False), ("opset_version", False)}
    code, out, err = run_cli("whatif", path, "-p", "cuda", "--opset", "13", "--format", "json")
    assert code == 0, err
    w = json.loads(out)
    assert w["perProvider"]["CUDAExecutionProvider"]["after"]["nodes"] == 3
    assert -w["change"]["partitions"] == top["saved"]["partitions"] == 2
