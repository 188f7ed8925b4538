"""`simulate --compat usability-checker` and weight materialization.

The reference is ONNX Runtime's own checker
(``onnxruntime.tools.mobile_helpers.usability_checker``), imported and run here on
the same optimized model: partsim's re-implementation (its own wave algorithm) must
give the same partitions and node counts.  Nothing is compared with numbers copied
from partsim's output.
"""

import json
import logging
import re
import shutil
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h

from partsim.analysis.compat import analyze_model_proto, load_with_shape_info, usability_checker_analysis
from partsim.runtime.optimizer import optimize_for_checker
from partsim.errors import ModelError, PartsimError, UsageError
from partsim.io.materialize import materialize_weights

uc = pytest.importorskip("onnxruntime.tools.mobile_helpers.usability_checker")
omu = pytest.importorskip("onnxruntime.tools.onnx_model_utils")

SHARED = Path(__file__).resolve().parents[3] / "shared"
CORPUS = SHARED / "corpus"
LIGHT = Path(onnx.__file__).resolve().parent / "backend" / "test" / "data" / "light"
LIGHT_MODELS = sorted(p.name for p in LIGHT.glob("light_*.onnx"))
BIG_WEIGHTS = 100 << 20
NO_SHARED = f"{CORPUS} is absent: ../shared (the model corpus) is not checked out beside the project"

if CORPUS.is_dir():
    CORPUS_MODELS = sorted(str(p.relative_to(CORPUS)) for d in ("full", "graph_only")
                           for p in (CORPUS / d).glob("*.onnx"))
    CORPUS_PARAMS = [pytest.param(m, id=m) for m in CORPUS_MODELS]
else:
    CORPUS_PARAMS = [pytest.param(None, id="corpus", marks=pytest.mark.skip(reason=NO_SHARED))]

# the checker's three EPs and how it calls them (usability_checker.py: checker())
CHECKER_CALLS = {
    "NNAPI": lambda m, fixed: uc.check_nnapi_partitions(m, fixed),
    "CoreML NeuralNetwork": lambda m, fixed: uc.check_coreml_partitions(
        m, fixed, "coreml_supported_neuralnetwork_ops.md"),
    "CoreML MLProgram": lambda m, fixed: uc.check_coreml_partitions(m, fixed, "coreml_supported_mlprogram_ops.md"),
}


def _checker_view(info):
    """The fields of the checker's PartitioningInfo, in partsim's names."""
    return {
        "partitions": info.num_partitions,
        "supportedNodes": info.num_supported_nodes,
        "totalNodes": info.num_nodes,
        "partitionSizes": [len(g) for g in info.supported_groups],
        "nodesUnsupportedDueToOp": info.nodes_unsupported_due_to_op,
        "nodesUnsupportedDueToDynamicInput": info.nodes_unsupported_due_to_dynamic_input,
        "nodesUnsupportedDueToRank": info.num_unsupported_nodes_due_to_rank,
        "unsupportedOps": sorted(info.unsupported_ops),
        "opsWithUnsupportedRank": sorted(info.ops_with_unsupported_rank),
        "subgraphs": info.num_subgraphs,
        "nodesInSubgraphs": info.num_nodes_in_subgraphs,
        "caveats": info.supported_ops_checker.get_caveats(),
        "suitability": info.suitability().name,
    }


def _ours(entry):
    return {k: entry[k] for k in ("partitions", "supportedNodes", "totalNodes", "partitionSizes",
                                  "nodesUnsupportedDueToOp", "nodesUnsupportedDueToDynamicInput",
                                  "nodesUnsupportedDueToRank", "unsupportedOps", "opsWithUnsupportedRank",
                                  "subgraphs", "nodesInSubgraphs", "caveats", "suitability")}


def _all_node_names(graph):
    out = []
    for n in graph.node:
        out.append(n.name)
        for a in n.attribute:
            if a.HasField("g"):
                out.extend(_all_node_names(a.g))
    return out


def assert_same_as_checker(model_with_shapes, ours):
    """Both passes, all three EPs: partsim's result equals the checker's own."""
    for ep, call in CHECKER_CALLS.items():
        first = call(model_with_shapes, True)
        assert _ours(ours["eps"][ep]) == _checker_view(first), ep
        # supported node names equal too (the checker's groups hold the NodeProtos)
        names = _all_node_names(model_with_shapes.graph)
        if len(set(names)) == len(names):
            theirs = sorted(n.name for g in first.supported_groups for n in g)
            rejected = {u["name"] for u in ours["eps"][ep]["unsupportedNodes"]}
            assert sorted(n for n in names if n not in rejected) == theirs, ep
        dynamic_inputs = [i for i in model_with_shapes.graph.input if not omu.is_fixed_size_tensor(i)]
        second_expected = first.suitability() != uc.PartitioningInfo.TryWithEP.YES and bool(dynamic_inputs)
        if second_expected:
            second = call(model_with_shapes, False)
            assert ours["eps"][ep]["ifFixedShapes"] is not None, ep
            assert _ours(ours["eps"][ep]["ifFixedShapes"]) == _checker_view(second), ep
        else:
            assert ours["eps"][ep]["ifFixedShapes"] is None, ep
    assert ours["dynamicInputs"] == [i.name for i in model_with_shapes.graph.input
                                     if not omu.is_fixed_size_tensor(i)]
    assert ours["numDynamicValues"] == uc.check_shapes(model_with_shapes.graph)[1]


# ---------------------------------------------------------------- per-session cache

@pytest.fixture(scope="session")
def checker_model(tmp_path_factory):
    """model path -> (optimized path, model with shape info), made ONCE per session by the
    checker's own functions: optimize_model(use_external_initializers=True) on the
    materialized copy, then ModelProtoWithShapeInfo."""
    cache = {}

    def get(path):
        path = Path(path)
        if path not in cache:
            work = tmp_path_factory.mktemp(path.stem.replace(".", "_"))
            copy = materialize_weights(path, work / "mat")
            opt = work / "opt" / path.name
            opt.parent.mkdir()
            omu.optimize_model(copy, opt, use_external_initializers=True)
            try:
                data = opt.parent / "external_data.pb"
                if data.is_file() and data.stat().st_size > BIG_WEIGHTS:
                    # weights made by constant folding (light_vgg19: 489 MB): reading them back only
                    # costs time; shape inference is the same without them (checked on
                    # inception_v1 in test_own_optimization_equals_checkers)
                    model = onnx.shape_inference.infer_shapes(onnx.load(str(opt), load_external_data=False),
                                                              strict_mode=True)
                else:
                    model = omu.ModelProtoWithShapeInfo(opt).model_with_shape_info
            except Exception as exc:  # the checker itself cannot run on this model
                cache[path] = (opt, None, exc)
            else:
                for t in model.graph.initializer:  # weights are not analysed: free the memory
                    t.ClearField("raw_data")
                cache[path] = (opt, model, None)
            shutil.rmtree(work / "mat")
        return cache[path]

    return get


def _compare_on(checker_model, path):
    opt, with_shapes, failure = checker_model(path)
    if failure is not None:
        with pytest.raises(PartsimError):
            analyze_model_proto(load_with_shape_info(opt))
        pytest.skip(f"the usability checker itself cannot run on {path.name}: {failure}")
    ours = analyze_model_proto(with_shapes)
    assert_same_as_checker(with_shapes, ours)
    return ours


@pytest.mark.parametrize("name", LIGHT_MODELS)
def test_light_models_match_checker(checker_model, name):
    ours = _compare_on(checker_model, LIGHT / name)
    assert ours["eps"]["NNAPI"]["totalNodes"] > 0


def test_all_nine_light_models_present():
    assert len(LIGHT_MODELS) == 9, LIGHT_MODELS


@pytest.mark.parametrize("rel", CORPUS_PARAMS)
def test_corpus_models_match_checker(checker_model, rel):
    _compare_on(checker_model, CORPUS / rel)


# ---------------------------------------------------------------- the whole pipeline

def _checker_log(model_path):
    """Run the checker's analyze_model and read its numbers from the log."""
    records = []

    class Grab(logging.Handler):
        def emit(self, record):
            records.append(record.getMessage())

    logger = logging.getLogger("partsim-test-usability-checker")
    logger.handlers[:] = [Grab()]
    logger.propagate = False
    logger.setLevel(logging.INFO)
    usable = uc.analyze_model(Path(model_path), logger=logger)
    counts = [tuple(int(x) for x in m.groups()[:3]) + (m.group(4),) for r in records
              for m in [re.match(r"(\d+) partitions with a total of (\d+)/(\d+) nodes can be handled by the (.+) EP\.",
                                 r)] if m]
    verdicts = [m.groups() for r in records
                for m in [re.match(r"Model should perform well with (.+?) (?:as is|if modified to have fixed "
                                   r"input shapes): (\w+)", r)] if m]
    return usable, counts, verdicts


@pytest.mark.parametrize("where", ["light/light_squeezenet.onnx", "full/tiny_transformer.dynamo.onnx",
                                   "graph_only/mobilenet_v3_small.ts.onnx", "full/q_tiny_resnet.ts.qdq.onnx",
                                   "graph_only/bert_tiny.ts.onnx"])
def test_end_to_end_matches_analyze_model(where, tmp_path):
    """partsim's own optimization + shape inference + analysis vs the checker's entry point
    (bert_tiny.ts has dynamic inputs: the checker's second, shape-free pass runs too)."""
    kind, name = where.split("/")
    if kind == "light":
        path = LIGHT / name
        runnable = path
    else:
        if not CORPUS.is_dir():
            pytest.skip(NO_SHARED)
        path = CORPUS / kind / name
        runnable = materialize_weights(path, tmp_path / "mat")  # the checker needs weights
    ours = usability_checker_analysis(path)
    usable, counts, verdicts = _checker_log(runnable)
    expected = []
    for ep in ("NNAPI", "CoreML NeuralNetwork", "CoreML MLProgram"):
        for e in (ours["eps"][ep], ours["eps"][ep]["ifFixedShapes"]):
            if e is not None:
                expected.append((e["partitions"], e["supportedNodes"], e["totalNodes"], ep))
    assert counts == expected
    assert [v for v in verdicts] == [(ep, e["suitability"]) for ep in ("NNAPI", "CoreML NeuralNetwork",
                                                                      "CoreML MLProgram")
                                     for e in (ours["eps"][ep], ours["eps"][ep]["ifFixedShapes"]) if e is not None]
    assert ours["usable"] == usable
    if name == "bert_tiny.ts.onnx":
        assert all(e["ifFixedShapes"] is not None for e in ours["eps"].values())


def test_own_optimization_equals_checkers(checker_model, tmp_path):
    """optimize_for_checker + load_with_shape_info give the checker's model, byte for byte."""
    path = LIGHT / "light_inception_v1.onnx"
    opt_theirs, with_shapes, _ = checker_model(path)
    opt_ours = optimize_for_checker(path, tmp_path)
    ours = load_with_shape_info(opt_ours)
    assert [(n.op_type, n.name, list(n.input), list(n.output)) for n in ours.graph.node] == \
        [(n.op_type, n.name, list(n.input), list(n.output)) for n in with_shapes.graph.node]
    assert ours.graph.value_info == with_shapes.graph.value_info
    no_data = onnx.shape_inference.infer_shapes(onnx.load(str(opt_theirs), load_external_data=False),
                                                strict_mode=True)
    assert no_data.graph.value_info == with_shapes.graph.value_info
    assert (opt_ours.parent / "external_data.pb").is_file() == (opt_theirs.parent / "external_data.pb").is_file()


# ---------------------------------------------------------------- the checker's quirks

def quirk_model():
    """One model exercising the checker's quirks (see partsim/analysis/compat.py)."""
    vi = h.make_tensor_value_info
    inits = [h.make_tensor("maxc", T.FLOAT, [], [6.0]),
             h.make_tensor("shape6", T.INT64, [6], [1, 3, 2, 2, 5, 1]),
             h.make_tensor("back4", T.INT64, [4], [1, 3, 4, 5])]
    then_g = h.make_graph([h.make_node("Relu", ["x"], ["t0"], name="then_relu"),
                           h.make_node("Add", ["t0", "x"], ["t1"], name="then_add")],
                          "then", [], [vi("t1", T.FLOAT, [1, 3, 4, 5])])
    else_g = h.make_graph([h.make_node("Sigmoid", ["x"], ["e0"], name="else_sig"),
                           h.make_node("Reshape", ["e0", "shape6"], ["e6"], name="else_reshape6"),
                           h.make_node("Abs", ["e6"], ["e7"], name="else_abs6"),
                           h.make_node("Reshape", ["e7", "back4"], ["e1"], name="else_back")],
                          "else", [], [vi("e1", T.FLOAT, [1, 3, 4, 5])])
    nodes = [
        h.make_node("Clip", ["x", "", "maxc"], ["c"], name="clip_empty_optional"),
        h.make_node("Reshape", ["c", "shape6"], ["r6"], name="reshape6"),
        h.make_node("Add", ["r6", "r6"], ["a6"], name="add_rank6"),
        h.make_node("Shape", ["d"], ["dshape"], name="shape_dyn"),
        h.make_node("Concat", ["dshape", "dshape", "dshape"], ["dshape6"], name="concat_shapes", axis=0),
        h.make_node("Reshape", ["a6", "s"], ["unk"], name="reshape_unknown"),
        h.make_node("Transpose", ["unk"], ["tr"], name="transpose_perm6", perm=[5, 4, 3, 2, 1, 0]),
        h.make_node("Relu", ["d"], ["dr"], name="relu_dynamic"),
        h.make_node("Relu", ["z"], ["zr"], name="relu_zero_dim"),
        h.make_node("If", ["cond"], ["iff"], name="if_node", then_branch=then_g, else_branch=else_g),
        h.make_node("Mul", ["iff", "c"], ["m"], name="mul_after_if"),
        h.make_node("ArgMax", ["m"], ["am"], name="argmax_miscased_in_md", axis=1),
    ]
    g = h.make_graph(nodes, "quirks",
                     [vi("x", T.FLOAT, [1, 3, 4, 5]), vi("d", T.FLOAT, ["N", 4]), vi("z", T.FLOAT, [0, 4]),
                      vi("cond", T.BOOL, []), vi("s", T.INT64, ["K"])],
                     [vi("tr", T.FLOAT, None), vi("dr", T.FLOAT, ["N", 4]), vi("zr", T.FLOAT, [0, 4]),
                      vi("am", T.INT64, None), vi("dshape6", T.INT64, [6])],
                     inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def _reasons(entry, node):
    return next((u["reasons"] for u in entry["unsupportedNodes"] if u["name"] == node), [])


def test_quirks_match_checker():
    m = onnx.shape_inference.infer_shapes(quirk_model(), strict_mode=True)
    ours = analyze_model_proto(m)
    assert_same_as_checker(m, ours)
    nnapi, nn, mlp = (ours["eps"][k] for k in ("NNAPI", "CoreML NeuralNetwork", "CoreML MLProgram"))
    # the quirks are really exercised (hand-derived from the checker's source)
    assert "dynamic_input" in _reasons(nnapi, "clip_empty_optional")       # '' is not a fixed-size value
    assert "dynamic_input" in _reasons(nnapi, "relu_zero_dim")             # a 0 dim is not fixed
    assert _reasons(nnapi, "transpose_perm6") == []                        # value without shape counts fixed
    assert "rank" in _reasons(nn, "transpose_perm6")                       # rank from perm, no shape info
    assert "rank" in _reasons(nn, "add_rank6") and _reasons(nnapi, "add_rank6") == []   # max_rank 5: CoreML only
    assert "ai.onnx:ArgMax" in mlp["unsupportedOps"]                      # md lists 'ai.onnx:Argmax'
    assert nnapi["subgraphs"] == 2 and nnapi["nodesInSubgraphs"] == 6
    # second pass: no value_info for the main graph (no rank test there), subgraphs keep theirs
    fixed = nn["ifFixedShapes"]
    assert fixed is not None
    assert _reasons(fixed, "add_rank6") == [] and "rank" in _reasons(fixed, "else_back")
    assert "rank" in _reasons(fixed, "transpose_perm6")
    json.dumps(ours)  # JSON-ready


def test_no_value_info_is_refused_like_the_checker():
    m = quirk_model()  # shape inference not run: the checker raises, so do we (one-line error)
    with pytest.raises(ValueError):
        uc.check_nnapi_partitions(m, True)
    with pytest.raises(ModelError, match="value_info"):
        analyze_model_proto(m)


# ---------------------------------------------------------------- CLI

def test_cli_json_and_table(run_cli, tmp_path):
    path = LIGHT / "light_squeezenet.onnx"
    out = tmp_path / "compat.json"
    code, _, err = run_cli("simulate", path, "--compat", "usability-checker", "--format", "json", "-o", out)
    assert code == 0, err
    data = json.loads(out.read_text())
    direct = usability_checker_analysis(path)
    assert data == json.loads(json.dumps(direct))
    code, text, err = run_cli("simulate", path, "--compat", "usability-checker")
    assert code == 0, err
    for ep in ("NNAPI", "CoreML NeuralNetwork", "CoreML MLProgram"):
        e = direct["eps"][ep]
        assert re.search(rf"^{re.escape(ep)}\s+{e['partitions']}\s+{e['supportedNodes']}/{e['totalNodes']}\s",
                         text, re.M), text
    code, _, err = run_cli("simulate", path, "--compat", "usability-checker", "-p", "nnapi")
    assert code == 2 and "--compat" in err and "\n" not in err.strip()


def test_cli_bad_model_is_one_line(run_cli, tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a model")
    code, _, err = run_cli("simulate", bad, "--compat", "usability-checker")
    assert code == 2 and err.count("\n") == 1 and "bad.onnx" in err


# ---------------------------------------------------------------- materialize

def _external_model(folder, location="w.bin", present=True, dims=(4, 3), dtype=T.FLOAT):
    """A MatMul model whose weight is external data at ``location`` (offset 16)."""
    folder.mkdir(parents=True, exist_ok=True)
    np_dtype = onnx.helper.tensor_dtype_to_np_dtype(dtype)
    w = (np.arange(int(np.prod(dims))) % 7).astype(np_dtype).reshape(dims)
    t = onnx.TensorProto()
    t.name, t.data_type = "w", dtype
    t.dims.extend(dims)
    t.data_location = T.EXTERNAL
    for k, v in (("location", location), ("offset", "16"), ("length", str(w.nbytes))):
        e = t.external_data.add()
        e.key, e.value = k, v
    g = h.make_graph([h.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "g",
                     [h.make_tensor_value_info("x", dtype, [2, dims[0]])],
                     [h.make_tensor_value_info("y", dtype, [2, dims[1]])], [t])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    path = folder / "m.onnx"
    onnx.save(m, path)
    if present:
        (folder / location).write_bytes(b"\x07" * 16 + w.tobytes())
    return path, w


def _snapshot(folder):
    return {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in sorted(folder.iterdir())}


def test_materialize_graph_only_runs_in_ort(tmp_path):
    import onnxruntime as ort

    src_dir = tmp_path / "user"
    path, _ = _external_model(src_dir, present=False)
    before = _snapshot(src_dir)
    out = materialize_weights(path, tmp_path / "a", seed=3)
    assert _snapshot(src_dir) == before  # the user's folder is untouched
    assert out.read_bytes() == path.read_bytes()  # the model is copied as is
    weights = (out.parent / "w.bin").read_bytes()
    assert len(weights) == 16 + 4 * 3 * 4
    w = np.frombuffer(weights[16:], dtype=np.float32).reshape(4, 3)
    assert np.isfinite(w).all() and np.unique(w).size == 12
    x = np.ones((2, 4), np.float32)
    y = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(y, x @ w, rtol=1e-5, atol=1e-6)
    # seeded: same seed -> same bytes, another seed -> other bytes
    again = materialize_weights(path, tmp_path / "b", seed=3)
    other = materialize_weights(path, tmp_path / "c", seed=4)
    assert (again.parent / "w.bin").read_bytes() == weights
    assert (other.parent / "w.bin").read_bytes() != weights


@pytest.mark.parametrize("dtype", [T.FLOAT16, T.INT8, T.INT64, T.DOUBLE])
def test_materialize_dtypes(tmp_path, dtype):
    path, _ = _external_model(tmp_path / "user", present=False, dtype=dtype)
    out = materialize_weights(path, tmp_path / "out")
    loaded = onnx.load(str(out))  # onnx reads the weights back with the declared dtype and shape
    arr = onnx.numpy_helper.to_array(loaded.graph.initializer[0])
    assert arr.shape == (4, 3) and arr.dtype == onnx.helper.tensor_dtype_to_np_dtype(dtype)


def test_materialize_present_weights_copied_as_is(tmp_path):
    path, w = _external_model(tmp_path / "user", present=True)
    out = materialize_weights(path, tmp_path / "out")
    assert (out.parent / "w.bin").read_bytes() == (path.parent / "w.bin").read_bytes()
    arr = onnx.numpy_helper.to_array(onnx.load(str(out)).graph.initializer[0])
    np.testing.assert_array_equal(arr, w)


def test_materialize_refusals(tmp_path):
    path, _ = _external_model(tmp_path / "user" / "sub", location="../escape.bin", present=False)
    with pytest.raises(ModelError, match="escapes the model's folder"):
        materialize_weights(path, tmp_path / "out")
    assert not (tmp_path / "out" / "m.onnx").exists()
    path, _ = _external_model(tmp_path / "abs", location=str(tmp_path / "abs.bin"), present=False)
    with pytest.raises(ModelError, match="not a relative path"):
        materialize_weights(path, tmp_path / "out2")
    path, _ = _external_model(tmp_path / "own", present=False)
    with pytest.raises(UsageError):
        materialize_weights(path, path.parent)
    assert not (path.parent / "w.bin").exists()
    path, _ = _external_model(tmp_path / "short", present=True)
    (path.parent / "w.bin").write_bytes(b"\0" * 20)
    with pytest.raises(ModelError, match="bytes"):
        materialize_weights(path, tmp_path / "out3")


def test_materialize_corpus_graph_only(tmp_path):
    if not CORPUS.is_dir():
        pytest.skip(NO_SHARED)
    import onnxruntime as ort

    path = CORPUS / "graph_only" / "resnet18.ts.onnx"
    out = materialize_weights(path, tmp_path)
    assert not (path.parent / "resnet18.ts.weights.bin").exists()
    sess = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    i = sess.get_inputs()[0]
    y = sess.run(None, {i.name: np.random.default_rng(0).standard_normal(i.shape).astype(np.float32)})[0]
    assert np.isfinite(y).all() and float(np.abs(y).max()) > 0
    shutil.rmtree(tmp_path)
