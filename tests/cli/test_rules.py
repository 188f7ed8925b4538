"""``partsim rules import ort-kernels --python``: the CPU kernel registry of another interpreter's ORT."""

import sys

import pytest

from partsim.gen.ort_kernels import kernel_table
from partsim.rules.load import parse_table
from tests.conftest import ROOT

OV_PY = ROOT / ".venv-openvino" / "bin" / "python"


def test_ort_kernels_of_another_interpreter_is_a_variant_table(run_cli, tmp_path):
    """Read in a child of a child (partsim/runtime/child_facts.py): the same rows as this process's own read,
    under the variant asked for, with the command that made it named."""
    out = tmp_path / "cpu-x.yaml"
    code, _, err = run_cli("rules", "import", "ort-kernels", "--python", sys.executable, "--variant", "x", "-o", out)
    assert code == 0, err
    text = out.read_text()
    table = parse_table(text)
    assert table.variant == "x" and "--python VENV/bin/python --variant x" in table.source["generated_by"]
    assert text == kernel_table(variant="x")  # the rows read here, byte for byte


@pytest.mark.skipif(not OV_PY.exists(), reason=".venv-openvino/bin/python is absent (make test installs "
                    "onnxruntime-openvino 1.24.1 there)")
def test_ort_kernels_of_the_openvino_build_says_why_not(run_cli, tmp_path):
    """onnxruntime-openvino 1.24.1's registry read segfaults: one line, exit 2 (rules/cpu-1.24.yaml is read from
    plain onnxruntime 1.24.1, docs/versions.md)."""
    code, _, err = run_cli("rules", "import", "ort-kernels", "--python", OV_PY, "-o", tmp_path / "t.yaml")
    assert code == 2 and "no kernel registry" in err and not (tmp_path / "t.yaml").exists()
