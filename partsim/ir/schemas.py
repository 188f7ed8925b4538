"""Operator schema lookup: ``since_version`` and type-constraint ports of a node.

ONNX domains come from ``onnx.defs``, at the versions ORT's registry has (a newer onnx may know a
version ORT does not); ORT's own domains (``com.microsoft`` …) from the snapshot in
``partsim/data/contrib_schemas.json`` (see :mod:`partsim.gen.contrib_schemas`).
Ops that neither knows return ``None``: the node is kept and flagged, never rejected.
"""

import json
from dataclasses import dataclass
from functools import lru_cache

from ..data import data_path

__all__ = ["OpSchemaInfo", "lookup_schema", "normalize_domain", "known_domains", "ort_attributes"]


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
def _onnx_history():
    import onnx.defs

    out = {}
    for s in onnx.defs.get_all_schemas_with_history():
        out.setdefault((normalize_domain(s.domain), s.name), []).append(s)
    return {key: tuple(schemas) for key, schemas in out.items()}


def onnx_schema_history(op_type, domain=""):
    """Every version of ``op_type``'s schema that the installed onnx knows in ``domain`` (``()`` when none),
    read once per process: ``onnx.defs.get_all_schemas_with_history()`` builds ~2,000 schema objects a call.

    >>> sorted(s.since_version for s in onnx_schema_history("Relu"))
    [1, 6, 13, 14]
    """
    return _onnx_history().get((normalize_domain(domain), op_type), ())


@lru_cache(maxsize=1)
def _snapshot():
    return json.loads(data_path("contrib_schemas.json").read_text())


def _contrib():
    return _snapshot()["ops"]


@lru_cache(maxsize=None)
def _ort_newest(domain):
    """The newest ``since_version`` of any schema of ``domain`` in the snapshot's registry."""
    prefix = f"{domain}:"
    return max(
        (int(v) for k, vs in _snapshot().get("attributes", {}).items() if k.startswith(prefix) for v in vs), default=0
    )


@lru_cache(maxsize=None)
def ort_attributes(domain, op_type, opset):
    """``(release, since_version, attribute names)`` of the schema ORT's own registry resolves a node of
    ``op_type`` in ``domain`` to under ``opset`` (the snapshot's release), or ``None`` when it has none.

    >>> release, since, names = ort_attributes("", "Attention", 25)
    >>> since, "left_window_size" in names, "q_num_heads" in names
    (24, False, True)
    """
    snapshot = _snapshot()
    versions = snapshot.get("attributes", {}).get(f"{normalize_domain(domain)}:{op_type}")
    if not versions or opset is None:
        return None
    since = max((int(v) for v in versions if int(v) <= opset), default=None)
    if since is None:
        return None
    return snapshot.get("release"), since, frozenset(versions[str(since)])


@lru_cache(maxsize=1)
def known_domains():
    """Every domain that has at least one known schema."""
    domains = {domain for domain, _ in _onnx_history()}
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
        # ORT resolves the node with the schemas of the ONNX release it was built with: where the installed
        # onnx has a newer version than ORT's registry (Attention-25 in onnx 1.23, onnxruntime 1.31.1 stops at
        # 24), the node gets ORT's version, the one its kernels are registered for
        # (a model at an opset beyond every version the snapshot's registry has is for a newer ORT: onnx's then)
        found = ort_attributes(domain, op_type, opset)
        if found is not None and found[1] < schema.since_version and opset <= _ort_newest(domain):
            schema = onnx.defs.get_schema(op_type, max_inclusive_version=found[1], domain=domain)
    except (onnx.defs.SchemaError, TypeError, ValueError, OverflowError):
        return None  # unknown op, or a corrupt opset number / op name
    variadic = onnx.defs.OpSchema.FormalParameterOption.Variadic
    return OpSchemaInfo(
        schema.since_version,
        tuple((p.type_str, p.option == variadic) for p in schema.inputs),
        tuple((p.type_str, p.option == variadic) for p in schema.outputs),
        {tc.type_param_str: tuple(tc.allowed_type_strs) for tc in schema.type_constraints},
    )
