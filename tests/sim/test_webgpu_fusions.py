"""The Level 2 fusions ORT 1.31.1 applies to WebGPU nodes after partitioning, against real sessions.

partsim's final view (``--level all``) follows ORT's transformer table (``partsim/sim/pipeline.py``
TRANSFORMER_EPS) and WebGPU's Conv+activation fusion (``partsim/sim/webgpu_conv_fusion.py``).  Each check
builds a small graph, runs a real onnxruntime-ep-webgpu 0.4.0 session on it (Mesa lavapipe, ``make
webgpu``), and requires (1) that the session really did the fusion the check is about (so that the check
fails when ORT stops doing it) and (2) that partsim's final view lists exactly the kernels the session ran,
no more.  The first check needs no WebGPU: it asks ORT which transformer names ``disabled_optimizers``
matches, the names partsim switches off.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from onnx import helper as h

from tests.gen.test_webgpu import needs_webgpu
from tests.modelbuild import const, model, save, vi

ROOT = Path(__file__).resolve().parents[2]
WEBGPU = "WebGpuExecutionProvider"


def _gelu(x, out, prefix):
    """x * 0.5 * (1 + erf(x / sqrt(2))) as written before opset 20 (GeluFusion's pattern 2)."""
    return [h.make_node("Div", [x, "sq2"], [f"{prefix}d"], name=f"{prefix}div"),
            h.make_node("Erf", [f"{prefix}d"], [f"{prefix}e"], name=f"{prefix}erf"),
            h.make_node("Add", [f"{prefix}e", "one"], [f"{prefix}a"], name=f"{prefix}add"),
            h.make_node("Mul", [x, f"{prefix}a"], [f"{prefix}m"], name=f"{prefix}mul"),
            h.make_node("Mul", [f"{prefix}m", "half"], [out], name=f"{prefix}mul2")]


def _layer_norm(x, out):
    """ReduceMean -> Sub -> Pow -> ReduceMean -> Add -> Sqrt -> Div -> Mul -> Add (LayerNormFusion)."""
    return [h.make_node("ReduceMean", [x], ["ln_m"], name="ln_rm1", axes=[-1]),
            h.make_node("Sub", [x, "ln_m"], ["ln_d"], name="ln_sub"),
            h.make_node("Pow", ["ln_d", "two"], ["ln_p"], name="ln_pow"),
            h.make_node("ReduceMean", ["ln_p"], ["ln_v"], name="ln_rm2", axes=[-1]),
            h.make_node("Add", ["ln_v", "eps"], ["ln_ve"], name="ln_add1"),
            h.make_node("Sqrt", ["ln_ve"], ["ln_s"], name="ln_sqrt"),
            h.make_node("Div", ["ln_d", "ln_s"], ["ln_n"], name="ln_div"),
            h.make_node("Mul", ["ln_n", "gamma"], ["ln_g"], name="ln_mul"),
            h.make_node("Add", ["ln_g", "beta"], [out], name="ln_add2")]


_CONSTS = [const("sq2", [], 1.4142135381698608), const("one", [], 1.0), const("half", [], 0.5),
           const("two", [], 2.0), const("eps", [], 1e-5), const("gamma", [8], 1.5), const("beta", [8], 0.1),
           const("alpha", [], 1.702)]


def _patterns(path):
    """Opset 12, no Conv: SiLU and x*Sigmoid(1.702x) (QuickGeluFusion), the erf GELU (GeluFusionL2) and a
    decomposed LayerNorm (LayerNormFusionL2), each between Relus on its own branch."""
    nodes = [h.make_node("Relu", ["x"], ["r"], name="relu"),
             h.make_node("Sigmoid", ["r"], ["s1"], name="silu_sig"),
             h.make_node("Mul", ["r", "s1"], ["q1"], name="silu_mul"),
             h.make_node("Mul", ["r", "alpha"], ["ra"], name="qg_scale"),
             h.make_node("Sigmoid", ["ra"], ["s2"], name="qg_sig"),
             h.make_node("Mul", ["r", "s2"], ["q2"], name="qg_mul"),
             *_gelu("r", "g", "ge_"), *_layer_norm("r", "ln"),
             h.make_node("Sum", ["q1", "q2", "g", "ln"], ["y"], name="sum")]
    return save(model(nodes, [vi("x", [2, 4, 8])], [vi("y", None)], _CONSTS, opset=12), path)


def _conv_chain(path):
    """Conv -> QuickGelu -> Conv -> Abs -> Conv -> erf GELU -> Relu (-> output): WebGPU's Conv takes the
    QuickGelu, not the Abs; the GELU and then the Relu (the NHWC Conv stays a target: the Relu replaces the
    Gelu it took)."""
    w = [const(f"W{k}", [4, 4 if k else 3, 3, 3]) for k in range(3)]
    nodes = [h.make_node("Conv", ["x", "W0"], ["c0"], name="conv0", pads=[1, 1, 1, 1]),
             h.make_node("QuickGelu", ["c0"], ["a0"], name="quickgelu", domain="com.microsoft", alpha=1.702),
             h.make_node("Conv", ["a0", "W1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
             h.make_node("Abs", ["c1"], ["a1"], name="abs"),
             h.make_node("Conv", ["a1", "W2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
             *_gelu("c2", "g", "ge_"), h.make_node("Relu", ["g"], ["y"], name="relu")]
    return save(model(nodes, [vi("x", [1, 3, 8, 8])], [vi("y", None)], _CONSTS[:3] + w, opset=12,
                      extra_opsets=[("com.microsoft", 1)]), path)


def _cli(*args):
    return subprocess.run([sys.executable, str(ROOT / "cli.py"), *map(str, args)], capture_output=True, text=True,
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=600)


def _observe_and_verify(path, tmp_path):
    """The real session's final kernels (name -> provider) and partsim's final view compared with them."""
    obs = tmp_path / "observed.json"
    r = _cli("observe", path, "-p", "webgpu", "--level", "all", "-o", obs)
    assert r.returncode == 0, r.stderr[-2000:]
    v = _cli("verify", path, "-p", "webgpu", "--level", "all", "--observation", obs, "--format", "json")
    assert v.stdout, v.stderr[-2000:]
    return json.loads(obs.read_text())["finalNodes"], json.loads(v.stdout)["verify"]["final"]


@pytest.mark.parametrize("transformer, pattern, fused", [("GeluFusionL2", "ge_erf", "Gelu"),
                                                          ("LayerNormFusionL2", "ln_rm1", "LayerNormalization")])
def test_level2_names_are_the_ones_ort_filters(tmp_path, transformer, pattern, fused):
    """ORT 1.31.1 filters its Level 2 GELU and LayerNorm fusions as GeluFusionL2 / LayerNormFusionL2: a
    CPU session switching that name off keeps the opset-12 pattern, one switching off the plain name (what
    partsim's table said before) fuses it anyway."""
    import onnx
    import onnxruntime as ort

    path = _patterns(tmp_path / "patterns.onnx")

    def ops(disabled):
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        so.optimized_model_filepath = str(tmp_path / "opt.onnx")
        ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"], disabled_optimizers=disabled)
        return {(n.name, n.op_type) for n in onnx.load(str(tmp_path / "opt.onnx")).graph.node}

    from partsim.sim.pipeline import TRANSFORMER_EPS

    assert transformer in TRANSFORMER_EPS
    assert any(op == fused for _, op in ops([transformer.removesuffix("L2")]))
    kept = ops([transformer])
    assert pattern in {name for name, _ in kept} and not any(op == fused for _, op in kept)


@needs_webgpu
def test_gelu_layernorm_quickgelu_fuse_on_webgpu_nodes(tmp_path):
    """QuickGeluFusion (both forms), GeluFusionL2 and LayerNormFusionL2 rewrite WebGPU nodes in ORT 1.31.1
    (PRs #28410, #32053, #32294): the session runs the fused kernels on WebGPU, and so does the prediction."""
    observed, final = _observe_and_verify(_patterns(tmp_path / "patterns.onnx"), tmp_path)
    assert observed.get("silu_mul/QuickGeluFusion/") == WEBGPU
    assert observed.get("qg_mul/QuickGeluFusion/") == WEBGPU
    assert observed.get("ln_add2/LayerNormFusion/", observed.get("ln_mul/LayerNormFusion/")) == WEBGPU
    assert any(name.startswith("Gelu") for name in observed) and "ge_erf" not in observed
    assert (final["agreeing"], final["unpredicted"], final["unobserved"]) == (final["compared"], [], [])


@needs_webgpu
def test_webgpu_conv_takes_the_activations_ort_lists(tmp_path):
    """The WebGPU Conv takes QuickGelu and the fused GELU (then the Relu after it), not Abs: the session
    runs three Convs, the Abs and the two layout Transposes, and partsim's final view lists those alone."""
    observed, final = _observe_and_verify(_conv_chain(tmp_path / "conv_chain.onnx"), tmp_path)
    ops = sorted(name.split("_token_")[0] for name in observed)
    assert ops == ["Transpose", "Transpose", "abs", "conv0", "conv1", "conv2"], sorted(observed)
    assert (final["agreeing"], final["unpredicted"], final["unobserved"]) == (final["compared"], [], [])


@needs_webgpu
def test_a_node_partitioning_left_on_the_cpu_stays_there_in_the_final_view():
    """q_tiny_resnet.ts.qop at ORT's default level: the CPU's NhwcTransformer puts a Transpose before /Flatten
    after partitioning, which left /Flatten on the CPU; ORT does not partition again, so it stays there and
    no copy of /GlobalAveragePool_output_0_quantized or /Flatten_output_0_quantized is made (a second
    simulation of the final graph had given /Flatten to WebGPU: 2/1 copies predicted, 1/0 made)."""
    from tests.conftest import shared_path

    r = _cli("verify", shared_path("corpus", "full", "q_tiny_resnet.ts.qop.onnx"), "-p", "webgpu", "--observe",
             "--level", "all", "--format", "json")
    res = json.loads(r.stdout)["verify"]
    assert res["counts"]["memcpyFromHost"] == {"predicted": 1, "observed": 1}
    assert res["counts"]["memcpyToHost"] == {"predicted": 0, "observed": 0}
    final = res["final"]
    assert (final["agreeing"], final["unpredicted"], final["unobserved"]) == (final["compared"], [], [])


def _transposed_layer_norm(path):
    """Conv -> Reshape -> Transpose(0, 2, 1) -> decomposed LayerNorm -> MatMul: the model's Transpose is
    moved into the pattern before partitioning and is gone from the graph ORT runs."""
    from onnx import TensorProto

    consts = [c for c in _CONSTS if c.name not in ("gamma", "beta")] + [
        const("gamma", [4], 1.5), const("beta", [4], 0.1), const("W", [4, 3, 3, 3]), const("M", [4, 4]),
        h.make_tensor("shape", TensorProto.INT64, [3], [1, 4, 64])]
    nodes = [h.make_node("Conv", ["x", "W"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             h.make_node("Reshape", ["c", "shape"], ["r"], name="reshape"),
             h.make_node("Transpose", ["r"], ["t"], name="transpose", perm=[0, 2, 1]),
             *_layer_norm("t", "l"), h.make_node("MatMul", ["l", "M"], ["y"], name="matmul")]
    return save(model(nodes, [vi("x", [1, 3, 8, 8])], [vi("y", None)], consts, opset=12), path)


@needs_webgpu
def test_a_node_the_layout_transformation_removed_is_not_in_the_final_view(tmp_path):
    """The layout transformation runs before Level 2: the model Transpose it removed does not run (partsim's
    final view, laid out after the CPU session's Level 2, kept it as Transpose_token_0 before)."""
    observed, final = _observe_and_verify(_transposed_layer_norm(tmp_path / "tln.onnx"), tmp_path)
    assert "transpose" not in observed and "ln_rm1" in observed
    assert (final["agreeing"], final["unpredicted"], final["unobserved"]) == (final["compared"], [], [])


@needs_webgpu
@pytest.mark.parametrize("name", ["ppocrv4_rec.onnx", "ppocrv6_rec_small.onnx"])
def test_layernorm_the_layout_transformation_rewired_stays_unfused(name):
    """PP-OCR rec models (from the rapidocr wheels; /work/zoo/wheels): the layout transformation moves the
    model's Transposes into some LayerNorm patterns before Level 2, and ORT leaves those unfused while it
    fuses the untouched ones; partsim's final view lists the kernels the session ran, and no others."""
    path = Path("/work/zoo/wheels") / name
    if not path.exists():
        pytest.skip(f"{path} is absent (the zoo of benchmarks/README.md, issue 31)")
    r = _cli("verify", path, "-p", "webgpu", "--observe", "--level", "all", "--format", "json")
    res = json.loads(r.stdout)["verify"]
    final = res["final"]
    assert (final["agreeing"], final["unpredicted"], final["unobserved"]) == (final["compared"], [], [])
    assert res["agreement"] == 1.0


def _shape_gathers(path):
    """Conv -> Shape -> four Gathers (indices 0..3) -> Unsqueeze -> Concat -> Reshape, with symbolic dims:
    the Gathers are int64 (the CPU's), the Shape reads the NHWC Conv through the layout's Gather(perm)."""
    from onnx import TensorProto

    idx = [h.make_tensor(f"i{k}", TensorProto.INT64, [], [k]) for k in range(4)]
    nodes = [h.make_node("Conv", ["x", "W"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             h.make_node("Shape", ["c"], ["s"], name="shape")]
    for k in range(4):
        nodes.append(h.make_node("Gather", ["s", f"i{k}"], [f"g{k}"], name=f"gather{k}", axis=0))
        nodes.append(h.make_node("Unsqueeze", [f"g{k}", "ax"], [f"u{k}"], name=f"unsq{k}"))
    nodes += [h.make_node("Concat", ["u0", "u1", "u3", "u2"], ["ns"], name="concat", axis=0),
              h.make_node("Reshape", ["c", "ns"], ["y"], name="reshape")]
    inits = [const("W", [4, 3, 3, 3]), *idx, h.make_tensor("ax", TensorProto.INT64, [1], [0])]
    return save(model(nodes, [vi("x", ["N", 3, "H", "W"])], [vi("y", None)], inits, opset=17), path)


@needs_webgpu
def test_gathers_after_the_layout_gather_become_one_split(tmp_path):
    """GatherSliceToSplitFusion takes the four CPU Gathers: their input comes from the layout
    transformation's Gather(perm), not from the Shape it skips; ORT names the Split after the last Gather."""
    observed, final = _observe_and_verify(_shape_gathers(tmp_path / "shape_gathers.onnx"), tmp_path)
    assert observed.get("gather3/GatherSliceToSplitFusion") == "CPUExecutionProvider"
    assert not any(name.startswith("gather") and "/" not in name for name in observed)
    assert (final["agreeing"], final["unpredicted"], final["unobserved"]) == (final["compared"], [], [])
