"""Write a model zoo for benchmarks/zoo_agreement.py: torchvision and small Hugging Face models
(random weights, nothing downloaded but the packages), exported with torch.onnx (TorchScript and
torch.export), plus ORT-quantized copies (QDQ 8-bit, QOperator, dynamic, and QNN's 8- and 16-bit
QDQ configs).

    python3 -m venv /tmp/venv-torch
    /tmp/venv-torch/bin/pip install torch torchvision --index-url https://download.pytorch.org/whl/cpu
    /tmp/venv-torch/bin/pip install transformers onnx==1.23.2 onnxscript
    /tmp/venv-torch/bin/python benchmarks/export_zoo.py OUT          # float models
    .venv/bin/python benchmarks/export_zoo.py OUT --quantize         # + quantized copies (ORT's tools)

partsim itself needs none of this; the zoo is a check on models the shipped corpus does not have.
"""

import argparse
import sys
import warnings
from pathlib import Path

VISION = [("", "shufflenet_v2_x0_5", (1, 3, 224, 224)), ("", "squeezenet1_1", (1, 3, 224, 224)),
          ("", "mnasnet0_5", (1, 3, 224, 224)), ("", "regnet_y_400mf", (1, 3, 224, 224)),
          ("", "mobilenet_v3_large", (1, 3, 224, 224)), ("", "efficientnet_b1", (1, 3, 224, 224)),
          ("", "resnext50_32x4d", (1, 3, 224, 224)), ("", "maxvit_t", (1, 3, 224, 224)),
          ("", "swin_v2_t", (1, 3, 256, 256)), ("segmentation", "lraspp_mobilenet_v3_large", (1, 3, 224, 224)),
          ("segmentation", "deeplabv3_mobilenet_v3_large", (1, 3, 224, 224)), ("video", "r3d_18", (1, 3, 8, 112, 112))]
DYNAMO = ["mobilenet_v3_large", "shufflenet_v2_x0_5", "regnet_y_400mf"]
QUANTIZE = ["squeezenet1_1", "shufflenet_v2_x0_5", "mobilenet_v3_large", "regnet_y_400mf"]


def export_float(out):
    import torch
    import torchvision

    warnings.filterwarnings("ignore")
    torch.manual_seed(0)
    for sub, name, shape in VISION:
        mod = getattr(torchvision.models, sub) if sub else torchvision.models
        kw = {"weights": None, **({"weights_backbone": None} if sub == "segmentation" else {})}
        m = getattr(mod, name)(**kw).eval()
        torch.onnx.export(m, torch.randn(*shape), str(out / f"{name}.ts.onnx"), opset_version=17, dynamo=False)
        if name in DYNAMO:
            torch.onnx.export(m, (torch.randn(*shape),), str(out / f"{name}.dynamo.onnx"), dynamo=True)
    import transformers as T

    text = {"distilbert": (T.DistilBertModel, T.DistilBertConfig(dim=128, hidden_dim=256, n_layers=2, n_heads=4,
                                                                  vocab_size=1000)),
            "albert": (T.AlbertModel, T.AlbertConfig(hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                                                     num_attention_heads=4, vocab_size=1000, embedding_size=64)),
            "t5enc": (T.T5EncoderModel, T.T5Config(d_model=128, d_ff=256, num_layers=2, num_heads=4, vocab_size=1000,
                                                   d_kv=32))}
    image = {"vit": (T.ViTModel, T.ViTConfig(hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                                             num_attention_heads=4, image_size=64, patch_size=16)),
             "deit": (T.DeiTModel, T.DeiTConfig(hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                                                num_attention_heads=4, image_size=64, patch_size=16))}
    for name, (cls, cfg) in {**text, **image}.items():
        m = cls(cfg).eval()
        args = (torch.randn(1, 3, 64, 64),) if name in image else (torch.randint(0, 1000, (1, 16)),)
        torch.onnx.export(m, args, str(out / f"{name}.ts.onnx"), opset_version=17, dynamo=False)
        if name != "t5enc":  # torch.export cannot decompose T5's relative attention here
            torch.onnx.export(m, args, str(out / f"{name}.dynamo.onnx"), opset_version=18, dynamo=True)


def quantize(out):
    import numpy as np
    import onnx
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, quantize, quantize_dynamic, quantize_static
    from onnxruntime.quantization.execution_providers.qnn import get_qnn_qdq_config
    from onnxruntime.quantization.shape_inference import quant_pre_process

    class Reader(CalibrationDataReader):
        def __init__(self, name, shape):
            rng = np.random.default_rng(0)
            self.it = iter([{name: rng.random(shape, dtype=np.float32)} for _ in range(2)])

        def get_next(self):
            return next(self.it, None)

    from onnxruntime.quantization import QuantType

    qdir = out / "quantized"
    qdir.mkdir(exist_ok=True)
    for name in QUANTIZE:
        src = out / f"{name}.ts.onnx"
        inp = onnx.load(str(src), load_external_data=False).graph.input[0]
        shape = [d.dim_value for d in inp.type.tensor_type.shape.dim]
        pre = qdir / f"{name}.pre.onnx"
        quant_pre_process(str(src), str(pre), skip_symbolic_shape=True)
        quantize_static(str(pre), str(qdir / f"{name}.qdq.onnx"), Reader(inp.name, shape), quant_format=QuantFormat.QDQ)
        quantize_static(str(pre), str(qdir / f"{name}.qop.onnx"), Reader(inp.name, shape),
                        quant_format=QuantFormat.QOperator)
        quantize_dynamic(str(pre), str(qdir / f"{name}.dyn.onnx"))
        quantize(str(pre), str(qdir / f"{name}.qnn8.onnx"), get_qnn_qdq_config(str(pre), Reader(inp.name, shape)))
        quantize(str(pre), str(qdir / f"{name}.qnn16.onnx"),
                 get_qnn_qdq_config(str(pre), Reader(inp.name, shape), activation_type=QuantType.QUInt16,
                                    weight_type=QuantType.QUInt8))
        pre.unlink()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--quantize", action="store_true", help="write the quantized copies (needs onnxruntime)")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.quantize:
        quantize(out)
    else:
        export_float(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
