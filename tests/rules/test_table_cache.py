"""The validated-table cache: a hit gives the same table, a damaged entry is ignored."""

from partsim.errors import RuleTableError
from partsim.rules import load as ruletable
from tests.conftest import ROOT


def test_cache_hit_equals_fresh_parse(tmp_path, monkeypatch):
    monkeypatch.setenv("PARTSIM_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("PARTSIM_NO_CACHE", raising=False)
    text = (ROOT / "rules" / "nnapi.yaml").read_text()
    fresh = ruletable.parse_table(text, "my-nnapi.yaml")
    entries = list((tmp_path / "tables").glob("*.json"))
    assert len(entries) == 1
    hit = ruletable.parse_table(text, "my-nnapi.yaml")
    assert hit.rules == fresh.rules and hit.partitioning == fresh.partitioning and hit.source == fresh.source
    assert [r.line for rs in hit.rules.values() for r in rs] == [r.line for rs in fresh.rules.values() for r in rs]
    entries[0].write_text("{not json")  # damaged: ignored, parsed again
    again = ruletable.parse_table(text, "my-nnapi.yaml")
    assert again.rules == fresh.rules


def test_a_hit_is_served_without_parsing_yaml(tmp_path, monkeypatch):
    """The second load of a table comes from the cache: with the YAML reader broken it still loads,
    while a table the cache has not seen fails (so the broken reader is really in the way)."""
    monkeypatch.setenv("PARTSIM_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("PARTSIM_NO_CACHE", raising=False)
    text = (ROOT / "rules" / "nnapi.yaml").read_text()
    fresh = ruletable.parse_table(text, "my-nnapi.yaml")

    def broken(*a, **k):
        raise AssertionError("YAML parsed although the table was cached")

    monkeypatch.setattr(ruletable, "_compose", broken)
    assert ruletable.parse_table(text, "my-nnapi.yaml").rules == fresh.rules
    try:
        ruletable.parse_table(text + "\n# changed\n", "my-nnapi.yaml")
    except AssertionError:
        pass
    else:
        raise AssertionError("an unseen table loaded without its YAML being parsed")


def test_invalid_tables_are_never_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("PARTSIM_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("PARTSIM_NO_CACHE", raising=False)
    bad = "provider: CPUExecutionProvider\nkind: kernel\nsource: {description: x, version: '1'}\nops: 3\n"
    try:
        ruletable.parse_table(bad, "bad.yaml")
    except RuleTableError as exc:
        assert exc.line == 4
    else:
        raise AssertionError("invalid table accepted")
    assert not (tmp_path / "tables").exists() or not list((tmp_path / "tables").iterdir())


def test_cache_can_be_turned_off(tmp_path, monkeypatch):
    monkeypatch.setenv("PARTSIM_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("PARTSIM_NO_CACHE", "1")
    ruletable.parse_table((ROOT / "rules" / "nnapi.yaml").read_text(), "my-nnapi.yaml")
    assert not (tmp_path / "tables").exists()


def test_table_headers_are_read_again_when_the_file_changes(tmp_path):
    """A folder of tables lists each file's header lines (provider, variant, kind) without parsing it; they
    are read once per process while the file keeps its size and mtime, and again once it changes."""
    import os

    text = (ROOT / "rules" / "nnapi.yaml").read_text()
    path = tmp_path / "mine.yaml"
    path.write_text(text)
    first = ruletable.builtin_tables(tmp_path).headers()
    assert list(first) == ["NnapiExecutionProvider"]
    assert ruletable.builtin_tables(tmp_path).headers()["NnapiExecutionProvider"][0].kind == \
        first["NnapiExecutionProvider"][0].kind
    path.write_text(text.replace("NnapiExecutionProvider", "MyExecutionProvider", 1) + "\n")
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))  # a later mtime, whatever the clock
    assert list(ruletable.builtin_tables(tmp_path).headers()) == ["MyExecutionProvider"]
