"""The layout's promises, checked: no import circle, a pure simulation core, no leaked temp folders."""

import ast
import json
import subprocess
import sys
import textwrap

import networkx as nx
import pytest

from tests.conftest import ROOT, shared_path

PACKAGE = ROOT / "partsim"


def _module_name(path):
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_package(path):
    return path.name == "__init__.py"


def import_graph():
    """partsim module -> partsim modules it imports (at the top or inside a function)."""
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    g = nx.DiGraph()
    for name, path in modules.items():
        g.add_node(name)
        package = name if _is_package(path) else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            targets = []
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    mod = ".".join(base + ([node.module] if node.module else []))
                else:
                    mod = node.module or ""
                targets = [f"{mod}.{a.name}" if f"{mod}.{a.name}" in modules else mod for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            for t in targets:
                if t in modules and t != name:
                    g.add_edge(name, t)
    return g


def test_import_graph_has_no_circle():
    g = import_graph()
    # a package's __init__ re-exporting its own modules is not a circle of topics
    for n in list(g.nodes):
        for m in list(g.successors(n)):
            if m.startswith(n + ".") or n.startswith(m + "."):
                g.remove_edge(n, m)
    cycles = list(nx.simple_cycles(g))
    assert cycles == [], f"import circles: {cycles[:5]}"


def test_every_package_star_import_works():
    """A package's ``__all__`` names what it has: ``from partsim.X import *`` imports (numerics once listed
    modules that had moved, and raised)."""
    for init in sorted(PACKAGE.rglob("__init__.py")):
        name = _module_name(init)
        exec(f"from {name} import *", {})


def test_cli_main_leaves_the_garbage_collector_as_it_found_it():
    import gc

    from partsim.cli import main

    assert gc.isenabled()
    assert main(["rules", "list"]) == 0 and gc.isenabled()
    gc.disable()
    try:
        assert main(["rules", "list"]) == 0 and not gc.isenabled()
    finally:
        gc.enable()


def test_conftest_is_imported_once():
    """tests/ is a package: the conftest pytest loads and the one tests import are one module (two copies ran its
    setup twice, each with its own cache folder)."""
    import tests.conftest

    assert sys.modules.get("conftest", tests.conftest) is tests.conftest


def test_the_checker_finds_a_circle():
    """The check above is not vacuous: two modules importing each other are a cycle for it."""
    g = import_graph()
    assert g.has_edge("partsim.cli.simulate", "partsim.api")
    g.add_edge("partsim.api", "partsim.cli.simulate")
    assert list(nx.simple_cycles(g))


PURITY_PROBE = textwrap.dedent('''
    import builtins, io, json, os, subprocess as _sp, sys
    from partsim.io.load import load_model
    from partsim.rules.load import builtin_tables
    from partsim.rules.resolve import resolve_providers

    model = load_model(sys.argv[1])
    tables = builtin_tables()
    names = ("NnapiExecutionProvider", "CUDAExecutionProvider", "QNNExecutionProvider", "OpenVINOExecutionProvider",
             "CPUExecutionProvider")
    loaded = {p: tables[p] for p in names}
    resolutions = [resolve_providers([p], loaded) for p in ("nnapi", "cuda", "qnn", "openvino")]

    banned = ("onnxruntime", "yaml", "jsonschema", "subprocess", "onnx")
    for name in list(sys.modules):
        if name.split(".")[0] in banned or name.startswith("partsim.sim"):
            del sys.modules[name]

    class Block:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in banned:
                raise ImportError(f"the simulation imported {name}")
            return None

    sys.meta_path.insert(0, Block())

    def no_io(*a, **k):
        raise AssertionError(f"the simulation opened {a[:1]}")

    builtins.open = io.open = os.open = no_io
    from partsim.sim import simulate, summarize

    out = []
    for r in resolutions:
        a = simulate(model, r)
        s = summarize(a)
        out.append([s["partitionCount"] if "partitionCount" in s else None, a.status,
                    sum(p != "CPUExecutionProvider" for p in a.provider)])
    sys.stdout.write(json.dumps(out) + "\\n")
''')


def small_cnn(path, blocks=40, channels=8, side=16):
    """A CNN of ``blocks`` Conv -> Relu -> Add(residual) blocks (3 nodes each), saved at ``path``: layout-sensitive
    Convs for the NHWC pass, ops every table here claims."""
    from onnx import helper

    from tests.modelbuild import const, model, save, vi

    nodes, inits, x = [], [], "x"
    for k in range(blocks):
        inits += [const(f"w{k}", [channels, channels, 3, 3], 0.01), const(f"b{k}", [channels], 0.0)]
        nodes += [helper.make_node("Conv", [x, f"w{k}", f"b{k}"], [f"c{k}"], name=f"conv{k}", pads=[1, 1, 1, 1]),
                  helper.make_node("Relu", [f"c{k}"], [f"r{k}"], name=f"relu{k}"),
                  helper.make_node("Add", [f"r{k}", x], [f"a{k}"], name=f"add{k}")]
        x = f"a{k}"
    shape = [1, channels, side, side]
    return save(model(nodes, [vi("x", shape)], [vi(x, shape)], inits), path)


@pytest.fixture(params=["built_cnn", "mobilenet_v2"])
def cnn(request, tmp_path):
    """A CNN of over 100 nodes: one built here (so the check runs on a fresh clone), and mobilenet_v2 of the
    corpus where ../shared is present."""
    if request.param == "built_cnn":
        return small_cnn(tmp_path / "cnn.onnx")
    return shared_path("corpus", "graph_only", "mobilenet_v2.ts.onnx")


def test_simulation_runs_without_io_onnx_ort_yaml_or_subprocess(cnn):
    model = cnn
    proc = subprocess.run([sys.executable, "-c", PURITY_PROBE, str(model)], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    nnapi, cuda, qnn, openvino = json.loads(proc.stdout.strip().splitlines()[-1])
    assert nnapi[1] == "ok" and nnapi[2] > 0
    assert cuda[2] > 100  # CUDA takes almost every node of a CNN
    assert qnn[2] > 100 and openvino[2] > 100  # the NHWC layout pass and OpenVINO's clusters ran too


def test_purity_probe_catches_io(tmp_path):
    """The probe is not vacuous: a simulation that opened a file would fail it."""
    probe = PURITY_PROBE.replace("from partsim.sim import simulate, summarize",
                                 "from partsim.sim import simulate, summarize\nopen('/etc/hostname')")
    model = small_cnn(tmp_path / "cnn.onnx")
    proc = subprocess.run([sys.executable, "-c", probe, str(model)], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode != 0 and "the simulation opened" in proc.stderr


def test_observation_child_removes_its_temp_folder(tmp_path, monkeypatch):
    from partsim.runtime.observe import run_session

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    model = ROOT / "partsim" / "data" / "one_relu.onnx"
    rec = run_session(model, ["CPUExecutionProvider"], timeout=120)
    assert rec["state"] == "ok"
    assert not list(tmp_path.glob("partsim-ort-*")), "ort_child left its profile/log folder behind"


def test_rules_differing_only_in_dtypes_are_different_rules():
    from partsim.rules.table import OpRule

    a = OpRule(op="Relu", types={"T": ("float",)})
    b = OpRule(op="Relu", types={"T": ("int8",)})
    assert a != b
    assert a == OpRule(op="Relu", types={"T": ("float",)})
    assert len({a, b}) == 2  # still hashable (dtypes left out of the hash, not of equality)


def test_readme_names_every_module():
    """docs/architecture.md keeps step with the package: "Where the code lives" names every module (the
    per-format renderers of report/ are named in "Output: one renderer per record and format",
    the command modules of cli/ are one per command, named in the README or docs/commands.md)."""
    text = (ROOT / "docs" / "architecture.md").read_text() + (ROOT / "README.md").read_text() + \
        (ROOT / "docs" / "commands.md").read_text()
    section = text[text.index("## Where the code lives"):text.index("## How the prediction is made")]
    output = text[text.index("### Output: one renderer per record and format"):]
    output = output[:output.index("\n## ")]
    commands = {p.stem.replace("_", "-") for p in (PACKAGE / "cli").glob("*.py")} - {"args", "user-tables", "__init__",
                                                                                     "__main__"}
    missing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel, package = path.relative_to(ROOT).as_posix(), path.parent.name
        if path.name in ("__init__.py", "__main__.py") or rel in section:
            continue
        if package in ("report", "render", "gen", "cli") and f"`{path.name}`" in section:
            continue
        if package == "report" and f"`{path.stem}`" in output:
            continue
        if package == "cli" and path.stem.replace("_", "-") in commands and f"partsim {path.stem.replace('_', '-')}" in text:
            continue
        missing.append(rel)
    assert missing == []


def test_runtime_facts_reach_the_simulation_as_a_record_not_through_the_ir():
    """Issue 32: the prepare stage hands ORT's facts (name counter, partitioning rounds, nodes rewritten after
    partitioning, pinned nodes) to the simulation in a frozen record; nothing outside the IR writes into the
    IR's cache (``Model.derived`` memoizes what the IR computes from itself)."""
    import dataclasses
    import re

    from partsim.runtime.pipeline import PreparedGraph
    from partsim.sim.facts import SessionFacts

    writers = []
    for path in sorted((ROOT / "partsim").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        text = path.read_text(encoding="utf-8")
        for key in re.findall(r"\.derived\(\s*\"([^\"]+)\"", text):
            owner = key.split(".")[0]
            # a cache key is named after the module that computes it ("match.signatures", "summary...")
            # or is the IR's own ("topological_order", "scope_members")
            if not (rel.startswith(("partsim/ir/", f"partsim/sim/{owner}.py")) or rel.endswith(f"/{owner}.py")):
                writers.append((rel, key))
    assert not writers, writers
    facts = SessionFacts(3, {1: 1}, {"a"}, {"n": "CPUExecutionProvider"})
    for record in (facts, PreparedGraph(model=None, facts=facts)):
        with pytest.raises(dataclasses.FrozenInstanceError):
            record.level = "all"
    with pytest.raises(TypeError):
        facts.partition_rounds[2] = 1  # read-only mapping
