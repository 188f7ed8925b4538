"""`partsim rules list / show`, lint's unknown-key message at the key's line, the warning when a user table
with lint errors is used."""

import json

import yaml

from partsim.rules.load import load_table, parse_table
from tests.conftest import ROOT, shared_path

RULES = ROOT / "rules"


def test_rules_list_names_every_shipped_table(run_cli):
    code, out, err = run_cli("rules", "list", "-f", "json")
    assert code == 0, err
    records = json.loads(out)
    files = sorted(RULES.glob("*.yaml"))
    assert [r["file"] for r in records] == [f.name for f in files]
    for r, f in zip(records, files):
        doc = yaml.safe_load(f.read_text())
        assert r["provider"] == doc["provider"] and r["kind"] == doc["kind"]
        assert r["ops"] == len({(o.get("domain", ""), o["op"]) for o in doc["ops"]})
    code, table, _ = run_cli("rules", "list")
    assert code == 0
    for r in records:
        assert r["file"] in table and r["provider"] in table
    assert "coreml:mlprogram (default)" in table and "partsim rules show NAME > my.yaml" in table


def test_rules_show_prints_a_copy_that_replaces_the_shipped_table(run_cli, tmp_path):
    code, text, err = run_cli("rules", "show", "nnapi")
    assert code == 0, err
    shipped = (RULES / "nnapi.yaml").read_text()
    assert text.splitlines()[1:] == shipped.splitlines()[1:]  # only the "generated file" comment differs
    assert parse_table(text).rules == load_table(RULES / "nnapi.yaml").rules
    mine = tmp_path / "my.yaml"
    mine.write_text(text)
    model = shared_path("corpus", "full", "tiny_transformer.ts.onnx")
    _, shipped_json, _ = run_cli("simulate", model, "-p", "nnapi", "-f", "json")
    code, copied_json, err = run_cli("simulate", model, "-p", "nnapi", "-r", mine, "-f", "json")
    assert code == 0 and err == ""  # a clean copy: no lint warning
    assert json.loads(copied_json)["nodes"] == json.loads(shipped_json)["nodes"]
    # the edit a user makes: NNAPI gets LayerNormalization; the prediction follows the edited copy,
    # and agrees with whatif's own way of adding the op
    mine.write_text(text + "- op: LayerNormalization\n")
    code, edited, err = run_cli("simulate", model, "-p", "nnapi", "-r", mine, "-f", "json")
    assert code == 0, err
    ln = [n for n in json.loads(edited)["nodes"] if n["opType"] == "LayerNormalization"]
    assert ln and all(n["reason"] != "op_not_in_table" for n in ln)
    code, w, err = run_cli("whatif", model, "-p", "nnapi", "--add-support", "LayerNormalization", "-f", "json")
    assert code == 0, err
    after = {ep: v["after"] for ep, v in json.loads(w)["perProvider"].items()}
    assert json.loads(edited)["perProvider"] == after


def test_rules_show_variants_and_unknown_names(run_cli):
    code, text, _ = run_cli("rules", "show", "coreml:neuralnetwork")
    assert code == 0 and "variant: neuralnetwork" in text
    code, text, _ = run_cli("rules", "show", "coreml")
    assert code == 0 and "variant: mlprogram" in text  # the default variant
    code, text, _ = run_cli("rules", "show", "CUDAExecutionProvider")
    assert code == 0 and "provider: CUDAExecutionProvider" in text
    code, out, err = run_cli("rules", "show", "nnap")
    assert code == 2 and out == "" and err.count("\n") == 1 and "did you mean nnapi?" in err


HEAD = 'provider: XnnpackExecutionProvider\nkind: kernel\nsource: {description: t, version: "1.0"}\nops:\n'


def test_unknown_key_is_named_at_its_line_with_the_closest_key(tmp_path, run_cli):
    f = tmp_path / "typo.yaml"
    f.write_text(HEAD + "- op: Relu\n- op: Conv\n  min_rank: 3\n  max_ranks: 4\n")
    code, out, _ = run_cli("lint", f)
    assert code == 1
    assert f"{f}:8: error[unknown-key] ops/1: unknown key max_ranks (did you mean max_rank?)" in out
    code, out, err = run_cli("simulate", ROOT / "fixtures" / "chain.onnx", "-r", f, "-p", "xnnpack")
    assert code == 2 and out == ""
    assert err == f"partsim: error: {f}:8: ops/1: unknown key max_ranks (did you mean max_rank?)\n"
    f.write_text(HEAD.replace("source:", "sourc:") + "- op: Relu\n")
    code, out, _ = run_cli("lint", "-f", "json", f)
    found = {(x["rule"], x["line"], x["message"]) for x in json.loads(out)["findings"]}
    assert ("unknown-key", 3, "unknown key sourc (did you mean source?)") in found


def test_a_user_table_with_lint_errors_warns_when_used(tmp_path, run_cli):
    f = tmp_path / "mine.yaml"
    f.write_text(HEAD + "- op: MatMul\n- op: Relux\n")
    code, out, err = run_cli("simulate", ROOT / "fixtures" / "chain.onnx", "-r", f, "-p", "xnnpack", "-f", "json")
    assert code == 0 and json.loads(out)["accelerated"]  # the table is still used as written
    assert err.count("\n") == 1 and err.startswith(f"partsim: warning: {f} has 1 lint error, first {f}:6: Relux")
    assert f"run partsim lint {f}" in err
    f.write_text(HEAD + "- op: MatMul\n")
    code, out, err = run_cli("simulate", ROOT / "fixtures" / "chain.onnx", "-r", f, "-p", "xnnpack")
    assert code == 0 and err == ""


def test_every_shipped_table_shows_under_its_listed_name(run_cli):
    code, out, _ = run_cli("rules", "list", "-f", "json")
    for r in json.loads(out):
        name = (r["aliases"][0] if r["aliases"] else r["provider"]) + (f":{r['variant']}" if r["variant"] else "")
        code, text, err = run_cli("rules", "show", name)
        assert code == 0, err
        assert parse_table(text).rules == load_table(RULES / r["file"]).rules, name
