"""The CoreML tables read from ORT's CoreML op builders (partsim/gen/coreml_builders.py).

The ORT source is a git directory holding microsoft/onnxruntime @ae857d7a (``PARTSIM_ORT_GIT``, default the
stored snapshot this machine fetched); the tests that read it skip where it is absent.  Facts are checked
against the source text with the test's own reading (a plain search of the C++ file), and against the
usability checker's op lists of the installed onnxruntime wheel, a second ORT source.
"""

import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from partsim.gen import coreml_builders, mobile_md
from partsim.rules.load import load_table
from tests.conftest import ROOT

COMMIT = "ae857d7aae39"
ORT_GIT = Path(os.environ.get("PARTSIM_ORT_GIT", "/work/.mirror/ibelem+onnxruntime/repo"))
IMPL = "onnxruntime/core/providers/coreml/builders/impl/"
VARIANTS = {"mlprogram": "coreml-mlprogram.yaml", "neuralnetwork": "coreml-neuralnetwork.yaml"}


def _git(*args):
    return subprocess.run(["git", "--git-dir", str(ORT_GIT), *args], capture_output=True, text=True, check=False)


@pytest.fixture(scope="module")
def ort_git():
    if not ORT_GIT.is_dir() or _git("cat-file", "-e", f"{COMMIT}^{{commit}}").returncode != 0:
        pytest.skip(f"no ORT git directory with commit {COMMIT} at {ORT_GIT} (set PARTSIM_ORT_GIT to a clone of "
                    "microsoft/onnxruntime)")
    return ORT_GIT


def source_text(rel):
    return _git("show", f"{COMMIT}:{rel}").stdout


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_generated_from_the_source_equals_the_shipped_table(ort_git, variant):
    text = coreml_builders.coreml_table(ort_git, COMMIT, variant)
    assert coreml_builders.coreml_table(ort_git, COMMIT, variant).encode() == text.encode()
    shipped = (ROOT / "rules" / VARIANTS[variant]).read_text(encoding="utf-8")
    assert shipped == text, f"rules/{VARIANTS[variant]} is stale: regenerate it (partsim/gen/coreml_builders.py)"


def _ml_program_line(rel):
    lines = source_text(rel).splitlines()
    hits = [k + 1 for k, line in enumerate(lines) if "bool SupportsMLProgram() const override { return true; }" in line]
    return hits[0] if hits else None


@pytest.mark.parametrize("op, builder", [("BatchNormalization", "batch_norm_op_builder.cc"),
                                         ("Pad", "pad_op_builder.cc")])
def test_ml_program_support_is_what_the_builder_declares(ort_git, op, builder):
    """Issue 29: BatchNormalization and Pad declare ML Program support; the usability checker's list lacks them."""
    line = _ml_program_line(IMPL + builder)
    assert line, f"{builder} no longer declares SupportsMLProgram"
    (rule,) = load_table(ROOT / "rules" / "coreml-mlprogram.yaml").rules[("", op)]
    assert rule.notes == "" or "checks more" in rule.notes
    shipped = (ROOT / "rules" / "coreml-mlprogram.yaml").read_text()
    cite = re.search(rf"- op: {op}\n(?:  .*\n)*?  source: (.*(?:\n    .*)*)", shipped).group(1)
    assert f"onnxruntime@{COMMIT} {IMPL}{builder}:{line};" in " ".join(cite.split())
    md = {op for (_, op), _ in mobile_md.parse_mobile_md(mobile_md.default_md_path("coreml-mlprogram"))}
    assert op not in md  # the checker's list lags the builders


def _registered(factory):
    return re.findall(r'Create(\w+)OpBuilder\("(\w+)", op_registrations\)', factory)


def test_the_ml_program_table_holds_exactly_the_builders_that_support_it(ort_git):
    """Every registered op whose builder file declares SupportsMLProgram is in the ML Program table (unless its
    builder refuses it there: none does at this commit), and no other op is."""
    names = _git("ls-tree", "--name-only", f"{COMMIT}:{IMPL}").stdout.split()
    defined = {}
    for name in names:
        if name.endswith("_op_builder.cc"):
            for kind in re.findall(r"^void Create(\w+)OpBuilder\(", source_text(IMPL + name), re.M):
                defined[kind] = name
    factory = source_text("onnxruntime/core/providers/coreml/builders/op_builder_factory.cc")
    registered = _registered(factory)
    assert len(registered) > 60
    ml = {op for kind, op in registered if _ml_program_line(IMPL + defined[kind])}
    nn_only = {op for kind, op in registered} - ml
    assert {"Flatten", "LRN"} <= nn_only  # their builders have no SupportsMLProgram
    table = load_table(ROOT / "rules" / "coreml-mlprogram.yaml")
    assert {op for _, op in table.rules} == ml
    nn = load_table(ROOT / "rules" / "coreml-neuralnetwork.yaml")
    assert nn_only <= {op for _, op in nn.rules}


@pytest.mark.parametrize("variant, key", [("mlprogram", "coreml-mlprogram"), ("neuralnetwork", "coreml-neuralnetwork")])
def test_every_op_of_the_wheel_checker_list_has_a_builder(variant, key):
    """The installed wheel's usability-checker list (1.31.1) names no op the builders' table lacks."""
    try:
        rows = mobile_md.parse_mobile_md(mobile_md.default_md_path(key))
    except Exception as exc:  # noqa: BLE001 - no wheel: nothing to compare
        pytest.skip(f"the onnxruntime wheel's {key} md list is not installed ({exc})")
    table = load_table(ROOT / "rules" / VARIANTS[variant])
    assert {op for (_, op), _ in rows} - {op for _, op in table.rules} == set()


def _model(tmp_path, pad_mode, name):
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w")]
    inits += [numpy_helper.from_array(np.abs(rng.standard_normal(4)).astype(np.float32) + 0.1, n)
              for n in ("s", "b", "m", "v")]
    inits.append(numpy_helper.from_array(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "pads"))
    inits.append(numpy_helper.from_array(np.array(0.0, np.float32), "cv"))
    pad_inputs = ["bn", "pads"] + (["cv"] if pad_mode == "constant" else [])  # NeuralNetwork needs constant_value
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
             helper.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["bn"], name="bn"),
             helper.make_node("Pad", pad_inputs, ["p"], name="pad", mode=pad_mode),
             helper.make_node("Flatten", ["p"], ["y"], name="flat")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 400])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path / name
    onnx.save(model, str(path))
    return path


def test_the_builder_tables_on_a_model(tmp_path):
    from partsim import predict
    from partsim.analysis.compat import usability_checker_analysis

    path = _model(tmp_path, "reflect", "m.onnx")
    s, _ = predict(path, ["coreml"], level="disable")  # ML Program: the default variant
    place = {n["name"]: (n["provider"], n["reason"]) for n in s["nodes"]}
    assert {k: v[0] for k, v in place.items() if k != "flat"} == dict.fromkeys(("conv", "bn", "pad"),
                                                                                "CoreMLExecutionProvider")
    assert place["flat"] == ("CPUExecutionProvider", "op_not_in_table")  # flatten_op_builder.cc: no ML Program
    s, _ = predict(path, ["coreml:neuralnetwork"], level="disable")
    place = {n["name"]: (n["provider"], n["reason"]) for n in s["nodes"]}
    assert place["pad"] == ("CPUExecutionProvider", "attribute")  # reflect: ML Program only
    # NeuralNetwork has a Flatten builder, but a Flatten alone is a partition of trivial ops only: dropped
    assert place["flat"] == ("CPUExecutionProvider", "group_rejected")
    s, _ = predict(_model(tmp_path, "edge", "edge.onnx"), ["coreml"], level="disable")
    assert {n["name"]: n["reason"] for n in s["nodes"]}["pad"] == "attribute"  # a mode the builder refuses
    mlprogram = usability_checker_analysis(str(path))["eps"]["CoreML MLProgram"]
    assert "ai.onnx:Pad" in mlprogram["unsupportedOps"]  # --compat usability-checker keeps the checker's lists


def test_a_condition_whose_source_text_changed_becomes_a_note(ort_git, tmp_path):
    """A plain folder of ORT's layout (its commit given) where one quoted check was rewritten: the condition is
    dropped and the rule says which one."""
    root = tmp_path / "ort"
    tar = subprocess.run(["git", "--git-dir", str(ort_git), "archive", COMMIT, "onnxruntime/core/providers/coreml/",
                          "VERSION_NUMBER"], capture_output=True, check=True).stdout
    (tmp_path / "src.tar").write_bytes(tar)
    shutil.unpack_archive(tmp_path / "src.tar", root)
    lrn = root / IMPL / "LRN_op_builder.cc"
    lrn.write_text(lrn.read_text().replace("if (input_rank != 3 && input_rank != 4) {", "if (input_rank > 4) {"))
    text = coreml_builders.coreml_table(root, "edited", "neuralnetwork")
    out = tmp_path / "nn.yaml"
    out.write_text(text)
    (rule,) = load_table(out).rules[("", "LRN")]
    assert rule.min_rank is None and "was not found in this source: a 3-D or 4-D input" in rule.notes
    assert "onnxruntime@edited " in text


def test_cli_import(run_cli, ort_git, tmp_path):
    out = tmp_path / "ml.yaml"
    code, _, err = run_cli("rules", "import", "coreml-builders", ort_git, "--commit", COMMIT, "-o", out)
    assert code == 0, err
    assert out.read_text() == (ROOT / "rules" / "coreml-mlprogram.yaml").read_text()
    code, _, err = run_cli("rules", "import", "coreml-builders", tmp_path / "nothing")
    assert code == 2 and "not a folder" in err and "\n" not in err.strip()
    code, _, err = run_cli("rules", "import", "coreml-builders", tmp_path)
    assert code == 2 and "--commit" in err and "\n" not in err.strip()


def test_provider_options_select_what_coreml_builds(tmp_path, run_cli):
    """--ep-option ModelFormat / RequireStaticInputShapes / EnableOnSubgraphs, as ORT's coreml_options.cc reads
    them: the variant's table, static inputs required, bodies of control flow allowed."""
    from partsim import predict

    path = _model(tmp_path, "constant", "m.onnx")

    def placed(**options):
        s, _ = predict(path, ["coreml"], level="disable", ep_options=options or None)
        return {n["name"]: (n["provider"], n["reason"]) for n in s["nodes"]}

    assert placed()["flat"] == ("CPUExecutionProvider", "op_not_in_table")  # -p coreml: ML Program
    assert placed(ModelFormat="MLProgram")["flat"] == placed()["flat"]
    assert placed(ModelFormat="NeuralNetwork")["flat"][0] == "CoreMLExecutionProvider"
    assert placed(MLComputeUnits="CPUOnly") == placed()  # no effect on placement
    dyn = helper.make_model(helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])]), opset_imports=[helper.make_opsetid("", 17)])
    dyn.ir_version = 8
    onnx.save(dyn, str(tmp_path / "dyn.onnx"))
    for options, want in (({}, ("CoreMLExecutionProvider", None)),
                          ({"RequireStaticInputShapes": "1"}, ("CPUExecutionProvider", "dynamic_shape"))):
        s, _ = predict(tmp_path / "dyn.onnx", ["coreml"], level="disable", ep_options=options or None)
        assert (s["nodes"][0]["provider"], s["nodes"][0]["reason"]) == want, options
    def branch(name):
        return helper.make_graph([helper.make_node("Relu", ["x"], [f"{name}_y"], name=f"{name}_relu")], name, [],
                                 [helper.make_tensor_value_info(f"{name}_y", TensorProto.FLOAT, [2, 3])])

    cond = helper.make_model(helper.make_graph(
        [helper.make_node("If", ["c"], ["y"], name="if", then_branch=branch("then"), else_branch=branch("else"))],
        "g", [helper.make_tensor_value_info("c", TensorProto.BOOL, []),
              helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])]), opset_imports=[helper.make_opsetid("", 17)])
    cond.ir_version = 8
    onnx.save(cond, str(tmp_path / "if.onnx"))
    for options, want in (({}, "CPUExecutionProvider"), ({"EnableOnSubgraphs": "1"}, "CoreMLExecutionProvider")):
        s, _ = predict(tmp_path / "if.onnx", ["coreml"], level="disable", ep_options=options or None)
        assert {n["name"]: n["provider"] for n in s["nodes"]}["then_relu"] == want, options
    for bad in ("ModelFormat=Foo", "Bogus=1", "RequireStaticInputShapes=yes"):
        code, _, err = run_cli("simulate", path, "-p", "coreml", "--ep-option", bad)
        assert code == 2 and "--ep-option" in err and err.count("\n") == 1, (bad, err)


def test_partitions_of_trivial_ops_only_are_dropped(ort_git, tmp_path):
    """coreml_execution_provider.cc keeps a partition only when one of its nodes is not trivial (IsTrivial)."""
    from partsim import predict

    names = _git("ls-tree", "--name-only", f"{COMMIT}:{IMPL}").stdout.split()
    always = set()
    for name in names:
        text = source_text(IMPL + name) if name.endswith("_op_builder.cc") else ""
        if "bool IsTrivial(const Node& /*node*/) const override { return true; }" in text:
            always |= set(re.findall(r'Create(\w+)OpBuilder\(', text))
    factory = source_text("onnxruntime/core/providers/coreml/builders/op_builder_factory.cc")
    trivial_ops = {op for kind, op in _registered(factory) if f"{kind}" in {k.removesuffix("Op") for k in always}}
    table = load_table(ROOT / "rules" / "coreml-mlprogram.yaml")
    assert set(table.option("trivial_ops")) == (trivial_ops | {"Ceil"}) - {"Flatten"}  # Flatten: no ML Program
    shape = numpy_helper.from_array(np.array([1, 12], np.int64), "shape")
    w = numpy_helper.from_array(np.ones((3, 3, 1, 1), np.float32), "w")

    def placed(nodes, name):
        graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 2, 2])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [shape, w])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        onnx.save(model, str(tmp_path / name))
        s, _ = predict(tmp_path / name, ["coreml"], level="disable")
        return {n["name"]: (n["provider"], n["reason"]) for n in s["nodes"]}

    only = placed([helper.make_node("Transpose", ["x"], ["t"], name="t", perm=[0, 2, 3, 1]),
                   helper.make_node("Reshape", ["t", "shape"], ["y"], name="r")], "trivial.onnx")
    assert only == dict.fromkeys(("t", "r"), ("CPUExecutionProvider", "group_rejected"))
    mixed = placed([helper.make_node("Conv", ["x", "w"], ["c"], name="c"),
                    helper.make_node("Transpose", ["c"], ["t"], name="t", perm=[0, 2, 3, 1]),
                    helper.make_node("Reshape", ["t", "shape"], ["y"], name="r")], "mixed.onnx")
    assert {k: v[0] for k, v in mixed.items()} == dict.fromkeys(("c", "t", "r"), "CoreMLExecutionProvider")
