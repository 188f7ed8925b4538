"""The shared walkers the twins were merged into: partsim.io.subgraphs (bodies of If/Loop/Scan, checked
against a plain recursive walk on random nestings), ir.graph.component_roots (the one union-find, checked
against networkx) and partsim.address_space (the one address-space ceiling, checked with getrlimit)."""

import subprocess
import sys

import networkx as nx
from hypothesis import given, settings, strategies as st
from onnx import helper

from partsim.io.subgraphs import all_graphs, all_nodes, node_graphs
from partsim.ir.graph import component_roots
from tests.conftest import ROOT


def _recursive_nodes(graph):
    for n in graph.node:
        yield n
        for a in n.attribute:
            if a.HasField("g"):
                yield from _recursive_nodes(a.g)
            for g in a.graphs:
                yield from _recursive_nodes(g)


def _recursive_graphs(graph):
    yield graph
    for n in graph.node:
        for a in n.attribute:
            if a.HasField("g"):
                yield from _recursive_graphs(a.g)
            for g in a.graphs:
                yield from _recursive_graphs(g)


@st.composite
def _graphs(draw, depth=0, counter=None):
    """A graph whose nodes may hold bodies: If (two ``g``), Loop (one ``g``), a GRAPHS attribute."""
    counter = counter if counter is not None else [0]
    nodes = []
    for _ in range(draw(st.integers(0, 3))):
        counter[0] += 1
        name = f"n{counter[0]}"
        kind = draw(st.sampled_from(["Relu", "If", "Loop", "Custom"])) if depth < 3 else "Relu"
        if kind == "If":
            node = helper.make_node("If", ["c"], ["y"], name=name, then_branch=draw(_graphs(depth + 1, counter)),
                                    else_branch=draw(_graphs(depth + 1, counter)))
        elif kind == "Loop":
            node = helper.make_node("Loop", ["m", "c"], ["y"], name=name, body=draw(_graphs(depth + 1, counter)))
        elif kind == "Custom":
            node = helper.make_node("Custom", ["x"], ["y"], name=name, domain="x.y")
            node.attribute.append(helper.make_attribute("bodies", [draw(_graphs(depth + 1, counter))
                                                                   for _ in range(draw(st.integers(1, 2)))]))
        else:
            node = helper.make_node("Relu", ["x"], ["y"], name=name)
        nodes.append(node)
    counter[0] += 1
    return helper.make_graph(nodes, f"g{counter[0]}", [], [])


@settings(max_examples=200, deadline=None)
@given(_graphs())
def test_the_walk_visits_what_a_recursive_walk_visits_in_its_order(graph):
    assert [n.name for n in all_nodes(graph)] == [n.name for n in _recursive_nodes(graph)]
    assert [g.name for g in all_graphs(graph)] == [g.name for g in _recursive_graphs(graph)]
    for n in all_nodes(graph):
        want = len(n.attribute[0].graphs) if n.op_type == "Custom" else {"If": 2, "Loop": 1, "Relu": 0}[n.op_type]
        assert len(node_graphs(n)) == want


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 30).flatmap(lambda n: st.tuples(st.just(n), st.lists(st.tuples(st.integers(0, n - 1),
                                                                                      st.integers(0, n - 1))))))
def test_component_roots_are_networkx_components_named_by_their_smallest_item(case):
    n, edges = case
    g = nx.Graph()
    g.add_nodes_from(range(n))
    g.add_edges_from(edges)
    want = {i: min(c) for c in nx.connected_components(g) for i in c}
    assert component_roots(range(n), edges) == want


def test_the_address_space_ceiling_only_lowers():
    """A limit already tighter (``ulimit -v``) stays; a looser one is lowered, and put back after."""
    code = """
import resource
from partsim.address_space import lower_address_space, restore_address_space
soft, hard = resource.getrlimit(resource.RLIMIT_AS)
resource.setrlimit(resource.RLIMIT_AS, (8 << 30, hard))
assert lower_address_space(16 << 30) is None and resource.getrlimit(resource.RLIMIT_AS)[0] == 8 << 30
saved = lower_address_space(6 << 30)
assert resource.getrlimit(resource.RLIMIT_AS)[0] == 6 << 30
restore_address_space(saved)
assert resource.getrlimit(resource.RLIMIT_AS)[0] == 8 << 30
print("ok")
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120,
                       env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert r.stdout.strip() == "ok", r.stderr
