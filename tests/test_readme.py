"""The README's Python examples (its ```pycon blocks) run as doctests, from the checkout root, in order and
sharing their names, as a reader would type them."""

import doctest
import re

from tests.conftest import ROOT


def test_readme_examples(monkeypatch):
    monkeypatch.chdir(ROOT)
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```pycon\n(.*?)^```", text, flags=re.S | re.M)
    assert len(blocks) >= 4  # the Python API section
    test = doctest.DocTestParser().get_doctest("\n".join(blocks), {}, "README.md", str(ROOT / "README.md"), 0)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0 and result.attempted >= 15, result


def test_readme_shows_the_table_simulate_prints(run_cli, monkeypatch):
    monkeypatch.chdir(ROOT)
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    marker = "Reading the table (`python cli.py simulate fixtures/demo.onnx -p nnapi`):\n\n```\n"
    shown = text.split(marker, 1)[1].split("```\n", 1)[0]
    code, out, err = run_cli("simulate", "fixtures/demo.onnx", "-p", "nnapi")
    assert code == 0, err
    assert shown == out
