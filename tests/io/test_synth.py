"""partsim synth: valid, typed, deterministic models of the requested size."""

import hashlib

import onnx
import pytest

from partsim.io.load import load_model
from partsim.io.synth import synthesize


def test_valid_typed_and_exact_size(tmp_path, run_cli):
    out = tmp_path / "m.onnx"
    code, _, err = run_cli("synth", "--nodes", "300", "--seed", "3", "-o", out)
    assert code == 0, err
    m = onnx.load(str(out))
    onnx.checker.check_model(m, full_check=True)
    assert len(m.graph.node) == 300
    inferred = onnx.shape_inference.infer_shapes(m, strict_mode=True)
    typed = {v.name for v in list(inferred.graph.value_info) + list(inferred.graph.output)}
    assert all(n.output[0] in typed for n in m.graph.node)
    model = load_model(out)
    assert all(model.value(n.outputs[0]).shape == (1, 16) for n in model.nodes)


def test_same_seed_same_bytes_other_seed_other_model(tmp_path, run_cli):
    digests = []
    for k, seed in enumerate((5, 5, 6)):
        out = tmp_path / f"m{k}.onnx"
        assert run_cli("synth", "--nodes", "200", "--seed", seed, "-o", out)[0] == 0
        digests.append(hashlib.sha256(out.read_bytes()).hexdigest())
    assert digests[0] == digests[1] != digests[2]


def test_ops_and_branching(tmp_path):
    m = synthesize(120, seed=1, ops=("Relu", "Erf"), width=1, reach=1)
    assert {n.op_type for n in m.graph.node} == {"Relu", "Erf"}
    # width 1, reach 1: a chain, every node reads the one before it
    for prev, node in zip(m.graph.node, m.graph.node[1:]):
        assert list(node.input) == [prev.output[0]]


@pytest.mark.parametrize("argv", [["--nodes", "0"], ["--nodes", "10", "--ops", "Conv"], ["--nodes", "10",
                                                                                      "--branching", "0"]])
def test_bad_options_exit_2(tmp_path, run_cli, argv):
    code, _, err = run_cli("synth", *argv, "-o", tmp_path / "x.onnx")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "x.onnx").exists()
