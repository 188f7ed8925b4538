"""Output that tells the user what to do next (issue 17): glossary, one detail per reason, next steps,
one --dim on every command that takes a model."""

import argparse
import json
import shlex

import onnx
import pytest

from partsim.cli import build_parser
from partsim.report.glossary import GLOSSARY, REASONS
from tests.conftest import ROOT, shared_path, as_written_cli


# These tests describe the graph as written (an ORT_DISABLE_ALL session): level disable unless asked
@pytest.fixture
def run_cli(run_cli):
    return as_written_cli(run_cli, commands=("simulate", "verify", "render", "blame"))


SCHEMA = json.loads((ROOT / "partsim" / "data" / "summary.schema.json").read_text())


def _table_and_json(run_cli, *argv):
    code, table, err = run_cli("simulate", *argv)
    assert code == 0, err
    code, out, err = run_cli("simulate", *argv, "-f", "json")
    assert code == 0, err
    return table, json.loads(out)


def test_every_reason_row_shows_the_first_nodes_detail(run_cli):
    model = shared_path("corpus", "graph_only", "mobilenet_v2.ts.onnx")
    table, s = _table_and_json(run_cli, model, "-p", "coreml")
    groups = {}
    for n in s["nodes"]:
        if n["reason"]:
            groups.setdefault((n["reason"], n["opType"]), n)
    assert len(groups) >= 2  # Conv (non-constant bias) and Flatten (no rule) on CoreML
    rows = [line for line in table.splitlines() if line.split()[:1] and line.split()[0] in REASONS]
    for (reason, op), first in groups.items():
        line = next(r for r in rows if r.split()[:2] == [reason, op])
        assert " ".join(first["reasonDetail"].split())[:60] in line, (line, first)


def test_next_steps_name_the_largest_cause_and_a_command_that_removes_it(run_cli):
    """mobilenet_v2 on NNAPI: 39 Conv nodes keep a computed bias; the footer's whatif line, run as
    printed, must really move them (ORT's own constant folding) -- checked by re-simulating."""
    model = shared_path("corpus", "graph_only", "mobilenet_v2.ts.onnx")
    table, s = _table_and_json(run_cli, model, "-p", "nnapi")
    footer = table.split("\nnext steps:\n", 1)[1].split("\nwords:\n", 1)[0]
    convs = sum(1 for n in s["nodes"] if n["reason"] == "non_constant_input" and n["opType"] == "Conv")
    assert f"non_constant_input keeps {convs} Conv nodes off NnapiExecutionProvider" in footer
    commands = [shlex.split(line.strip())[1:] for line in footer.splitlines() if line.strip().startswith("partsim ")]
    assert [c[0] for c in commands] == ["whatif", "blame"]
    code, out, err = run_cli(*commands[0], "-f", "json")
    assert code == 0, err
    w = json.loads(out)
    assert w["change"]["acceleratorPartitions"] < 0 and w["change"]["transfers"] < 0
    code, out, err = run_cli(*commands[1], "-f", "json")
    assert code == 0, err
    assert json.loads(out)["firstProvider"] == "NnapiExecutionProvider"


def test_next_steps_for_a_cpu_only_request_and_for_unactionable_reasons(run_cli):
    table, _ = _table_and_json(run_cli, ROOT / "fixtures" / "chain.onnx")
    assert "only the CPU was asked for" in table
    bert = shared_path("corpus", "graph_only", "bert_tiny.ts.onnx")
    table, s = _table_and_json(run_cli, bert, "-p", "cuda")
    assert {n["reason"] for n in s["nodes"] if n["reason"]} == {"cpu_preferred"}
    assert "a model change does not remove" in table and "partsim whatif" not in table


def test_glossary_in_help_and_under_the_table(run_cli):
    code, top, _ = run_cli("--help")
    assert code == 0
    code, sim, _ = run_cli("simulate", "--help")
    assert code == 0
    table, _ = _table_and_json(run_cli, ROOT / "fixtures" / "chain.onnx", "--support", "MatMul")
    words = table.split("\nwords:\n", 1)[1]
    for term in GLOSSARY:
        assert f"  {term}: " in top and f"  {term}: " in sim and f"  {term}: " in words, term
    for reason in REASONS:
        assert f"  {reason}: " in sim


def test_reason_glossary_covers_exactly_the_contracts_categories():
    enum = SCHEMA["properties"]["nodes"]["items"]["properties"]["reason"]["enum"]
    assert set(REASONS) == {r for r in enum if r is not None}


def _model_commands():
    """Every command whose parser takes a MODEL positional (directly)."""
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    out = {}
    for name, p in sub.choices.items():
        dests = {a.dest: a for a in p._actions if a.help != argparse.SUPPRESS}
        if "model" in dests and not dests["model"].option_strings:
            out[name] = dests
    return out


def test_every_command_that_takes_a_model_has_one_dim_option():
    cmds = _model_commands()
    assert {"simulate", "render", "verify", "blame", "whatif", "observe", "receipt", "run-compare",
            "determinism", "bundle-id", "providers"} <= set(cmds) | {"bundle-id", "providers"}
    for name, dests in cmds.items():
        if name in ("bundle-id", "providers"):  # bundle-id hashes files; providers places a one-node model
            continue
        assert "dim" in dests and dests["dim"].option_strings == ["--dim"], name
        assert dests["dim"].metavar == "NAME=VALUE", name
    assert "fix_dim" not in cmds["whatif"]  # --fix-dim (hidden) is only the old spelling of --dim


def _fixed_copy(src, dst, dims):
    m = onnx.load(str(src), load_external_data=False)
    for vi in list(m.graph.input) + list(m.graph.output) + list(m.graph.value_info):
        for d in vi.type.tensor_type.shape.dim:
            if d.dim_param in dims:
                d.dim_value = dims[d.dim_param]
    onnx.save(m, str(dst))
    return dst


def test_simulate_dim_equals_a_model_with_the_dims_written_in(run_cli, tmp_path):
    bert = shared_path("corpus", "graph_only", "bert_tiny.ts.onnx")
    _, fixed = _table_and_json(run_cli, bert, "-p", "nnapi", "--dim", "batch=1,seq=128")
    _, written = _table_and_json(run_cli, _fixed_copy(bert, tmp_path / "b.onnx", {"batch": 1, "seq": 128}),
                                 "-p", "nnapi")
    _, open_dims = _table_and_json(run_cli, bert, "-p", "nnapi")
    placed = lambda s: [(n["name"], n["provider"], n["reason"]) for n in s["nodes"]]  # noqa: E731
    assert placed(fixed) == placed(written) != placed(open_dims)
    assert fixed["partitions"] == written["partitions"]
    assert any("batch=1, seq=128" in w for w in fixed["warnings"])
    table, _ = _table_and_json(run_cli, bert, "-p", "nnapi", "--dim", "batch=1", "--dim", "seq=128")
    assert "note       symbolic dimensions fixed with --dim (batch=1, seq=128)" in table


@pytest.mark.parametrize("command", ["simulate", "render", "verify", "blame", "whatif"])
def test_dim_errors_are_one_line_and_worded_alike(run_cli, command):
    bert = shared_path("corpus", "graph_only", "bert_tiny.ts.onnx")
    extra = {"verify": ["--baseline", "nope.json"], "whatif": ["--add-support", "Erf"]}.get(command, [])
    code, out, err = run_cli(command, bert, "-p", "nnapi", "--dim", "batch=x", *extra)
    assert code == 2 and out == "" and err == "partsim: error: --dim 'batch=x': expected NAME=VALUE with a " \
                                             "positive integer VALUE\n"
    if command != "blame":  # blame measures dims one at a time; --dim only sets the size it tries
        code, _, err = run_cli(command, bert, "-p", "nnapi", "--dim", "bat=1", *extra)
        assert code == 2 and "--dim bat: no graph input has that symbolic dimension (symbolic: batch, seq)" in err


def test_runtime_commands_share_the_parser(run_cli):
    model = ROOT / "fixtures" / "chain.onnx"
    for argv in (["observe", model], ["determinism", model], ["receipt", model, "-p", "cpu", "--abs-tol", "1",
                                                             "--rel-tol", "1"]):
        code, out, err = run_cli(*argv, "--dim", "N=0")
        assert code == 2 and err == "partsim: error: --dim 'N=0': expected NAME=VALUE with a positive integer " \
                                    "VALUE\n", argv


def test_contract_ships_and_every_citation_names_one_of_its_sections():
    import re

    contract = (ROOT / "docs" / "contract.md").read_text(encoding="utf-8")
    sections = set(re.findall(r"^## §(\w+) ", contract, flags=re.M))
    assert {"1", "2", "3", "4", "5", "6", "6a", "7", "8"} <= sections
    cited = []
    for path in sorted((ROOT / "partsim").rglob("*")):
        if path.suffix in (".py", ".json"):
            cited += [(path.name, c) for c in re.findall(r"docs/contract\.md §(\w+)", path.read_text(encoding="utf-8"))]
    for page in [ROOT / "README.md", *sorted(p for p in (ROOT / "docs").glob("*.md") if p.name != "contract.md")]:
        cited += [(page.name, c) for c in re.findall(r"docs/contract\.md §(\w+)", page.read_text(encoding="utf-8"))]
    assert len(cited) >= 26  # the code used to cite an unshipped "SPEC §N" this often
    assert [c for c in cited if c[1] not in sections] == []
    assert "SPEC" not in "".join(p.read_text(encoding="utf-8") for p in (ROOT / "partsim").rglob("*.py"))
    for term in ("fragment", "partition", "transfer", "feed transfer", "Memcpy"):
        assert f"**{term}" in contract or f"**{term.lower()}" in contract or term in contract, term
    for reason in REASONS:
        assert f"`{reason}`" in contract, reason


def test_verify_and_render_take_the_same_dim(run_cli, tmp_path):
    bert = shared_path("corpus", "graph_only", "bert_tiny.ts.onnx")
    written = _fixed_copy(bert, tmp_path / "b.onnx", {"batch": 1, "seq": 8})
    code, dot_dim, err = run_cli("render", bert, "-p", "nnapi", "--dim", "batch=1,seq=8", "-f", "dot")
    assert code == 0, err
    code, dot_written, _ = run_cli("render", written, "-p", "nnapi", "-f", "dot")
    code, dot_open, _ = run_cli("render", bert, "-p", "nnapi", "-f", "dot")
    assert dot_dim.replace(str(bert), "M").replace("bert_tiny.ts.onnx", "M") == \
        dot_written.replace(str(written), "M").replace("b.onnx", "M")
    assert dot_dim != dot_open
    # verify: the prediction and the real session (its inputs sized by --dim) on the same fixed model
    code, out, err = run_cli("verify", bert, "-p", "cpu", "--observe", "--dim", "batch=1,seq=8", "-f", "json")
    assert code == 0, err
    v = json.loads(out)["verify"]
    assert v["passed"] and v["compared"] > 100


def test_next_steps_keep_the_users_dims_in_the_whatif_line(run_cli):
    bert = shared_path("corpus", "graph_only", "bert_tiny.ts.onnx")
    table, shown = _table_and_json(run_cli, bert, "-p", "nnapi", "--dim", "batch=1")
    footer = table.split("\nnext steps:\n", 1)[1].split("\nwords:\n", 1)[0]
    whatif_line = next(line for line in footer.splitlines() if "partsim whatif" in line)
    # the user's dim kept in both runs (--base-dim), the open one as the change
    assert whatif_line.strip().endswith("--base-dim batch=1 --dim seq=1")
    blame_line = next(line for line in footer.splitlines() if "partsim blame" in line)
    assert blame_line.strip().endswith("--dim batch=1")  # blame keeps it too
    code, out, err = run_cli(*shlex.split(whatif_line.strip())[1:], "-f", "json")
    assert code == 0, err
    result = json.loads(out)
    assert result["changes"] == [{"change": "fix-dim", "value": "seq=1"}]
    assert result["before"]["acceleratorPartitions"] == shown["partitionCount"]  # whatif's before is the prediction


def test_next_steps_of_a_session_ort_would_not_load_say_so_first(run_cli, tmp_path):
    """A model onnxruntime 1.31.1 refuses at load (opset 25's Attention attribute ``left_window_size``, which its
    Attention-24 lacks; checked against a real session) gets no "nothing to change": the first step says the
    session fails at load and what to change."""
    import onnxruntime as ort
    from onnx import TensorProto as T
    from onnx import helper

    vi = helper.make_tensor_value_info
    io = [vi(n, T.FLOAT, [1, 2, 4, 8]) for n in "QKV"]
    node = helper.make_node("Attention", ["Q", "K", "V"], ["Y"], name="att", is_causal=1, left_window_size=2)
    m = helper.make_model(helper.make_graph([node], "g", io, [vi("Y", T.FLOAT, None)]),
                          opset_imports=[helper.make_opsetid("", 25)], ir_version=11)
    path = tmp_path / "windowed.onnx"
    onnx.save(m, path)
    with pytest.raises(Exception, match="Unrecognized attribute: left_window_size"):
        ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    table, s = _table_and_json(run_cli, path, "-p", "qnn")
    assert s["status"] == "session_would_fail" and "left_window_size" in s["failure"]
    steps = table.split("next steps:")[1]
    assert "nothing to change" not in table
    assert steps.lstrip().startswith("- ORT would refuse to load the model") and "opset" in steps
