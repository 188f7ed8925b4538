"""Where teams put the gate: the README's example, the pre-commit hook entry and the GitHub
composite action's command line, each run here as CI would run it (issue 16)."""

import os
import re
import shutil
import stat
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest
import yaml

from tests.conftest import ROOT, shared_path
from tests.analysis.test_baseline_gate import symbolic_batch

MODELS = ("tiny_resnet.ts.onnx", "tiny_unet.ts.onnx", "tiny_mobilenetv2.ts.onnx")


def readme_block(lang, after="# Use it in CI"):
    """The first ```lang block of docs/ci-integration.md (the README's CI page) after the heading ``after``."""
    text = (ROOT / "docs" / "ci-integration.md").read_text()
    section = text[text.index(after):]
    return re.search(rf"```{lang}\n(.*?)```", section, re.S).group(1)


@pytest.fixture
def repo(tmp_path):
    """A project as in the README: models/, partsim.toml (the README's), a `partsim` program on PATH."""
    (tmp_path / "models").mkdir()
    for name in MODELS:
        shutil.copy(shared_path("corpus", "full", name), tmp_path / "models" / name)
    (tmp_path / "partsim.toml").write_text(readme_block("toml"))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "partsim"  # what `pip install` puts on PATH, pointing at this checkout
    shim.write_text(f"#!/bin/sh\nexec {sys.executable} {ROOT / 'cli.py'} \"$@\"\n")
    shim.chmod(shim.stat().st_mode | stat.S_IEXEC)
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", PYTHONPATH=str(ROOT))
    return tmp_path, env


def test_readme_example_passes_then_catches_a_symbolic_batch(repo):
    folder, env = repo
    r = subprocess.run(["partsim", "check"], cwd=folder, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    r = subprocess.run(["partsim", "check", "--update"], cwd=folder, env=env, capture_output=True, text=True)
    assert r.returncode == 0 and (folder / "partsim.lock.json").exists()
    symbolic_batch(folder / "models" / "tiny_unet.ts.onnx", folder / "models" / "tiny_unet.ts.onnx")
    r = subprocess.run(["partsim", "check"], cwd=folder, env=env, capture_output=True, text=True)
    assert r.returncode == 1
    fail = r.stdout.splitlines()
    k = fail.index(next(line for line in fail if line.startswith("FAIL android models/tiny_unet.ts.onnx: ")))
    assert "NOT accelerated" in fail[k] and "more)" in fail[k]  # the budget, and the lock's rules
    assert fail[k + 1].startswith("why: dynamic_shape (")
    assert fail[k + 2].startswith("next: fix the dims: dims = {batch = <size>}")
    assert fail[k + 2].endswith("or partsim check --update if the change is intended")
    assert r.stderr == ""


def test_pre_commit_hook_entry(repo):
    folder, env = repo
    (hook,) = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert hook["id"] == "partsim-check" and hook["pass_filenames"] is False and hook["language"] == "python"
    files = re.compile(hook["files"])
    assert files.search("models/tiny_unet.ts.onnx") and files.search("partsim.toml")
    assert files.search("partsim.lock.json") and not files.search("README.md")
    # pre-commit runs `entry` as a command line, from the repository root, without file names
    entry = hook["entry"].split()
    r = subprocess.run(entry, cwd=folder, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "check: PASS" in r.stdout
    symbolic_batch(folder / "models" / "tiny_unet.ts.onnx", folder / "models" / "tiny_unet.ts.onnx")
    r = subprocess.run(entry, cwd=folder, env=env, capture_output=True, text=True)
    assert r.returncode == 1 and "check: FAIL" in r.stdout
    (folder / "partsim.toml").write_text(readme_block("toml").replace('"nnapi"', '"nnpai"'))
    r = subprocess.run(entry, cwd=folder, env=env, capture_output=True, text=True)
    assert r.returncode == 2 and "partsim.toml:" in r.stderr and "did you mean nnapi?" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def _action_check_step():
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    (step,) = [s for s in action["runs"]["steps"] if s.get("name") == "partsim check"]
    assert step["shell"] == "bash"
    return action, step


def _run_action(folder, env, **inputs):
    """The action's check step as GitHub runs it: its `run` script under bash, the inputs
    (defaults from action.yml, overridden by ``inputs``) in the step's env."""
    action, step = _action_check_step()
    values = {k: str(v.get("default", "")) for k, v in action["inputs"].items()}
    values.update(inputs)
    step_env = dict(env)
    for key, expr in step["env"].items():
        m = re.fullmatch(r"\$\{\{\s*inputs\.([\w-]+)\s*\}\}", expr)
        step_env[key] = values[m.group(1)]
    summary = folder / "step-summary.md"
    step_env["GITHUB_STEP_SUMMARY"] = str(summary)
    r = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=folder, env=step_env, capture_output=True, text=True)
    return r, summary


def test_action_command_line(repo):
    folder, env = repo
    r, summary = _run_action(folder, env)
    assert r.returncode == 0, r.stderr
    suite = ET.parse(folder / "partsim-check.xml").getroot()
    assert suite.get("tests") == str(2 * len(MODELS)) and suite.get("failures") == "0"
    assert summary.read_text().startswith("### ✅ partsim check passed")
    symbolic_batch(folder / "models" / "tiny_unet.ts.onnx", folder / "models" / "tiny_unet.ts.onnx")
    summary.unlink()
    r, summary = _run_action(folder, env, format="sarif", output="partsim.sarif", jobs="2")
    assert r.returncode == 1
    import json
    sarif = json.loads((folder / "partsim.sarif").read_text())
    assert {x["ruleId"] for x in sarif["runs"][0]["results"]} >= {"accelerated", "min_delegated_share"}
    assert "❌" in summary.read_text() and "models/tiny_unet.ts.onnx" in summary.read_text()
    # a bad config: exit 2, no summary appended
    (folder / "partsim.toml").write_text('[[check]]\nmodels = 3\nproviders = ["nnapi"]\n')
    summary.unlink()
    r, summary = _run_action(folder, env)
    assert r.returncode == 2 and not summary.exists() and "partsim.toml:2" in r.stderr
