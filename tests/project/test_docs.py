"""Every example in docs/ci.md, docs/environments.md and docs/analysis.md runs as shown.

A ```toml block after ``<!-- file: NAME -->`` is written to NAME; in a ```console block each
``$ partsim …`` line is run (in-process, in a folder holding the models the pages name) and must
exit as its ``# exit N`` (or ``# exit N or M``, for what depends on the machine) comment says (0
without one); every line shown under it must be a line of what it printed.  ```text blocks are
output from one machine, shown, not checked.
"""

import os
import re
import shutil
from pathlib import Path

import pytest

from tests.conftest import ROOT, shared_path
from tests.analysis.test_baseline_gate import symbolic_batch
from tests.analysis.test_decompose import hsig_chain

PAGES = ("ci.md", "environments.md", "analysis.md")


def examples(page):
    """``[("file", name, text) | ("run", argv, exit code, expected lines)]`` in page order."""
    text = (ROOT / "docs" / page).read_text()
    out = []
    for m in re.finditer(r"(?:<!-- file: (\S+) -->\n)?```(\w+)\n(.*?)```", text, re.S):
        name, lang, body = m.groups()
        if name:
            out.append(("file", name, body))
        elif lang == "console":
            for cmd in re.split(r"^\$ ", body, flags=re.M)[1:]:
                first, *shown = cmd.splitlines()
                code = re.search(r"#\s*exit (\d+(?: or \d+)*)\s*$", first)
                argv = re.sub(r"\s*#.*$", "", first).split()
                assert argv[0] == "partsim", first
                codes = {int(c) for c in code.group(1).split(" or ")} if code else {0}
                out.append(("run", argv[1:], codes, [s for s in shown if s.strip()]))
    return out


@pytest.fixture
def folder(tmp_path):
    models = tmp_path / "models"
    models.mkdir()
    shutil.copy(shared_path("corpus", "graph_only", "bert_tiny.ts.onnx"), models / "bert.onnx")
    symbolic_batch(shared_path("corpus", "full", "tiny_unet.ts.onnx"), models / "unet.onnx")
    shutil.copy(shared_path("corpus", "full", "tiny_resnet.ts.onnx"), models / "resnet.onnx")
    (tmp_path / "small").mkdir()
    hsig_chain(tmp_path / "small" / "hardsigmoid.onnx")
    return tmp_path


@pytest.mark.parametrize("page", PAGES)
def test_page_examples_run(page, folder, run_cli):
    if not (ROOT / "docs" / page).exists():
        pytest.fail(f"docs/{page} is missing")
    steps = examples(page)
    assert any(s[0] == "run" for s in steps)
    here = os.getcwd()
    os.chdir(folder)
    try:
        for step in steps:
            if step[0] == "file":
                Path(step[1]).write_text(step[2])
                continue
            _, argv, want, shown = step
            code, out, err = run_cli(*argv)
            printed = {line.rstrip() for line in (out + err).splitlines()}
            assert code in want, f"partsim {' '.join(argv)}: exit {code}\n{out}{err}"
            missing = [s for s in shown if s.rstrip() not in printed]
            assert not missing, f"partsim {' '.join(argv)} did not print {missing[0]!r}:\n{out}{err}"
    finally:
        os.chdir(here)
