"""Property tests of the core: random layered DAGs, random support lists, ad-hoc providers.

Every expected number here is recomputed independently from the ONNX proto (with
networkx where graphs are involved); partsim's own graph code is not used for the
checks.  The provider of each node is taken from the summary and itself checked
against the support lists (ad-hoc tables have no hooks, so a node lands on the first
ad-hoc provider whose list names its op, else on the CPU).
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import networkx as nx
import numpy as np
import onnx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto as T
from onnx import helper

from partsim.io.load import model_from_proto
from partsim.report.output import to_json
from partsim.rules.table import adhoc_table
from partsim.rules.load import builtin_tables
from partsim.rules.resolve import resolve_providers
from partsim.sim import simulate, summarize

ROOT = Path(__file__).resolve().parents[2]
CPU = "CPUExecutionProvider"
OPS = ("Add", "Mul", "Relu", "Sigmoid", "MatMul", "Concat", "Tanh")
MAX_WIDTH = 16

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ---------------------------------------------------------------- model generator

@st.composite
def dags(draw, connected=False, max_nodes=12, allow_shuffle=True):
    """A layered DAG of float [4, w] tensors with valid shapes.

    ``connected``: one graph input and every node after the first reads at least one
    node output, so the node graph is weakly connected.  Otherwise there may be up
    to three graph inputs and nodes that read only graph inputs (several components).
    """
    n_inputs = 1 if connected else draw(st.integers(1, 3))
    graph_inputs = [(f"x{i}", 4) for i in range(n_inputs)]
    outs = []  # (name, width) of node outputs
    nodes, inits = [], []
    n = draw(st.integers(1, max_nodes))
    for k in range(n):
        op = draw(st.sampled_from(OPS))
        pool = graph_inputs + outs
        first_pool = outs if (connected and outs) else pool
        a, wa = draw(st.sampled_from(first_pool))
        out = f"t{k}"
        if op == "Concat":
            partners = [t for t in pool if t[1] + wa <= MAX_WIDTH]
            if not partners:
                op = "Relu"
        if op in ("Relu", "Sigmoid", "Tanh"):
            ins, w = [a], wa
        elif op in ("Add", "Mul"):
            b, _ = draw(st.sampled_from([t for t in pool if t[1] == wa]))
            ins, w = [a, b], wa
            if draw(st.booleans()):
                ins.reverse()
        elif op == "MatMul":
            w = draw(st.sampled_from([2, 4, 8]))
            weight = f"W{k}"
            inits.append(helper.make_tensor(weight, T.FLOAT, [wa, w], np.full(wa * w, 0.25, np.float32)))
            ins = [a, weight]
        else:  # Concat
            b, wb = draw(st.sampled_from(partners))
            ins, w = [a, b], wa + wb
        nodes.append(helper.make_node(op, ins, [out], name=f"n{k}_{op}", **({"axis": 1} if op == "Concat" else {})))
        outs.append((out, w))
    consumed = {i for nd in nodes for i in nd.input}
    used_inputs = [t for t in graph_inputs if t[0] in consumed]
    graph_outputs = [t for t in outs if t[0] not in consumed]
    if allow_shuffle and draw(st.booleans()):
        order = draw(st.permutations(range(len(nodes))))
        nodes = [nodes[i] for i in order]
    g = helper.make_graph(nodes, "random", [helper.make_tensor_value_info(x, T.FLOAT, [4, w]) for x, w in used_inputs],
                          [helper.make_tensor_value_info(y, T.FLOAT, [4, w]) for y, w in graph_outputs], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


support_lists = st.lists(st.sampled_from(OPS), unique=True, max_size=len(OPS))
kinds = st.sampled_from(["kernel", "compiling"])


def run_sim(proto, providers):
    """providers: list of (name, ops, kind) ad-hoc providers, in priority order."""
    model = model_from_proto(proto, path="<random>")
    extra = [adhoc_table(list(ops), name, kind) for name, ops, kind in providers]
    resolution = resolve_providers([p[0] for p in providers], builtin_tables(), extra)
    return summarize(simulate(model, resolution))


# ---------------------------------------------------------------- independent recounts (from the proto)

def producers(proto):
    return {o: n.name for n in proto.graph.node for o in n.output if o}


def expected_provider(op, providers):
    for name, ops, _ in providers:
        if op in ops:
            return name
    return CPU


def recount_transfers(proto, prov):
    prod = producers(proto)
    pairs = set()
    for n in proto.graph.node:
        for t in n.input:
            p = prod.get(t)
            if p is not None and prov[p] != prov[n.name]:
                pairs.add((t, prov[p], prov[n.name]))
    return pairs


def recount_feed(proto, prov):
    graph_inputs = {vi.name for vi in proto.graph.input} - {i.name for i in proto.graph.initializer}
    return {(t, prov[n.name]) for n in proto.graph.node for t in n.input
            if t in graph_inputs and prov[n.name] != CPU}


def same_provider_graph(proto, prov):
    prod = producers(proto)
    G = nx.Graph()
    G.add_nodes_from(n.name for n in proto.graph.node)
    for n in proto.graph.node:
        for t in n.input:
            p = prod.get(t)
            if p is not None and prov[p] == prov[n.name]:
                G.add_edge(p, n.name)
    return G


def node_digraph(proto):
    prod = producers(proto)
    D = nx.DiGraph()
    D.add_nodes_from(n.name for n in proto.graph.node)
    for n in proto.graph.node:
        for t in n.input:
            if t in prod:
                D.add_edge(prod[t], n.name)
    return D


def provider_map(summary):
    return {n["name"]: n["provider"] for n in summary["nodes"]}


# ---------------------------------------------------------------- properties

@SETTINGS
@given(dags(allow_shuffle=False))
def test_generator_makes_valid_models(proto):
    """The generator itself: full ONNX check with strict shape inference, and ORT accepts it."""
    onnx.checker.check_model(proto, full_check=True)


@settings(max_examples=15, deadline=None)
@given(dags(max_nodes=16))
def test_generator_models_run_in_ort(proto):
    """ORT itself loads and runs the generated models (shuffled node order included)."""
    import onnxruntime as ort

    sess = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    feeds = {i.name: np.ones(i.shape, np.float32) for i in sess.get_inputs()}
    outs = sess.run(None, feeds)
    for o, vi in zip(outs, proto.graph.output):
        assert list(o.shape) == [d.dim_value for d in vi.type.tensor_type.shape.dim]


@SETTINGS
@given(dags(), st.lists(st.tuples(support_lists, kinds), min_size=1, max_size=2))
def test_every_node_assigned_once_and_recounts_agree(proto, eps):
    providers = [(f"EP{k}", ops, kind) for k, (ops, kind) in enumerate(eps)]
    s = run_sim(proto, providers)
    names = [n.name for n in proto.graph.node]
    # every node exactly once, on the provider the support lists say
    assert sorted(n["name"] for n in s["nodes"]) == sorted(names)
    prov = provider_map(s)
    op_of = {n.name: n.op_type for n in proto.graph.node}
    for name in names:
        assert prov[name] == expected_provider(op_of[name], providers), name
    for key in ("fragmentList", "partitions"):
        members = [m for f in s[key] for m in f["nodes"]]
        assert sorted(members) == sorted(names), key
        for f in s[key]:
            assert all(prov[m] == f["provider"] for m in f["nodes"])
    assert sum(v["nodes"] for v in s["perProvider"].values()) == len(names)
    # transfers: distinct (tensor, consumer provider) pairs across providers, from the proto
    pairs = recount_transfers(proto, prov)
    assert s["transfers"] == len({(t, to) for t, _, to in pairs})
    assert {(x["tensor"], x["from"], x["to"]) for x in s["transferList"]} == pairs
    assert s["feedTransfers"] == len(recount_feed(proto, prov))
    # fragments: connected components over same-provider edges, with networkx
    G = same_provider_graph(proto, prov)
    comps = {frozenset(c) for c in nx.connected_components(G)}
    assert s["fragments"] == len(comps)
    assert {frozenset(f["nodes"]) for f in s["fragmentList"]} == comps
    assert s["accelerated"] == any(p != CPU for p in prov.values())
    assert s["delegatedNodeCount"] == sum(1 for p in prov.values() if p != CPU)


@SETTINGS
@given(dags(connected=True), kinds)
def test_full_support_of_connected_graph_is_one_fragment(proto, kind):
    D = node_digraph(proto)
    assert nx.is_weakly_connected(D)  # the generator's promise, checked independently
    ops = sorted({n.op_type for n in proto.graph.node})
    s = run_sim(proto, [("EP", ops, kind)])
    assert s["fragments"] == 1
    assert s["transfers"] == 0 and s["transferList"] == []
    assert s["partitionCount"] == 1
    assert s["perProvider"]["EP"] == {"nodes": len(proto.graph.node), "partitions": 1, "fragments": 1}
    assert s["perProvider"][CPU]["nodes"] == 0
    assert s["accelerated"] is True
    assert all(n["reason"] is None for n in s["nodes"])


@SETTINGS
@given(dags(), kinds, st.lists(st.sampled_from(["Conv", "Gemm", "Softmax", "com.microsoft:FusedMatMul"]),
                               unique=True))
def test_support_for_nothing_present_is_not_accelerated(proto, kind, ops):
    s = run_sim(proto, [("EP", ops, kind)])
    assert s["accelerated"] is False
    assert s["delegatedNodeCount"] == 0 and s["partitionCount"] == 0
    assert all(n["provider"] == CPU for n in s["nodes"])
    assert all(n["reason"] == "op_not_in_table" for n in s["nodes"])
    assert s["transfers"] == 0 and s["feedTransfers"] == 0
    D = node_digraph(proto)
    assert s["fragments"] == nx.number_weakly_connected_components(D)


@SETTINGS
@given(dags(max_nodes=16), support_lists, st.booleans())
def test_compiling_partitions_contract_to_a_dag(proto, ops, behind_kernel_ep):
    """ORT's wave grouping exists so that no partition, fused into one node, makes a cycle."""
    providers = [("EP", ops, "compiling")]
    if behind_kernel_ep:  # a kernel EP first takes some ops away: holes in the compiling EP's graph
        providers.insert(0, ("K", ["Relu", "Concat"], "kernel"))
    s = run_sim(proto, providers)
    part_of = {}
    for p in s["partitions"]:
        if p["provider"] == "EP":
            for m in p["nodes"]:
                assert m not in part_of
                part_of[m] = f"partition{p['id']}"
    D = node_digraph(proto)
    C = nx.DiGraph()
    C.add_nodes_from(part_of.get(v, v) for v in D.nodes)
    for u, v in D.edges:
        cu, cv = part_of.get(u, u), part_of.get(v, v)
        if cu != cv:
            C.add_edge(cu, cv)
    assert nx.is_directed_acyclic_graph(C), sorted(part_of.items())


def check_structure(proto, s):
    """Properties that hold whatever decided the providers: coverage, transfers, fragments, acyclic partitions."""
    names = sorted(n.name for n in proto.graph.node)
    assert sorted(n["name"] for n in s["nodes"]) == names
    prov = provider_map(s)
    for key in ("fragmentList", "partitions"):
        assert sorted(m for f in s[key] for m in f["nodes"]) == names, key
        for f in s[key]:
            assert all(prov[m] == f["provider"] for m in f["nodes"])
    pairs = recount_transfers(proto, prov)
    assert {(x["tensor"], x["from"], x["to"]) for x in s["transferList"]} == pairs
    assert s["transfers"] == len({(t, to) for t, _, to in pairs})
    comps = {frozenset(c) for c in nx.connected_components(same_provider_graph(proto, prov))}
    assert {frozenset(f["nodes"]) for f in s["fragmentList"]} == comps
    assert s["accelerated"] == any(p != CPU for p in prov.values())
    compiling = set(s["effectiveProviders"]) - {CPU}
    part_of = {m: f"partition{p['id']}" for p in s["partitions"] if p["provider"] in compiling
               for m in p["nodes"]}
    C = nx.DiGraph()
    D = node_digraph(proto)
    C.add_nodes_from(part_of.get(v, v) for v in D.nodes)
    C.add_edges_from((part_of.get(u, u), part_of.get(v, v)) for u, v in D.edges
                     if part_of.get(u, u) != part_of.get(v, v))
    assert nx.is_directed_acyclic_graph(C)


@SETTINGS
@given(dags(max_nodes=16), st.lists(st.sampled_from(["nnapi", "coreml", "coreml:neuralnetwork", "cuda"]),
                                    min_size=1, max_size=2, unique_by=lambda p: p.split(":")[0]))
def test_shipped_tables_keep_the_structural_properties(proto, requested):
    """The same recounts with the shipped tables and their hooks (min sizes, rejected single ops…)."""
    model = model_from_proto(proto, path="<random>")
    resolution = resolve_providers(requested, builtin_tables())
    s = summarize(simulate(model, resolution))
    check_structure(proto, s)
    assert s["status"] == "ok"


@SETTINGS
@given(dags(max_nodes=14, allow_shuffle=False), st.randoms(use_true_random=False),
       st.sampled_from(["nnapi", "coreml", "cuda"]))
def test_node_order_in_the_file_does_not_matter(proto, rnd, requested):
    """ORT sorts the graph before it infers shapes and partitions (Graph::Resolve,
    onnxruntime/core/graph/graph.cc, 1.2x), so a model whose nodes are listed out of
    order must get the same prediction as the sorted one."""
    shuffled = onnx.ModelProto()
    shuffled.CopyFrom(proto)
    nodes = list(shuffled.graph.node)
    rnd.shuffle(nodes)
    del shuffled.graph.node[:]
    shuffled.graph.node.extend(nodes)

    def facts(m):
        s = summarize(simulate(model_from_proto(m, path="<random>"), resolve_providers([requested],
                                                                                     builtin_tables())))
        return (provider_map(s), {(n["name"], n["reason"]) for n in s["nodes"]}, s["fragments"], s["transfers"],
                {(p["provider"], frozenset(p["nodes"])) for p in s["partitions"]})

    assert facts(shuffled) == facts(proto)


@settings(max_examples=15, deadline=None)
@given(dags(max_nodes=14))
def test_inferred_shapes_match_ort_whatever_the_node_order(proto):
    """Graph outputs declared without a shape: partsim's inferred shapes equal the ones ORT
    itself infers (InferenceSession.get_outputs), shuffled node order included."""
    import onnxruntime as ort

    bare = onnx.ModelProto()
    bare.CopyFrom(proto)
    for o in bare.graph.output:
        o.type.tensor_type.ClearField("shape")
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(bare.SerializeToString(), so, providers=["CPUExecutionProvider"])
    model = model_from_proto(bare, path="<random>")
    for o in sess.get_outputs():
        assert list(model.values[o.name].shape or ()) == o.shape, o.name


@SETTINGS
@given(dags(), support_lists, kinds)
def test_json_is_deterministic_in_process(proto, ops, kind):
    a = to_json(run_sim(proto, [("EP", ops, kind)]))
    b = to_json(run_sim(onnx.load_from_string(proto.SerializeToString()), [("EP", ops, kind)]))
    assert a == b


def test_json_byte_identical_across_hash_seeds(tmp_path):
    """Two real CLI processes with different PYTHONHASHSEED write the same bytes."""
    proto = _fixed_model()
    path = tmp_path / "fixed.onnx"
    path.write_bytes(proto.SerializeToString())
    outputs = []
    for seed in ("0", "4242"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        out = tmp_path / f"out{seed}.json"
        proc = subprocess.run([sys.executable, "cli.py", "simulate", str(path), "--support", "Add,Relu,MatMul,Concat",
                               "--support-kind", "compiling", "--format", "json", "-o", str(out)],
                              cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1]
    s = json.loads(outputs[0])
    assert s["fragments"] > 1 and s["transfers"] > 0  # a model with something to order


def _fixed_model():
    """A fixed, branchy model with several fragments (built without randomness)."""
    nodes, inits = [], []
    prev = ["x"]
    for k in range(12):
        op = OPS[k % len(OPS)]
        a = prev[-1]
        b = prev[-2] if len(prev) > 1 else "x"
        out = f"t{k}"
        if op in ("Add", "Mul"):
            nodes.append(helper.make_node(op, [a, a], [out], name=f"n{k}"))
        elif op == "MatMul":
            inits.append(helper.make_tensor(f"W{k}", T.FLOAT, [4, 4], np.ones(16, np.float32)))
            nodes.append(helper.make_node(op, [a, f"W{k}"], [out], name=f"n{k}"))
        elif op == "Concat":
            nodes.append(helper.make_node(op, [a, b], [f"c{k}"], name=f"n{k}", axis=0))
            nodes.append(helper.make_node("Slice", [f"c{k}", "st", "en"], [out], name=f"s{k}"))
        else:
            nodes.append(helper.make_node(op, [a], [out], name=f"n{k}"))
        prev.append(out)
    inits += [helper.make_tensor("st", T.INT64, [1], [0]), helper.make_tensor("en", T.INT64, [1], [4])]
    g = helper.make_graph(nodes, "fixed", [helper.make_tensor_value_info("x", T.FLOAT, [4, 4])],
                          [helper.make_tensor_value_info(prev[-1], T.FLOAT, [4, 4])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m
