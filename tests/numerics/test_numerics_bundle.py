"""bundle-id: modelBundleId and inputDigest recomputed independently with hashlib."""

import hashlib
import json

import numpy as np
import onnx
from onnx import TensorProto, helper

from partsim.cli import main
from partsim.numerics.inputs import input_digest, seeded_inputs


def _model(path, props=None):
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    for k, v in (props or {}).items():
        m.metadata_props.add(key=k, value=v)
    onnx.save(m, str(path))
    return path


def _sha(b):
    return hashlib.sha256(b).hexdigest()


def _bundle(tmp_path, *extra):
    out = tmp_path / "b.json"
    assert main(["bundle-id", *map(str, extra), "-f", "json", "-o", str(out)]) == 0
    return json.loads(out.read_text())


def test_bundle_id_recomputed(tmp_path):
    m = _model(tmp_path / "m.onnx", {"mean": "0.5", "labels_url": "x"})
    labels = tmp_path / "labels.txt"
    labels.write_bytes("cat\ndog\n".encode())
    meta = tmp_path / "meta.json"
    meta.write_bytes(b'{"norm": [0.5]}')
    res = _bundle(tmp_path, m, "--labels", labels, "--metadata", meta)
    meta_doc = json.dumps({"file": _sha(meta.read_bytes()), "props": {"labels_url": "x", "mean": "0.5"}},
                          sort_keys=True, separators=(",", ":")).encode()
    digests = [_sha(m.read_bytes()), _sha(meta_doc), _sha(labels.read_bytes()), _sha(b""), _sha(b""), _sha(b"")]
    names = ["model", "metadata", "labels", "tokenizer", "preprocessing", "postprocessing"]
    text = "".join(f"{n}:{d}\n" for n, d in zip(names, digests)).encode()
    assert res["modelBundleId"] == _sha(text)
    assert [res["parts"][n]["sha256"] for n in names] == digests


def test_every_part_changes_the_id(tmp_path):
    m = _model(tmp_path / "m.onnx")
    f = tmp_path / "f.txt"
    f.write_text("a")
    base = _bundle(tmp_path, m)["modelBundleId"]
    assert _bundle(tmp_path, m)["modelBundleId"] == base  # stable
    seen = {base}
    for part in ("metadata", "labels", "tokenizer", "preprocessing", "postprocessing"):
        seen.add(_bundle(tmp_path, m, f"--{part}", f)["modelBundleId"])
    assert len(seen) == 6  # same bytes in a different slot give a different id
    seen.add(_bundle(tmp_path, _model(tmp_path / "m2.onnx", {"k": "v"}))["modelBundleId"])
    assert len(seen) == 7


def test_input_digest_recomputed(tmp_path):
    arrays = {"b": np.arange(6, dtype=np.int64).reshape(2, 3), "a": np.ones((1, 2), dtype=np.float32)}
    npz = tmp_path / "in.npz"
    np.savez(npz, **arrays)
    res = _bundle(tmp_path, _model(tmp_path / "m.onnx"), "--inputs", npz)
    h = hashlib.sha256()
    h.update(b"float32:1,2\n" + arrays["a"].tobytes())
    h.update(b"int64:2,3\n" + arrays["b"].tobytes())
    assert res["inputDigest"] == h.hexdigest()
    # a big-endian copy holds the same numbers: same digest
    assert input_digest({"a": arrays["a"].astype(">f4"), "b": arrays["b"]}) == h.hexdigest()


def test_child_digest_matches_library(tmp_path):
    """The ORT child (which cannot import partsim) computes the same inputDigest."""
    from partsim.runtime.child_outputs import _digest

    feeds = seeded_inputs([("x", 1, [2, 3]), ("ids", 7, [1, 4]), ("m", 9, [3])], seed=3)
    assert _digest(feeds) == input_digest(feeds)


def test_pickled_npz_refused(tmp_path):
    npz = tmp_path / "bad.npz"
    np.savez(npz, x=np.array([{"a": 1}], dtype=object))
    assert main(["bundle-id", str(_model(tmp_path / "m.onnx")), "--inputs", str(npz)]) == 2
    assert main(["bundle-id", str(tmp_path / "missing.onnx")]) == 2
    assert main(["bundle-id", str(_model(tmp_path / "m.onnx")), "--labels", str(tmp_path / "nope")]) == 2
