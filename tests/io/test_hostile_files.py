"""Issue 28: nothing a file can do to partsim.  One test per fault the issue's fuzz campaign found.

Readers: a symlink to ``/dev/zero``, a FIFO or a folder where any structured input goes is refused
at once (exit 2, one line naming the file), through the one bounded reader.  Structure: deep
nesting, non-finite numbers and values of the wrong type are refused before use (JSON Schemas in
``partsim/data``).  Outputs: ``-o`` writes only regular files, atomically, keeping an existing
file's mode; nothing is written on exit 2; the lock file stays in the config's folder.  Cache:
a damaged entry is dropped and rebuilt.  Text: control characters in names are shown escaped.
"""

import json
import os
import stat
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper

from tests.fuzz_surfaces import CONFIG, Surfaces

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def s(tmp_path):
    """Every structured surface, valid, in ``tmp_path`` (tests/fuzz_surfaces.py)."""
    return Surfaces(tmp_path)


def _one_error_line(code, out, err, *words):
    assert "Traceback" not in out + err, err
    assert code == 2, (code, err)
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("partsim: error: "), err
    for w in words:
        assert str(w) in lines[0], (w, lines[0])


def _subprocess(*argv, timeout=60, cwd=ROOT):
    env = dict(os.environ, PARTSIM_WORKER="0")
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, str(ROOT / "cli.py"), *map(str, argv)], capture_output=True, text=True,
                       timeout=timeout, cwd=cwd, env=env)
    return p.returncode, p.stdout, p.stderr, time.monotonic() - t0


# ------------------------------------------------------------------ one bounded reader for every file

SURFACE_FILES = ["lock", "baseline", "observation", "calibrate", "config", "require", "rules"]


def _hostile(kind, path):
    path.unlink()
    if kind == "dev_zero":
        path.symlink_to("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        path.mkdir()


# (a folder is a legal -r value: a folder of tables)
@pytest.mark.parametrize("surface, kind", [(s, k) for s in SURFACE_FILES for k in ("dev_zero", "fifo", "folder")
                                           if (s, k) != ("rules", "folder")])
def test_a_device_fifo_or_folder_is_refused_at_once(s, surface, kind):
    """Issue 28: `rules calibrate X.jsonl` grew memory without bound on a symlink to /dev/zero and
    blocked forever on a FIFO; every structured input now goes through the bounded reader."""
    target = s.files[surface]
    argv = s.commands(surface)[0]
    _hostile(kind, target)
    code, out, err, _secs = _subprocess(*argv, timeout=120)  # a FIFO read blocks forever: the timeout fails it
    _one_error_line(code, out, err, target.name)
    assert "not a regular file" in err or "folder" in err, err


@pytest.mark.parametrize("kind", ["dev_zero", "fifo"])
def test_receipt_expected_folder_with_a_device_or_fifo(tmp_path, kind):
    """Issue 28: `receipt --expected DIR` read DIR/output_0.pb with a plain read."""
    from tests.fuzz_surfaces import _tiny_model

    model = tmp_path / "m.onnx"
    _tiny_model(model)
    golden = tmp_path / "golden"
    golden.mkdir()
    (golden / "output_0.pb").touch()
    _hostile(kind, golden / "output_0.pb")
    code, out, err, secs = _subprocess("receipt", model, "-p", "cpu", "--expected", golden, "--abs-tol", "1e-4",
                                       "--rel-tol", "1e-3", "--level", "disable", timeout=120)
    _one_error_line(code, out, err, "output_0.pb", "not a regular file")


# ------------------------------------------------------------------ structure: schema, depth, numbers

def _set_json(path, change):
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


def test_an_infinite_count_in_a_baseline_is_refused_not_a_pass(s, run_cli):
    """Issue 28: `1e400` (inf) as a baseline count made any regression PASS (x <= inf)."""
    base = s.files["baseline"]
    text = base.read_text()
    doc = json.loads(text)
    doc["counts"]["partitionCount"] = 0  # the model regressed: one partition more than this baseline
    doc["counts"]["fragments"] = 0
    base.write_text(json.dumps(doc))
    argv = s.commands("baseline")[0]
    code, out, err = run_cli(*argv[:-2], "-f", "json")
    assert code == 1, err  # a regression fails
    base.write_text(json.dumps(doc).replace('"partitionCount": 0', '"partitionCount": 1e400'))
    code, out, err = run_cli(*argv[:-2], "-f", "json")
    _one_error_line(code, out, err, base.name, "non-finite")


@pytest.mark.parametrize("surface, text", [
    ("lock", "[" * 100000 + "]" * 100000),
    ("baseline", '{"a":' * 50000 + "1" + "}" * 50000),
    ("observation", "[" * 100000),
    ("calibrate", '{"case": "x", "a": ' + "[" * 100000 + "]" * 100000 + "}\n"),
    ("config", "x = " + "[" * 100000 + "]" * 100000 + "\n"),
    ("require", "devices: " + "[" * 100000 + "]" * 100000 + "\n"),
])
def test_deep_nesting_is_refused_before_the_parser_recurses(s, run_cli, surface, text):
    """Issue 28: deep nesting in partsim.toml ended in RecursionError (a traceback)."""
    s.files[surface].write_text(text)
    code, out, err = run_cli(*s.commands(surface)[0])
    _one_error_line(code, out, err, s.files[surface].name)
    assert "nested deeper than 64" in err or "maximum nesting depth" in err, err  # libyaml's own limit


@pytest.mark.parametrize("surface, old, new", [
    ("lock", '"partitionCount": 1', '"partitionCount": NaN'),
    ("observation", '"level": "disable"', '"level": "disable", "x": Infinity'),
    ("calibrate", '"level": "disable"', '"level": "disable", "x": -1e999'),
    ("config", "min_delegated_share = 0.5", "min_delegated_share = nan"),
    ("require", "samples: [s1]", "samples: [s1]\nx: .inf"),
])
def test_non_finite_numbers_are_refused(s, run_cli, surface, old, new):
    path = s.files[surface]
    text = path.read_text()
    assert old in text, text[:400]
    path.write_text(text.replace(old, new, 1))
    code, out, err = run_cli(*s.commands(surface)[0])
    _one_error_line(code, out, err, path.name)
    assert "non-finite" in err or "min_delegated_share" in err, err


@pytest.mark.parametrize("surface, change, where", [
    ("lock", lambda d: next(iter(d["entries"].values()))["counts"].update(transfers="3"), "transfers"),
    ("lock", lambda d: next(iter(d["entries"].values())).update(nodes=[1, 2]), "nodes"),
    ("baseline", lambda d: d.update(firstProvider=7), "firstProvider"),
    ("baseline", lambda d: d["model"].update(sha256=None), "sha256"),
    ("observation", lambda d: d["records"][0].update(assignment=[["CPUExecutionProvider", 5]]), "assignment"),
    ("observation", lambda d: d["records"][0].update(profile_nodes=[["relu", "Relu"]]), "profile_nodes"),
])
def test_wrong_shapes_are_refused_by_the_schema(s, run_cli, surface, change, where):
    """Issue 28: a value of the wrong type deep in a lock, baseline or observation was a traceback."""
    _set_json(s.files[surface], change)
    code, out, err = run_cli(*s.commands(surface)[0])
    _one_error_line(code, out, err, s.files[surface].name, where, "schema")


def test_calibrate_record_of_the_wrong_shape(s, run_cli):
    lines = s.files["calibrate"].read_text().splitlines()
    rec = json.loads(lines[0])
    rec["assignment"] = [["CPUExecutionProvider", [["relu"]]]]
    s.files["calibrate"].write_text(lines[1] + "\n" + json.dumps(rec) + "\n")
    code, out, err = run_cli(*s.commands("calibrate")[0])
    _one_error_line(code, out, err, f"{s.files['calibrate'].name}:2:", "assignment")


def test_require_of_the_wrong_shape(s, run_cli):
    argv = s.commands("require")[0]
    s.files["require"].write_text("devices: {a: 1}\n")
    code, out, err = run_cli(*argv)
    _one_error_line(code, out, err, "require.yaml", "devices")


def test_config_of_the_wrong_shape_names_its_line(s, run_cli):
    s.files["config"].write_text(CONFIG.replace('level = "disable"', 'level = "disable"\ndims = {batch = 0}'))
    code, out, err = run_cli(*s.commands("config")[0])
    _one_error_line(code, out, err, "partsim.toml:8:", "dims")


def test_the_schemas_accept_what_partsim_writes_and_the_shared_recordings(s):
    from partsim.io.structured import read_jsonl, read_structured

    read_structured(s.files["lock"], "json", "lock")
    read_structured(s.files["baseline"], "json", "baseline")
    read_structured(s.files["observation"], "json", "observation")
    read_jsonl(s.files["calibrate"], "calibration-record")
    shared = ROOT.parent / "shared" / "observed"
    if not shared.is_dir():
        pytest.skip("../shared/observed is absent: the recorded observations are not checked out beside the project")
    for f in sorted(shared.glob("*/*/observed.json")) + sorted(shared.glob("**/observed.json"))[:50]:
        read_structured(f, "json", "observation")
    for f in sorted((shared / "nodes").glob("*.jsonl")):
        read_jsonl(f, "calibration-record")


# ------------------------------------------------------------------ outputs

@pytest.mark.parametrize("kind", ["fifo", "link_to_dev_null", "folder", "dangling_link"])
def test_output_onto_a_non_regular_file_is_refused(s, run_cli, tmp_path, kind):
    """Issue 28: as root, `-o /dev/null` replaced the device node with a JSON file.  Tested on
    stand-ins in a temp folder: a FIFO, a symlink to /dev/null, a folder, a dangling symlink."""
    target = tmp_path / "out"
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "link_to_dev_null":
        target.symlink_to("/dev/null")
    elif kind == "folder":
        target.mkdir()
    else:
        target.symlink_to(tmp_path / "nowhere" / "x")
    before = os.lstat(target)
    code, out, err = run_cli("simulate", s.model, "-p", "cpu", "--level", "disable", "-f", "json", "-o", target)
    _one_error_line(code, out, err, target.name)
    after = os.lstat(target)
    assert stat.S_IFMT(after.st_mode) == stat.S_IFMT(before.st_mode) and after.st_ino == before.st_ino
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".out")) == []


def test_output_keeps_the_mode_of_the_file_it_replaces(s, run_cli, tmp_path):
    """Issue 28: an existing 0600 output became 0644."""
    target = tmp_path / "private.json"
    target.write_text("old")
    target.chmod(0o600)
    code, out, err = run_cli("simulate", s.model, "-p", "cpu", "--level", "disable", "-f", "json", "-o", target)
    assert code == 0, err
    assert stat.S_IMODE(target.stat().st_mode) == 0o600 and json.loads(target.read_text())["model"]


def test_output_through_a_symlink_replaces_the_file_it_points_to(s, run_cli, tmp_path):
    real = tmp_path / "real.json"
    real.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    code, out, err = run_cli("simulate", s.model, "-p", "cpu", "--level", "disable", "-f", "json", "-o", link)
    assert code == 0, err
    assert link.is_symlink() and json.loads(real.read_text())["model"]


def test_check_update_writes_no_lock_when_the_output_cannot_be_written(s, run_cli):
    """Issue 28: `check --update -o missing/dir/x` exited 2 after writing the lock."""
    lock = s.files["lock"]
    lock.unlink()
    code, out, err = run_cli("check", "--config", s.files["config"], "--update", "-o", s.dir / "missing" / "x.json")
    _one_error_line(code, out, err, "does not exist")
    assert not lock.exists()


@pytest.mark.parametrize("lock, words", [
    ("../outside.lock.json", "without '..'"),
    ("/tmp/abs.lock.json", "relative to the config's folder"),
    ("models/tiny.onnx", "a model"),
    ("partsim.toml", "the config itself"),
    ("table.yaml", None),  # not an input of this config: allowed (a plain file in the folder)
    ("link.json", "leads out of the config's folder"),
    ("a" * 5000, "not a usable file name"),  # found by the campaign: OSError ENAMETOOLONG, a traceback
])
def test_the_lock_stays_inside_the_config_folder_and_is_never_an_input(s, run_cli, tmp_path, lock, words):
    """Issue 28: `check --update` wrote the lock wherever `lock =` pointed: over a model, over the
    config, outside the project."""
    outside = tmp_path.parent / f"{tmp_path.name}-outside.json"
    (s.dir / "link.json").symlink_to(outside)
    config = s.files["config"]
    config.write_text(f"lock = {json.dumps(lock)}\n" + CONFIG.split("\n", 1)[1])
    model_before = s.model.read_bytes()
    code, out, err = run_cli("check", "--config", config, "--update")
    if words is None:
        assert code in (0, 1), err
        json.loads((s.dir / lock).read_text())
        return
    _one_error_line(code, out, err, "lock", words)
    assert s.model.read_bytes() == model_before and config.read_text().startswith("lock =")
    assert not outside.exists() and not (tmp_path.parent / "outside.lock.json").exists()


def test_model_globs_cannot_leave_the_config_folder(s, run_cli):
    """Issue 28: `models = ["../../**"]` walked the whole file system."""
    s.files["config"].write_text(CONFIG.replace('models = ["models/*.onnx"]', 'models = ["../../**"]'))
    t0 = time.monotonic()
    code, out, err = run_cli(*s.commands("config")[0])
    _one_error_line(code, out, err, "partsim.toml:5:", "leads out of the config's folder")
    assert time.monotonic() - t0 < 10


# ------------------------------------------------------------------ cache

def _cache_graphs(cache):
    return sorted((cache / "optimized").glob("*/graph.onnx"))


@pytest.mark.parametrize("damage", ["empty", "truncate", "replace"])
def test_a_damaged_cached_graph_is_dropped_and_rebuilt(s, run_cli, tmp_path, monkeypatch, damage):
    """Issue 28: an emptied cached graph gave "0 nodes, status ok"."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("PARTSIM_CACHE_DIR", str(cache))
    monkeypatch.setenv("PARTSIM_WORKER", "0")
    argv = ("simulate", s.model, "-p", "cpu", "--level", "basic", "-f", "json")
    code, first, err = run_cli(*argv)
    assert code == 0, err
    (graph,) = _cache_graphs(cache)
    if damage == "empty":
        graph.write_bytes(b"")
    elif damage == "truncate":
        graph.write_bytes(graph.read_bytes()[:20])
    else:
        other = tmp_path / "other.onnx"
        x = helper.make_tensor_value_info("x", T.FLOAT, [2, 4])
        m = helper.make_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="r")], "g", [x],
                                                [helper.make_tensor_value_info("y", T.FLOAT, [2, 4])]))
        onnx.save(m, other)
        graph.write_bytes(other.read_bytes())
    code, again, err = run_cli(*argv)
    assert code == 0, err
    assert json.loads(again)["model"]["nodeCount"] == json.loads(first)["model"]["nodeCount"] == 3
    assert again == first
    (rebuilt,) = _cache_graphs(cache)
    code, third, err = run_cli(*argv)
    assert third == first


def test_a_damaged_table_cache_entry_is_ignored(tmp_path, monkeypatch):
    from partsim.rules import load as ruletable

    monkeypatch.setenv("PARTSIM_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("PARTSIM_NO_CACHE", raising=False)
    text = (ROOT / "rules" / "nnapi.yaml").read_text() + "\n# a user's copy (not the shipped precompiled one)\n"
    fresh = ruletable.parse_table(text, "nnapi.yaml")
    (entry,) = (tmp_path / "tables").glob("*.json")
    doc = entry.read_bytes()
    # valid JSON of the same layout, other rules: without the digest it would be trusted
    forged = json.loads(doc.split(b"\n", 1)[1])
    forged["data"]["ops"] = forged["data"]["ops"][:1]
    entry.write_bytes(doc.split(b"\n", 1)[0] + b"\n" + json.dumps(forged).encode())
    again = ruletable.parse_table(text, "nnapi.yaml")
    assert again.rules == fresh.rules


@pytest.mark.parametrize("value, on", [("0", True), ("false", True), ("no", True), ("", True), ("1", False),
                                       ("true", False), ("YES", False)])
def test_no_cache_variable_values(tmp_path, monkeypatch, value, on):
    """Issue 28: `PARTSIM_NO_CACHE=0` turned the cache off."""
    from partsim.io.cache import cache_root

    monkeypatch.setenv("PARTSIM_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("PARTSIM_NO_CACHE", value)
    assert (cache_root() is not None) is on


# ------------------------------------------------------------------ terminal and XML

EVIL = ["conv\x1b[2J\x1b]0;pwned\x07", "row\n| forged | 1 | 2 |", "bidi\u202eexe.onnx", "nul\x00x", "pipe|cell"]


def _evil_model(path):
    x = helper.make_tensor_value_info("x", T.FLOAT, [2, 4])
    nodes, prev = [], "x"
    for k, name in enumerate(EVIL):
        out = f"t{k}"
        nodes.append(helper.make_node("Relu" if k % 2 else "Frob", [prev], [out], name=name,
                                      domain="" if k % 2 else "com.evil\x1b[31m"))
        prev = out
    y = helper.make_tensor_value_info(prev, T.FLOAT, [2, 4])
    m = helper.make_model(helper.make_graph(nodes, "g", [x], [y]),
                          opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.evil\x1b[31m", 1)])
    m.ir_version = 8
    onnx.save(m, path)


def _no_raw_controls(text):
    bad = [c for c in text if (ord(c) < 32 and c not in "\n") or 0x7f <= ord(c) <= 0x9f or c == "\u202e"]
    assert not bad, [hex(ord(c)) for c in bad[:10]]


def test_control_characters_in_names_are_shown_escaped(tmp_path, run_cli):
    """Issue 28: node names and domains reached the terminal raw (clear screen, OSC title, a forged row)."""
    model = tmp_path / "m.onnx"
    _evil_model(model)
    code, out, err = run_cli("simulate", model, "-p", "nnapi,cpu", "--level", "disable")
    assert code == 0, err
    _no_raw_controls(out)
    assert "\\x1b[2J" in out and "\\n| forged" in out
    assert not any(line.startswith("| forged") for line in out.splitlines())
    code, js, err = run_cli("simulate", model, "-p", "nnapi,cpu", "--level", "disable", "-f", "json")
    assert any(n["name"] == EVIL[0] for n in json.loads(js)["nodes"])  # JSON keeps the names exactly


def test_check_reports_stay_well_formed_with_hostile_names(tmp_path, run_cli):
    """Issue 28: control characters made the JUnit XML unparseable; a newline or `|` forged Markdown rows."""
    (tmp_path / "models").mkdir()
    _evil_model(tmp_path / "models" / "m.onnx")
    name = "evil\x1b[2J\n| x |"
    (tmp_path / "partsim.toml").write_text(f'[[check]]\nname = {json.dumps(name)}\nmodels = ["models/*.onnx"]\n'
                                            'providers = ["nnapi", "cpu"]\nlevel = "disable"\nmin_delegated_share = 1.0\n')
    cfg = tmp_path / "partsim.toml"
    code, xml, err = run_cli("check", "--config", cfg, "-f", "junit")
    assert code == 1, err
    root = ET.fromstring(xml)
    assert any("\\x1b[2J" in (c.get("name") or "") + (c.get("classname") or "") for c in root.iter("testcase"))
    code, md, err = run_cli("check", "--config", cfg, "-f", "markdown")
    _no_raw_controls(md)
    rows = [line for line in md.splitlines() if line.startswith("| ") and "❌" in line]
    assert len(rows) == 1 and "\\|" in rows[0]
    code, table, err = run_cli("check", "--config", cfg)
    _no_raw_controls(table)


# ------------------------------------------------------------------ external data

def test_external_data_at_offset_2_50_is_one_line(tmp_path, run_cli):
    """Issue 28: external data at offset 2^50 ended in `OSError: File too large`."""
    import numpy as np
    from onnx import numpy_helper

    w = numpy_helper.from_array(np.ones((4, 4), np.float32), "w")
    w.ClearField("raw_data")
    w.data_location = T.EXTERNAL
    for k, v in (("location", "w.bin"), ("offset", str(2**50)), ("length", "64")):
        e = w.external_data.add()
        e.key, e.value = k, v
    x = helper.make_tensor_value_info("x", T.FLOAT, [4, 4])
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "g", [x],
                          [helper.make_tensor_value_info("y", T.FLOAT, [4, 4])], [w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, tmp_path / "m.onnx")
    (tmp_path / "w.bin").write_bytes(b"\0" * 64)
    code, out, err = run_cli("simulate", tmp_path / "m.onnx", "-p", "cpu", "--level", "basic")
    _one_error_line(code, out, err, "m.onnx", "external data ends at byte")
