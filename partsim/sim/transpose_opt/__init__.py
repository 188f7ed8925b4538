"""ORT's transpose optimizer as the layout transformation runs it, on a small mutable graph.

Port of ``onnx_transpose_optimization::OptimizeImpl`` and its handlers
(``onnxruntime/core/optimizer/transpose_optimization/onnx_transpose_optimization.cc``), the
ORT-specific handlers and cost check (``ort_transpose_optimization.cc``: ``OrtExtendedHandlers``,
``OrtEPCostCheck``), ``PostLayoutTransformCostCheck`` (``layout_transformation/layout_transformation.cc``)
and the graph edits of ``ort_optimizer_api_impl.cc`` (node and value names).  What it decides:
which Transposes of the model and of the NHWC wrapping survive, which nodes the optimizer adds
(``Transpose``, ``Gather`` after a ``Shape``, ``Unsqueeze``/``Squeeze``, Q/DQ pairs) and what ORT
names them.  Tensor data is not kept: constants whose values a handler reads (Reshape shapes,
axes inputs) come from ``Model.int_consts``; other constants are edited by shape only.

``TransformLayoutForEP`` calls ``Optimize`` for the EP whether or not it converted a node (the
newest stored layout_transformation.cc, microsoft/onnxruntime 02c16ee1; older copies ran it only
after a conversion), so the model's own Transposes are pushed and cancelled too, on the nodes
assigned to that EP or still unassigned (``CanModifyNode``).

Names: ``Graph::GenerateNodeName`` / ``GenerateNodeArgName`` (``graph/graph.cc``) return the base
when free, else ``<base>_token_<n>`` with one counter for both; a new node is named after its op
type, its outputs ``<name>_out<i>``; ``MoveOutput`` gives the node it takes an output from a new
output named after that node; every new initializer is ``const_transpose_optimizer[_token_<n>]``.

Two handlers are measured, not read, because the stored sources predate them: graphs saved with
``session.debug_layout_transformation=1`` from real onnxruntime 1.31.1 + onnxruntime-qnn 2.7.0 sessions
show (a) a Gather handler: with scalar indices the axis moves through the perm and the output is
transposed back by the perm without that axis (1-D indices are handled by the same algebra, not
seen); (b) a Transpose feeding a QNN Reshape that splits dimensions of the Transpose's output into
runs of consecutive ones (a channel shuffle) or inserts size-1 dimensions is pushed below it:
each inserted dimension goes with the next dimension of the Transpose's output, the groups are put
in the Transpose's input order for the new Reshape shape, and a Transpose restores the output
(``ort_handlers._reshape_groups``).  A Reshape that merges or drops dimensions (mobilenet_v2.dynamo's
classifier, a flatten) or appends a size-1 dimension after the last one is not pushed.
"""


from .graph import ONode, OptGraph, channel_first_to_last, channel_last_to_first, compose, invert
from .optimize import optimize
from .table import HANDLERS, handler_of

__all__ = ["OptGraph", "ONode", "optimize", "invert", "compose", "channel_last_to_first", "channel_first_to_last",
           "HANDLERS", "handler_of"]
