"""The plugin's graph probes of partsim/gen/openvino_plugin_subgraph_probes.py: valid models, recorded in the
evidence beside the table, and ``zero_size_subgraph_input_fails`` derived from them only as measured (the real
sessions: tests/gen/test_openvino_plugin.py; the prediction: tests/sim/test_refusals.py)."""

import copy

import onnx
import pytest

from partsim.gen.openvino_plugin import EVIDENCE, GRAPH_PROBES, derive_table, read_evidence
from partsim.gen.openvino_plugin_subgraph_probes import SUBGRAPH_PROBES

OPTION = "zero_size_subgraph_input_fails"


def _spec(name):
    return ("graph", name, 0, GRAPH_PROBES[name][0], "float")


@pytest.mark.parametrize("name", sorted(SUBGRAPH_PROBES))
def test_each_probe_is_a_valid_model_in_the_probe_set_and_recorded(name):
    onnx.checker.check_model(SUBGRAPH_PROBES[name][1](), full_check=True)
    assert GRAPH_PROBES[name] is SUBGRAPH_PROBES[name]
    assert _spec(name) in read_evidence(EVIDENCE)


def test_option_is_derived_only_when_the_probes_show_it():
    """Derived from the recorded sessions; not derived had the control (an empty vector a Slice makes) failed
    too, or had the Loop run."""
    from partsim.gen.openvino import openvino_table_dict

    evidence = read_evidence(EVIDENCE)
    assert "Input names mismatch" in derive_table(openvino_table_dict(), evidence)["partitioning"][OPTION]
    failed = {"create_error": "[ONNXRuntimeError] : 11 : EP_FAIL : [OpenVINO-EP] Input names mismatch"}
    ran = {"assignment": [["OpenVINOExecutionProvider", [["A", "Relu", ""], ["LP", "Loop", ""], ["C", "Relu", ""],
                                                         ["D", "Relu", ""]]]]}
    for name, record in (("if_implicit_empty_tensor", failed), ("loop_implicit_empty_input", ran)):
        changed = copy.deepcopy(evidence)
        changed[_spec(name)] = record
        assert OPTION not in derive_table(openvino_table_dict(), changed)["partitioning"], name
