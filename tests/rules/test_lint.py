"""partsim lint: seeded defects are caught with the right rule id and line; shipped tables pass."""

import json
from pathlib import Path

import pytest

from partsim.cli import main
from partsim.rules.lint import RULES, lint_text

ROOT = Path(__file__).resolve().parents[2]

HEAD = """provider: XnnpackExecutionProvider
kind: kernel
source: {description: test table, version: "1.0"}
ops:
"""

# (name, ops text appended after HEAD (line 5 on), expected rule id, expected line)
DEFECTS = [
    ("unknown-op", "- op: Relux\n", "unknown-op", 5),
    ("unknown-domain", "- op: Foo\n  domain: com.example\n", "unknown-domain", 6),
    ("version-not-since", "- op: Relu\n  versions: [12, 12]\n", "version-not-since", 6),
    ("empty-range", "- op: Relu\n  versions: [14, 13]\n", "empty-version-range", 6),
    ("dtype", "- op: Relu\n  versions: [14, null]\n  types:\n    T: [string]\n", "dtype-outside-constraint", 8),
    ("bad-dtype-name", "- op: Relu\n  types:\n    T: [float, float32]\n", "unknown-dtype", 7),
    ("constraint", "- op: Relu\n  types:\n    X1: [float]\n", "unknown-type-constraint", 7),
    ("port", "- op: Relu\n  types:\n    i3: [float]\n", "unknown-port", 7),
    ("attr", "- op: Conv\n  attrs:\n  - {name: padz, in: [0]}\n", "unknown-attribute", 7),
    ("contradiction", "- op: Conv\n  min_rank: 5\n  max_rank: 3\n", "contradictory-predicate", 6),
    ("in-not-in", "- op: Conv\n  attrs:\n  - {name: group, in: [1], not_in: [1]}\n", "contradictory-predicate", 7),
    ("duplicate", "- op: Relu\n- op: Add\n- op: Relu\n", "duplicate-rule", 7),
    ("overlap", "- op: Relu\n  versions: [6, 13]\n- op: Relu\n  versions: [13, 13]\n", "overlapping-rules", 8),
    ("contradicting", "- op: Shape\n  versions: [15, 18]\n- op: Shape\n  versions: [15, 18]\n  host_outputs: [0]\n",
     "contradicting-rules", 7),
    ("schema", "- op: Relu\n  max_rank: -1\n", "schema", 6),
]


@pytest.mark.parametrize("name,ops,rule,line", DEFECTS, ids=[d[0] for d in DEFECTS])
def test_seeded_defect(tmp_path, name, ops, rule, line):
    f = tmp_path / f"{name}.yaml"
    f.write_text(HEAD + ops)
    found = lint_text(f.read_text(), str(f))
    assert (rule, line) in [(x.rule, x.line) for x in found], found
    assert rule in RULES
    assert main(["lint", str(f)]) == 1 or all(x.level == "warning" for x in found)


def test_table_level_defects(tmp_path):
    text = ("provider: FooExecutionProvider\nkind: kernel\naliases: [cuda]\nops:\n- op: Relu\n"
            "partitioning:\n  stop_ops: [NoSuchOp]\n")
    found = {(x.rule, x.line) for x in lint_text(text, "t.yaml")}
    assert ("missing-source", 1) in found
    assert ("unknown-provider", 1) in found
    assert ("alias-conflict", 3) in found
    assert ("unknown-partition-op", 7) in found


def test_clean_table_and_exit_codes(tmp_path, capsys):
    good = tmp_path / "good.yaml"
    good.write_text(HEAD + "- op: Relu\n  versions: [14, null]\n  types: {T: [float]}\n")
    assert lint_text(good.read_text(), str(good)) == []
    assert main(["lint", str(good)]) == 0
    warn = tmp_path / "warn.yaml"
    warn.write_text(HEAD + "- op: Relu\n- op: Relu\n")
    assert main(["lint", str(warn)]) == 0            # warnings only
    assert main(["lint", "--strict", str(warn)]) == 1
    assert main(["lint", str(tmp_path / "missing.yaml")]) == 2
    bad = tmp_path / "bin.yaml"
    bad.write_bytes(b"\xff\xfe\x00")
    assert main(["lint", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "missing.yaml" in err and "Traceback" not in err
    yml = tmp_path / "yaml.yaml"
    yml.write_text(HEAD + "- op: [\n")
    assert main(["lint", str(yml)]) == 1


def test_sarif_structure(tmp_path, capsys):
    f = tmp_path / "t.yaml"
    f.write_text(HEAD + "- op: Relux\n- op: Relu\n  versions: [12, 12]\n- op: Reluy\n")
    assert main(["lint", "--format", "sarif", str(f)]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["version"] == "2.1.0"
    run = doc["runs"][0]
    ids = [r["id"] for r in run["tool"]["driver"]["rules"]]
    assert len(ids) == len(set(ids)) and set(ids) == {"unknown-op", "version-not-since"}
    lines = sorted(r["locations"][0]["physicalLocation"]["region"]["startLine"] for r in run["results"])
    assert lines == [5, 7, 8]
    for r in run["results"]:
        assert r["level"] in ("error", "warning", "note")
        assert ids[r["ruleIndex"]] == r["ruleId"]
    assert main(["lint", "--format", "json", str(f)]) == 1
    j = json.loads(capsys.readouterr().out)
    assert j["errors"] == 3 and {x["line"] for x in j["findings"]} == {5, 7, 8}


def test_shipped_tables_pass_strict():
    from partsim.rules.lint import lint_paths

    files, findings = lint_paths([ROOT / "rules"])
    assert {f.name for f in files} >= {"tensorrt.yaml", "qnn.yaml", "xnnpack.yaml", "webgpu.yaml"}
    assert findings == []
    for name in ("tensorrt.yaml", "qnn.yaml", "xnnpack.yaml", "webgpu.yaml"):
        assert main(["lint", "--strict", str(ROOT / "rules" / name)]) == 0


def test_generated_tables_are_reproducible():
    from partsim.gen.ep_tables import TABLES, build_table

    for name in TABLES:
        if name in ("qnn", "webgpu"):  # measured on real sessions (partsim/gen/qnn.py, partsim/gen/webgpu.py;
            continue  # tests/gen/test_qnn.py, tests/gen/test_webgpu.py)
        assert build_table(name) == (ROOT / "rules" / f"{name}.yaml").read_text(), name
