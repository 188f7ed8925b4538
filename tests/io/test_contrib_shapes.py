"""Shapes past ORT's contrib ops (partsim/io/contrib_shapes.py), checked against ORT running the model:
every contrib op's output (and every tensor after one) is made a graph output of a copy, a real CPU
session runs it on random inputs, and the shapes it returns are the shapes partsim inferred."""

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from tests.conftest import shared_path
from partsim.io.load import load_model

_NP = {1: np.float32, 2: np.uint8, 3: np.int8, 6: np.int32, 7: np.int64, 9: np.bool_, 10: np.float16}


def _run_shapes(path, tensors):
    m = onnx.load(str(path))
    have = {o.name for o in m.graph.output}
    m.graph.output.extend(onnx.ValueInfoProto(name=t) for t in tensors if t not in have)
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    feeds = {}
    for i in sess.get_inputs():
        vi = next(v for v in m.graph.input if v.name == i.name)
        t = vi.type.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") else 1 for d in t.shape.dim]
        dtype = _NP[t.elem_type]
        if np.issubdtype(dtype, np.integer):
            feeds[i.name] = rng.integers(0, 4, size=dims).astype(dtype)
        else:
            feeds[i.name] = rng.random(dims).astype(dtype)
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, (np.asarray(v).shape for v in sess.run(names, feeds))))


@pytest.mark.parametrize("name", ["q_tiny_transformer.dynamo.qop", "q_tiny_resnet.ts.qop"])
def test_contrib_output_shapes_are_what_ort_computes(name):
    path = shared_path(f"corpus/full/{name}.onnx")
    m = load_model(str(path))
    contrib = [n.index for n in m.nodes if n.domain == "com.microsoft"]
    assert contrib
    after = [t for n in m.nodes if n.index > min(contrib) and not n.scope for t in n.outputs if t]
    shapes = _run_shapes(path, after)
    static = symbolic = 0
    for t in after:
        mine = m.value(t).shape
        assert mine is not None and len(mine) == len(shapes[t]), (t, mine, shapes[t])
        for a, b in zip(mine, shapes[t]):
            if isinstance(a, int):
                assert a == b, (t, mine, shapes[t])
                static += 1
            else:
                symbolic += 1  # a symbolic batch dimension, fed as 1 here
    assert static > 0
