"""An If whose branch holds a node the provider would not take: the OpenVINO plugin EP leaves the If to the CPU.

Measured on real onnxruntime-ep-openvino 1.8.1 sessions (partsim/gen/openvino_plugin.py, graph probes
``if_lppool_then_branch``, ``if_lppool_else_branch``, ``if_det_branch``, ``if_sequence_constant``): an If whose
branches are Relu/Neg is claimed, the same If with an LpPool, a Det or a SequenceConstruct in either branch goes to
the CPU (and the plugin takes no node inside a branch).  Table option ``unsupported_branch_refuses_if``.
"""

__all__ = ["ifs_with_unsupported_branch"]


def ifs_with_unsupported_branch(model, matched, provider):
    """``{If index: why}`` for each If in ``matched`` (node index -> the table rule it matched) with a node in
    one of its branches (nested subgraphs included) that matched no rule of the table."""
    ifs = {i for i in matched if model.nodes[i].op_type == "If" and not model.nodes[i].domain}
    if not ifs:
        return {}
    from ..ir.graph import holders

    out = {}
    for node in model.nodes:
        if node.index in matched:
            continue
        for up in holders(model, node):  # every If holding the node, however deep
            if up in ifs and up not in out:
                out[up] = (f"its branch holds {node.name} ({node.qualified_op}), which {provider} does not take, "
                           f"so the If is left to the CPU with its branches")
    return out
