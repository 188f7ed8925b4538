"""The CUDA table (rules/cuda.yaml) against real placements recorded on a GPU.

``shared/observed/cuda/<model>/observed.json`` was recorded with onnxruntime-gpu 1.31.1
on an NVIDIA H200 (``get_provider_graph_assignment_info``, the VERBOSE log of the
MemcpyTransformer and the saved optimized model).  At ``ORT_DISABLE_ALL`` the graph
ORT partitions is the model itself (Constant nodes folded into initializers), so
partsim's prediction must agree node by node, and its Memcpy nodes must be the ones
ORT added.  The observations are the independent reference: nothing here is taken
from partsim's own output.

The second half checks the kernel-doc importer on doc excerpts written in the
format of ORT's ``docs/OperatorKernels.md``.
"""

import json
import re
from pathlib import Path

import pytest

from partsim.errors import PartsimError
from partsim.gen.kernel_doc import build_table, parse_kernel_doc
from partsim.rules.load import builtin_tables
from tests.conftest import as_written_cli


# These tests describe the graph as written (an ORT_DISABLE_ALL session): level disable unless asked
@pytest.fixture
def run_cli(run_cli):
    return as_written_cli(run_cli)


SHARED = Path(__file__).resolve().parents[3] / "shared"
OBSERVED = SHARED / "observed" / "cuda"
CUDA = "CUDAExecutionProvider"


def _cases():
    if not OBSERVED.is_dir():
        return []
    return sorted(p.name for p in OBSERVED.iterdir() if (p / "observed.json").is_file())


def _need_shared():
    if not OBSERVED.is_dir():
        pytest.skip(f"{OBSERVED} is absent: the GPU observations live in ../shared beside the project")


CASES = _cases() or ["(no observations)"]

_LOG = re.compile(r"^Add (MemcpyFromHost|MemcpyToHost) (?:after|before) (.+) for CUDAExecutionProvider$")
_MAIN = re.compile(r"^(\d+) Memcpy nodes are added to the graph (\S+) for CUDAExecutionProvider")


def _record(case):
    obs = json.loads((OBSERVED / case / "observed.json").read_text())
    assert obs["runtime"].startswith("onnxruntime-gpu")
    rec = next(r for r in obs["records"] if r["level"] == "ORT_DISABLE_ALL")
    assert CUDA in rec["granted"]
    return rec


_PREDICTIONS = {}


def _predict(case):
    if case not in _PREDICTIONS:
        from partsim.api import predict

        _PREDICTIONS[case] = predict(OBSERVED / case / "model.onnx", providers=[CUDA], level="disable")
    return _PREDICTIONS[case]


@pytest.mark.parametrize("case", CASES)
def test_provider_of_every_node_matches_the_gpu(case):
    _need_shared()
    rec = _record(case)
    observed = {}
    for provider, nodes in rec["assignment"]:
        for name, _op, _domain in nodes:
            assert name not in observed, f"{name} assigned twice in the observation"
            observed[name] = provider
    summary, _ = _predict(case)
    predicted = {n["name"]: n["provider"] for n in summary["nodes"]}
    assert set(predicted) == set(observed), "partsim and ORT see different node sets"
    wrong = {n: (predicted[n], observed[n]) for n in sorted(observed) if predicted[n] != observed[n]}
    assert not wrong, f"{len(wrong)} node(s) disagree (predicted, observed): {dict(list(wrong.items())[:10])}"
    # the profiling trace agrees with the assignment for the nodes that ran
    for name, _op, provider in rec["profile_nodes"]:
        if name in observed:
            assert provider == observed[name]


@pytest.mark.parametrize("case", CASES)
def test_memcpy_nodes_match_the_gpu(case):
    _need_shared()
    rec = _record(case)
    logged = {"fromHost": set(), "toHost": set()}
    per_graph = {}
    for line in rec["memcpy_log"]:
        m = _LOG.match(line.strip())
        if m:
            logged["fromHost" if m.group(1) == "MemcpyFromHost" else "toHost"].add(m.group(2))
        g = _MAIN.match(line.strip())
        if g:
            per_graph[g.group(2)] = per_graph.get(g.group(2), 0) + int(g.group(1))
    summary, assignment = _predict(case)
    mc = summary["memcpy"]
    # every Memcpy node ORT added, in every graph (the log lists subgraphs too)
    assert mc["fromHost"] == len(logged["fromHost"])
    assert mc["toHost"] == len(logged["toHost"])
    predicted = {d: {t["tensor"] for t in mc["tensors"] if t["direction"] == d} for d in ("fromHost", "toHost")}
    assert predicted == logged
    # the saved optimized model holds the main graph: its Memcpy nodes are the main graph's copies
    model = assignment.model
    main = {d: sum(1 for t in predicted[d]
                   if (model.producer.get(t) is None and t in model.graph_inputs)
                   or (model.producer.get(t) is not None and not model.nodes[model.producer[t]].scope))
            for d in predicted}
    saved = {"fromHost": sum(1 for _, op, _ in rec["optimized_ops"] if op == "MemcpyFromHost"),
             "toHost": sum(1 for _, op, _ in rec["optimized_ops"] if op == "MemcpyToHost")}
    assert main == saved
    if per_graph:
        assert sum(main.values()) == per_graph.get("main_graph", 0)


@pytest.mark.parametrize("case", CASES)
def test_cpu_nodes_are_explained(case):
    """Every node left on the CPU carries a reason from the CUDA table."""
    _need_shared()
    summary, _ = _predict(case)
    for n in summary["nodes"]:
        if n["provider"] != CUDA:
            assert n["reason"] in {"op_not_in_table", "opset_version", "dtype", "attribute", "cpu_preferred",
                                   "non_constant_input"}, n


# ---------------------------------------------------------------------------------------------
# the importer, on excerpts in the format of ORT's OperatorKernels.md
# ---------------------------------------------------------------------------------------------

DOC = """\
## Operators implemented by CPUExecutionProvider

| Op Name | Parameters | OpSet Version | Types Supported |
|---------|------------|---------------|-----------------|
|**Operator Domain:** *ai.onnx*||||
|Slice|*in* data:**T**|13+|**T** = tensor(double)|

<a name="cudaexecutionprovider"/>

## Operators implemented by CUDAExecutionProvider

| Op Name | Parameters | OpSet Version | Types Supported |
|---------|------------|---------------|-----------------|
|**Operator Domain:** *ai.onnx*||||
|ArgMax|*in* data:**T**<br> *out* reduced:**tensor(int64)**|13+|**T** = tensor(float), tensor(float16)|
|||12|**T** = tensor(float)|
|||[1, 11]|**T** = tensor(float)|
|Slice|*in* data:**T**<br> *in* starts:**Tind**|13+|**T** = tensor(float)<br/> **Tind** = tensor(int32), tensor(int64)|
|||[1, 9]|**T** = tensor(float)|
|SequenceAt|*in* input_sequence:**S**|11+|**S** = seq(tensor(float)), seq(tensor(int64))<br/> **T** = tensor(float)|
| |
| |
|**Operator Domain:** *com.microsoft*||||
|NhwcConv|*in* X:**T**|1+|**T** = tensor(float)|

<a name="dmlexecutionprovider"/>

## Operators implemented by DmlExecutionProvider

|**Operator Domain:** *ai.onnx*||||
|Abs|*in* X:**T**|13+|**T** = tensor(float)|
"""


def test_parse_reads_only_the_cuda_section():
    rows = parse_kernel_doc(DOC, CUDA)
    assert [(r.domain, r.op, r.versions) for r in rows] == [
        ("", "ArgMax", (13, None)), ("", "ArgMax", (12, 12)), ("", "ArgMax", (1, 11)),
        ("", "Slice", (13, None)), ("", "Slice", (1, 9)), ("", "SequenceAt", (11, None)),
        ("com.microsoft", "NhwcConv", (1, None))]
    slice13 = rows[3]
    assert dict(slice13.types) == {"T": ("tensor(float)",), "Tind": ("tensor(int32)", "tensor(int64)")}
    assert dict(rows[5].types)["S"] == ("seq(tensor(float))", "seq(tensor(int64))")


def test_host_ports_and_vetoes_follow_the_kernel_version():
    table = build_table(parse_kernel_doc(DOC, CUDA), CUDA, {"description": "t", "version": "t"})
    rule = {(r.get("domain", ""), r["op"], tuple(r["versions"])): r for r in table["ops"]}
    # Slice-10+ reads starts/ends/axes/steps from host memory; Slice-1 has them as attributes
    assert rule[("", "Slice", (13, None))]["host_inputs"] == [1, 2, 3, 4]
    assert "host_inputs" not in rule[("", "Slice", (1, 9))]
    # select_last_index exists (and is vetoed) from ArgMax-12 on only
    assert "attrs" not in rule[("", "ArgMax", (1, 11))]
    assert rule[("", "ArgMax", (12, 12))]["attrs"][0]["name"] == "select_last_index"
    assert rule[("com.microsoft", "NhwcConv", (1, None))]["const_inputs"] == [1]
    assert rule[("", "SequenceAt", (11, None))]["host_inputs"] == [1]
    assert rule[("", "SequenceAt", (11, None))]["types"]["S"] == ["seq(tensor(float))", "seq(tensor(int64))"]


@pytest.mark.parametrize("bad", [
    "## Operators implemented by CUDAExecutionProvider\n|Abs|x|13-|**T** = tensor(float)|\n",
    "## Operators implemented by CUDAExecutionProvider\n|||13+|**T** = tensor(float)|\n",
    "## Operators implemented by CUDAExecutionProvider\n|Abs|x|13+|T = float|\n",
    "## Operators implemented by CPUExecutionProvider\n|Abs|x|13+|**T** = tensor(float)|\n",
])
def test_malformed_doc_is_a_one_line_error(bad):
    with pytest.raises(PartsimError) as e:
        parse_kernel_doc(bad, CUDA, "doc.md")
    assert "doc.md" in str(e.value) and "\n" not in str(e.value)


def test_shipped_table_has_the_host_ports_of_the_cuda_kernels():
    """Spot checks of rules/cuda.yaml against KernelDefBuilder calls in the ORT CUDA sources."""
    (table,) = builtin_tables()[CUDA]
    assert not table.cpu_based and table.option("cpu_preferred_shape_nodes")

    def rule(op, since, domain=""):
        (r,) = [r for r in table.rules_for(domain, op) if r.versions[0] == since]
        return r

    assert rule("Shape", 15).host_outputs == (0,)          # tensor/shape_op.cc
    assert rule("Size", 13).host_outputs == (0,)           # tensor/size.cc
    assert rule("Reshape", 14).host_inputs == (1,)         # tensor/reshape.cc
    assert rule("Reshape", 1).host_inputs == ()            # Reshape-1 has no shape input
    assert rule("Expand", 13).host_inputs == (1,)          # tensor/expand.cc
    assert rule("ConstantOfShape", 9).host_inputs == (0,)  # generator/constant_of_shape.cc
    assert rule("Unsqueeze", 13).host_inputs == (1,)       # tensor/unsqueeze.cc
    assert rule("Unsqueeze", 11).host_inputs == ()
    assert rule("Resize", 13).host_inputs == (1, 2, 3)     # tensor/resize.cc
    assert rule("Pad", 18).host_inputs == (1, 2, 3)        # tensor/pad.cc
    assert rule("TopK", 11).host_inputs == (1,)            # math/topk.cc
    assert rule("Range", 11).host_inputs == (0, 1, 2)      # generator/range.cc
    assert rule("Gather", 13).host_inputs == ()            # indices are read on the device
    cast = dict(rule("Cast", 13).attrs[0])
    assert cast["name"] == "to" and 8 in cast["not_in"]   # Cast to string stays on the CPU


# ---------------------------------------------------------------------------------------------
# GetCapability's vetoes and the per-graph CPU-preferred pass, on small built graphs.  The
# expected placements are read off the ORT sources named (onnxruntime @735e69a), not off partsim.
# ---------------------------------------------------------------------------------------------

def _predict_model(tmp_path, m):
    import onnx

    from partsim.api import predict

    path = tmp_path / "m.onnx"
    onnx.save(m, path)
    summary, _ = predict(path, providers=["cuda"], level="disable")
    return {n["name"]: (n["provider"], n["reason"]) for n in summary["nodes"]}, summary


def test_getcapability_attribute_vetoes(tmp_path):
    from onnx import TensorProto as T
    from onnx import helper

    from tests.modelbuild import const, model, vi

    h = 4
    nodes = [
        # CastNeedFallbackToCPU: to == STRING (the kernel's T2 has no string either: no kernel found)
        helper.make_node("Cast", ["x"], ["c_str"], name="cast_str", to=T.STRING),
        helper.make_node("Cast", ["x"], ["c_f"], name="cast_float", to=T.DOUBLE),
        # ConvTransposeNeedFallbackToCPU: asymmetric pads, or auto_pad SAME_*
        helper.make_node("ConvTranspose", ["img", "w"], ["ct1"], name="ct_asym", pads=[0, 0, 1, 1]),
        helper.make_node("ConvTranspose", ["img", "w"], ["ct2"], name="ct_sym", pads=[1, 1, 1, 1]),
        helper.make_node("ConvTranspose", ["img", "w"], ["ct3"], name="ct_same", auto_pad="SAME_UPPER"),
        # ArgMaxOrArgMinNeedFallbackToCPU: select_last_index != 0 (since opset 12)
        helper.make_node("ArgMax", ["x"], ["am1"], name="argmax_last", select_last_index=1),
        helper.make_node("ArgMax", ["x"], ["am0"], name="argmax_first", select_last_index=0),
        # RNNNeedFallbackToCPU: GRU needs linear_before_reset = 1; no clip; default activations
        helper.make_node("GRU", ["seq", "gw", "gr"], ["g0"], name="gru_lbr0", hidden_size=h, linear_before_reset=0),
        helper.make_node("GRU", ["seq", "gw", "gr"], ["g1"], name="gru_lbr1", hidden_size=h, linear_before_reset=1),
        helper.make_node("GRU", ["seq", "gw", "gr"], ["g2"], name="gru_clip", hidden_size=h, linear_before_reset=1,
                         clip=1.0),
        helper.make_node("LSTM", ["seq", "lw", "lr"], ["l0"], name="lstm_acts", hidden_size=h,
                         activations=["Sigmoid", "Tanh", "Tanh"]),
        helper.make_node("LSTM", ["seq", "lw", "lr"], ["l1"], name="lstm_relu", hidden_size=h,
                         activations=["Sigmoid", "Relu", "Tanh"]),
    ]
    outs = ["c_str", "c_f", "ct1", "ct2", "ct3", "am1", "am0", "g0", "g1", "g2", "l0", "l1"]
    m = model(nodes, [vi("x", [2, 3]), vi("img", [1, 2, 5, 5]), vi("seq", [3, 1, 2])],
              [helper.make_tensor_value_info(o, T.UNDEFINED, None) for o in outs],
              inits=[const("w", [2, 2, 3, 3]), const("gw", [1, 3 * h, 2]), const("gr", [1, 3 * h, h]),
                     const("lw", [1, 4 * h, 2]), const("lr", [1, 4 * h, h])])
    placed, _ = _predict_model(tmp_path, m)
    cpu = {n for n, (p, _) in placed.items() if p != CUDA}
    assert cpu == {"cast_str", "ct_asym", "ct_same", "argmax_last", "gru_lbr0", "gru_clip", "lstm_relu"}
    assert placed["cast_str"][1] in ("dtype", "attribute")
    assert all(placed[n][1] == "attribute" for n in cpu - {"cast_str"})
    # transformer_memcpy.cc: a graph input read by device nodes and by host nodes gets a
    # MemcpyFromHost node (x, img and seq here); read on the device only, it is copied at feed time
    _, summary = _predict_model(tmp_path, m)
    assert [t["tensor"] for t in summary["memcpy"]["tensors"]] == ["img", "seq", "x"]


def test_cpu_preferred_pass_is_per_graph(tmp_path):
    """GraphPartitioner asks the CUDA EP once per graph; a subgraph's pass starts afresh.

    Main graph: Shape(x) is a host output (tensor/shape_op.cc), so Gather(Shape, small index)
    and Cast of it move to the CPU (fallback_cpu_capability.cc).  The If node reads that CPU
    tensor through its branch (an implicit input, which is an edge and a consumer in ORT's
    Graph), and its only explicit input is a graph input: it moves to the CPU as well.  Inside
    the branch the outer value is neither a graph input nor a CPU tensor of that graph, so the
    branch's Mul stays on CUDA.  Memcpy: the branch reads the outer value, which ORT copies when
    it feeds the subgraph (no node); the main graph copies nothing to the host.
    """
    from onnx import TensorProto as T
    from onnx import helper

    from tests.modelbuild import model, vi

    idx = helper.make_tensor("idx", T.INT64, [], [1])
    two = helper.make_tensor("two", T.INT64, [], [2])
    branch = helper.make_graph(
        [helper.make_node("Mul", ["d", "two"], ["y"], name="then_mul")], "then", [],
        [helper.make_tensor_value_info("y", T.INT64, [])], [two])
    other = helper.make_graph(
        [helper.make_node("Identity", ["d"], ["z"], name="else_id")], "else", [],
        [helper.make_tensor_value_info("z", T.INT64, [])])
    nodes = [
        helper.make_node("Shape", ["x"], ["s"], name="shape"),
        helper.make_node("Gather", ["s", "idx"], ["d"], name="gather"),
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("If", ["cond"], ["o"], name="if", then_branch=branch, else_branch=other),
    ]
    m = model(nodes, [vi("x", [2, 3]), vi("cond", [], T.BOOL)],
              [vi("r", [2, 3]), vi("o", [], T.INT64)], inits=[idx])
    placed, summary = _predict_model(tmp_path, m)
    assert placed["shape"][0] == CUDA and placed["relu"][0] == CUDA
    assert placed["gather"] == ("CPUExecutionProvider", "cpu_preferred")
    assert placed["if"] == ("CPUExecutionProvider", "cpu_preferred")
    assert placed["then_mul"][0] == CUDA
    assert placed["else_id"][0] == CUDA
    assert summary["memcpy"]["toHost"] == 0
