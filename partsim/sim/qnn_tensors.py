"""QNN's quantized and plain integer tensors: which 8/16-bit tensors reach the HTP backend quantized.

The QNN EP validates the node units of a graph one after the other in topological order, all on one
model wrapper (onnxruntime/onnxruntime-qnn ``qnn_execution_provider.cc`` GetSupportedNodes, each
builder's ``AddToModelBuilder`` with ``do_op_validation``).  A tensor is registered once, by the first
node unit whose builder meets it (``base_op_builder.cc`` ProcessInput: "Tensor already added, skip
it"), and keeps the QNN data type it got there:

- quantized (``QNN_DATATYPE_UFIXED_POINT_8`` ...) where that unit knows its scale and zero point: the
  input of a DequantizeLinear, the output of a QuantizeLinear, the boundary tensors of a QDQ node
  unit, every 8/16-bit tensor of a QOperator op (QLinearMatMul carries them as inputs);
- plain (``QNN_DATATYPE_UINT_8`` ...) otherwise: a uint8 tensor made or first read by a Gather,
  Squeeze, Reshape ... outside a QDQ unit.  Nodes the backend then refuses registered theirs all
  the same; ops without a builder (QLinearAdd on QNN 2.7.0) register nothing.

An op's output takes the input's data type and quantization only where its builder says so
(``transpose_op_builder.cc``: "Transpose output uses same data type and quantization parameter with
input"; the table's ``quantized_passthrough_ops``); elsewhere an output outside a QDQ unit is plain.
The HTP backend's op definitions never mix the two for one op (seen on real onnxruntime-qnn 2.7.0
sessions, ``q_tiny_transformer.dynamo.qop``: "Unsupported input/output datatypes ... in[0]:
UFIXED_POINT_8, out[0]: UINT_8" for a Reshape after a quantized Transpose).  Hence:

- a DequantizeLinear alone whose input was registered plain is refused (its input is not quantized),
  and so is a whole QDQ node unit whose DQ reads such a tensor (its output is quantized: "Input and
  output data types do not match"); whether ORT's selectors form the unit at all decides which of the
  two happens (``partsim.sim.qdq``: a DQ -> Gather -> Q unit needs equal scales and zero points);
- a node of another op that reads a quantized 8/16-bit tensor and writes a plain 8/16-bit one is
  refused (the mismatch above);
- a passthrough op on a quantized input is taken on the quantized data type, which its plain rule
  (measured on probes whose integer input comes from the graph, plain) may not list: the EP takes the
  uint8 Transposes between QLinearMatMuls.

The HTP backend also validates a QDQ node unit's quantized data types as one combination (seen on
real sessions: a LayerNormalization unit with uint8 activations, an int8 scale and an int32 bias is
refused, "Unsupported input/output datatypes requested for the HTP Op 'LayerNorm' ... There is a
mismatch for the combination of inputs and outputs", its DQs and Q with it).  The table's
``qdq_unit_types`` lists, per op, the combinations the probes saw accepted (``partsim/gen/qnn.py``
``qdq_specs``); :func:`unit_types_refusal` refuses a unit that agrees with none of them.

Pure: reads the model and the table, returns verdicts.
"""

__all__ = ["QUANTIZABLE", "quantized_tensor_verdicts", "unit_port_dtypes", "unit_types_refusal"]

#: ops whose builders validate (and register tensors) only once the node is in the NHWC domain, in ORT's second
#: GetCapability call (conv_op_builder.cc, pool_op_builder.cc: "Use QNN validation API if layout is NHWC"); in the
#: first call they pass unbuilt.  What the second call refuses is the table's ``layout_refusal`` rules.
NHWC_VALIDATED = frozenset(("Conv", "ConvTranspose", "GlobalAveragePool", "AveragePool", "MaxPool", "GlobalMaxPool"))
#: the integer dtypes QNN represents either as fixed point (quantized) or as plain integers
QUANTIZABLE = frozenset(("uint8", "int8", "uint16", "int16"))


def _is_qop(node):
    """A QOperator op: its quantized tensors come with scale and zero point inputs."""
    return node.domain in ("", "com.microsoft") and (node.op_type.startswith("QLinear") or node.op_type == "QGemm")


def quantized_tensor_verdicts(model, members, units, table):
    """``(refused, admitted, dissolved)`` for the main-graph nodes ``members`` (topological order), their QDQ node
    units ``units`` (``{target: members}``, :func:`partsim.sim.qdq.find_node_units`) and ``table``
    (a node has a builder when the table has a rule for its op): ``refused`` maps a node index to why
    the backend refuses it, ``admitted`` lists passthrough nodes on a quantized input, ``dissolved`` the
    targets of the units partsim found whose DequantizeLinear reads a tensor registered plain before (the
    EP does not take such a unit as one; its members are judged alone, the DQ refused)."""
    walk = _Registrations(model, table)
    unit_of = {m: t for t, ms in units.items() for m in ms}
    for i in members:
        if i not in unit_of:
            walk.single(i)
        elif unit_of[i] == i:  # a unit's DQ/Q members: handled with their target
            walk.unit(units[i])
    return walk.refused, walk.admitted, []


class _Registrations:
    """The QNN EP's validation walk: each tensor registered once, quantized or plain, by the first node
    (unit) that meets it; what the backend refuses or admits because of it."""

    def __init__(self, model, table):
        self.model, self.nodes, self.table = model, model.nodes, table
        self.state = {}  # tensor -> True (quantized) / False (plain), for the quantizable dtypes
        self.passthrough = set(table.option("quantized_passthrough_ops", ()) or ())
        self.refused, self.admitted = {}, []

    def quantizable(self, t):
        return bool(t) and self.model.value(t).dtype in QUANTIZABLE

    def register(self, t, quantized):
        if self.quantizable(t) and t not in self.state:
            self.state[t] = quantized

    def single(self, i):
        """Node ``i``, outside any QDQ node unit."""
        node, state = self.nodes[i], self.state
        if node.domain not in ("", "com.microsoft"):
            return
        if node.op_type == "DequantizeLinear" and node.inputs:
            t = node.inputs[0]
            if state.get(t) is False:
                p = self.model.producer.get(t)
                self.refused[i] = (
                    f"a DequantizeLinear alone whose input {t!r} the QNN EP registered as a plain integer "
                    f"tensor (first met by {self.nodes[p].op_type if p is not None else 'an earlier node'}, "
                    "not a quantizing node): the HTP backend takes only a quantized input")
            self.register(t, True)
            return
        if node.op_type == "QuantizeLinear":
            for t in node.outputs[:1]:
                self.register(t, True)
            return
        if not self.table.rules_for(node.domain, node.op_type) or (
                not node.domain and node.op_type in NHWC_VALIDATED):
            return  # no builder, or one that builds nothing before the NHWC conversion: registers nothing
        if _is_qop(node):
            for t in list(node.inputs) + list(node.outputs):
                self.register(t, True)
            return
        for t in node.inputs:
            self.register(t, False)
        q_in = [t for t in node.inputs if self.quantizable(t) and state.get(t)]
        if node.op_type in self.passthrough and node.inputs and node.inputs[0] in q_in:
            for t in node.outputs:
                self.register(t, True)
            self.admitted.append(i)
            return
        for t in node.outputs:
            self.register(t, False)
        plain_out = [t for t in node.outputs if self.quantizable(t) and state.get(t) is False]
        if q_in and plain_out:
            self.refused[i] = (
                f"reads the quantized tensor {q_in[0]!r} and would write {plain_out[0]!r} as a plain "
                f"{self.model.value(plain_out[0]).dtype} tensor (its builder does not pass the quantization "
                "on): the HTP backend has no such data type combination")

    def unit(self, unit):
        """A QDQ node unit (its members), met at its target."""
        nodes = self.nodes
        plain = [nodes[m].inputs[0] for m in unit if nodes[m].op_type == "DequantizeLinear" and nodes[m].inputs
                 and self.state.get(nodes[m].inputs[0]) is False]
        if plain:
            # the unit reads a tensor registered plain and writes quantized ones: refused whole, DQ and Q
            # with it (seen on real 2.7.0 sessions, q_tiny_transformer.dynamo.qop at ORT_ENABLE_ALL:
            # "Input and output data types do not match" for a DQ -> Gather -> Q unit)
            for m in unit:
                self.refused[m] = (
                    f"its QDQ unit reads {plain[0]!r}, which the QNN EP registered as a plain integer "
                    "tensor, and writes quantized ones: the HTP backend's input and output data types "
                    "do not match")
            for m in unit:
                n = nodes[m]
                if n.op_type == "QuantizeLinear" and n.outputs:
                    self.register(n.outputs[0], True)
            return
        for m in unit:
            n = nodes[m]
            if n.op_type == "DequantizeLinear" and n.inputs:
                self.register(n.inputs[0], True)
            elif n.op_type == "QuantizeLinear" and n.outputs:
                self.register(n.outputs[0], True)


def unit_port_dtypes(model, target, members):
    """``{"i<k>": dtype of the quantized tensor a DequantizeLinear of the unit feeds into input k, "o<k>":
    dtype a QuantizeLinear of the unit makes of output k}`` for the QDQ node unit ``members`` of ``target``."""
    nodes = model.nodes
    inside = set(members)
    node = nodes[target]
    ports = {}
    for k, t in enumerate(node.inputs):
        p = model.producer.get(t) if t else None
        if p in inside and nodes[p].op_type == "DequantizeLinear" and nodes[p].inputs:
            ports[f"i{k}"] = model.value(nodes[p].inputs[0]).dtype
    for k, t in enumerate(node.outputs):
        for c in model.consumers.get(t, ()) if t else ():
            if c in inside and nodes[c].op_type == "QuantizeLinear" and nodes[c].outputs:
                ports[f"o{k}"] = model.value(nodes[c].outputs[0]).dtype
    return ports


def unit_types_refusal(model, target, members, unit_types):
    """Why the backend refuses the QDQ node unit of ``target`` for its quantized types (``unit_types``:
    the table's ``qdq_unit_types``), or ``None``.  An entry agrees when every port both name has the
    same dtype (a unit without an optional input is judged on the others); a port dtype partsim does
    not know agrees with anything."""
    node = model.nodes[target]
    accepted = unit_types.get(node.op_type) if not node.domain else None
    if accepted is None:
        return None
    ports = unit_port_dtypes(model, target, members)
    for entry in accepted:
        if all(ports[p] is None or ports[p] == dt for p, dt in entry.items() if p in ports):
            return None
    shown = ", ".join(f"{p}={ports[p]}" for p in sorted(ports))
    return (f"the HTP backend takes no QDQ {node.op_type} unit with these quantized types ({shown}); "
            "its DequantizeLinear and QuantizeLinear nodes stay with it")
