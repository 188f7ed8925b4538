"""The report layer: one JSON encoder, every text/SARIF/JUnit renderer in partsim/report/, thin cli modules."""

import ast
import json
from pathlib import Path

from partsim.report.output import to_json

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "partsim"

HEAD = """provider: XnnpackExecutionProvider
kind: kernel
source: {description: "table for the café", version: "1.0"}
ops:
- op: Relé
"""


def test_lint_json_and_sarif_use_the_one_encoder(tmp_path, run_cli):
    f = tmp_path / "t.yaml"
    f.write_text(HEAD, encoding="utf-8")
    for fmt in ("json", "sarif"):
        code, out, err = run_cli("lint", "-f", fmt, f)
        assert code == 1, err
        assert "Relé" in out and "\\u00e9" not in out  # not ASCII-escaped: the same bytes simulate writes
        assert out == to_json(json.loads(out))


def _functions(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]


def test_renderers_live_in_report_only():
    """No command module and no analysis/numerics/rules module renders text itself."""
    offenders = []
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG).as_posix()
        if rel.startswith(("report/", "render/")):
            continue
        text = path.read_text(encoding="utf-8")
        for name in _functions(path):
            if name.startswith(("render_", "to_text", "to_sarif", "summarize_receipt")) or name == "render_table":
                offenders.append(f"{rel}: {name}")
        if "format_table(" in text:
            offenders.append(f"{rel}: builds a text table")
    assert offenders == []


def test_renderer_names_are_unique_and_say_what_they_render():
    seen = {}
    for path in sorted((PKG / "report").glob("*.py")):
        for name in _functions(path):
            if name.startswith("render_"):
                assert name not in seen, (name, path.name, seen.get(name))
                seen[name] = path.name
    assert "render_table" not in seen
    # one record and one format per module: report/<record>_<format>.py holds render_<record>_<format>
    for name, module in seen.items():
        assert module[:-3] == name[len("render_"):], (name, module)
