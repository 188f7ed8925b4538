"""Which CPU table goes with the providers asked for: the one of the ORT release they run in."""

from partsim.api import load_tables
from partsim.rules.resolve import resolve_providers
from partsim.versions import annotate, hosting_release

CPU = "CPUExecutionProvider"


def _cpu_release(requested):
    tables = resolve_providers(requested, load_tables()).tables
    assert tables[-1].provider == CPU or CPU in [t.provider for t in tables]
    cpu = [t for t in tables if t.provider == CPU][0]
    return cpu.source["describes"]["onnxruntime"]


def test_openvino_1_24_gets_the_cpu_kernels_of_ort_1_24_1():
    """onnxruntime-openvino 1.24.1 is a build of ORT 1.24.1: its CPU EP lacks what later releases added
    (DeformConv-22, TensorScatter-24; rules/cpu-1.24.yaml), appended or asked for by name."""
    assert _cpu_release(["openvino:1.24"]) == "1.24.1"
    assert _cpu_release(["openvino:1.24", "cpu"]) == "1.24.1"
    assert hosting_release(load_tables()["OpenVINOExecutionProvider"][-1]) in ("1.24.1", None)


def test_other_providers_keep_the_default_cpu_table():
    default = load_tables()[CPU][0]
    assert not default.variant and default.source["describes"]["onnxruntime"] != "1.24.1"
    for requested in (["cpu"], ["openvino"], ["cuda"], ["qnn"], ["webgpu"], ["nnapi", "coreml"]):
        assert _cpu_release(requested) == default.source["describes"]["onnxruntime"], requested
    assert _cpu_release(["cpu:1.24"]) == "1.24.1"  # still selectable by its variant


def test_the_cpu_table_of_the_hosting_release_is_not_called_stale():
    tables = resolve_providers(["openvino:1.24"], load_tables()).tables
    summary = annotate({}, tables)
    assert [t["describes"] for t in summary["ort"]["tables"]] == [{"onnxruntime-openvino": "1.24.1"},
                                                                   {"onnxruntime": "1.24.1"}]
    assert not any("CPUExecutionProvider" in s for s in summary["ort"].get("mayBeStale", ()))
