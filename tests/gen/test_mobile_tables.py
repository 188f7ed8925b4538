"""NNAPI / CoreML tables generated from ORT's mobile_helpers md files (partsim/gen/mobile_md.py).

Expected accept/reject outcomes below come from the caveat text of the md files
(onnxruntime 1.31.1, tools/mobile_helpers/*.md), not from partsim's output.  The shipped NNAPI table is
the md one; the shipped CoreML tables come from the CoreML op builders' source
(tests/gen/test_coreml_builders.py), so the CoreML md tables are checked as generated here, and the tiny-model
tests run the md table through ``-r`` (``coreml_md``).
"""

import re

import onnx
import onnx.defs
import pytest
from onnx import TensorProto as T
from onnx import helper

from partsim.api import predict
from partsim.errors import UsageError
from partsim.gen import mobile_md
from partsim.rules.load import load_table
from tests.conftest import ROOT
from tests.modelbuild import const, model, save, vi

TABLES = {  # provider key -> (rules file, provider, variant)
    "nnapi": ("nnapi.yaml", "NnapiExecutionProvider", ""),
    "coreml-neuralnetwork": ("coreml-neuralnetwork.yaml", "CoreMLExecutionProvider", "neuralnetwork"),
    "coreml-mlprogram": ("coreml-mlprogram.yaml", "CoreMLExecutionProvider", "mlprogram"),
}


def md_path(key):
    try:
        p = mobile_md.default_md_path(key)
    except UsageError:
        p = None
    if p is None or not p.is_file():
        pytest.skip(f"the onnxruntime wheel's mobile_helpers md file for {key} is not installed")
    return p


@pytest.fixture(scope="module")
def generated():
    return {k: mobile_md.import_mobile_md([], k) for k in TABLES if md_path(k)}


@pytest.fixture(scope="module")
def coreml_md(md_files):
    """The CoreML md tables, to pass as rules: they replace the shipped (op builder) CoreML tables."""
    return [md_files["coreml-mlprogram"], md_files["coreml-neuralnetwork"]]


@pytest.fixture(scope="module")
def md_files(generated, tmp_path_factory):
    """key -> the md table as a file (the shipped one for NNAPI, generated for CoreML)."""
    base = tmp_path_factory.mktemp("md")
    out = {}
    for key, text in generated.items():
        out[key] = base / TABLES[key][0]
        out[key].write_text(text, encoding="utf-8")
    return out


# ---------------------------------------------------------------- generation


@pytest.mark.parametrize("key", sorted(TABLES))
def test_generation_is_deterministic_and_matches_committed(key, generated):
    again = mobile_md.import_mobile_md([], key)
    assert again.encode() == generated[key].encode()
    if key != "nnapi":  # the shipped CoreML tables come from the op builders (tests/gen/test_coreml_builders.py)
        assert "coreml-builders" in (ROOT / "rules" / TABLES[key][0]).read_text(encoding="utf-8")
        return
    committed = (ROOT / "rules" / TABLES[key][0]).read_text(encoding="utf-8")
    assert committed == generated[key], f"rules/{TABLES[key][0]} is stale: regenerate it (see mobile_md docstring)"


@pytest.mark.parametrize("key", sorted(TABLES))
def test_table_header(key, md_files):
    fname, provider, variant = TABLES[key]
    t = load_table(md_files[key])  # schema-validated
    assert t.provider == provider
    assert t.variant == variant
    assert t.default_variant is (key == "coreml-mlprogram")
    assert t.kind == "compiling" and t.cpu_based is True
    assert t.option("qdq_node_units") is True
    assert t.compute_precision == "fp32"
    assert "onnxruntime" in t.source["version"] and md_path(key).name in t.source["version"]


def _independent_ops(path):
    """domain:op rows of an md table, op names resolved against ONNX's own schema list."""
    onnx_names = {s.name.lower(): s.name for s in onnx.defs.get_all_schemas_with_history() if s.domain == ""}
    ops = set()
    for line in path.read_text().splitlines():
        m = re.match(r"^\|\s*(ai\.onnx|com\.microsoft)[:.]([A-Za-z0-9_]+)\s*\|", line)
        if not m:
            continue
        domain, op = m.groups()
        if domain == "ai.onnx":
            op = onnx_names.get(op.lower(), op)  # "Argmax" -> "ArgMax"
            domain = ""
        ops.add((domain, op))
    return ops


@pytest.mark.parametrize("key", sorted(TABLES))
def test_every_md_op_is_in_the_table(key, md_files):
    ops = _independent_ops(md_path(key))
    assert len(ops) > 30
    t = load_table(md_files[key])
    assert ops == set(t.rules), (ops ^ set(t.rules))


@pytest.mark.parametrize("key", sorted(TABLES))
def test_every_caveat_of_the_wheel_is_mapped(key):
    assert mobile_md.unmapped_caveats(key) == []


@pytest.mark.parametrize("key", sorted(TABLES))
def test_ops_without_caveat_have_no_predicates(key, md_files):
    rows = dict(mobile_md.parse_mobile_md(md_path(key)))
    t = load_table(md_files[key])
    plain = [k for k, text in rows.items() if not text]
    assert plain
    for k in plain:
        (rule,) = t.rules[k]
        assert not rule.types and not rule.attrs and not rule.const_inputs and not rule.notes
        assert rule.dtype_pairs is None and rule.min_rank is None


def test_changed_caveat_falls_back_to_notes(tmp_path):
    src = md_path("nnapi").read_text()
    changed = src.replace("|ai.onnx:Conv|Only 2D Conv is supported.", "|ai.onnx:Conv|Only 3D Conv is supported.")
    assert changed != src
    p = tmp_path / "nnapi_supported_ops.md"
    p.write_text(changed)
    assert mobile_md.unmapped_caveats("nnapi", [p]) == ["Conv"]
    text = mobile_md.import_mobile_md([p], None)  # provider inferred from the file name
    rules_file = tmp_path / "n.yaml"
    rules_file.write_text(text)
    (rule,) = load_table(rules_file).rules[("", "Conv")]
    assert rule.notes.startswith("Only 3D Conv is supported.") and not rule.const_inputs


def test_cli_import_and_bad_input(run_cli, tmp_path):
    md_path("coreml-mlprogram")
    out = tmp_path / "ml.yaml"
    code, _, err = run_cli("rules", "import", "mobile-md", "--provider", "coreml-mlprogram", "-o", out)
    assert code == 0, err
    assert out.read_text() == mobile_md.import_mobile_md([], "coreml-mlprogram")
    code, _, err = run_cli("rules", "import", "mobile-md", "--provider", "bogus")
    assert code == 2 and "--provider" in err and "\n" not in err.strip()
    junk = tmp_path / "junk.md"
    junk.write_text("no table here\n")
    code, _, err = run_cli("rules", "import", "mobile-md", junk, "--provider", "nnapi")
    assert code == 2 and "junk.md" in err


# ---------------------------------------------------------------- predicates on tiny models


def place(tmp_path, proto, providers, rules=()):
    """{node name: (provider, reason)} for ``proto`` under ``providers`` (``rules``: tables layered in)."""
    path = save(proto, tmp_path / "m.onnx")
    summary, _ = predict(path, providers=providers, rule_paths=rules, level="disable")  # the graph as written
    return {n["name"]: (n["provider"], n["reason"]) for n in summary["nodes"]}


def conv_model(x_shape, w_const=True):
    w = [const("w", [4, 3, 3, 3])] if w_const else []
    inputs = [vi("x", x_shape)] + ([] if w_const else [vi("w", [4, 3, 3, 3])])
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="conv", pads=[1, 1, 1, 1])
    return model([node], inputs, [vi("y", None)], w)


def test_nnapi_conv_needs_static_shape(tmp_path):
    assert place(tmp_path, conv_model(["N", 3, 8, 8]), ["nnapi"])["conv"] == ("CPUExecutionProvider",
                                                                           "dynamic_shape")
    assert place(tmp_path, conv_model([1, 3, 8, 8]), ["nnapi"])["conv"][0] == "NnapiExecutionProvider"


def test_nnapi_conv_weights_must_be_constant(tmp_path):
    assert place(tmp_path, conv_model([1, 3, 8, 8], w_const=False), ["nnapi"])["conv"] == (
        "CPUExecutionProvider", "non_constant_input")


def test_nnapi_conv_only_2d(tmp_path, coreml_md):
    w = const("w", [4, 3, 3])
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="conv")
    proto = model([node], [vi("x", [1, 3, 8])], [vi("y", None)], [w])
    assert place(tmp_path, proto, ["nnapi"])["conv"] == ("CPUExecutionProvider", "rank")
    # CoreML takes 1D conv ("Only 1D/2D Conv is supported.")
    assert place(tmp_path, proto, ["coreml"], coreml_md)["conv"][0] == "CoreMLExecutionProvider"


@pytest.mark.parametrize("providers", [["coreml"], ["coreml:neuralnetwork"]])
def test_coreml_rank_six_rejected(tmp_path, providers, coreml_md):
    for rank, expect in ((6, ("CPUExecutionProvider", "rank")), (5, ("CoreMLExecutionProvider", None))):
        shape = [2] * rank
        node = helper.make_node("Add", ["a", "b"], ["y"], name="add")
        proto = model([node], [vi("a", shape), vi("b", shape)], [vi("y", shape)])
        assert place(tmp_path, proto, providers, coreml_md)["add"] == expect


def test_nnapi_depth_to_space_mode_attribute(tmp_path):
    for mode, expect in (("CRD", ("CPUExecutionProvider", "attribute")), ("DCR", ("NnapiExecutionProvider", None))):
        node = helper.make_node("DepthToSpace", ["x"], ["y"], name="d2s", blocksize=2, mode=mode)
        proto = model([node], [vi("x", [1, 8, 4, 4])], [vi("y", [1, 2, 8, 8])])
        assert place(tmp_path, proto, ["nnapi"])["d2s"] == expect


def test_mlprogram_depth_to_space_crd_needs_fixed_shape(tmp_path, coreml_md):
    # "If 'mode' is 'CRD' the input must have a fixed shape."
    for shape, expect in ((["N", 8, 4, 4], "CPUExecutionProvider"), ([1, 8, 4, 4], "CoreMLExecutionProvider")):
        node = helper.make_node("DepthToSpace", ["x"], ["y"], name="d2s", blocksize=2, mode="CRD")
        proto = model([node], [vi("x", shape)], [vi("y", None)])
        assert place(tmp_path, proto, ["coreml"], coreml_md)["d2s"][0] == expect
    node = helper.make_node("DepthToSpace", ["x"], ["y"], name="d2s", blocksize=2)  # DCR by default
    proto = model([node], [vi("x", ["N", 8, 4, 4])], [vi("y", None)])
    assert place(tmp_path, proto, ["coreml"], coreml_md)["d2s"][0] == "CoreMLExecutionProvider"


def resize_model(**attrs):
    scales = helper.make_tensor("scales", T.FLOAT, [4], [1, 1, 2, 2])
    node = helper.make_node("Resize", ["x", "", "scales"], ["y"], name="rs", **attrs)
    return model([node], [vi("x", [1, 3, 4, 4])], [vi("y", [1, 3, 8, 8])], [scales])


@pytest.mark.parametrize("attrs, ok", [
    ({"mode": "linear"}, False),  # default coordinate_transformation_mode is half_pixel
    ({"mode": "linear", "coordinate_transformation_mode": "asymmetric"}, True),
    ({"mode": "nearest", "coordinate_transformation_mode": "asymmetric"}, False),  # nearest_mode default
    ({"mode": "nearest", "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"}, True),
    ({"mode": "cubic", "coordinate_transformation_mode": "asymmetric"}, False),
])
def test_coreml_neuralnetwork_resize_attributes(tmp_path, attrs, ok, coreml_md):
    got = place(tmp_path, resize_model(**attrs), ["coreml:neuralnetwork"], coreml_md)["rs"]
    assert got == (("CoreMLExecutionProvider", None) if ok else ("CPUExecutionProvider", "attribute"))


def gemm_model(b_const, trans_b):
    inits = [const("b", [4, 3])] if b_const else []
    inputs = [vi("a", [2, 3])] + ([] if b_const else [vi("b", [4, 3])])
    node = helper.make_node("Gemm", ["a", "b"], ["y"], name="gemm", transB=trans_b)
    return model([node], inputs, [vi("y", [2, 4])], inits)


def test_nnapi_gemm_b_constant_or_transposed(tmp_path, coreml_md):
    # "If input B is not constant, transB should be 1."
    assert place(tmp_path, gemm_model(True, 1), ["nnapi"])["gemm"][0] == "NnapiExecutionProvider"
    assert place(tmp_path, gemm_model(False, 1), ["nnapi"])["gemm"][0] == "NnapiExecutionProvider"
    node = helper.make_node("Gemm", ["a", "b"], ["y"], name="gemm")
    proto = model([node], [vi("a", [2, 3]), vi("b", [3, 4])], [vi("y", [2, 4])])  # transB=0, B dynamic
    provider, reason = place(tmp_path, proto, ["nnapi"])["gemm"]
    assert provider == "CPUExecutionProvider" and reason in ("non_constant_input", "attribute")
    # CoreML: "Input B must be constant." whatever transB
    assert place(tmp_path, gemm_model(False, 1), ["coreml"], coreml_md)["gemm"] == ("CPUExecutionProvider",
                                                                        "non_constant_input")


def test_nnapi_gather_indices_int32_or_constant(tmp_path):
    def gather(idx_dtype, idx_const):
        inits = [helper.make_tensor("i", idx_dtype, [2], [0, 1])] if idx_const else []
        inputs = [vi("x", [3, 4])] + ([] if idx_const else [vi("i", [2], idx_dtype)])
        node = helper.make_node("Gather", ["x", "i"], ["y"], name="g")
        return model([node], inputs, [vi("y", [2, 4])], inits)

    assert place(tmp_path, gather(T.INT64, False), ["nnapi"])["g"] == ("CPUExecutionProvider", "non_constant_input")
    assert place(tmp_path, gather(T.INT32, False), ["nnapi"])["g"][0] == "NnapiExecutionProvider"
    assert place(tmp_path, gather(T.INT64, True), ["nnapi"])["g"][0] == "NnapiExecutionProvider"


def test_coreml_pow_needs_float_inputs(tmp_path, coreml_md):
    for dtype, expect in ((T.INT32, ("CPUExecutionProvider", "dtype")), (T.FLOAT, ("CoreMLExecutionProvider", None))):
        node = helper.make_node("Pow", ["a", "b"], ["y"], name="pow")
        proto = model([node], [vi("a", [2, 3], dtype), vi("b", [2, 3], dtype)], [vi("y", [2, 3], dtype)])
        assert place(tmp_path, proto, ["coreml"], coreml_md)["pow"] == expect


def test_coreml_variants_resolve(tmp_path, coreml_md):
    # Erf is in the MLProgram list only: plain "coreml" means MLProgram (the default variant)
    node = helper.make_node("Erf", ["x"], ["y"], name="erf")
    proto = model([node], [vi("x", [2, 3])], [vi("y", [2, 3])])
    assert place(tmp_path, proto, ["coreml"], coreml_md)["erf"][0] == "CoreMLExecutionProvider"
    assert place(tmp_path, proto, ["CoreMLExecutionProvider:mlprogram"], coreml_md)["erf"][0] == "CoreMLExecutionProvider"
    assert place(tmp_path, proto, ["coreml:neuralnetwork"], coreml_md)["erf"] == ("CPUExecutionProvider", "op_not_in_table")


def test_unchecked_caveat_is_reported(tmp_path):
    # NNAPI Split: "Number of splits must evenly divide split axis size" cannot be checked -> noted
    split = helper.make_tensor("s", T.INT64, [2], [2, 2])
    node = helper.make_node("Split", ["x", "s"], ["a", "b"], name="split", axis=1)
    proto = model([node], [vi("x", [1, 4])], [vi("a", [1, 2]), vi("b", [1, 2])], [split])
    path = save(proto, tmp_path / "m.onnx")
    summary, _ = predict(path, providers=["nnapi"])
    assert summary["nodes"][0]["provider"] == "NnapiExecutionProvider"
    notes = [c["note"] for c in summary["uncheckedCaveats"] if c["node"] == "split"]
    assert notes and "evenly divide" in notes[0]


def test_corpus_model_runs_on_all_three(tmp_path):
    p = ROOT.parent / "shared" / "corpus" / "graph_only" / "mobilenet_v2.dynamo.onnx"
    if not p.exists():
        pytest.skip(f"{p} is absent: ../shared corpus is not checked out beside the project")
    proto = onnx.load(str(p), load_external_data=False)
    ops = {n.op_type for n in proto.graph.node}
    for providers, provider in ((["nnapi"], "NnapiExecutionProvider"), (["coreml"], "CoreMLExecutionProvider"),
                                (["coreml:neuralnetwork"], "CoreMLExecutionProvider")):
        summary, _ = predict(p, providers=providers)
        assert summary["effectiveProviders"][0] == provider
        assert summary["accelerated"] is True
        on_ep = {n["opType"] for n in summary["nodes"] if n["provider"] == provider}
        assert "Conv" in on_ep and on_ep <= ops


@pytest.mark.parametrize("attrs, ok", [({}, True), ({"end": 2}, False), ({"start": 1}, False), ({"start": 0}, True)])
def test_coreml_neuralnetwork_shape_start_end(tmp_path, attrs, ok, coreml_md):
    # "Attribute `start` with non-default value is not supported. Attribute `end` is not supported."
    node = helper.make_node("Shape", ["x"], ["y"], name="shape", **attrs)
    proto = model([node], [vi("x", [1, 3])], [vi("y", None, T.INT64)], opset=15)
    got = place(tmp_path, proto, ["coreml:neuralnetwork"], coreml_md)["shape"]
    assert got == (("CoreMLExecutionProvider", None) if ok else ("CPUExecutionProvider", "attribute"))


@pytest.mark.parametrize("attrs, ok", [({}, True), ({"output_padding": [0, 0]}, True),
                                       ({"output_padding": [1, 1]}, False), ({"auto_pad": "SAME_UPPER"}, False),
                                       ({"output_shape": [9, 9]}, False)])
def test_mlprogram_conv_transpose_attributes(tmp_path, attrs, ok, coreml_md):
    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="ct", **attrs)
    proto = model([node], [vi("x", [1, 3, 4, 4])], [vi("y", None)], [const("w", [3, 2, 3, 3])])
    got = place(tmp_path, proto, ["coreml"], coreml_md)["ct"]
    assert got == (("CoreMLExecutionProvider", None) if ok else ("CPUExecutionProvider", "attribute"))
