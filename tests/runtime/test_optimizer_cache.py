"""ORT's optimizer results kept by what ORT was given (partsim/runtime/optimizer_cache.py).

A warm prediction equals the cold one byte for byte and starts no ORT process (in process, not even an idle
child); any change to what ORT would be given (model bytes, level, providers' disabled transformers) is another entry.
"""

import json

import pytest

from tests.conftest import shared_path
from tests.modelbuild import const, model, save, vi
from onnx import helper as h

from partsim.api import predict
from partsim.report.output import to_json


def _conv_model(tmp_path, doc=""):
    nodes = [h.make_node("Conv", ["x", "W"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             h.make_node("Identity", ["c"], ["i"], name="ident"),
             h.make_node("Relu", ["i"], ["y"], name="relu")]
    m = model(nodes, [vi("x", [1, 4, 8, 8])], [vi("y", None)], [const("W", [4, 4, 3, 3])], opset=17)
    m.doc_string = doc
    return save(m, tmp_path / f"m{len(doc)}.onnx")


class _Counter:
    """The ORT sessions requested: each request handed to a child (one child may make several)."""

    def __init__(self, monkeypatch):
        from partsim.runtime.process import OrtProcess

        self.calls = 0
        real_submit = OrtProcess.submit

        def submit(me, request, *a, **k):
            self.calls += 1
            return real_submit(me, request, *a, **k)

        monkeypatch.setattr(OrtProcess, "submit", submit)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("PARTSIM_CACHE_DIR", str(d))
    monkeypatch.delenv("PARTSIM_NO_CACHE", raising=False)
    return d


def test_warm_prediction_equals_cold_and_runs_no_ort(tmp_path, cache, monkeypatch):
    path = _conv_model(tmp_path)
    counter = _Counter(monkeypatch)
    cold, _ = predict(str(path), ["cpu"])
    assert counter.calls == 2  # one session per view: the graph ORT partitions (Level 1), the final graph
    names = [n["name"] for n in cold["nodes"]]
    assert "ident" not in names  # Level 1, before partitioning: the Identity is gone
    relu = next(n for n in cold["nodes"] if n["name"] == "relu")  # Level 2, after: the Relu is fused
    assert relu["endsAs"] and relu["endsAs"] != ["relu"]
    warm, _ = predict(str(path), ["cpu"])
    assert counter.calls == 2  # answered from the cache
    assert to_json(warm) == to_json(cold)
    assert len(list((cache / "optimized").iterdir())) == 2


def test_a_warm_prediction_starts_no_ort_process(tmp_path, cache, monkeypatch):
    """In process, the optimizer child is started by the first request, after the cache was asked: a warm run
    starts none; a cold one starts one, which makes both views' sessions."""
    from partsim.runtime.process import OrtProcess

    started, real_init = [], OrtProcess.__init__
    monkeypatch.setattr(OrtProcess, "__init__", lambda self, *a, **k: started.append(a) or real_init(self, *a, **k))
    counter = _Counter(monkeypatch)
    path = _conv_model(tmp_path)
    cold, _ = predict(str(path), ["cpu"])
    assert len(started) == 1 and counter.calls == 2
    started.clear()
    warm, _ = predict(str(path), ["cpu"])
    assert started == [] and to_json(warm) == to_json(cold)


def test_a_warm_preparation_starts_no_ort_process(tmp_path, cache, monkeypatch):
    """prepare_graph (what check, blame and what-if build on: runtime.pipeline.prepare) asks the cache before it
    starts ORT's child too: a warm preparation starts none, a cold one one."""
    from partsim.api import prepare_graph
    from partsim.runtime.process import OrtProcess

    started, real_init = [], OrtProcess.__init__
    monkeypatch.setattr(OrtProcess, "__init__", lambda self, *a, **k: started.append(a) or real_init(self, *a, **k))
    path = _conv_model(tmp_path)
    cold = prepare_graph(str(path), "all")
    assert len(started) == 1
    started.clear()
    warm = prepare_graph(str(path), "all")
    assert started == []
    assert [(n.name, n.op_type) for n in warm.model.nodes] == [(n.name, n.op_type) for n in cold.model.nodes]


def test_a_changed_request_is_another_entry(tmp_path, cache, monkeypatch):
    path = _conv_model(tmp_path)
    counter = _Counter(monkeypatch)
    predict(str(path), ["cpu"])  # two entries: the basic graph (partitioned) and the final one
    predict(str(_conv_model(tmp_path, doc="changed")), ["cpu"])  # other bytes: two more
    predict(str(path), ["cpu"], level="extended")  # other level: its final graph (its partitioned one is cached)
    assert counter.calls == 5
    assert len(list((cache / "optimized").iterdir())) == 5


def test_no_cache_switch(tmp_path, cache, monkeypatch):
    monkeypatch.setenv("PARTSIM_NO_CACHE", "1")
    path = _conv_model(tmp_path)
    counter = _Counter(monkeypatch)
    predict(str(path), ["cpu"])
    predict(str(path), ["cpu"])
    assert counter.calls == 4  # two views each time, none remembered
    assert not (cache / "optimized").exists()


def test_warm_corpus_prediction_is_byte_identical(cache):
    path = shared_path("corpus", "graph_only", "mobilenet_v3_small.ts.onnx")
    cold, _ = predict(str(path), ["cuda"])
    warm, _ = predict(str(path), ["cuda"])
    assert json.dumps(cold, sort_keys=True) == json.dumps(warm, sort_keys=True)
    assert cold["status"] == "ok"


def test_cli_no_cache_flag_writes_nothing(tmp_path, cache, run_cli):
    path = _conv_model(tmp_path)
    code, out, err = run_cli("--no-cache", "simulate", path, "-p", "cpu", "-f", "json")
    assert code == 0, err
    assert not cache.exists()
    code, out2, _ = run_cli("simulate", path, "-p", "cpu", "-f", "json")
    assert code == 0 and out2 == out and (cache / "optimized").is_dir()


def test_weights_sent_to_the_null_device_come_back_as_a_file_of_the_right_size(tmp_path, monkeypatch):
    """ORT's optimizer writes the saved weights to the null device (nobody reads them) and deletes the
    empty file; partsim makes a sparse file as long as the graph's offsets say, which a second
    session (the CPU pass) can open, and the graph equals the one saved with real weights."""
    import onnx
    import onnxruntime as ort

    from partsim.runtime.ort_pipeline import _optimize

    monkeypatch.setenv("PARTSIM_NO_CACHE", "1")
    nodes = [h.make_node("MatMul", ["x", "W"], ["m"], name="mm"), h.make_node("Relu", ["m"], ["y"], name="relu")]
    src = save(model(nodes, [vi("x", [2, 64])], [vi("y", None)], [const("W", [64, 64])], opset=17),
               tmp_path / "src.onnx")
    sink, real = tmp_path / "sink", tmp_path / "real"
    sink.mkdir()
    real.mkdir()
    assert _optimize(src, sink / "optimized.onnx", "ORT_ENABLE_ALL") is None
    weights = sink / "optimized.weights.pb"
    assert weights.is_file() and not weights.is_symlink()
    graph = onnx.load(str(sink / "optimized.onnx"), load_external_data=False)
    ends = [int(dict((e.key, e.value) for e in t.external_data)["offset"])
            + int(dict((e.key, e.value) for e in t.external_data)["length"])
            for t in graph.graph.initializer if t.external_data]
    assert ends and weights.stat().st_size == max(ends) == 64 * 64 * 4
    so = ort.SessionOptions()
    so.optimized_model_filepath = str(real / "optimized.onnx")
    so.add_session_config_entry("session.optimized_model_external_initializers_file_name", "optimized.weights.pb")
    ort.InferenceSession(str(src), so, providers=["CPUExecutionProvider"])
    assert (real / "optimized.onnx").read_bytes() == (sink / "optimized.onnx").read_bytes()
    assert (real / "optimized.weights.pb").stat().st_size == weights.stat().st_size
    ort.InferenceSession(str(sink / "optimized.onnx"), providers=["CPUExecutionProvider"])  # opens
