"""What `pip install .` ships: every subpackage, the tables and the data files."""

import pytest

from tests.conftest import ROOT

tomllib = pytest.importorskip("tomllib", reason="tomllib is in the standard library from Python 3.11")


def test_every_subpackage_is_listed_in_pyproject():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "partsim").rglob("__init__.py")}
    assert found <= listed, f"missing from pyproject.toml packages: {sorted(found - listed)}"
    assert config["package-dir"]["partsim._rules"] == "rules"


def test_data_files_are_declared():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    suffixes = {p.suffix for p in (ROOT / "partsim" / "data").iterdir() if p.is_file() and p.suffix != ".py"}
    assert {f"*{s}" for s in suffixes} <= set(config["partsim.data"])
    assert config["partsim._rules"] == ["*.yaml"]
    assert "tables/*.json" in config["partsim.data"]  # the precompiled tables (partsim.rules.precompiled)


def test_every_script_the_makefile_runs_exists():
    """`make bench` once ran a benchmarks/run.py that did not exist: every script path the Makefile names must."""
    import re

    text = (ROOT / "Makefile").read_text()
    scripts = set(re.findall(r"(?:benchmarks|tests|partsim)/[\w/]+\.py", text))
    assert "benchmarks/run.py" in scripts
    missing = sorted(s for s in scripts if not (ROOT / s).is_file())
    assert missing == []
