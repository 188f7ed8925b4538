"""The CUDA table against what onnxruntime-gpu 1.31.1 did with the ONNX node tests.

`../shared/observed/nodes/cuda-ort1.31.1.jsonl`: one session per node test on an H200 at
ORT_DISABLE_ALL (README there).  Every observed node of every case counts.
"""

import pytest

from conftest import ROOT, shared_path
from partsim.api import load_tables
from partsim.calibrate import agreement, read_node_records
from partsim.gen import ep_tables, kernel_doc


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
    for line in ep_tables.TRT_OPERATORS.strip().splitlines():
        op, _, types = line.strip().partition(" ")
        for t in filter(None, types.strip().split(",")):  # some ops list no types
            assert t in ep_tables._TRT_DTYPES, (op, t)
    saved = ep_tables.TRT_OPERATORS
    try:
        ep_tables.TRT_OPERATORS = saved.replace("INT32,INT64,BOOL", "INT32,INF64,BOOL", 1)
        with pytest.raises(ValueError, match="INF64"):
            ep_tables.build_table("tensorrt")
    finally:
        ep_tables.TRT_OPERATORS = saved
