"""ORT's optimizer session begun early (before onnx is imported and before the tables are parsed):
the guess it is begun on is checked, a wrong guess costs time and never the answer."""

import pytest

from tests.conftest import shared_path
from partsim import predict
from partsim.api import load_tables
from partsim.report.output import to_json
from partsim.rules.resolve import resolve_providers
from partsim.runtime import ort_pipeline


@pytest.fixture(autouse=True)
def cold(monkeypatch):
    monkeypatch.setenv("PARTSIM_NO_CACHE", "1")


def test_header_guess_is_the_real_provider_list_for_every_shipped_table():
    tables = load_tables()
    heads = tables.headers()
    assert heads is not None and set(heads) == set(tables)
    for provider in tables:
        for request in ([provider], [provider, "cuda"], ["cpu", provider]):
            real = resolve_providers(request, tables)
            guess = resolve_providers(request, heads)
            assert [(t.provider, t.is_compiling) for t in guess.tables] == \
                [(t.provider, t.is_compiling) for t in real.tables], request


def _spy(monkeypatch):
    """Record every early run and whether pipeline_graph used it."""
    seen = {"begun": [], "used": []}
    real_begin, real_fits = ort_pipeline.begin_early, ort_pipeline.OptimizerRun.fits

    def begin(*a, **k):
        run = real_begin(*a, **k)
        seen["begun"].append(run)
        return run

    def fits(self, *a, **k):
        ok = real_fits(self, *a, **k)
        seen["used"].append(ok)
        return ok

    monkeypatch.setattr(ort_pipeline, "begin_early", begin)
    monkeypatch.setattr(ort_pipeline.OptimizerRun, "fits", fits)
    return seen


@pytest.mark.parametrize("model, providers", [("graph_only/resnet18.ts.onnx", ["cuda"]),
                                              ("full/q_tiny_resnet.ts.qdq.onnx", ["openvino"]),
                                              ("graph_only/bert_tiny.dynamo.onnx", ["cpu"])])
def test_early_session_is_used_and_changes_nothing(monkeypatch, model, providers):
    path = str(shared_path("corpus", *model.split("/")))
    seen = _spy(monkeypatch)
    early, _ = predict(path, providers)
    # the early session is the partitioning level's; the final view (Level 2/3) is a session of its own
    assert seen["begun"] and seen["begun"][0] is not None and seen["used"] and all(seen["used"])
    monkeypatch.setattr(ort_pipeline, "begin_early", lambda *a, **k: None)
    plain, _ = predict(path, providers)
    assert to_json(early) == to_json(plain)


def test_a_wrong_guess_is_started_again(monkeypatch):
    path = str(shared_path("corpus", "graph_only", "resnet18.ts.onnx"))
    right, _ = predict(path, ["cuda"])
    from partsim.rules import load

    real_headers = load.TableSet.headers

    def lying(self):  # CUDA's header read as a compiling provider: Level 1 only, the wrong request
        heads = real_headers(self)
        heads["CUDAExecutionProvider"] = [load.TableHeader(h.provider, h.variant, h.default_variant, "compiling")
                                          for h in heads["CUDAExecutionProvider"]]
        return heads

    monkeypatch.setattr(load.TableSet, "headers", lying)
    seen = _spy(monkeypatch)
    wrong, _ = predict(path, ["cuda"])
    # the early session runs the partitioning level (Level 1), where the providers' kinds switch nothing
    # off: the guess is checked and, right or wrong, the answer is the same
    assert seen["begun"] and seen["used"]
    assert to_json(wrong) == to_json(right)


def test_bytes_the_early_reader_does_not_follow_take_the_long_way(tmp_path):
    from partsim.errors import ModelError

    bad = tmp_path / "escape.onnx"
    import onnx
    from onnx import TensorProto, helper

    t = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4], data_location=TensorProto.EXTERNAL)
    e = t.external_data.add()
    e.key, e.value = "location", "../outside.bin"
    g = helper.make_graph([helper.make_node("Relu", ["w"], ["y"])], "g", [],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])], [t])
    onnx.save(helper.make_model(g), bad)
    assert ort_pipeline.begin_early(bad, "all", [("CPUExecutionProvider", False)]) is None
    with pytest.raises(ModelError, match="escapes the model's folder"):
        predict(str(bad), ["cpu"])
    truncated = tmp_path / "cut.onnx"
    truncated.write_bytes(bad.read_bytes()[:20])
    assert ort_pipeline.begin_early(truncated, "all", [("CPUExecutionProvider", False)]) is None
    with pytest.raises(ModelError):
        predict(str(truncated), ["cpu"])
