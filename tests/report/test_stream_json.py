"""The streaming JSON writer gives the bytes of to_json, to a file (atomically) or stdout."""

import json

from onnx import TensorProto as T
from onnx import helper

from partsim import predict
from partsim.report.output import to_json
from partsim.report.stream import iter_json, write_json
from tests.conftest import ROOT, run_subprocess, shared_path


def test_same_bytes_as_to_json_on_corpus_models(tmp_path):
    for name in ("tiny_transformer.ts.onnx", "q_tiny_resnet.ts.qdq.onnx"):
        summary, _ = predict(shared_path("corpus", "full", name), ["nnapi", "cuda"])
        out = tmp_path / "s.json"
        write_json(summary, out)
        assert out.read_text(encoding="utf-8") == to_json(summary) == "".join(iter_json(summary))


def test_non_ascii_names_and_stdout(tmp_path, run_cli):
    x = helper.make_tensor_value_info("x", T.FLOAT, [1, 2])
    y = helper.make_tensor_value_info("ÿ", T.FLOAT, [1, 2])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["ÿ"], name="relu-é-日本")], "g", [x], [y])
    path = tmp_path / "m.onnx"
    path.write_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    summary, _ = predict(path, ["cuda"])
    code, out, _ = run_cli("simulate", path, "-p", "cuda", "-f", "json")
    assert code == 0 and out == to_json(summary) and "relu-é-日本" in out
    r = run_subprocess("simulate", path, "-p", "cuda", "-f", "json")  # the program's binary stdout
    assert r.returncode == 0 and json.loads(r.stdout) == json.loads(to_json(summary))
    assert r.stdout == to_json(summary)


def test_failed_write_leaves_no_file(tmp_path, run_cli):
    code, out, err = run_cli("simulate", ROOT / "fixtures" / "chain.onnx", "-f", "json", "-o",
                             tmp_path / "missing" / "s.json")
    assert code == 2 and "does not exist" in err
    assert not (tmp_path / "missing").exists()
    assert [p.name for p in tmp_path.iterdir()] == []
