"""Checks a provider makes only on the NHWC form of a node, after ORT's layout transformation.

ORT converts the nodes an NHWC provider claimed in its first GetCapability and asks again; a
converted node the provider does not claim the second time makes ORT refuse the session ("was
inserted using the NHWC format as requested by ..., but was not selected by that EP",
``onnxruntime/core/framework/graph_partitioner.cc``).  The table names the checks its provider
makes then (``partitioning.layout_checks``); each is a function of the node and its shapes.

``pool_ceil_output`` (onnxruntime-qnn 2.7.0, HTP): a MaxPool/AveragePool with ``ceil_mode=1``
whose output size is not ``ceil((in + pads - kernel) / stride) + 1`` on every spatial axis.  ONNX
drops a last window that would start in the end padding (``test_maxpool_2d_ceil_output_size_reduce_by_one``:
2 -> 1, not 2), QNN's pool builder computes the plain ceil size, and its NHWC node fails the
backend's validation.  Measured on real sessions (``tests/gen/test_qnn_refusals.py``): the same
pools with the output shape declared as QNN computes it are taken, with ONNX's they are refused.
Pure.
"""

import math

__all__ = ["LAYOUT_CHECKS", "refused_after_layout"]


def _ints(node, name, default):
    v = node.attrs.get(name, default)
    return [int(x) for x in v] if isinstance(v, (list, tuple)) else default


def _pool_ceil_output(model, node):
    if node.op_type not in ("MaxPool", "AveragePool") or node.domain or not node.attrs.get("ceil_mode"):
        return None
    auto_pad = node.attrs.get("auto_pad", "NOTSET")
    if isinstance(auto_pad, bytes):
        auto_pad = auto_pad.decode()
    if auto_pad not in ("NOTSET", ""):
        return None
    x, y = model.value(node.inputs[0]), model.value(node.outputs[0])
    if not (x.is_static and y.is_static) or len(x.shape) != len(y.shape) or len(x.shape) < 3:
        return None
    spatial = len(x.shape) - 2
    kernel = _ints(node, "kernel_shape", None)
    if not kernel or len(kernel) != spatial:
        return None
    strides = _ints(node, "strides", [1] * spatial)
    dilations = _ints(node, "dilations", [1] * spatial)
    pads = _ints(node, "pads", [0] * (2 * spatial))
    for a in range(spatial):
        span = x.shape[2 + a] + pads[a] + pads[a + spatial] - ((kernel[a] - 1) * dilations[a] + 1)
        qnn = math.ceil(span / strides[a]) + 1
        if qnn != y.shape[2 + a]:
            return (f"ceil_mode output size {y.shape[2 + a]} on spatial axis {a}, where QNN's pool computes "
                    f"{qnn} (ceil((in + pads - kernel) / stride) + 1)")
    return None


LAYOUT_CHECKS = {"pool_ceil_output": _pool_ceil_output}


def refused_after_layout(model, node, table):
    """Why ``table``'s provider refuses the NHWC form of ``node`` (one of its ``layout_checks``), or ``None``."""
    for name in table.option("layout_checks", ()) or ():
        why = LAYOUT_CHECKS[name](model, node)
        if why:
            return why
    return None
