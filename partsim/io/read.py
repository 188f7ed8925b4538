"""Read an ONNX file into a ModelProto, refusing truncated, oversized or malformed files with one line.
"""

from ..errors import ModelError
from .files import read_bytes

__all__ = ["read_model_proto", "MAX_MODEL_BYTES"]

# protobuf cannot parse a message of 2 GiB or more: ORT and onnx keep larger weights as external data
MAX_MODEL_BYTES = 2**31 - 1


def read_model_proto(path, check_node_text=True):
    """Read and parse ``path`` (no external data), with one-line errors.

    ``check_node_text=False`` leaves the UTF-8 check of node fields to the caller
    (:func:`partsim.io.load.load_model` does it while it builds the IR, at no extra cost).

    Returns
    -------
    (onnx.ModelProto, bytes)
        The parsed model and the raw file bytes (for hashing).
    """
    import onnx
    from google.protobuf.message import DecodeError

    data = read_bytes(path, MAX_MODEL_BYTES, ModelError, "the model")
    if not data:
        raise ModelError("empty file, not an ONNX model", path)
    try:
        proto = onnx.ModelProto()
        proto.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError) as exc:
        raise ModelError(f"not a valid ONNX protobuf (truncated or corrupt): {exc}", path) from None
    if not proto.HasField("graph"):
        raise ModelError("not an ONNX model: no graph", path)
    _check_strings(proto, path, nodes=check_node_text)
    return proto, data


def _check_strings(msg, path, where="model", nodes=True):
    """Every string field must be UTF-8: ONNX's proto2 schema lets protobuf hand back ``bytes``
    for one that is not, and names, op types and locations are used as text everywhere."""
    from google.protobuf.descriptor import FieldDescriptor as F

    STRING, MESSAGE = F.TYPE_STRING, F.TYPE_MESSAGE
    repeated_of = {}

    def is_repeated(field):
        r = repeated_of.get(field)
        if r is None:
            r = field.is_repeated if hasattr(field, "is_repeated") else field.label == F.LABEL_REPEATED
            repeated_of[field] = r
        return r

    def describe(trail):  # the dotted path, built only for the error message
        parts = []
        while trail is not None:
            trail, name = trail
            parts.append(name)
        return ".".join([where] + parts[::-1])

    stack = [(msg, None)]
    while stack:
        m, trail = stack.pop()
        for field, value in m.ListFields():
            ftype = field.type
            if ftype == STRING:
                for v in (value if is_repeated(field) else (value,)):
                    if not isinstance(v, str):
                        raise ModelError(f"{describe((trail, field.name))} is not valid UTF-8 text: {v[:60]!r}",
                                         path)
            elif ftype == MESSAGE:
                mname = field.message_type.name
                if mname == "NodeProto":  # the bulk of a model: its text fields read directly (fast path)
                    if not nodes:
                        continue  # the IR builder checks node text (and their subgraphs) as it reads them
                    for k, node in enumerate(value):
                        _check_node_text(node, lambda k=k: describe((trail, f"{field.name}[{k}]")), path,
                                         stack, (trail, f"{field.name}[{k}]"))
                    continue
                if mname == "TypeProto":
                    continue  # its only text, dim_param, is checked where it is read (_parse_type)
                if mname == "TensorProto":  # weights: only the name and external-data entries are text we use
                    for t in (value if is_repeated(field) else (value,)):
                        texts = [t.name] + [x for e in t.external_data for x in (e.key, e.value)]
                        if not all(isinstance(x, str) for x in texts):
                            raise ModelError(f"{describe((trail, field.name))}: a tensor name or external-data "
                                             "entry is not valid UTF-8 text", path)
                    continue
                if is_repeated(field):
                    stack.extend((x, (trail, f"{field.name}[{k}]")) for k, x in enumerate(value))
                else:
                    stack.append((value, (trail, field.name)))


def _check_node_text(node, where, path, stack, trail):
    """UTF-8 check of one NodeProto's text; subgraphs go back on the generic ``stack``."""
    texts = [node.name, node.op_type, node.domain, node.doc_string, node.overload]
    texts.extend(node.input)
    texts.extend(node.output)
    for a in node.attribute:
        texts.append(a.name)
        texts.append(a.ref_attr_name)
        texts.append(a.doc_string)
        if a.HasField("g"):
            stack.append((a.g, (trail, f"attribute[{a.name}].g")))
        for k, g in enumerate(a.graphs):
            stack.append((g, (trail, f"attribute[{a.name}].graphs[{k}]")))
        if a.HasField("t"):
            texts.append(a.t.name)
            texts.extend(x for e in a.t.external_data for x in (e.key, e.value))
        for t in a.tensors:
            texts.append(t.name)
            texts.extend(x for e in t.external_data for x in (e.key, e.value))
    for x in node.metadata_props:
        texts.append(x.key)
        texts.append(x.value)
    for x in texts:
        if x.__class__ is not str:
            raise ModelError(f"{where()}: a name, op type, domain or attribute is not valid UTF-8 text: "
                             f"{x[:60]!r}", path)
