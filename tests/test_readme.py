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
