"""Every command of the ```sh blocks and transcripts of README.md and docs/*.md runs as shown (issue #32).

The ```console blocks run with their output in test_readme.py and test_docs.py, the ```pycon blocks as doctests in
test_readme.py.  Here: each line of a ```sh block, and each ``$ partsim`` line of a transcript (another block showing
a command and what it printed: the output is one machine's, not checked), in page order, in one scratch folder per
page where the names the pages use exist: ``model.onnx`` (fixtures/demo.onnx), ``bert.onnx`` (the graph-only
bert_tiny), ``swin_t.onnx``, ``fp32.onnx``/``int8.onnx`` (tiny_resnet and its QDQ twin), ``partsim.toml``
(docs/ci-integration.md's, with its models), the inputs and expected outputs the numerics lines read (expected
outputs from this process's own ORT session, not from partsim), ``fixtures/`` and ``../shared``.  A line must exit
0 (a transcript's 0 or 1), or what its ``# exit N`` comment says.  A block under a ``*Not run by the tests: …*``
line is skipped with that reason; the README's ``make``/``pip`` lines, which are not partsim commands, are covered
where :data:`NOT_PARTSIM` says.
"""

import json
import re
import shlex
import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import ROOT, SHARED, shared_path

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SKIP_NOTE = re.compile(r"^\*Not run by the tests(?:: (.*?)| \((.*?)\)):?\*\n\n", re.M)
# the README's lines that are not partsim commands (the README cannot carry a note: it is at its 200 lines)
NOT_PARTSIM = {
    "make demo": "test_makefile_demo_recipe_runs below runs its partsim lines",
    "make test": "the test suite itself (.ci/run)",
    "pip install .": "make test installs partsim with pip (pip install -e '.[test]') before it runs the suite",
}


def _joined(body, first):
    """``(line number, line)`` of a block's lines, a line ending in a backslash joined with the next."""
    pending, start = "", first
    for k, raw in enumerate(body.splitlines(), first):
        if not pending:
            start = k
        if raw.endswith("\\"):
            pending += raw[:-1] + " "
            continue
        yield start, pending + raw
        pending = ""


def sh_steps(page):
    """``(id, line, argv or None, exit codes, skip reason or None)`` for each line of the page's ```sh blocks and
    each ``$ `` line of its transcripts (other blocks showing a command and what it printed)."""
    text = page.read_text(encoding="utf-8")
    steps = []
    for m in re.finditer(r"^```(\w*)\n(.*?)^```", text, flags=re.S | re.M):
        lang, body = m.groups()
        if lang in ("console", "pycon"):
            continue  # run in test_readme.py / test_docs.py
        lines = list(_joined(body, text[:m.start()].count("\n") + 2))
        if lang != "sh":  # a transcript: its `$ ` lines are the commands (the output is one machine's, not checked)
            lines = [(k, line[2:]) for k, line in lines if line.startswith("$ ")]
            if not lines:
                continue
        note = None
        before = text[:m.start()]
        cut = SKIP_NOTE.search(before[-400:]) if before.endswith("\n\n") else None
        if cut and before[-400:].endswith(cut.group(0)):
            note = (cut.group(1) or cut.group(2)).strip()
        for k, line in lines:
            line = line.strip()
            if not line:
                continue
            comment = re.search(r"\s#\s?(.*)$", line)
            code = re.search(r"exit (\d+(?: or \d+)*)\s*$", comment.group(1)) if comment else None
            command = re.sub(r"\s+#.*$", "", line)
            command = re.split(r"\s(?:>>?|\|)\s", command)[0]  # shell redirections: the command is what runs
            command = re.sub(r"\s*\[[^\]]*\]", "", command)  # optional parts
            argv = shlex.split(command)[1:] if command.startswith("partsim ") else None
            # a transcript's command exits 0 or 1 (an outcome; 2 would be the command as shown refused)
            codes = {int(c) for c in code.group(1).split(" or ")} if code else {0} if lang == "sh" else {0, 1}
            steps.append((f"{page.relative_to(ROOT).as_posix()}:{k}", line, argv, codes, note))
    return steps


STEPS = [s for p in PAGES for s in sh_steps(p)]


def _inputs_and_expected(model, folder):
    """s1.npz (seeded input) and s1.expected.npz: the outputs of this process's own ORT CPU session."""
    import onnxruntime as ort

    sess = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    feeds = {i.name: np.random.default_rng(1).standard_normal(i.shape).astype(np.float32) for i in sess.get_inputs()}
    np.savez(folder / "s1.npz", **feeds)
    np.savez(folder / "s1.expected.npz", **dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds))))


@pytest.fixture(scope="module")
def workspaces(tmp_path_factory):
    """page -> its scratch folder (made on first use; later lines of a page see what earlier ones wrote)."""
    made = {}

    def get(page):
        if page not in made:
            base = tmp_path_factory.mktemp(page.replace("/", "_").replace(".", "_"))
            work = base / "work"
            (work / "models").mkdir(parents=True)
            if SHARED.is_dir():
                (base / "shared").symlink_to(SHARED)  # ../shared from the folder, as from a checkout
            for venv in (".venv-openvino",):
                if (ROOT / venv).is_dir():
                    (work / venv).symlink_to(ROOT / venv)
            (work / "fixtures").symlink_to(ROOT / "fixtures")  # read only, as the pages use it from a checkout
            shutil.copy(ROOT / "fixtures" / "demo.onnx", work / "model.onnx")
            (work / "my-rules").mkdir()
            shutil.copy(ROOT / "rules" / "nnapi.yaml", work / "my-rules" / "nnapi.yaml")
            (work / "labels.txt").write_text("cat\ndog\n")
            (work / "vocab.json").write_text('{"a": 0, "b": 1}\n')
            _inputs_and_expected(work / "model.onnx", work)
            made[page] = work
        return made[page]

    return get


def _corpus_file(work, name, rel):
    if not (work / name).exists():
        shutil.copy(shared_path("corpus", *rel.split("/")), work / name)


def _prepare(work, argv, skipped_before=False):
    """The files a line names that a page's earlier lines do not make (``skipped_before``: an earlier line of the
    page was skipped here, so a file it would have made is missing and this line is skipped too)."""
    names = set(argv)
    if skipped_before:
        written = {argv[k + 1] for k, a in enumerate(argv[:-1]) if a in ("-o", "--output", "--receipt")}
        missing = [a for a in argv if a not in written and not a.startswith("-") and not (work / a).exists()
                   and Path(a).suffix in (".yaml", ".json", ".jsonl", ".onnx", ".npz")]
        if missing:
            pytest.skip(f"{missing[0]} is made by an earlier line of this page, which was skipped here")
    if any(a.startswith("../shared/") for a in argv):
        shared_path()  # skips, saying why, without ../shared
    if "bert.onnx" in names:
        _corpus_file(work, "bert.onnx", "graph_only/bert_tiny.ts.onnx")
    for name in ("swin_t.onnx", "swin_t.ts.onnx"):
        if name in names:
            _corpus_file(work, name, "graph_only/swin_t.ts.onnx")
    if "fp32.onnx" in names:
        _corpus_file(work, "fp32.onnx", "full/tiny_resnet.ts.onnx")
        _corpus_file(work, "int8.onnx", "full/q_tiny_resnet.ts.qdq.onnx")
    if argv[:1] == ["check"] and not (work / "partsim.toml").exists():
        from tests.project.test_ci_integration import MODELS, readme_block

        for name in MODELS:
            _corpus_file(work, f"models/{name}", f"full/{name}")
        (work / "partsim.toml").write_text(readme_block("toml"))
    if "devices.yaml" in names:
        # the receipt's device, and a phone that has none: the gate lists the phone's cells as gaps (exit 1)
        receipt = json.loads((work / "r1.json").read_text())
        (work / "devices.yaml").write_text(f"devices: [{receipt['environment']['device']}, pixel8-nnapi]\n"
                                           "samples: [s1]\n")
        argv[argv.index("<modelBundleId>")] = receipt["candidate"]["modelBundleId"]  # as a user copies it
    if any(a.startswith(".venv-openvino/") for a in argv) and not (work / ".venv-openvino").exists():
        pytest.skip(".venv-openvino is absent (make test installs onnxruntime-openvino 1.24.1 there)")
    if "qnn" in argv:
        pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed (make test installs it)")


@pytest.fixture(scope="module")
def skipped_pages():
    """The pages of which a line was skipped so far (its later lines may need what it would have made)."""
    return set()


@pytest.mark.parametrize("step", STEPS, ids=[s[0] for s in STEPS])
def test_sh_example_runs(step, workspaces, run_cli, monkeypatch, skipped_pages):
    where, line, argv, codes, note = step
    page = where.split(":")[0]
    try:
        if note:
            pytest.skip(f"{where}: {note}")
        if argv is None:
            reason = NOT_PARTSIM.get(re.sub(r"\s+#.*$", "", line).strip())
            assert reason, f"{where}: `{line}` is neither a partsim command nor under a *Not run by the tests* note"
            pytest.skip(f"{where}: {reason}")
        work = workspaces(page)
        monkeypatch.chdir(work)
        argv = list(argv)
        _prepare(work, argv, page in skipped_pages)
    except pytest.skip.Exception:
        skipped_pages.add(page)
        raise
    try:
        code, out, err = run_cli(*argv)
    except SystemExit as e:  # --help
        code, out, err = e.code, "", ""
    assert code in codes, f"{where}: partsim {' '.join(argv)}: exit {code}\n{out[-2000:]}{err[-2000:]}"


def test_every_page_with_commands_is_covered():
    """Not vacuous: the pages' ```sh blocks hold partsim commands, and the skip note is read."""
    pages = {s[0].split(":")[0] for s in STEPS if s[2] is not None}
    assert {"docs/commands.md", "docs/numerics.md", "docs/blame.md", "docs/ci-integration.md"} <= pages
    assert any(s[4] and "PyPI" in s[4] for s in STEPS if s[0].startswith("docs/versions.md"))


def test_makefile_demo_recipe_runs(tmp_path, run_cli, monkeypatch):
    """The README's first command: `make demo`'s partsim lines, run with this checkout's CLI in a scratch folder."""
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = re.search(r"^demo: .*\n((?:\t.*\n)+)", text, re.M).group(1)
    lines = [ln.strip() for ln in recipe.splitlines() if ln.strip().startswith("$(BIN)/partsim ")]
    assert len(lines) >= 4
    shutil.copytree(ROOT / "fixtures", tmp_path / "fixtures")
    (tmp_path / "out").mkdir()
    monkeypatch.chdir(tmp_path)
    for ln in lines:
        code, out, err = run_cli(*shlex.split(ln)[1:])
        assert code == 0, (ln, err[-2000:])
    for name in ("demo.summary.json", "demo.html", "demo.svg"):
        assert (tmp_path / "out" / name).stat().st_size > 0, name
