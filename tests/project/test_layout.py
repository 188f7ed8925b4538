"""The test tree mirrors the package tree (tests/README.md): a test file sits in the folder of the partsim
subpackage whose behaviour it checks, in tests/project/ when it checks the project as a whole, or at the top of
tests/ as ``test_<module>.py`` for a top-level module of partsim (partsim/<module>.py)."""

from pathlib import Path

from tests.conftest import ROOT

PROJECT = "project"  # README, docs, packaging, the layout itself: no one package


def subpackages():
    return {p.parent.name for p in (ROOT / "partsim").glob("*/__init__.py")}


def top_modules():
    return {p.stem for p in (ROOT / "partsim").glob("*.py") if not p.stem.startswith("_")}


def misplaced(test_files, packages, modules):
    """The test files (paths relative to tests/) that break the layout rule, each with why."""
    wrong = []
    for rel in test_files:
        parts = Path(rel).parts
        if len(parts) == 1:
            if parts[0].removeprefix("test_").removesuffix(".py") not in modules:
                wrong.append(f"{rel}: at the top of tests/ but partsim has no module of that name")
        elif len(parts) > 2:
            wrong.append(f"{rel}: nested deeper than one folder")
        elif parts[0] not in packages | {PROJECT}:
            wrong.append(f"{rel}: {parts[0]}/ is not a subpackage of partsim (nor {PROJECT}/)")
    return wrong


def test_every_test_file_sits_in_the_folder_of_its_package():
    tests = ROOT / "tests"
    files = sorted(str(p.relative_to(tests)) for p in tests.rglob("test_*.py"))
    assert len(files) > 50
    assert misplaced(files, subpackages(), top_modules()) == []


def test_every_test_folder_is_a_package():
    """Two test files of one name in two folders import as tests.<folder>.<name>, never collide."""
    tests = ROOT / "tests"
    folders = {p.parent for p in tests.rglob("test_*.py")}
    assert [str(f) for f in sorted(folders) if not (f / "__init__.py").is_file()] == []


def test_the_rule_catches_a_misplaced_file():
    packages, modules = {"sim", "io"}, {"versions"}
    assert misplaced(["sim/test_a.py", "project/test_b.py", "test_versions.py"], packages, modules) == []
    wrong = misplaced(["test_assign.py", "simulation/test_a.py", "sim/deep/test_c.py"], packages, modules)
    assert [w.split(":")[0] for w in wrong] == ["test_assign.py", "simulation/test_a.py", "sim/deep/test_c.py"]
