"""The CUDA table against what onnxruntime-gpu 1.31.1 did with the ONNX node tests.

`../shared/observed/nodes/cuda-ort1.31.1.jsonl`: one session per node test on an H200 at
ORT_DISABLE_ALL (README there).  Every observed node of every case counts.
"""

import pytest

from tests.conftest import ROOT, shared_path
from partsim.api import load_tables
from partsim.analysis.calibrate import agreement, read_node_records
from partsim.gen import ep_tables, ep_tensorrt, kernel_doc


@pytest.fixture(scope="module")
def cuda_cases():
    return read_node_records(shared_path("observed", "nodes", "cuda-ort1.31.1.jsonl"))


def test_shipped_cuda_table_agrees_with_node_observations(cuda_cases):
    res = agreement(cuda_cases, ["cuda", "cpu"], load_tables())
    assert res["nodes"] > 3500
    assert res["share"] >= 0.995, [c for c in res["cases"] if c["misses"]][:5]


def test_1_25_era_table_does_not(cuda_cases):
    """The measurement can fail: the table before this one (ORT main 735e69a, kept as a
    fixture) misses ~18 % of the nodes."""
    res = agreement(cuda_cases, ["cuda", "cpu"], load_tables([ROOT / "fixtures" / "cuda-1.25-735e69a.yaml"]))
    assert res["share"] < 0.85


def test_shipped_table_is_the_generator_output():
    """rules/cuda.yaml is what the generator makes of the stored doc extract, byte for byte."""
    doc = ROOT / "rules" / "sources" / "OperatorKernels-CUDA-001d12d.md"
    text = kernel_doc.import_kernel_doc([doc], "CUDAExecutionProvider")
    assert text == (ROOT / "rules" / "cuda.yaml").read_text()
    assert "001d12d" in text and "1.31.1" in text


def test_observed_kernels_fill_every_schema_version_up_to_the_one_seen():
    """Identity: the doc's newest kernel is 19 (open-ended); 1.31.1 ran Identity-25 on CUDA, so
    21, 23, 24 and 25 get kernels, each exactly its own schema version."""
    t = load_tables()["CUDAExecutionProvider"][0]
    ranges = sorted(r.versions for r in t.rules_for("", "Identity"))
    assert ranges[-5:] == [(19, None), (21, 22), (23, 23), (24, 24), (25, None)]
    # host-memory ports follow the new versions (Reshape's shape input stays on the host)
    assert all(r.host_inputs == (1,) for r in t.rules_for("", "Reshape") if r.versions[0] >= 5)


def test_tensorrt_type_names_are_all_known():
    """The TensorRT op list's type names all map to dtypes (ConstantOfShape once said INF64, and
    the generator dropped it without a word); the generator now refuses unknown names."""
    for line in ep_tensorrt.TRT_OPERATORS.strip().splitlines():
        op, _, types = line.strip().partition(" ")
        for t in filter(None, types.strip().split(",")):  # some ops list no types
            assert t in ep_tensorrt._TRT_DTYPES, (op, t)
    saved = ep_tensorrt.TRT_OPERATORS
    try:
        ep_tensorrt.TRT_OPERATORS = saved.replace("INT32,INT64,BOOL", "INT32,INF64,BOOL", 1)
        with pytest.raises(ValueError, match="INF64"):
            ep_tables.build_table("tensorrt")
    finally:
        ep_tensorrt.TRT_OPERATORS = saved


def test_cpu_preferred_placements_of_the_expanded_tests(cuda_cases):
    """The `*_expanded` tests (functions inlined: attention, affine_grid, …) are where ORT's
    fallback_cpu_capability.cc moves Shape-fed computations (Cast, Div, Sqrt, Concat, Equal fed by
    graph inputs, …) to the CPU: every node agrees, and the CPU-preferred ones are many."""
    from partsim.analysis.calibrate import predict_case

    tables = load_tables()
    nodes = preferred = 0
    for case in cuda_cases:
        if not case.name.endswith("_expanded") or case.refused:
            continue
        summary, _ = predict_case(case, ["cuda", "cpu"], tables)
        for n in summary["nodes"]:
            if n["name"] not in case.nodes:
                continue
            nodes += 1
            assert n["provider"] == case.nodes[n["name"]], (case.name, n["name"], n["reason"])
            preferred += n["reason"] == "cpu_preferred"
    assert nodes > 1500 and preferred > 300


def _cuda(nodes, inputs, outputs, inits=()):
    from onnx import TensorProto as T  # noqa: F401
    from onnx import helper

    from partsim.io.load import model_from_proto

    m = helper.make_model(helper.make_graph(nodes, "g", inputs, outputs, list(inits)),
                          opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
    from partsim.api import predict

    summary, _ = predict(model_from_proto(m), providers=["cuda", "cpu"], level="disable")  # the graph as built
    return {n["name"]: (n["provider"][:4], n["reason"]) for n in summary["nodes"]}


def test_cpu_preferred_inputs_graph_input_small_and_large_initializer_chain():
    """GetCpuPreferredNodes' input rule, case by case: a Shape output (CPU tensor) combined with a
    graph input or a small initializer moves to the CPU and so does what it feeds; a large
    initializer, a float16 input, or a GPU tensor keeps the node on CUDA."""
    import numpy as np
    from onnx import TensorProto as T
    from onnx import helper, numpy_helper

    vi = helper.make_tensor_value_info
    small = numpy_helper.from_array(np.ones(4, np.int64), "small")
    large = numpy_helper.from_array(np.ones(101, np.int64), "large")
    nodes = [helper.make_node("Shape", ["x"], ["s"], name="shape"),
             helper.make_node("Add", ["s", "gi"], ["a1"], name="add_graph_input"),
             helper.make_node("Add", ["a1", "small"], ["a2"], name="add_small_init"),
             helper.make_node("Mul", ["a2", "a2"], ["a3"], name="fed_by_cpu_preferred"),
             helper.make_node("Concat", ["a3", "large"], ["c"], name="concat_large_init", axis=0),
             helper.make_node("Relu", ["x"], ["r"], name="relu_gpu"),
             helper.make_node("Shape", ["r"], ["s2"], name="shape2"),
             helper.make_node("Cast", ["s2"], ["f"], name="cast_gpu_out", to=T.FLOAT),
             helper.make_node("Add", ["f", "xf"], ["y"], name="add_gpu_tensor")]
    got = _cuda(nodes, [vi("x", T.FLOAT, [2, 3, 4, 5]), vi("gi", T.INT64, [4]), vi("xf", T.FLOAT, [4])],
                [vi("c", T.INT64, None), vi("y", T.FLOAT, None)], [small, large])
    assert got["shape"] == ("CUDA", None)
    assert got["add_graph_input"] == ("CPUE", "cpu_preferred")
    assert got["add_small_init"] == ("CPUE", "cpu_preferred")
    assert got["fed_by_cpu_preferred"] == ("CPUE", "cpu_preferred")
    assert got["concat_large_init"][0] == "CUDA"
    assert got["cast_gpu_out"] == ("CPUE", "cpu_preferred")
    assert got["add_gpu_tensor"][0] == "CPUE"  # xf is a graph input: accepted, like the CPU tensor f
    # a float16 input keeps a node on the GPU whatever its other inputs are
    nodes16 = [helper.make_node("Shape", ["x"], ["s"], name="shape"),
               helper.make_node("Cast", ["s"], ["h"], name="cast16", to=T.FLOAT16),
               helper.make_node("Add", ["h", "h16"], ["y"], name="add16")]
    got = _cuda(nodes16, [vi("x", T.FLOAT, [2, 3]), vi("h16", T.FLOAT16, [2])], [vi("y", T.FLOAT16, None)])
    assert got["cast16"] == ("CPUE", "cpu_preferred")
    assert got["add16"][0] == "CUDA"


def test_nodes_of_both_if_branches_are_compared(cuda_cases):
    """ORT names nodes per graph: both branches of test_if_seq hold `n0_If/1_SequenceConstruct`.
    The observation keeps the second as `…#2`; it is the IR's `n0_If/then_branch/…` node, and both
    were on CUDA — every observed node of the case is matched, none is 'predicted absent'."""
    cases = [c for c in cuda_cases if c.name == "node__test_if_seq"]
    assert cases and len(cases[0].nodes) == 3
    res = agreement(cases, ["cuda", "cpu"], load_tables())
    assert res["cases"][0]["misses"] == [] and res["agreeing"] == 3
