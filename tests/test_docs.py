"""Every example in docs/ci.md, docs/environments.md and docs/analysis.md runs as shown.

A ```toml block after ``<!-- file: NAME -->`` is written to NAME; in a ```console block each
``$ partsim …`` line is run (in-process, in a folder holding the models the pages name) and must
exit as its ``# exit N`` comment says (0 without one); every line shown under it must be a line of
what it printed.
"""

import os
import re
import shutil
from pathlib import Path

import pytest

from tests.conftest import ROOT, shared_path
from tests.test_baseline_gate import symbolic_batch

PAGES = ("ci.md",)


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
                code = re.search(r"#\s*exit (\d+)\s*$", first)
                argv = re.sub(r"\s*#.*$", "", first).split()
                assert argv[0] == "partsim", first
                out.append(("run", argv[1:], int(code.group(1)) if code else 0, [s for s in shown if s.strip()]))
    return out


def hardsigmoid_model(path):
    """Conv -> HardSigmoid -> Conv: the HardSigmoid keeps NNAPI from taking the whole graph."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    w1 = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w1")
    w2 = numpy_helper.from_array(rng.standard_normal((4, 4, 3, 3)).astype(np.float32), "w2")
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("HardSigmoid", ["a"], ["b"], name="hsig", alpha=0.2, beta=0.5),
             helper.make_node("Conv", ["b", "w2"], ["y"], name="conv2", pads=[1, 1, 1, 1])]
    graph = helper.make_graph(nodes, "hsig", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])], [w1, w2])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))


@pytest.fixture
def folder(tmp_path):
    models = tmp_path / "models"
    models.mkdir()
    shutil.copy(shared_path("corpus", "graph_only", "bert_tiny.ts.onnx"), models / "bert.onnx")
    symbolic_batch(shared_path("corpus", "full", "tiny_unet.ts.onnx"), models / "unet.onnx")
    shutil.copy(shared_path("corpus", "full", "tiny_resnet.ts.onnx"), models / "resnet.onnx")
    (tmp_path / "small").mkdir()
    hardsigmoid_model(tmp_path / "small" / "hardsigmoid.onnx")
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
            assert code == want, f"partsim {' '.join(argv)}: exit {code}\n{out}{err}"
            missing = [s for s in shown if s.rstrip() not in printed]
            assert not missing, f"partsim {' '.join(argv)} did not print {missing[0]!r}:\n{out}{err}"
    finally:
        os.chdir(here)
