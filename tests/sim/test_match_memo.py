"""Memoized verdicts equal verdicts worked out afresh, node by node, on real graphs.

The matcher (:class:`partsim.sim.match.Matcher`) judges a node once per distinct key
(schema version, port dtypes, and only where a rule reads them: first dynamic input,
input ranks, input constness, named attributes) and hands the same verdict to every
later node with that key.  If the key missed something a rule reads, some node would
get another node's verdict.  Here every node of every corpus model is judged by a
matcher that has seen the whole model and by a fresh one that has seen nothing, for
the shipped tables with the most predicates; the two must agree exactly (rule object
and rejection text).  The builder's topological fast path is checked the same way:
the order it keeps for a file listed in order must be the one a full sort gives.
"""

from pathlib import Path

import networkx as nx
import pytest

from partsim.io.load import load_model
from partsim.ir.order import topological_order
from partsim.rules.load import builtin_tables
from partsim.sim.match import Matcher

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT.parent / "shared" / "corpus"
TABLES = ("NnapiExecutionProvider", "CoreMLExecutionProvider", "CUDAExecutionProvider",
          "OpenVINOExecutionProvider", "QNNExecutionProvider", "XnnpackExecutionProvider",
          "CPUExecutionProvider")


def _models():
    fixtures = sorted((ROOT / "fixtures").glob("*.onnx"))
    if CORPUS.is_dir():
        return fixtures + sorted(CORPUS.rglob("*.onnx"))
    absent = pytest.mark.skip(reason=f"{CORPUS} is absent: the corpus lives in ../shared beside the project")
    return fixtures + [pytest.param(None, marks=absent, id="corpus")]


def _tables():
    tables = builtin_tables()
    picked = []
    for name in TABLES:
        picked.extend(tables.get(name, []))  # every variant (CoreML: both formats)
    return picked


@pytest.fixture(scope="module")
def tables():
    return _tables()


@pytest.mark.parametrize("path", _models(), ids=lambda p: p.name if p else "corpus")
def test_memoized_verdicts_equal_fresh_ones(path, tables):
    model = load_model(path)
    assert len(tables) >= len(TABLES)
    for table in tables:
        shared = Matcher(table, model)
        remembered = [shared.match(n) for n in model.nodes]
        again = [shared.match(n) for n in model.nodes]  # every one a memo hit now
        fresh = [Matcher(table, model).match(n) for n in model.nodes]
        for node, a, b, c in zip(model.nodes, remembered, again, fresh):
            assert a[0] is c[0] and a[1] == c[1], (table.provider, table.variant, node.name, a, c)
            assert b[0] is c[0] and b[1] == c[1], (table.provider, table.variant, node.name, b, c)


@pytest.mark.parametrize("path", _models(), ids=lambda p: p.name if p else "corpus")
def test_kept_file_order_is_a_full_topological_sort(path):
    model = load_model(path)
    made_by = {t: n.index for n in model.nodes for t in n.outputs if t}
    G = nx.DiGraph()
    G.add_nodes_from(range(len(model.nodes)))
    for n in model.nodes:
        for t in n.inputs + n.implicit_inputs:
            if t in made_by:
                G.add_edge(made_by[t], n.index)
    assert topological_order(model) == list(nx.lexicographical_topological_sort(G))
