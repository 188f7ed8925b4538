"""The README and the pages under docs/ as a reader meets them: the Python examples (```pycon blocks) run as
doctests, the README's console examples run and print what they show, and every ``partsim`` command line of
every page is one the CLI accepts.  (docs/ci.md and docs/analysis.md's console examples run in test_docs.py.)"""

import doctest
import re
import shlex
import shutil

import pytest

from tests.conftest import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "benchmarks" / "README.md"]


def pycon_examples(page, min_blocks, min_examples):
    text = page.read_text(encoding="utf-8")
    blocks = re.findall(r"^```pycon\n(.*?)^```", text, flags=re.S | re.M)
    assert len(blocks) >= min_blocks
    test = doctest.DocTestParser().get_doctest("\n".join(blocks), {}, page.name, str(page), 0)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0 and result.attempted >= min_examples, result


def test_readme_examples(monkeypatch):
    monkeypatch.chdir(ROOT)
    pycon_examples(ROOT / "README.md", 1, 3)


@pytest.mark.ort  # its examples predict at the default level (ORT's optimizer)
def test_python_api_examples(monkeypatch):
    """docs/python-api.md's examples, in order and sharing their names, from the checkout root."""
    monkeypatch.chdir(ROOT)
    pycon_examples(ROOT / "docs" / "python-api.md", 4, 15)


def test_readme_shows_the_table_simulate_prints(run_cli, monkeypatch):
    monkeypatch.chdir(ROOT)
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    marker = "Reading the table (`python cli.py simulate fixtures/demo.onnx -p nnapi`):\n\n```\n"
    shown = text.split(marker, 1)[1].split("```\n", 1)[0]
    code, out, err = run_cli("simulate", "fixtures/demo.onnx", "-p", "nnapi")
    assert code == 0, err
    assert shown == out


def test_readme_is_a_front_page():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200
    first = re.search(r"```sh\n(.*?)```", text, re.S).group(1).splitlines()
    assert [line.split()[:2] for line in first[:2]] == [["make", "demo"], ["make", "test"]]
    for link in re.findall(r"\]\(((?:docs|benchmarks)/[^)#]+)\)", text):
        assert (ROOT / link).exists(), link


def console_runs(text):
    """``(argv, exit code, lines shown)`` for each ``$ partsim …`` of the page's ```console blocks."""
    out = []
    for body in re.findall(r"^```console\n(.*?)^```", text, flags=re.S | re.M):
        for cmd in re.split(r"^\$ ", body, flags=re.M)[1:]:
            first, *shown = cmd.splitlines()
            code = re.search(r"#\s*exit (\d+)\s*$", first)
            argv = shlex.split(re.sub(r"\s*#.*$", "", first))
            assert argv[0] == "partsim", first
            out.append((argv[1:], int(code.group(1)) if code else 0, [s for s in shown if s.strip()]))
    return out


def test_readme_console_examples_run(run_cli, tmp_path, monkeypatch):
    shutil.copytree(ROOT / "fixtures", tmp_path / "fixtures")
    (tmp_path / "out").mkdir()
    monkeypatch.chdir(tmp_path)
    runs = console_runs((ROOT / "README.md").read_text(encoding="utf-8"))
    assert len(runs) >= 4
    for argv, want, shown in runs:
        code, out, err = run_cli(*argv)
        printed = {line.rstrip() for line in (out + err).splitlines()}
        assert code == want, f"partsim {' '.join(argv)}: exit {code}\n{out}{err}"
        missing = [s for s in shown if s.rstrip() not in printed]
        assert not missing, f"partsim {' '.join(argv)} did not print {missing[0]!r}:\n{out}{err}"


def command_lines(text):
    """Every ``partsim …`` line of the page's ```sh / ```console blocks, continuation lines joined, comments,
    shell redirections and optional ``[…]`` parts removed; lines with an elided ``…`` part are left out."""
    lines = []
    for body in re.findall(r"^```(?:sh|console|bash)\n(.*?)^```", text, flags=re.S | re.M):
        for line in body.replace("\\\n", " ").splitlines():
            line = re.sub(r"^\$ ", "", line.strip())
            if not line.startswith("partsim ") or "…" in line:
                continue
            line = re.sub(r"\s+#.*$", "", line)
            line = re.split(r"\s(?:>>?|\|)\s", line)[0]
            lines.append(re.sub(r"\[[^\]]*\]", "", line))
    return lines


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_command_shown_is_one_the_cli_accepts(page):
    from partsim.cli import build_parser

    if not page.exists():
        pytest.skip(f"{page.name} is absent")
    for line in command_lines(page.read_text(encoding="utf-8")):
        argv = shlex.split(line)[1:]
        parser = build_parser()
        try:
            parser.parse_args(argv)
        except SystemExit as e:
            if e.code == 0:  # --help, --version
                continue
            pytest.fail(f"{page.name}: `{line}` is refused by the CLI (exit {e.code})")


def test_the_command_check_catches_a_wrong_option():
    """Not vacuous: a misspelt option in a page's command is caught."""
    from partsim.cli import build_parser

    line = command_lines("```sh\npartsim simulate m.onnx -p nnapi --frobnicate\n```\n")[0]
    with pytest.raises(SystemExit):
        build_parser().parse_args(shlex.split(line)[1:])
