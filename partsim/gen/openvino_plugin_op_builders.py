"""Builders of the one-op probe models of the OpenVINO plugin for ops the WebGPU/QNN builders do not make (each
``builder(dtype, opset)`` gives the model probing ``op`` in ``dtype``).  Used by :mod:`partsim.gen.openvino_plugin`.
"""

from .qnn_probes import _tp

__all__ = ["OWN_BUILDERS", "BF16", "U64"]

BF16 = "bfloat16"
U64 = "uint64"


def _attention(dtype, opset):
    """ONNX Attention (opset 23+) on 4-D Q, K, V."""
    from onnx import TensorProto
    from onnx import helper as h

    tp = TensorProto.BFLOAT16 if dtype == BF16 else _tp(dtype)
    qkv = [h.make_tensor_value_info(n, tp, [2, 3, 4, 8]) for n in ("q", "k", "v")]
    node = h.make_node("Attention", ["q", "k", "v"], ["y"], name="n0_Attention")
    m = h.make_model(h.make_graph([node], "probe_Attention", qkv, [h.make_tensor_value_info("y", tp, [2, 3, 4, 8])]),
                     opset_imports=[h.make_opsetid("", opset)])
    return m


def _unary(op, shape=(2, 3, 4, 5)):
    """``op`` on one input of ``shape``, its output of the same dtype and no shape given."""
    def build(dtype, opset):
        from onnx import TensorProto
        from onnx import helper as h

        tp = {BF16: TensorProto.BFLOAT16, U64: TensorProto.UINT64}.get(dtype) or _tp(dtype)
        node = h.make_node(op, ["x"], ["y"], name=f"n0_{op}")
        g = h.make_graph([node], f"probe_{op}", [h.make_tensor_value_info("x", tp, list(shape))],
                         [h.make_tensor_value_info("y", tp, None)])
        return h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    return build


def _qlinear(op):
    def build(dtype, opset):
        from .qnn_probes import build_probe

        return build_probe(op, dtype, 4)
    return build


def _one_node(op, inputs, out_dtype=None, consts=(), **attrs):
    """``op`` reading graph inputs ``inputs`` ``[(name, dtype or None for the probed one, shape)]`` and constant
    initializers ``consts`` ``[(name, numpy array)]``, one output of ``out_dtype`` (default: the probed dtype)."""
    def build(dtype, opset):
        from onnx import TensorProto
        from onnx import helper as h
        from onnx import numpy_helper

        def tp(d):
            return {BF16: TensorProto.BFLOAT16, U64: TensorProto.UINT64}.get(d) or _tp(d)
        ins = [h.make_tensor_value_info(n, tp(d or dtype), list(shape)) for n, d, shape in inputs]
        inits = [numpy_helper.from_array(a, n) for n, a in consts]
        names = [n for n, _, _ in inputs] + [n for n, _ in consts]
        node = h.make_node(op, names, ["y"], name=f"n0_{op}", **attrs)
        g = h.make_graph([node], f"probe_{op}", ins, [h.make_tensor_value_info("y", tp(out_dtype or dtype), None)],
                         inits)
        return h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    return build


def _np_consts(**arrays):
    import numpy as np

    return [(k, np.asarray(v[0], dtype=v[1])) for k, v in arrays.items()]


#: ops with a builder of their own: op -> (dtypes, builder(dtype, opset))
OWN_BUILDERS = {
    "Attention": (("float", "float16", BF16), _attention),
    "DFT": (("float", "float16", "double", BF16), _unary("DFT", (1, 16, 1))),
    "BitwiseNot": (("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", U64), _unary("BitwiseNot")),
    "RandomUniformLike": (("float", "float16", "double", BF16), _unary("RandomUniformLike")),
    "QLinearConv": (("uint8", "int8"), _qlinear("QLinearConv")),
    "QLinearMatMul": (("uint8", "int8"), _qlinear("QLinearMatMul")),
    "NonZero": (("float", "int32", "int64", "bool"), _one_node("NonZero", [("x", None, (2, 3))], "int64")),
    "Unique": (("float", "int64"), _one_node("Unique", [("x", None, (6,))])),
    "Det": (("float", "float16", "double"), _one_node("Det", [("x", None, (2, 3, 3))])),
    "CumProd": (("float", "int32", "int64"), _one_node("CumProd", [("x", None, (2, 3))],
                                                       consts=_np_consts(axis=(0, "int64")))),
    "HannWindow": (("int64",), _one_node("HannWindow", [("x", None, ())], "float")),
    "HammingWindow": (("int64",), _one_node("HammingWindow", [("x", None, ())], "float")),
    "BlackmanWindow": (("int64",), _one_node("BlackmanWindow", [("x", None, ())], "float")),
    "Multinomial": (("float",), _one_node("Multinomial", [("x", None, (2, 5))], "int32")),
    "Col2Im": (("float",), _one_node("Col2Im", [("x", None, (1, 4, 25))], consts=_np_consts(
        image_shape=([6, 6], "int64"), block_shape=([2, 2], "int64")))),
    "AffineGrid": (("float",), _one_node("AffineGrid", [("x", None, (2, 2, 3))],
                                         consts=_np_consts(size=([2, 3, 4, 5], "int64")))),
    "STFT": (("float",), _one_node("STFT", [("x", None, (1, 64, 1))], consts=_np_consts(
        step=(8, "int64"), ))),
}
