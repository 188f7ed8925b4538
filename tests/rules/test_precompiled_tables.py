"""The shipped tables' precompiled store: current, equal to the long way, never used for other text."""

import dataclasses

import pytest

from partsim.rules import load as ruletable
from partsim.rules import precompiled
from tests.conftest import ROOT

SHIPPED = sorted((ROOT / "rules").glob("*.yaml"))


@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_store_is_current_and_equals_the_long_way(path):
    text = path.read_text(encoding="utf-8")
    stored = precompiled.lookup(text, path)
    assert stored is not None, f"partsim/data/tables/{path.stem}.json is stale: run `make tables`"
    long_way = ruletable.parse_checked(text, str(path))
    fast = ruletable._build_table(stored[0], stored[1], str(path))
    slow = ruletable._build_table(long_way[0], long_way[1], str(path))
    assert dataclasses.asdict(fast) == dataclasses.asdict(slow)
    assert [r.line for rs in fast.rules.values() for r in rs] == [r.line for rs in slow.rules.values() for r in rs]
    assert all(r.line > 0 for rs in fast.rules.values() for r in rs)


def test_the_store_serves_only_the_exact_text(monkeypatch, tmp_path):
    """With the YAML reader broken, a shipped table still loads (from the store) while the same table
    with one comment added does not (so the store is really what served it)."""
    monkeypatch.setenv("PARTSIM_NO_CACHE", "1")
    text = (ROOT / "rules" / "cuda.yaml").read_text(encoding="utf-8")
    expected = ruletable.parse_table(text, "cuda.yaml")

    def broken(*a, **k):
        raise AssertionError("YAML parsed")

    monkeypatch.setattr(ruletable, "_compose", broken)
    assert ruletable.parse_table(text, str(ROOT / "rules" / "cuda.yaml")).rules == expected.rules
    with pytest.raises(AssertionError, match="YAML parsed"):
        ruletable.parse_table(text + "# edited\n", "cuda.yaml")
    assert precompiled.lookup(text, "somebody-elses.yaml") is None


def test_a_damaged_store_entry_is_ignored(tmp_path):
    text = (ROOT / "rules" / "nnapi.yaml").read_text(encoding="utf-8")
    (tmp_path / "nnapi.json").write_text("{not json")
    assert precompiled.lookup(text, "nnapi.yaml", store=tmp_path) is None
    (tmp_path / "nnapi.json").write_text('{"key": "%s"}' % precompiled.table_key(text))
    assert precompiled.lookup(text, "nnapi.yaml", store=tmp_path) is None


def test_compile_writes_a_store_byte_identical_to_the_shipped_one(tmp_path):
    written = ruletable.compile_shipped(store=tmp_path)
    assert written == sorted(f"{p.stem}.json" for p in SHIPPED)
    for name in written:
        assert (tmp_path / name).read_bytes() == (ROOT / "partsim" / "data" / "tables" / name).read_bytes()


def test_an_invalid_table_is_not_stored(tmp_path):
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "bad.yaml").write_text("provider: CPUExecutionProvider\nkind: kernel\n"
                                    "source: {description: x, version: '1'}\nops: 3\n")
    with pytest.raises(ruletable.RuleTableError):
        ruletable.compile_shipped(rules, tmp_path / "store")
    assert not (tmp_path / "store").exists()
