"""Small things a new user trips over (issue 17 item 10): -o says what it wrote, a bad option shows the
command's own usage, whatif --help has one "changes" section, plural forms, unique names for inlined nodes."""

import json

import onnx
from onnx import TensorProto as T
from onnx import helper as h

from tests.conftest import ROOT, run_subprocess

CHAIN = ROOT / "fixtures" / "chain.onnx"


def test_output_file_is_announced_on_stderr(run_cli, tmp_path):
    out = tmp_path / "s.json"
    code, stdout, err = run_cli("simulate", CHAIN, "--support", "MatMul", "-f", "json", "-o", out)
    assert code == 0 and stdout == ""
    from partsim.report.text import human_bytes

    assert err == f"partsim: wrote {out} ({human_bytes(out.stat().st_size)})\n"
    _, direct, _ = run_cli("simulate", CHAIN, "--support", "MatMul", "-f", "json")
    assert out.read_text() == direct
    code, _, err = run_cli("rules", "show", "nnapi", "-o", tmp_path / "my.yaml")
    assert code == 0 and err.startswith(f"partsim: wrote {tmp_path / 'my.yaml'} (") and "KiB)" in err
    code, _, err = run_cli("synth", "--nodes", "5", "-o", tmp_path / "m.onnx")
    assert code == 0 and err.startswith(f"partsim: wrote {tmp_path / 'm.onnx'} (")


def test_a_bad_option_shows_the_commands_own_usage():
    r = run_subprocess("simulate", CHAIN, "--bogus")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith("usage: partsim simulate ")
    assert r.stderr.rstrip().endswith("partsim simulate: error: unrecognized arguments: --bogus")
    r = run_subprocess("rules", "show", "nnapi", "--bogus")
    assert r.returncode == 2 and r.stderr.startswith("usage: partsim rules show ")


def test_whatif_help_has_one_changes_section(run_cli):
    code, out, _ = run_cli("whatif", "--help")
    assert code == 0
    assert out.count("\nchanges:\n") == 1
    section = out.split("\nchanges:\n", 1)[1]
    for opt in ("--add-support", "--dim NAME=VALUE", "--opset", "--drop-provider", "--reorder", "--optimize",
                "--base-optimize"):
        assert opt in section, opt
    assert "--fix-dim" not in out


def test_plural_forms(run_cli, tmp_path):
    code, out, _ = run_cli("simulate", ROOT / "partsim" / "data" / "one_relu.onnx")
    assert code == 0 and "(1 node as ORT partitions them)" in out and "(1 nodes)" not in out
    code, out, _ = run_cli("simulate", CHAIN, "--level", "disable")
    assert "(7 nodes as ORT partitions them)" in out
    code, out, _ = run_cli("lint", ROOT / "rules" / "nnapi.yaml")
    assert code == 0 and out.endswith("1 file checked: 0 errors, 0 warnings\n")
    code, out, _ = run_cli("lint", ROOT / "rules")
    n = len(list((ROOT / "rules").glob("*.yaml")))
    assert out.endswith(f"{n} files checked: 0 errors, 0 warnings\n")


def _twice_inlined(path, named):
    """A local function (Relu then Neg) called twice, then an unnamed Relu: ORT inlines both calls."""
    kw = (lambda n: {"name": n}) if named else (lambda n: {})
    f = h.make_function("local", "MyF", ["x"], ["y"], [h.make_node("Relu", ["x"], ["t"], **kw("r")),
                                                       h.make_node("Neg", ["t"], ["y"], **kw("n"))],
                        [h.make_opsetid("", 17)])
    g = h.make_graph([h.make_node("MyF", ["a"], ["b"], domain="local", name="f1"),
                      h.make_node("MyF", ["b"], ["c"], domain="local", name="f2"), h.make_node("Relu", ["c"], ["d"])],
                     "g", [h.make_tensor_value_info("a", T.FLOAT, [2, 3])], [h.make_tensor_value_info("d", T.FLOAT, [2, 3])])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17), h.make_opsetid("local", 1)], functions=[f],
                     ir_version=10)
    onnx.checker.check_model(m)
    onnx.save(m, str(path))
    return path


def test_inlined_nodes_get_unique_names_in_observations(run_cli, tmp_path):
    for named in (True, False):
        model = _twice_inlined(tmp_path / f"fn{named}.onnx", named)
        code, out, err = run_cli("observe", model, "-p", "cpu")
        assert code == 0, err
        obs = json.loads(out)
        # 1 Relu of the graph + 2 inlined calls x (Relu, Neg): five nodes, none merged into another
        assert len(obs["nodes"]) == 5
        ops = sorted(obs["opTypes"].values())
        assert ops == ["Neg", "Neg", "Relu", "Relu", "Relu"]
        assert sum(len(p["nodes"]) for p in obs["partitions"]) == 5
        if named:  # ORT's own names for the inlined bodies are kept
            assert {"_inlfunc_MyF_r", "_inlfunc_MyF_n", "_inlfunc_MyF_token_0_r"} <= set(obs["nodes"])


def test_no_singular_count_with_a_plural_noun(run_cli):
    import re

    from tests.conftest import shared_path

    tt = shared_path("corpus", "full", "tiny_transformer.ts.onnx")
    outputs = [run_cli("blame", tt, "-p", "nnapi")[1], run_cli("simulate", tt, "-p", "nnapi")[1],
               run_cli("whatif", tt, "-p", "nnapi", "--add-support", "Erf")[1],
               run_cli("simulate", ROOT / "partsim" / "data" / "one_relu.onnx")[1],
               run_cli("lint", ROOT / "rules" / "nnapi.yaml")[1]]
    assert "non_constant_input: 1 node in 1 group, e.g." in outputs[0]
    wrong = re.compile(r"(?<![\d.])1 (nodes|groups|partitions|copies|files|errors|warnings|transfers|"
                       r"shape subgraphs)\b")
    for text in outputs:
        assert not wrong.search(text), wrong.search(text)
