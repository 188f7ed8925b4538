"""What a receipt says of tensors without holding user content: digests, shapes, dtypes, heads, quantization.
"""

import hashlib


HEAD = 8


def digest_array(a):
    import numpy as np

    from .inputs import tensor_header

    a = np.ascontiguousarray(np.asarray(a))
    a = a.astype(a.dtype.newbyteorder("<"), copy=False)
    return hashlib.sha256(tensor_header(a) + a.tobytes(order="C")).hexdigest()


def head_values(a):
    import numpy as np

    flat = np.asarray(a).ravel()[:HEAD]
    return [float(x) if np.isfinite(x) else repr(float(x)) for x in flat.astype(np.float64)] \
        if flat.dtype.kind in "fiub" else []


def describe_arrays(arrays, quant=None):
    quant = quant or {}
    out = []
    for name, a in arrays.items():
        item = {"name": name, "shape": list(map(int, a.shape)), "dtype": str(a.dtype), "sha256": digest_array(a)}
        item.update(quant.get(name, {}))
        out.append(item)
    return out


def quant_params(proto):
    """Scalar scale / zeroPoint of graph inputs fed to DequantizeLinear and outputs of QuantizeLinear."""
    from onnx import numpy_helper

    inits = {i.name: i for i in proto.graph.initializer}
    consts = {n.output[0]: n for n in proto.graph.node if n.op_type == "Constant" and n.output}

    def scalar(name):
        t = inits.get(name)
        if t is None and name in consts:
            attrs = [a for a in consts[name].attribute if a.name == "value"]
            t = attrs[0].t if attrs else None
        if t is None:
            return None
        a = numpy_helper.to_array(t)
        return a.item() if a.size == 1 else None

    out = {}
    ins = {i.name for i in proto.graph.input}
    outs = {o.name for o in proto.graph.output}
    for n in proto.graph.node:
        if n.op_type not in ("QuantizeLinear", "DequantizeLinear") or len(n.input) < 2:
            continue
        tensor = n.input[0] if n.op_type == "DequantizeLinear" else n.output[0]
        if tensor not in (ins if n.op_type == "DequantizeLinear" else outs):
            continue
        scale = scalar(n.input[1])
        zp = scalar(n.input[2]) if len(n.input) > 2 and n.input[2] else 0
        if scale is not None and zp is not None:
            out[tensor] = {"scale": float(scale), "zeroPoint": int(zp)}
    return out


def dynamic_dims(specs):
    return sorted({str(d) for _, _, shape in specs for d in shape if not (isinstance(d, int) and d >= 0)})
