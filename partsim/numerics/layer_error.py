"""Per-layer quantization error between an FP32 model and its quantized version (docs/contract.md §6, §6a).

Boundaries are the float tensors feeding linear operators.  In the FP32 model:
every ``MatMul``/``Gemm``/``Conv`` (and ``FusedMatMul``/``ConvTranspose``) data
input that is not constant (not computable from initializers alone), in node
order (ONNX graphs are topologically sorted).  In the quantized model the same
operators and their integer / QLinear forms (``MatMulInteger``, ``ConvInteger``,
``QLinearMatMul``, ``QLinearConv``, ``QGemm``, …); for each activation input we
walk back to the float tensor on the input side:

- QDQ (``… → QuantizeLinear → DequantizeLinear → op``): the ``DequantizeLinear``
  output, the float tensor the operator reads.  Not the tensor before
  ``QuantizeLinear``: the quantizer folds a ``Relu`` into the QuantizeLinear range,
  and the tensor before it is then the pre-Relu value (measured on
  ``q_tiny_resnet.ts.qdq``: relError 1.65 against the FP32 post-Relu tensor);
- ``QuantizeLinear`` / ``DynamicQuantizeLinear`` feeding the operator directly
  (dynamic quantization): its float input, so the first boundary of a
  dynamically quantized model is exact;
- QOperator forms (``QLinearConv``, ``QLinearMatMul``, ``QGemm``): the integer
  input, dequantized with the operator's own input scale and zero point, i.e.
  the real value that operator computes with.

The two boundary lists are matched structurally, position by position in
topological order — sorted by (linear depth, node order, slot), where linear depth
counts the linear operators upstream, so parallel branches line up even when the
files list them differently (both must have the same count, and the operator family —
conv-like or matmul-like — must agree at each position); names are not used.
Both models run in this process with onnxruntime at ``ORT_DISABLE_ALL``, one
intra-op thread, on the same seeded (or ``--inputs``) feeds, with the boundary
tensors added as graph outputs.

Per boundary (float64): ``relError = ‖q − f‖₂ / ‖f‖₂``; ``sqnrDb = 10·log10(‖f‖² /
‖q − f‖²)``; ``growthVsFirst`` = relError / the first non-zero relError;
``stepRatio`` = relError / the previous non-zero relError; ``jump`` = stepRatio ≥ 3.
Undefined values are ``null``, never inf or NaN.
"""

import math
import tempfile
from pathlib import Path

from ..errors import ModelError, UsageError

__all__ = ["LINEAR_FP32", "find_fp32_boundaries", "find_quant_boundaries", "layer_error", "boundary_metrics",
           "JUMP_RATIO"]

JUMP_RATIO = 3.0
_CONV = "conv"
_MM = "matmul"
# op -> (family, activation slots, {slot: (scale slot, zero-point slot)} for integer inputs)
LINEAR_FP32: dict[str, tuple] = {"MatMul": (_MM, (0, 1), {}), "Gemm": (_MM, (0, 1), {}), "FusedMatMul": (_MM, (0, 1), {}),
               "Conv": (_CONV, (0,), {}), "ConvTranspose": (_CONV, (0,), {})}
LINEAR_QUANT = dict(LINEAR_FP32)
LINEAR_QUANT.update({
    "MatMulInteger": (_MM, (0, 1), {}), "ConvInteger": (_CONV, (0,), {}),
    "QLinearMatMul": (_MM, (0, 3), {0: (1, 2), 3: (4, 5)}), "QLinearConv": (_CONV, (0,), {0: (1, 2)}),
    "QGemm": (_MM, (0, 3), {0: (1, 2), 3: (4, 5)}), "DynamicQuantizeMatMul": (_MM, (0,), {}),
    "MatMulIntegerToFloat": (_MM, (0, 1), {}), "QLinearConvTranspose": (_CONV, (0,), {0: (1, 2)}),
})


def _constant_tensors(graph):
    """Tensors computable from initializers and Constant nodes alone."""
    const = {i.name for i in graph.initializer} | {""}
    for n in graph.node:
        if all(i in const for i in n.input):
            const.update(n.output)
    return const


def _linear_depth(graph, table):
    """Per node index: the largest number of linear operators on any path from the graph inputs
    to that node's inputs (Q/DQ and other ops add nothing)."""
    depth_of = {}
    out = []
    for n in graph.node:
        d = max((depth_of.get(i, 0) for i in n.input if i), default=0)
        out.append(d)
        linear = n.op_type in table and n.domain in ("", "ai.onnx", "com.microsoft")
        for o in n.output:
            depth_of[o] = d + (1 if linear else 0)
    return out


def find_fp32_boundaries(proto, table=None):
    """``[{tensor, consumer, consumerOp, slot, family, depth}]`` in topological order.

    The order is (linear depth, node order, input slot): linear depth counts the
    linear operators upstream, so parallel branches (a ResNet's downsample Conv and
    its first Conv) sort the same way in the FP32 and the quantized graph even
    when the two files list those nodes in different orders.
    """
    table = table or LINEAR_FP32
    g = proto.graph
    const = _constant_tensors(g)
    depth = _linear_depth(g, table)
    out = []
    for k, n in enumerate(g.node):
        spec = table.get(n.op_type)
        if spec is None or n.domain not in ("", "ai.onnx", "com.microsoft"):
            continue
        for slot in spec[1]:
            if slot < len(n.input) and n.input[slot] not in const:
                out.append({"tensor": n.input[slot], "consumer": n.name, "consumerOp": n.op_type, "slot": slot,
                            "family": spec[0], "depth": depth[k], "_node": k})
    out.sort(key=lambda b: (b["depth"], b["_node"], b["slot"]))
    return out


def find_quant_boundaries(proto):
    """Boundaries of a quantized model, each with ``fetch`` (tensor to read) and ``dequant``
    (``(scale_name, zero_point_name)`` to apply, or None)."""
    g = proto.graph
    producer = {o: n for n in g.node for o in n.output}
    out = []
    for b in find_fp32_boundaries(proto, LINEAR_QUANT):
        node = g.node[b["_node"]]
        fetch, dequant = _float_source(b["tensor"], producer)
        qs = LINEAR_QUANT[node.op_type][2].get(b["slot"])
        if qs is not None:  # QLinear forms: their integer input, dequantized with their own scale/zero point
            fetch = b["tensor"]
            dequant = (node.input[qs[0]], node.input[qs[1]] if qs[1] < len(node.input) else "")
        elif fetch is None and node.op_type in _INTEGER_OPS:
            raise ModelError(f"integer input {b['tensor']!r} of {node.op_type} {node.name!r} has no "
                             "(Dynamic)QuantizeLinear before it and no scale to dequantize with")
        elif fetch is None:
            fetch = b["tensor"]
        b.update(fetch=fetch, dequant=dequant)
        out.append(b)
    return out


_INTEGER_OPS = {"MatMulInteger", "ConvInteger", "MatMulIntegerToFloat"}


def _float_source(tensor, producer):
    """(float tensor to fetch, None), or (None, None) when ``tensor`` is not known to be float.

    QDQ: the DequantizeLinear output the linear op reads (not the tensor before
    QuantizeLinear: the quantizer folds a Relu into the QuantizeLinear range, so
    that tensor can be the pre-Relu value).  QuantizeLinear /
    DynamicQuantizeLinear feeding the op directly: their float input.
    """
    p = producer.get(tensor)
    if p is not None and p.op_type in ("QuantizeLinear", "DynamicQuantizeLinear"):
        return p.input[0], None
    if p is not None and p.op_type == "DequantizeLinear":
        return tensor, None
    return None, None


def _pair(fb, qb, fp32_path, quant_path):
    if len(fb) != len(qb):
        raise ModelError(f"the FP32 model has {len(fb)} linear-operator boundaries and the quantized model "
                         f"{len(qb)}; they cannot be matched structurally", quant_path)
    for i, (f, q) in enumerate(zip(fb, qb)):
        if f["family"] != q["family"]:
            raise ModelError(f"boundary {i}: {f['consumerOp']} in the FP32 model vs {q['consumerOp']} in the "
                             "quantized model (different operator families)", quant_path)


def _run(proto, fetch_names, feeds, folder, tag):
    """Run ``proto`` with extra outputs at ORT_DISABLE_ALL; returns name -> array."""
    import onnx
    import onnxruntime as ort

    m = onnx.ModelProto()
    m.CopyFrom(proto)
    have = {o.name for o in m.graph.output}
    inits = {i.name: i for i in m.graph.initializer}
    wanted = [n for n in dict.fromkeys(fetch_names) if n not in feeds and n not in inits]
    for n in wanted:
        if n not in have:
            m.graph.output.append(onnx.ValueInfoProto(name=n))
    path = Path(folder) / f"{tag}.onnx"
    onnx.save(m, str(path))
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = 1
    so.log_severity_level = 3
    try:
        sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
        names = [n for n in wanted]
        vals = sess.run(names, {k: v for k, v in feeds.items() if k in {i.name for i in sess.get_inputs()}})
    except Exception as exc:
        raise ModelError(f"onnxruntime could not run the model: {' '.join(str(exc).split())[:300]}") from None
    out = dict(zip(names, vals))
    from onnx import numpy_helper
    for n in fetch_names:
        if n in feeds:
            out[n] = feeds[n]
        elif n in inits:
            out[n] = numpy_helper.to_array(inits[n])
    return out


def boundary_metrics(rel_errors):
    """growthVsFirst, stepRatio, jump for a list of relErrors (None = undefined).

    Examples
    --------
    >>> boundary_metrics([0.0, 0.1, 0.05, 0.2])
    [(None, None, False), (1.0, None, False), (0.5, 0.5, False), (2.0, 4.0, True)]
    """
    first = prev = None
    out = []
    for r in rel_errors:
        growth = step = None
        if r is not None and r > 0 and first is None:
            first = r
        if r is not None and first is not None:
            growth = r / first
        if r is not None and prev is not None:
            step = r / prev
        out.append((growth, step, bool(step is not None and step >= JUMP_RATIO)))
        if r is not None and r > 0:
            prev = r
    return out


def _errors(f, q):
    import numpy as np

    f = np.asarray(f, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    if f.shape != q.shape:
        if f.size != q.size:
            return None, None, f"shape {list(f.shape)} vs {list(q.shape)}"
        # the quantizer reshaped the input (MatMul [1,32,64] -> Gemm [32,64]): same elements, same order
        f, q = f.ravel(), q.ravel()
    if not (np.all(np.isfinite(f)) and np.all(np.isfinite(q))):
        return None, None, "non-finite values"
    nf = float(np.linalg.norm(f.ravel()))
    ne = float(np.linalg.norm((q - f).ravel()))
    rel = ne / nf if nf > 0 else None
    sqnr = 10.0 * math.log10(nf ** 2 / ne ** 2) if nf > 0 and ne > 0 else None
    return rel, sqnr, None


def layer_error(fp32_model, quant_model, seed=0, inputs=None, dims=None):
    """The layer-error table of docs/contract.md §6a as a dict.

    Parameters
    ----------
    fp32_model, quant_model : str or Path
    seed : int
        Seed of the random inputs (:func:`partsim.numerics.inputs.seeded_inputs`).
    inputs : dict, optional
        name -> array, instead of seeded inputs.
    """
    import numpy as np

    from ..io.read import read_model_proto
    from ..io.materialize import materialize_weights
    from .inputs import graph_input_specs, seeded_inputs

    with tempfile.TemporaryDirectory(prefix="partsim-layer-") as tmp:
        protos = []
        for tag, path in (("fp32", fp32_model), ("quant", quant_model)):
            read_model_proto(path)  # one-line errors for unreadable models
            runnable = materialize_weights(path, Path(tmp) / tag, seed=seed)
            import onnx
            protos.append(onnx.load(str(runnable)))
        fp, qp = protos
        fb, qb = find_fp32_boundaries(fp), find_quant_boundaries(qp)
        _pair(fb, qb, fp32_model, quant_model)
        feeds = dict(inputs) if inputs is not None else seeded_inputs(graph_input_specs(fp), seed, dims)
        qnames = {i[0] for i in graph_input_specs(qp)}
        if not qnames <= set(feeds):
            raise UsageError(f"the quantized model's inputs {sorted(qnames - set(feeds))} are not among the "
                             "FP32 model's inputs", quant_model)
        fvals = _run(fp, [b["tensor"] for b in fb], feeds, tmp, "fp32_run")
        qfetch = [b["fetch"] for b in qb] + [x for b in qb if b["dequant"] for x in b["dequant"] if x]
        qvals = _run(qp, qfetch, feeds, tmp, "quant_run")
    rows, rels = [], []
    for i, (f, q) in enumerate(zip(fb, qb)):
        qa = qvals[q["fetch"]]
        if q["dequant"]:
            s_name, z_name = q["dequant"]
            zp = qvals[z_name].astype(np.float64) if z_name else 0.0
            qa = (qa.astype(np.float64) - zp) * qvals[s_name].astype(np.float64)
        rel, sqnr, problem = _errors(fvals[f["tensor"]], qa)
        rels.append(rel)
        row = {"index": i, "tensor": f["tensor"], "consumer": f["consumer"], "consumerOp": f["consumerOp"],
               "quantTensor": q["fetch"], "quantConsumerOp": q["consumerOp"], "relError": rel, "sqnrDb": sqnr,
               "dequantized": bool(q["dequant"])}
        if problem:
            row["problem"] = problem
        rows.append(row)
    for row, (g, s, j) in zip(rows, boundary_metrics(rels)):
        row.update(growthVsFirst=g, stepRatio=s, jump=j)
    return {"seed": seed, "fp32Model": str(fp32_model), "quantModel": str(quant_model),
            "inputs": "file" if inputs is not None else "seeded", "boundaries": rows,
            "jumps": [r["index"] for r in rows if r["jump"]]}
