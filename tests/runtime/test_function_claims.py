"""Which providers claim a function node (partsim/runtime/function_claims.py), against real CPU sessions."""

import onnxruntime as ort
import pytest
from onnx import TensorProto as T
from onnx import helper as h

from partsim.api import predict


def _model(op, dtype, opset, n_inputs):
    vi = h.make_tensor_value_info
    ins = [vi("x", dtype, [1, 2, 3, 4]), vi("s", dtype, [1, 2, 3, 4]), vi("b", dtype, [1, 2, 3, 4])][:n_inputs]
    if op != "Attention":
        ins = [vi("x", dtype, [2, 4]), vi("s", dtype, [4]), vi("b", dtype, [4])][:n_inputs]
    g = h.make_graph([h.make_node(op, [i.name for i in ins], ["y"], name="n")], "g", ins, [vi("y", dtype, None)])
    return h.make_model(g, opset_imports=[h.make_opsetid("", opset)], ir_version=10)


def _real(m):
    """``(ops the CPU session placed, its error)`` of a CPU-only session at ORT_DISABLE_ALL."""
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
    try:
        s = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    except Exception as exc:  # noqa: BLE001 - ORT's own exception types
        return None, str(exc)
    return sorted(n.op_type for a in s.get_provider_graph_assignment_info() for n in a.get_nodes()), ""


@pytest.mark.parametrize("op,dtype,opset,n_inputs,inlined", [
    ("Attention", T.BFLOAT16, 23, 3, True), ("Attention", T.DOUBLE, 23, 3, True),
    ("Attention", T.FLOAT16, 23, 3, False), ("RMSNormalization", T.BFLOAT16, 23, 2, True),
    ("RMSNormalization", T.DOUBLE, 23, 2, False), ("LayerNormalization", T.BFLOAT16, 17, 3, False)])
def test_a_context_dependent_function_is_inlined_when_no_kernel_takes_its_dtypes(op, dtype, opset, n_inputs, inlined,
                                                                                 tmp_path):
    """The CPU's GetCapability looks kernels up with their type constraints (kernel_registry.cc VerifyKernelDef),
    and a context-dependent body is built from the node (graph.cc Node::TryGetFunctionProto): a bfloat16 or double
    Attention-23 (CPU kernel: float, float16) and a bfloat16 RMSNormalization-23 are inlined, a bfloat16
    LayerNormalization-17 is not (its CPU kernel takes bfloat16).  Checked against real CPU sessions: the nodes
    they placed, or, where the body then fails, the body node ORT names in its refusal."""
    m = _model(op, dtype, opset, n_inputs)
    placed, error = _real(m)
    path = tmp_path / "m.onnx"
    path.write_bytes(m.SerializeToString())
    summary, _ = predict(str(path), ["cpu"], level="disable")
    ops = sorted(n["opType"] for n in summary["nodes"])
    assert (op not in ops) == inlined
    if placed is not None and not inlined:
        assert summary["status"] == "ok" and ops == placed
    elif placed is not None:  # the body ORT built (the ONNX inside onnxruntime) may differ from the installed onnx's:
        # double Attention-23 has an Equal, a Where, a ReduceMax and two Casts more in onnx 1.23.2's
        assert summary["status"] == "ok" and set(placed) <= set(ops)
    else:  # ORT refused a body node it inlined ("Could not find an implementation for Expand(13) ...")
        assert inlined and summary["status"] == "session_would_fail"
        failing = error.split("implementation for ")[1].split("(")[0]
        assert failing in ops and failing in summary["failure"]


def test_body_function_claims_lists_the_function_nodes_of_nested_bodies():
    """HardSwish, CastLike and Relu in an If's branch, one more HardSwish in an If inside the else branch (both its
    branches); the main graph's HardSwish is not listed.  CUDA's table claims HardSwish, no table CastLike."""
    from partsim.api import load_tables
    from partsim.rules.resolve import resolve_providers
    from partsim.runtime.function_claims import body_function_claims

    vi = h.make_tensor_value_info
    inner = h.make_graph([h.make_node("HardSwish", ["x"], ["i"], name="hs_nested")], "inner", [], [vi("i", T.FLOAT, [3])])
    then = h.make_graph([h.make_node("HardSwish", ["x"], ["a"], name="hs_then"),
                         h.make_node("CastLike", ["a", "x"], ["t"], name="castlike"),
                         h.make_node("Relu", ["t"], ["t2"], name="relu")], "then", [], [vi("t2", T.FLOAT, [3])])
    other = h.make_graph([h.make_node("If", ["c"], ["e"], name="inner_if", then_branch=inner, else_branch=inner)],
                         "else", [], [vi("e", T.FLOAT, [3])])
    g = h.make_graph([h.make_node("HardSwish", ["x"], ["m"], name="hs_main"),
                      h.make_node("If", ["c"], ["y"], name="if", then_branch=then, else_branch=other)], "g",
                     [vi("x", T.FLOAT, [3]), vi("c", T.BOOL, [])], [vi("y", T.FLOAT, [3]), vi("m", T.FLOAT, [3])])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 21)], ir_version=10)
    found = [(n.name, eps) for n, eps in body_function_claims(m, resolve_providers(["cuda"], load_tables()).tables)]
    cuda, both = ["CUDAExecutionProvider"], ["CUDAExecutionProvider", "CPUExecutionProvider"]
    assert sorted(found) == [("castlike", []), ("hs_nested", cuda), ("hs_nested", cuda), ("hs_then", cuda),
                             ("relu", both)]  # Relu-14 has a function body too; the CPU claims it
