"""Every change partsim prints is one that changes a count when applied (issue 29).

On real models of ../shared/corpus, the commands printed by simulate (its next steps), blame (its next
step), check (its "next:" line on a failing check) and the HTML report (its blame command) are collected as
printed, every ``partsim blame`` among them is run and its ``partsim whatif`` line collected too, and every
``partsim whatif`` is run: accelerator partitions, transfers, nodes off the CPU or Memcpy nodes must differ
between its two runs, and its "before" must be the prediction the command was printed under.
"""

import html as html_module
import json
import re
import shlex

import pytest

from tests.conftest import shared_path
from tests.analysis.test_baseline_gate import symbolic_batch

COUNTS = ("acceleratorPartitions", "transfers", "delegatedNodes", "memcpy")
CASES = [  # (corpus file, providers, --dim values, symbolic batch added)
    (("graph_only", "bert_tiny.ts.onnx"), "nnapi", ["batch=1,seq=16"], False),
    (("graph_only", "mobilenet_v3_small.ts.onnx"), "nnapi", [], False),  # HardSwish: inlined, decomposed
    (("full", "tiny_unet.ts.onnx"), "qnn", [], True),  # the batch left symbolic: the dims are the change
    (("graph_only", "gpt2_tiny.ts.onnx"), "qnn", ["batch=1,seq=16"], False),
    (("graph_only", "efficientnet_b0.ts.onnx"), "coreml", [], False),
]


def _printed(text, command):
    """The ``partsim COMMAND …`` lines of ``text``, as word lists after ``partsim``."""
    return [shlex.split(m.group(1)) for m in re.finditer(rf"partsim ({command} [^\n]*?)(?: \(what to change\)|;|$)",
                                                           text, re.M)]


def _model(tmp_path, parts, symbolic):
    src = shared_path("corpus", *parts)
    return str(symbolic_batch(src, tmp_path / parts[-1]) if symbolic else src)


@pytest.mark.parametrize("parts, providers, dims, symbolic", CASES, ids=[c[0][-1] for c in CASES])
def test_every_printed_change_changes_a_count(tmp_path, run_cli, parts, providers, dims, symbolic):
    model = _model(tmp_path, parts, symbolic)
    dim_words = [w for d in dims for w in ("--dim", d)]
    code, shown, err = run_cli("simulate", model, "-p", providers, *dim_words, "-f", "json")
    assert code == 0, err
    shown = json.loads(shown)
    code, text, err = run_cli("simulate", model, "-p", providers, *dim_words)
    assert code == 0, err
    whatifs, blames = _printed(text, "whatif"), _printed(text, "blame")
    blames += _check_blames(tmp_path, run_cli, model, providers, dims)
    html = tmp_path / "report.html"
    code, _, err = run_cli("render", model, "-p", providers, *dim_words, "-o", html)
    assert code == 0, err
    codes = re.findall(r"<code>(partsim blame [^<]*)</code>", html.read_text())
    blames += _printed("\n".join(html_module.unescape(c) for c in codes), "blame")
    if "nothing to change" in text:  # every node on the first provider: nothing is suggested
        return
    assert blames, "no blame command printed"
    for words in {tuple(b) for b in blames}:
        code, out, err = run_cli(*words)
        assert code == 0, (words, err)
        whatifs += _printed(out, "whatif")
    assert whatifs, "no whatif command printed"
    for words in {tuple(w) for w in whatifs}:
        code, out, err = run_cli(*words, "-f", "json")
        assert code == 0, (words, err)
        result = json.loads(out)
        before, after = result["before"], result["after"]
        assert any(before[k] != after[k] for k in COUNTS), (words, before, after)
        assert before["acceleratorPartitions"] == shown["partitionCount"], words  # from the prediction shown


def _check_blames(tmp_path, run_cli, model, providers, dims):
    """The blame command a failing check prints for ``model`` (its dims in partsim.toml)."""
    fixed = ", ".join(f'"{k}" = {v}' for d in dims for k, v in (kv.split("=") for kv in d.split(",")))
    (tmp_path / "partsim.toml").write_text(
        f'[[check]]\nname = "gate"\nmodels = ["{tmp_path.name}.onnx"]\nproviders = ["{providers}"]\n'
        f"min_delegated_share = 1.0\n" + (f"dims = {{{fixed}}}\n" if fixed else ""))
    (tmp_path / f"{tmp_path.name}.onnx").symlink_to(model)  # a zoo links its models from elsewhere
    code, out, err = run_cli("check", "--config", tmp_path / "partsim.toml")
    if code == 0:  # every node on the accelerator: nothing printed to apply
        return []
    assert code == 1, err
    return [[w if w != f"{tmp_path.name}.onnx" else str(tmp_path / w) for w in b] for b in _printed(out, "blame")]
