"""Robustness: malformed models, rule tables and options through the real CLI.

Every case is built here in ``tmp_path``.  A bad input must give exit code 2, exactly
one line on stderr naming the file and the problem, no traceback, no output file
(when ``-o`` was given) and an untouched input file.  A few inputs are odd but legal
(unknown domains, unknown provider names): those must succeed and be flagged.

Most cases run ``partsim.cli.main`` in-process (fast); a handful go through real
``python cli.py`` subprocesses to check the process-level behaviour too.
"""

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper

from tests.modelbuild import const, model, vi
from tests.conftest import as_written_cli


# These tests describe the graph as written (an ORT_DISABLE_ALL session): level disable unless asked
@pytest.fixture
def run_cli(run_cli):
    return as_written_cli(run_cli)


ROOT = Path(__file__).resolve().parents[2]

GOOD_RULES = """\
provider: XnnpackExecutionProvider
kind: kernel
source: {description: test table, version: "1"}
ops:
  - op: Relu
"""


# ---------------------------------------------------------------- model builders

def chain_model(opset=17):
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="r0"),
             helper.make_node("Add", ["a", "w"], ["b"], name="add"),
             helper.make_node("Relu", ["b"], ["y"], name="r1")]
    return model(nodes, [vi("x", [2, 2])], [vi("y", [2, 2])], [const("w", [2, 2])], opset=opset)


def write_model(path, m):
    Path(path).write_bytes(m.SerializeToString())
    return path


def good_model(tmp_path):
    return write_model(tmp_path / "good.onnx", chain_model())


def external_init(name, location):
    t = onnx.TensorProto()
    t.name = name
    t.data_type = T.FLOAT
    t.dims.extend([2, 2])
    t.data_location = onnx.TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", "0"), ("length", "16")):
        e = t.external_data.add()
        e.key, e.value = k, v
    return t


def model_with_external(tmp_path, location, name="m.onnx"):
    nodes = [helper.make_node("Add", ["x", "w"], ["y"], name="add")]
    m = model(nodes, [vi("x", [2, 2])], [vi("y", [2, 2])], [external_init("w", location)])
    folder = tmp_path / "models"
    folder.mkdir(exist_ok=True)
    return write_model(folder / name, m)


# ---------------------------------------------------------------- the cases
# Each builder takes tmp_path and returns (argv after "simulate", the file the message must name,
# a word the message must contain, the input files that must stay untouched).

def c_empty(tmp):
    p = tmp / "empty.onnx"
    p.write_bytes(b"")
    return [p], p, "empty", [p]


def c_truncated(tmp):
    data = chain_model().SerializeToString()
    p = tmp / "trunc.onnx"
    p.write_bytes(data[: len(data) // 2])
    return [p], p, "protobuf", [p]


def c_truncated_one_byte(tmp):
    data = chain_model().SerializeToString()
    p = tmp / "trunc1.onnx"
    p.write_bytes(data[:-1])
    return [p], p, "", [p]


def c_random_bytes(tmp):
    import random
    rnd = random.Random(1234)
    p = tmp / "random.onnx"
    p.write_bytes(bytes([0xFF, 0xFF]) + bytes(rnd.randrange(256) for _ in range(4096)))
    return [p], p, "protobuf", [p]


def c_text_file(tmp):
    p = tmp / "model.onnx"
    p.write_text('{"this": "is json, not protobuf"}\n')
    return [p], p, "", [p]


def c_other_message(tmp):
    # a protobuf of another kind (a TensorProto): its wire format does not fit a ModelProto
    p = tmp / "tensor.onnx"
    p.write_bytes(const("w", [3, 3]).SerializeToString())
    return [p], p, "", [p]


def c_no_graph(tmp):
    m = onnx.ModelProto()
    m.ir_version = 8
    m.opset_import.append(helper.make_opsetid("", 17))
    p = tmp / "nograph.onnx"
    p.write_bytes(m.SerializeToString())
    return [p], p, "no graph", [p]


def c_duplicate_initializer(tmp):
    nodes = [helper.make_node("Add", ["x", "w"], ["y"], name="add")]
    p = write_model(tmp / "dupinit.onnx", model(nodes, [vi("x", [2, 2])], [vi("y", [2, 2])],
                                                [const("w", [2, 2]), const("w", [2, 2], 1.0)]))
    return [p], p, "twice", [p]


def c_directory(tmp):
    d = tmp / "dir.onnx"
    d.mkdir()
    return [d], d, "regular file", []


def c_missing_file(tmp):
    p = tmp / "nope.onnx"
    return [p], p, "no such file", []


def c_cycle(tmp):
    nodes = [helper.make_node("Add", ["x", "c"], ["a"], name="n_a"),
             helper.make_node("Relu", ["a"], ["b"], name="n_b"),
             helper.make_node("Relu", ["b"], ["c"], name="n_c")]
    p = write_model(tmp / "cycle.onnx", model(nodes, [vi("x", [2])], [vi("b", [2])]))
    return [p], p, "cycle", [p]


def c_self_loop(tmp):
    nodes = [helper.make_node("Add", ["x", "a"], ["a"], name="selfish")]
    p = write_model(tmp / "selfloop.onnx", model(nodes, [vi("x", [2])], [vi("a", [2])]))
    return [p], p, "cycle", [p]


def c_duplicate_output(tmp):
    nodes = [helper.make_node("Relu", ["x"], ["t"], name="first"),
             helper.make_node("Sigmoid", ["x"], ["t"], name="second")]
    p = write_model(tmp / "dupout.onnx", model(nodes, [vi("x", [2])], [vi("t", [2])]))
    return [p], p, "produced twice", [p]


def c_output_shadows_initializer(tmp):
    nodes = [helper.make_node("Relu", ["x"], ["w"], name="r")]
    p = write_model(tmp / "shadow.onnx", model(nodes, [vi("x", [2, 2])], [vi("w", [2, 2])],
                                               [const("w", [2, 2])]))
    return [p], p, "produced twice", [p]


def c_duplicate_graph_input(tmp):
    nodes = [helper.make_node("Add", ["x", "x"], ["y"], name="add")]
    p = write_model(tmp / "dupin.onnx", model(nodes, [vi("x", [2]), vi("x", [2])], [vi("y", [2])]))
    return [p], p, "twice", [p]


def c_dangling_consumer(tmp):
    nodes = [helper.make_node("Add", ["x", "ghost"], ["y"], name="add")]
    p = write_model(tmp / "dangling.onnx", model(nodes, [vi("x", [2])], [vi("y", [2])]))
    return [p], p, "ghost", [p]


def c_dangling_graph_output(tmp):
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="r")]
    p = write_model(tmp / "danglingout.onnx", model(nodes, [vi("x", [2])], [vi("y", [2]), vi("nobody", [2])]))
    return [p], p, "nobody", [p]


# A model without an ai.onnx import is not malformed: ORT adds the import itself
# (tests/io/test_loader_ort_accepts.py).


def c_negative_dim(tmp):
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="r")]
    m = model(nodes, [vi("x", [2, 2])], [vi("y", [2, 2])])
    m.graph.input[0].type.tensor_type.shape.dim[1].dim_value = -7
    p = write_model(tmp / "negdim.onnx", m)
    return [p], p, "dimension", [p]


def c_huge_dim(tmp):
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="r")]
    p = write_model(tmp / "hugedim.onnx", model(nodes, [vi("x", [2, 2**62])], [vi("y", [2, 2**62])]))
    return [p], p, "dimension", [p]


def c_huge_initializer_dim(tmp):
    nodes = [helper.make_node("Add", ["x", "w"], ["y"], name="add")]
    w = onnx.TensorProto()
    w.name, w.data_type = "w", T.FLOAT
    w.dims.extend([2**62, 4])
    p = write_model(tmp / "hugeinit.onnx", model(nodes, [vi("x", [2])], [vi("y", [2])], [w]))
    return [p], p, "dimension", [p]


def c_non_utf8_name(tmp):
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="NODENAME")]
    data = model(nodes, [vi("x", [2])], [vi("y", [2])]).SerializeToString()
    assert data.count(b"NODENAME") == 1
    p = tmp / "latin.onnx"
    p.write_bytes(data.replace(b"NODENAME", b"NODE\xff\xfeME"))  # same length: still valid protobuf
    return [p], p, "UTF-8", [p]


def c_non_utf8_tensor_name(tmp):
    nodes = [helper.make_node("Relu", ["xx"], ["y"], name="r")]
    data = model(nodes, [vi("xx", [2])], [vi("y", [2])]).SerializeToString()
    p = tmp / "latin2.onnx"
    p.write_bytes(data.replace(b"xx", b"\xc3\x28"))
    return [p], p, "UTF-8", [p]


def c_unknown_element_type(tmp):
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="r")]
    m = model(nodes, [vi("x", [2])], [vi("y", [2])])
    m.graph.input[0].type.tensor_type.elem_type = 97
    p = write_model(tmp / "elemtype.onnx", m)
    return [p], p, "97", [p]


def c_external_parent(tmp):
    p = model_with_external(tmp, "../../etc/passwd")
    return [p], p, "escapes", [p]


def c_external_absolute(tmp):
    p = model_with_external(tmp, "/etc/passwd")
    return [p], p, "relative", [p]


def c_external_symlink(tmp):
    p = model_with_external(tmp, "weights.bin")
    secret = tmp / "secret.bin"
    secret.write_bytes(b"\0" * 16)
    os.symlink(secret, p.parent / "weights.bin")
    return [p], p, "escapes", [p, secret]


def c_external_nul(tmp):
    p = model_with_external(tmp, "a\0b.bin")
    return [p], p, "external data", [p]


def c_external_in_subgraph(tmp):
    then_g = helper.make_graph([helper.make_node("Identity", ["w2"], ["o"], name="id")], "then", [],
                               [vi("o", [2, 2])], [external_init("w2", "../../../etc/shadow")])
    else_g = helper.make_graph([helper.make_node("Identity", ["x"], ["o2"], name="id2")], "else", [],
                               [vi("o2", [2, 2])])
    nodes = [helper.make_node("If", ["c"], ["y"], name="if", then_branch=then_g, else_branch=else_g)]
    m = model(nodes, [vi("c", [], T.BOOL), vi("x", [2, 2])], [vi("y", [2, 2])])
    (tmp / "models").mkdir()
    p = write_model(tmp / "models" / "sub.onnx", m)
    return [p], p, "escapes", [p]


def c_huge_dim_in_custom_subgraph(tmp):
    # ONNX shape inference does not enter a custom op's graph; the IR builder still reads it
    body = helper.make_graph([helper.make_node("Relu", ["a"], ["b"], name="inner")], "body",
                             [vi("a", [2**50])], [vi("b", [2**50])])
    nodes = [helper.make_node("Foo", ["x"], ["y"], name="foo", domain="my.domain", body=body)]
    m = model(nodes, [vi("x", [1])], [vi("y", [1])])
    m.opset_import.append(helper.make_opsetid("my.domain", 1))
    p = write_model(tmp / "customsub.onnx", m)
    return [p], p, "impossible dimension", [p]


def c_external_constant_attribute(tmp):
    t = external_init("c", "../outside.bin")
    nodes = [helper.make_node("Constant", [], ["c"], name="k", value=t),
             helper.make_node("Add", ["x", "c"], ["y"], name="add")]
    (tmp / "models").mkdir()
    p = write_model(tmp / "models" / "const.onnx", model(nodes, [vi("x", [2, 2])], [vi("y", [2, 2])]))
    return [p], p, "attribute 'value' of node 'k'", [p]


def _rules_case(name, text=None, data=None):
    def build(tmp):
        m = good_model(tmp)
        r = tmp / name
        if data is not None:
            r.write_bytes(data)
        else:
            r.write_text(text)
        return [m, "--rules", r, "-p", "xnnpack"], r, "", [m, r]
    build.__name__ = "r_" + name.replace(".", "_")
    return build


r_wrong_type = _rules_case("wrongtype.yaml", GOOD_RULES.replace("kind: kernel", "kind: 5"))
r_ops_not_list = _rules_case("opsmap.yaml", GOOD_RULES.split("ops:")[0] + "ops: {op: Relu}\n")
r_unknown_key = _rules_case("unknownkey.yaml", GOOD_RULES + "colour: blue\n")
r_unknown_rule_key = _rules_case("unknownrulekey.yaml", GOOD_RULES + "    frobnicate: true\n")
r_missing_key = _rules_case("missing.yaml", GOOD_RULES.replace("kind: kernel\n", ""))
r_alias = _rules_case("alias.yaml", GOOD_RULES + "notes: &n [a]\ndefaults: {attrs: *n}\n")
r_billion_laughs = _rules_case("laughs.yaml", "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"{chr(98 + k)}: &{chr(98 + k)} [{', '.join(['*' + chr(97 + k)] * 9)}]\n" for k in range(8)))
r_invalid_yaml = _rules_case("invalid.yaml", GOOD_RULES + "  - op: [Relu\n")
r_tab_yaml = _rules_case("tab.yaml", "provider:\tXnnpackExecutionProvider\n\tkind: kernel\n")
r_list_doc = _rules_case("list.yaml", "- provider: XnnpackExecutionProvider\n- kind: kernel\n")
r_scalar_doc = _rules_case("scalar.yaml", "just a string\n")
r_empty = _rules_case("empty.yaml", "")
r_comments_only = _rules_case("comments.yaml", "# nothing here\n# at all\n")
r_two_docs = _rules_case("twodocs.yaml", GOOD_RULES + "---\n" + GOOD_RULES)
r_duplicate_key = _rules_case("dupkey.yaml", GOOD_RULES + "kind: compiling\n")
r_non_string_key = _rules_case("intkey.yaml", GOOD_RULES + "7: seven\n")
r_python_tag = _rules_case("pytag.yaml", GOOD_RULES.replace(
    "kind: kernel", "kind: !!python/object/apply:os.system [\"echo pwned\"]"))
r_python_scalar_tag = _rules_case("pyname.yaml", GOOD_RULES.replace(
    "kind: kernel", "kind: !!python/name:os.system ''"))
r_not_utf8 = _rules_case("latin1.yaml", data=GOOD_RULES.replace("test table", "t\xe9st").encode("latin-1"))
r_binary = _rules_case("binary.yaml", data=bytes(range(256)) * 4)
r_empty_range = _rules_case("range.yaml", GOOD_RULES + "    versions: [13, 6]\n")
r_bad_provider_name = _rules_case("badname.yaml", GOOD_RULES.replace("XnnpackExecutionProvider", "Xnnpack Provider"))
r_deep_nesting = _rules_case("deep.yaml", GOOD_RULES + "notes: " + "[" * 5000 + "]" * 5000 + "\n")
r_deep_block = _rules_case("deepmap.yaml", GOOD_RULES + "defaults:\n" + "".join(
    "  " * (k + 1) + f"k{k}:\n" for k in range(3000)))
r_huge_int = _rules_case("hugeint.yaml", GOOD_RULES + "    min_rank: " + "9" * 5000 + "\n")
r_nan = _rules_case("nan.yaml", GOOD_RULES + "    attrs: [{name: alpha, min: .nan}]\n")


def r_huge_file(tmp):
    m = good_model(tmp)
    r = tmp / "huge.yaml"
    with open(r, "wb") as f:
        f.write(GOOD_RULES.encode())
        f.truncate(17 * 1024 * 1024)  # sparse: cheap to make, refused before it is read
    return [m, "--rules", r], r, "bytes", [m, r]


def r_missing_file(tmp):
    m = good_model(tmp)
    r = tmp / "absent.yaml"
    return [m, "--rules", r], r, "", [m]


def r_dev_zero(tmp):
    m = good_model(tmp)
    return [m, "--rules", "/dev/zero"], "/dev/zero", "regular file", [m]


def r_fifo(tmp):
    m = good_model(tmp)
    f = tmp / "pipe.yaml"
    os.mkfifo(f)  # reading it would block forever
    return [m, "--rules", f], f, "regular file", [m]


def c_dev_zero(tmp):
    return ["/dev/zero"], "/dev/zero", "regular file", []


def r_directory_with_bad_table(tmp):
    m = good_model(tmp)
    d = tmp / "tables"
    d.mkdir()
    (d / "a_good.yaml").write_text(GOOD_RULES)
    (d / "b_bad.yaml").write_text(GOOD_RULES + "bogus: 1\n")
    return [m, "--rules", d], d / "b_bad.yaml", "bogus", [m, d / "a_good.yaml", d / "b_bad.yaml"]


def u_output_is_directory(tmp):
    m = good_model(tmp)
    d = tmp / "outdir"
    d.mkdir()
    return [m, "--format", "json", "-o", d], d, "", [m]


def u_output_folder_missing(tmp):
    m = good_model(tmp)
    o = tmp / "no" / "such" / "folder" / "out.json"
    return [m, "--format", "json", "-o", o], o, "does not exist", [m]


def u_output_overwrites_model(tmp):
    m = good_model(tmp)
    return [m, "--format", "json", "-o", m], m, "input", [m]


def u_output_overwrites_rules(tmp):
    m = good_model(tmp)
    r = tmp / "mine.yaml"
    r.write_text(GOOD_RULES)
    return [m, "--rules", r, "-p", "xnnpack", "--format", "json", "-o", r], r, "input", [m, r]


def u_unknown_variant(tmp):
    m = good_model(tmp)
    r = tmp / "mine.yaml"
    r.write_text(GOOD_RULES)
    return [m, "--rules", r, "-p", "xnnpack:nosuchvariant"], None, "variant", [m, r]


def r_unknown_provider(tmp):
    m = good_model(tmp)
    r = tmp / "unknownep.yaml"
    r.write_text(GOOD_RULES.replace("XnnpackExecutionProvider", "FrobExecutionProvider"))
    return [m, "--rules", r, "-p", "FrobExecutionProvider"], r, "FrobExecutionProvider", [m, r]


BAD_CASES = [
    c_empty, c_truncated, c_truncated_one_byte, c_random_bytes, c_text_file, c_other_message, c_no_graph,
    c_duplicate_initializer, c_directory,
    c_missing_file, c_cycle, c_self_loop, c_duplicate_output, c_output_shadows_initializer,
    c_duplicate_graph_input, c_dangling_consumer, c_dangling_graph_output,
    c_negative_dim, c_huge_dim, c_huge_initializer_dim, c_external_parent, c_external_absolute,
    c_external_symlink, c_external_nul, c_external_in_subgraph, c_huge_dim_in_custom_subgraph,
    c_external_constant_attribute, c_non_utf8_name, c_non_utf8_tensor_name,
    c_unknown_element_type,
    r_wrong_type, r_ops_not_list, r_unknown_key, r_unknown_rule_key, r_missing_key, r_alias,
    r_billion_laughs, r_invalid_yaml, r_tab_yaml, r_list_doc, r_scalar_doc, r_empty, r_comments_only,
    r_two_docs, r_duplicate_key, r_non_string_key, r_python_tag, r_python_scalar_tag, r_not_utf8, r_binary,
    r_empty_range, r_bad_provider_name, r_deep_nesting, r_deep_block, r_huge_int, r_nan, r_huge_file,
    r_missing_file, r_directory_with_bad_table, r_unknown_provider, r_dev_zero, r_fifo, c_dev_zero,
    u_output_is_directory, u_output_folder_missing, u_output_overwrites_model, u_output_overwrites_rules,
    u_unknown_variant,
]


def sha(p):
    return hashlib.sha256(Path(p).read_bytes()).hexdigest()


def _prepare(case, tmp_path):
    argv, named, word, inputs = case(tmp_path)
    out = tmp_path / "out.json"
    if "-o" not in argv:
        argv = argv + ["--format", "json", "-o", out]
    else:
        out = Path(argv[argv.index("-o") + 1])
    before = {p: sha(p) for p in inputs}
    listing = sorted(os.listdir(out.parent)) if out.parent.is_dir() else None
    return ["simulate", *map(str, argv)], named, word, inputs, out, before, listing


def _check(code, stdout, stderr, named, word, inputs, out, before, listing, argv):
    assert "Traceback" not in stdout + stderr, stderr
    assert code == 2, (argv, code, stderr)
    lines = stderr.splitlines()
    assert len(lines) == 1 and stderr.endswith("\n"), stderr
    line = lines[0]
    assert line.startswith("partsim: error: "), line
    if named is not None:
        assert str(named) in line, (named, line)
    assert word.lower() in line.lower(), (word, line)
    assert len(line) < 1000
    if out.is_file() and out not in inputs:
        pytest.fail(f"output {out} was left behind")
    if listing is not None and out.parent.is_dir():
        # no temporary file left either
        assert sorted(os.listdir(out.parent)) == listing
    for p, digest in before.items():
        assert sha(p) == digest, f"{p} was modified"


@pytest.mark.parametrize("case", BAD_CASES, ids=lambda c: c.__name__)
def test_bad_input_in_process(case, tmp_path, run_cli):
    argv, named, word, inputs, out, before, listing = _prepare(case, tmp_path)
    code, stdout, stderr = run_cli(*argv)
    _check(code, stdout, stderr, named, word, inputs, out, before, listing, argv)


# a handful through real processes: exit status, stderr and the absence of tracebacks at process level
SUBPROCESS_CASES = [c_truncated, c_cycle, c_external_parent, r_billion_laughs, r_deep_nesting,
                    u_output_is_directory]


@pytest.mark.parametrize("case", SUBPROCESS_CASES, ids=lambda c: c.__name__)
def test_bad_input_subprocess(case, tmp_path):
    argv, named, word, inputs, out, before, listing = _prepare(case, tmp_path)
    proc = subprocess.run([sys.executable, "cli.py", *argv], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    _check(proc.returncode, proc.stdout, proc.stderr, named, word, inputs, out, before, listing, argv)


_OPENED = []
_WATCH = {"on": False}


def _audit(event, args):
    if _WATCH["on"] and event == "open" and args and isinstance(args[0], (str, bytes, os.PathLike)):
        _OPENED.append(os.fsdecode(args[0]))


@pytest.mark.parametrize("location", ["../secret.bin", "link.bin"])
def test_external_location_is_never_opened(tmp_path, run_cli, location):
    """An escaping location is refused without being opened (audit hook on every open())."""
    if not _OPENED and not getattr(sys, "_partsim_audit", False):
        sys.addaudithook(_audit)  # hooks cannot be removed: it only records while _WATCH is on
        sys._partsim_audit = True
    p = model_with_external(tmp_path, location)
    secret = tmp_path / "secret.bin"
    secret.write_bytes(b"\0" * 16)
    os.symlink(secret, p.parent / "link.bin")
    _OPENED.clear()
    _WATCH["on"] = True
    try:
        code, _, err = run_cli("simulate", p)
    finally:
        _WATCH["on"] = False
    assert code == 2 and "escapes" in err
    assert str(p) in _OPENED  # the hook works: the model itself was opened
    assert not [f for f in _OPENED if "secret" in f or "link.bin" in f], _OPENED


# ---------------------------------------------------------------- controls and odd but legal inputs

def test_controls_succeed(tmp_path, run_cli):
    """The model and table the bad cases start from are fine: each failure is due to its defect."""
    m = good_model(tmp_path)
    r = tmp_path / "good.yaml"
    r.write_text(GOOD_RULES)
    out = tmp_path / "out.json"
    code, stdout, stderr = run_cli("simulate", m, "--rules", r, "-p", "xnnpack", "--format", "json", "-o", out)
    assert code == 0, stderr
    s = json.loads(out.read_text())
    on = {n["name"]: n["provider"] for n in s["nodes"]}
    assert on == {"r0": "XnnpackExecutionProvider", "add": "CPUExecutionProvider",
                  "r1": "XnnpackExecutionProvider"}
    p = model_with_external(tmp_path, "weights.bin")
    code, _, stderr = run_cli("simulate", p)
    assert code == 0, stderr


def test_unknown_domain_is_kept_and_flagged(tmp_path, run_cli):
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="r"),
             helper.make_node("Frobnicate", ["a"], ["b"], name="frob", domain="com.example.custom"),
             helper.make_node("Relu", ["b"], ["y"], name="r2")]
    m = model(nodes, [vi("x", [2])], [vi("y", [2])], extra_opsets=[("com.example.custom", 1)])
    p = write_model(tmp_path / "custom.onnx", m)
    before = sha(p)
    out = tmp_path / "out.json"
    code, stdout, stderr = run_cli("simulate", p, "--support", "Relu", "--format", "json", "-o", out)
    assert code == 0, stderr
    assert "Traceback" not in stderr
    s = json.loads(out.read_text())
    by_name = {n["name"]: n for n in s["nodes"]}
    assert set(by_name) == {"r", "frob", "r2"}
    assert by_name["frob"]["domain"] == "com.example.custom"
    assert by_name["frob"].get("schemaKnown") is False
    assert by_name["frob"]["provider"] == "CPUExecutionProvider"
    assert by_name["r"]["provider"] == by_name["r2"]["provider"] == "EP"
    assert sha(p) == before


def test_unknown_domain_without_opset_import(tmp_path, run_cli):
    nodes = [helper.make_node("Frobnicate", ["x"], ["y"], name="frob", domain="org.nowhere")]
    p = write_model(tmp_path / "custom2.onnx", model(nodes, [vi("x", [2])], [vi("y", [2])]))
    code, stdout, stderr = run_cli("simulate", p, "--format", "json")
    assert code == 0, stderr
    s = json.loads(stdout)
    assert s["nodes"][0]["domain"] == "org.nowhere" and s["nodes"][0].get("schemaKnown") is False


def test_unknown_op_in_default_domain_is_flagged(tmp_path, run_cli):
    nodes = [helper.make_node("NoSuchOnnxOp", ["x"], ["y"], name="mystery")]
    p = write_model(tmp_path / "mystery.onnx", model(nodes, [vi("x", [2])], [vi("y", [2])]))
    code, stdout, stderr = run_cli("simulate", p, "--format", "json")
    assert code == 0, stderr
    s = json.loads(stdout)
    assert s["nodes"][0].get("schemaKnown") is False


def test_unknown_provider_name_is_refused_with_a_suggestion(tmp_path, run_cli):
    """ORT drops names it does not know (docs/contract.md §2; `partsim providers` reports that); a
    prediction for them would be a silent CPU-only answer, so simulate refuses (issue 16)."""
    p = good_model(tmp_path)
    for request, hint in (("NoSuchThingExecutionProvider,bogus", "NoSuchThingExecutionProvider"),
                          ("nnpai", "did you mean nnapi?"), ("", "empty")):
        code, stdout, stderr = run_cli("simulate", p, "-p", request, "--format", "json")
        assert code == 2 and stdout == "", (request, stderr)
        assert len(stderr.strip().splitlines()) == 1 and hint in stderr, stderr


def test_external_inside_folder_is_fine_even_if_absent(tmp_path, run_cli):
    """Graph-only models: a weight file inside the folder that is absent is not read and not an error."""
    p = model_with_external(tmp_path, "sub/weights.bin")
    code, stdout, stderr = run_cli("simulate", p, "--format", "json")
    assert code == 0, stderr


def test_shape_inference_memory_bomb_is_contained(tmp_path, run_cli, monkeypatch):
    """ONNX's data propagation allocated per element of a 1-D tensor fed to Mul; a Reshape whose
    target is itself propagated makes a 2**31-element one.  partsim no longer runs it (ORT's shape
    values are propagated by partsim/io/shape_values.py, at most MAX_VALUES per tensor): the load
    must finish with the Reshape's static target, not exhaust the machine."""
    import partsim.io.shape_inference

    monkeypatch.setattr(partsim.io.shape_inference, "SHAPE_INFERENCE_MEMORY", 256 * 1024**2)  # fail fast
    nodes = [helper.make_node("Shape", ["x"], ["s"], name="shape", start=0, end=1),
             helper.make_node("Reshape", ["x", "s"], ["r"], name="reshape"),
             helper.make_node("Mul", ["r", "r"], ["y"], name="mul")]
    p = write_model(tmp_path / "bomb.onnx", model(nodes, [vi("x", [2**31, 1])], [vi("y", None)]))
    code, stdout, stderr = run_cli("simulate", p, "--support", "Mul", "--format", "json")
    assert code == 0, stderr
    s = json.loads(stdout)
    assert not any("shape" in w for w in s.get("warnings", [])), s.get("warnings")
    assert [n["provider"] for n in s["nodes"]] == ["CPUExecutionProvider", "CPUExecutionProvider", "EP"]
