"""rules/cpu.yaml is the installed onnxruntime's CPU kernel registry, kernel for kernel.

When the installed wheel changes, these fail until the table is regenerated:
``partsim rules import ort-kernels -o rules/cpu.yaml``.
"""

import numpy as np
import onnxruntime as ort
from onnx import TensorProto as T
from onnx import helper
from onnxruntime.capi import _pybind_state as C

from tests.conftest import ROOT
from partsim.api import load_tables, predict
from partsim.gen.ort_kernels import kernel_table

INT_MAX = 2**31 - 1


def _registry():
    """(domain, op, since, end) -> {constraint: dtypes}, read straight from ORT (not via the generator)."""
    out = {}
    for k in C.get_all_opkernel_def():
        if k.provider != "CPUExecutionProvider":
            continue
        lo, hi = k.version_range
        key = (k.domain or "", k.op_name, lo, None if hi >= INT_MAX else hi)
        d = out.setdefault(key, {})
        for name, ts in k.type_constraints.items():
            d.setdefault(name, set()).update(t[7:-1] if t.startswith("tensor(") else t for t in ts)
    return out


def _table():
    t = load_tables()["CPUExecutionProvider"][0]
    out = {}
    for (domain, op), rules in t.rules.items():
        for r in rules:
            out[(domain, op, r.versions[0], r.versions[1])] = {k: set(v) for k, v in r.types.items()}
    return t, out


def test_cpu_table_names_the_installed_ort():
    t, _ = _table()
    assert t.source["version"] == f"onnxruntime {ort.__version__}", \
        "rules/cpu.yaml is from another onnxruntime: partsim rules import ort-kernels -o rules/cpu.yaml"


def test_every_cpu_kernel_is_in_the_table_and_nothing_else():
    reg = _registry()
    _, table = _table()
    missing = sorted(set(reg) - set(table), key=str)
    extra = sorted(set(table) - set(reg), key=str)
    assert not missing and not extra, f"kernels not in cpu.yaml: {missing[:10]}; rules ORT lacks: {extra[:10]}"
    wrong = [(k, sorted(reg[k][c] ^ table[k].get(c, set())))
             for k in reg for c in reg[k] if reg[k][c] != table[k].get(c, set())]
    assert not wrong, f"dtypes differ: {wrong[:10]}"
    assert len(reg) > 600


def test_cpu_table_is_the_generator_output_byte_for_byte():
    assert kernel_table() == (ROOT / "rules" / "cpu.yaml").read_text()


def test_cpu_1_24_table_is_the_generator_output_byte_for_byte():
    """rules/cpu-1.24.yaml (onnxruntime 1.24.1's CPU kernels, the release openvino:1.24 runs in) is what
    ``partsim rules import ort-kernels --python VENV/bin/python --variant 1.24`` writes from its rows."""
    text = (ROOT / "rules" / "cpu-1.24.yaml").read_text()
    t = [t for t in load_tables()["CPUExecutionProvider"] if t.variant == "1.24"][0]
    rows = [[domain, op, r.versions[0], r.versions[1],
             {k: sorted(v if "(" in v else f"tensor({v})" for v in vs) for k, vs in r.types.items()}]
            for (domain, op), rules in t.rules.items() for r in rules]
    assert t.source["describes"] == {"onnxruntime": "1.24.1"}
    assert kernel_table(registry=("1.24.1", rows), variant="1.24") == text
    missing = {op for (_, op) in load_tables()["CPUExecutionProvider"][0].rules} - {op for (_, op) in t.rules}
    assert {"DeformConv", "TensorScatter", "BitCast", "CumProd"} <= missing


def test_a_kernel_the_table_lacks_is_one_ort_lacks(tmp_path):
    """The table's 'no CPU kernel' is ORT's: GlobalLpPool-22 has none (the registry's newest is
    2, open-ended), and a real CPU session refuses the model exactly as predicted."""
    x = helper.make_tensor_value_info("x", T.FLOAT, [1, 2, 3, 3])
    y = helper.make_tensor_value_info("y", T.FLOAT, None)
    m = helper.make_model(helper.make_graph([helper.make_node("GlobalLpPool", ["x"], ["y"], name="p")], "g", [x], [y]),
                          opset_imports=[helper.make_opsetid("", 22)], ir_version=10)
    p = tmp_path / "lp22.onnx"
    p.write_bytes(m.SerializeToString())
    summary, _ = predict(p, providers=["cpu"])
    assert summary["status"] == "session_would_fail"
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    try:
        ort.InferenceSession(str(p), so, providers=["CPUExecutionProvider"])
        refused = False
    except Exception as exc:  # noqa: BLE001 - ORT raises its own exception types
        refused = "Could not find an implementation" in str(exc)
    assert refused
    # and at opset 2 (the registered version) both run it
    m.opset_import[0].version = 2
    p.write_bytes(m.SerializeToString())
    assert predict(p, providers=["cpu"])[0]["status"] == "ok"
    out = ort.InferenceSession(str(p), so, providers=["CPUExecutionProvider"]).run(
        None, {"x": np.ones((1, 2, 3, 3), np.float32)})
    assert out[0].shape == (1, 2, 1, 1)
