"""Graph I/O quantization after the NHWC layout transformation (QNN's ``offload_graph_io_quantization``).

With that provider option (on by default) the QNN EP leaves a QuantizeLinear reading a graph input and
a DequantizeLinear writing a graph output to the CPU (``qnn_execution_provider.cc``).  It applies the
rule in each GetCapability to the graph as it is then.  Between the first and the second one ORT runs
the layout transformation, whose transpose optimizer can move such a node off the graph I/O: when the
last unit is converted to NHWC, the output Transpose is pushed through the graph-output
DequantizeLinear, and the QDQ fix-up adds a new QuantizeLinear/DequantizeLinear pair after it
(``QuantizeLinear_token_<k>``, ``DequantizeLinear_token_<k>``).  The new DequantizeLinear then writes
the output and stays on the CPU (:func:`partsim.sim.layout.nhwc_layout` gives it the CPU); the original
one is an inner node now and QNN takes it with the partition next to it (seen on real onnxruntime-qnn
2.7.0 sessions at both levels; ``tests/gen/test_qnn.py``).

Pure: edits the assignment lists it is given.
"""

__all__ = ["reclaim_graph_io"]

CPU = "CPUExecutionProvider"


def reclaim_graph_io(model, result, held, assigned, rules, partitions):
    """Give ``result.provider`` back the nodes of ``held`` (node -> rule: left out in the first
    GetCapability only for graph I/O quantization) that the layout transformation ``result`` moved off
    the graph I/O, each joining the provider's partition on its other side (the producer of a
    DequantizeLinear's input, a consumer of a QuantizeLinear's output); a node next to none stays on
    the CPU (a partition of one Q or DQ would be dropped).  Edits ``assigned``, ``rules`` and
    ``partitions`` in place."""
    ep = result.provider
    still, removed = set(result.graph_io), set(result.removed)
    part_of = {}
    for k, (p, members) in enumerate(partitions):
        if p == ep:
            for i in members:
                part_of.setdefault(i, k)
    for i, rule in sorted(held.items()):
        if i in still or i in removed or assigned[i] != CPU:
            continue
        n = model.nodes[i]
        if n.op_type == "DequantizeLinear":
            side = [model.producer.get(n.inputs[0])] if n.inputs and n.inputs[0] else []
        else:
            side = list(model.consumers.get(n.outputs[0], ())) if n.outputs and n.outputs[0] else []
        ks = sorted({part_of[j] for j in side if j is not None and j in part_of})
        if not ks:
            continue
        assigned[i] = ep
        rules[i] = rule
        partitions[ks[0]] = (ep, tuple(partitions[ks[0]][1]) + (i,))
        part_of[i] = ks[0]
