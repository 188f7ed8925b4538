"""Operator schema lookup: ``since_version`` and type-constraint ports of a node.

ONNX domains come from ``onnx.defs``; ORT's own domains (``com.microsoft`` …) from the
snapshot in ``partsim/data/contrib_schemas.json`` (see :mod:`partsim.gen.contrib_schemas`).
Ops that neither knows return ``None``: the node is kept and flagged, never rejected.
"""

import json
from dataclasses import dataclass
from functools import lru_cache

from ..data import data_path

__all__ = ["OpSchemaInfo", "lookup_schema", "normalize_domain", "known_domains"]


@dataclass(frozen=True)
class OpSchemaInfo:
    """What the simulator needs of an op schema.

    Attributes
    ----------
    since_version : int
        The schema version that a node resolves to (the newest ``since_version``
        not above the model's opset for that domain).
    inputs, outputs : tuple of (str, bool)
        Per formal parameter: its type string (a constraint name such as ``"T"``,
        or a concrete type such as ``"tensor(int64)"``) and whether it is variadic.
    constraints : dict
        Constraint name -> allowed type strings.
    """

    since_version: int
    inputs: tuple
    outputs: tuple
    constraints: dict

    def ports_of(self, constraint, n_inputs, n_outputs):
        """Yield ``("i", k)`` / ``("o", k)`` for every port bound to ``constraint``."""
        for kind, params, count in (("i", self.inputs, n_inputs), ("o", self.outputs, n_outputs)):
            for k in range(count):
                if not params:
                    break
                if k < len(params):
                    type_str, _ = params[k]
                else:
                    type_str, variadic = params[-1]
                    if not variadic:
                        break
                if type_str == constraint:
                    yield kind, k


def normalize_domain(domain):
    """``"ai.onnx"`` and ``""`` are the same domain; partsim writes ``""``."""
    return "" if domain in ("", "ai.onnx") else domain


@lru_cache(maxsize=1)
def _contrib():
    text = data_path("contrib_schemas.json").read_text()
    return json.loads(text)["ops"]


@lru_cache(maxsize=1)
def known_domains():
    """Every domain that has at least one known schema."""
    import onnx.defs

    domains = {normalize_domain(s.domain) for s in onnx.defs.get_all_schemas_with_history()}
    domains.update(k.split(":", 1)[0] for k in _contrib())
    return frozenset(domains)


@lru_cache(maxsize=None)
def lookup_schema(domain, op_type, opset):
    """Resolve the schema a node of ``op_type`` in ``domain`` gets under ``opset``.

    Parameters
    ----------
    domain : str
        Node domain (``""`` for ai.onnx).
    op_type : str
    opset : int or None
        The model's opset import for that domain.

    Returns
    -------
    OpSchemaInfo or None
        ``None`` when no schema is known (custom domain, or opset below the op's first version).

    Examples
    --------
    >>> lookup_schema("", "Relu", 17).since_version
    14
    >>> lookup_schema("", "Relu", 13).since_version
    13
    >>> lookup_schema("my.domain", "Foo", 1) is None
    True
    """
    import onnx.defs

    domain = normalize_domain(domain)
    if opset is None:
        return None
    contrib = _contrib().get(f"{domain}:{op_type}")
    if contrib is not None:
        versions = sorted(int(v) for v in contrib if int(v) <= opset)
        if not versions:
            return None
        entry = contrib[str(versions[-1])]
        return OpSchemaInfo(
            versions[-1],
            tuple((t, v) for t, v in entry["inputs"]),
            tuple((t, v) for t, v in entry["outputs"]),
            {k: tuple(v) for k, v in entry["constraints"].items()},
        )
    try:
        schema = onnx.defs.get_schema(op_type, max_inclusive_version=opset, domain=domain)
    except (onnx.defs.SchemaError, TypeError, ValueError, OverflowError):
        return None  # unknown op, or a corrupt opset number / op name
    variadic = onnx.defs.OpSchema.FormalParameterOption.Variadic
    return OpSchemaInfo(
        schema.since_version,
        tuple((p.type_str, p.option == variadic) for p in schema.inputs),
        tuple((p.type_str, p.option == variadic) for p in schema.outputs),
        {tc.type_param_str: tuple(tc.allowed_type_strs) for tc in schema.type_constraints},
    )
