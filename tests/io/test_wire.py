"""partsim.io.wire reads external-data sizes off protobuf bytes: checked against onnx's own parse
(partsim.io.materialize.external_tensors) on the corpus and on built models with external tensors
in every place ONNX allows them."""

from pathlib import Path

import onnx
import pytest
from hypothesis import given, settings, strategies as st
from onnx import TensorProto, helper

from partsim.io.materialize import external_tensors
from partsim.io.wire import external_data_sizes

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus"


def _by_onnx(data, tmp_path):
    """The same answer from onnx's parse: {location: largest offset + size}."""
    path = tmp_path / "m.onnx"
    path.write_bytes(data)
    m = onnx.ModelProto()
    m.ParseFromString(data)
    need = {}
    for e in external_tensors(m, path):
        need[e["location"]] = max(need.get(e["location"], 0), e["offset"] + e["nbytes"])
    return need


def _external(name, dtype, dims, location, offset=None, length=None):
    t = TensorProto(name=name, data_type=dtype, dims=dims, data_location=TensorProto.EXTERNAL)
    for k, v in (("location", location), ("offset", offset), ("length", length)):
        if v is not None:
            e = t.external_data.add()
            e.key, e.value = k, str(v)
    return t


def _model(initializers=(), constants=(), body_initializers=(), sparse=None):
    """A model with external tensors as initializers, Constant values, initializers of an If
    branch and a sparse initializer."""
    nodes, outs = [], []
    for k, t in enumerate(constants):
        nodes.append(helper.make_node("Constant", [], [f"c{k}"], value=t))
    if body_initializers:
        branch = helper.make_graph([helper.make_node("Identity", [body_initializers[0].name], ["b"])], "then", [],
                                   [helper.make_tensor_value_info("b", TensorProto.FLOAT, None)],
                                   list(body_initializers))
        nodes.append(helper.make_node("If", ["cond"], ["y"], then_branch=branch, else_branch=branch))
        outs.append(helper.make_tensor_value_info("y", TensorProto.FLOAT, None))
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("cond", TensorProto.BOOL, [])],
                          outs or [helper.make_tensor_value_info("cond", TensorProto.BOOL, [])], list(initializers))
    if sparse is not None:
        g.sparse_initializer.append(sparse)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.skipif(not CORPUS.is_dir(), reason="../shared/corpus is not beside this checkout")
def test_corpus_models_read_as_onnx_reads_them(tmp_path):
    files = sorted(CORPUS.glob("*/*.onnx"))
    assert files
    with_external = 0
    for f in files:
        data = f.read_bytes()
        got = external_data_sizes(data)
        assert got == _by_onnx(data, tmp_path), f.name
        with_external += bool(got)
    assert with_external >= 10  # the graph-only models keep their weights as external data


def test_every_place_an_external_tensor_can_be(tmp_path):
    sparse = onnx.SparseTensorProto(values=_external("sv", TensorProto.FLOAT, [3], "s.bin", 0),
                                    indices=_external("si", TensorProto.INT64, [3], "s.bin", 64), dims=[10])
    m = _model(initializers=[_external("w", TensorProto.FLOAT, [4, 8], "w.bin", 4096, 128),
                             _external("w2", TensorProto.FLOAT16, [16], "w.bin", 0)],
               constants=[_external("k", TensorProto.INT4, [5], "k.bin", 10)],
               body_initializers=[_external("bw", TensorProto.DOUBLE, [2, 2], "sub/b.bin", 8)],
               sparse=sparse)
    data = m.SerializeToString()
    assert external_data_sizes(data) == {"w.bin": 4224, "k.bin": 13, "sub/b.bin": 40, "s.bin": 88}
    assert external_data_sizes(data) == _by_onnx(data, tmp_path)


def test_no_external_data_and_not_a_model():
    plain = _model(initializers=[helper.make_tensor("w", TensorProto.FLOAT, [2], [1.0, 2.0])])
    assert external_data_sizes(plain.SerializeToString()) == {}
    assert external_data_sizes(b"") is None
    assert external_data_sizes(b"\x0a\xff\xff\xff") is None  # a length running past the end
    # a model whose external tensor is not followed (a negative dimension) is left to the long way
    bad = _model(initializers=[_external("w", TensorProto.FLOAT, [-1, 4], "w.bin")])
    assert external_data_sizes(bad.SerializeToString()) is None


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([TensorProto.FLOAT, TensorProto.INT8, TensorProto.UINT4,
                                           TensorProto.INT64, TensorProto.BFLOAT16]),
                          st.lists(st.integers(0, 9), max_size=3),
                          st.sampled_from(["a.bin", "b.bin", "d/c.bin"]),
                          st.integers(0, 10**6), st.booleans()), max_size=6),
       st.integers(0, 2))
def test_random_models_agree_with_onnx(tmp_path_factory, tensors, where):
    made = [_external(f"t{k}", dt, dims, loc, off) for k, (dt, dims, loc, off, _) in enumerate(tensors)]
    if where == 0:
        m = _model(initializers=made)
    elif where == 1:
        m = _model(constants=made)
    else:
        m = _model(body_initializers=made or [helper.make_tensor("z", TensorProto.FLOAT, [1], [0.0])])
    data = m.SerializeToString()
    assert external_data_sizes(data) == _by_onnx(data, tmp_path_factory.mktemp("w"))


@settings(max_examples=80, deadline=None)
@given(st.binary(max_size=300), st.integers(0, 400))
def test_damaged_bytes_never_raise(junk, cut):
    m = _model(initializers=[_external("w", TensorProto.FLOAT, [4], "w.bin", 0)])
    data = m.SerializeToString()
    for damaged in (data[:cut], junk, data[:cut] + junk):
        got = external_data_sizes(damaged)
        assert got is None or isinstance(got, dict)
