"""The capability-table model: :class:`RuleTable` of :class:`OpRule`, frozen and comparable.
"""

from dataclasses import dataclass, field

from ..ir.schemas import normalize_domain

__all__ = ["OpRule", "RuleTable", "adhoc_table"]


PREDICATE_KEYS = ("static_shape", "static_outputs", "max_outputs", "min_inputs", "max_inputs", "min_rank", "max_rank", "rank_inputs", "const_inputs", "attrs",
                  "dtype_pairs")


@dataclass(frozen=True)
class OpRule:
    """One op rule: which nodes of ``domain:op`` the provider takes.

    ``versions`` is ``(since, end)`` with ``end=None`` for an open-ended kernel
    (ORT then matches only ``since_version == since``) or ``None`` for any
    version.  ``types`` maps a type-constraint name (``"T"``) or a port
    (``"i0"``, ``"o1"``) to allowed dtypes.
    """

    op: str
    domain: str = ""
    versions: object = None
    types: dict = field(default_factory=dict, hash=False)  # compared: rules differing only in dtypes differ
    static_shape: bool = False
    static_outputs: bool = False  # every output's shape known too (QNN builds its tensors from them)
    max_outputs: object = None  # at most this many outputs used (QNN's LayerNormalization builds only Y)
    min_inputs: object = None  # at least this many inputs given (QNN's Max/Min/Sum/Mean builders)
    max_inputs: object = None  # no input given past this many slots (QNN's Attention: no nonpad_kv_seqlen)
    min_rank: object = None
    max_rank: object = None
    rank_inputs: object = None
    const_inputs: tuple = ()
    attrs: tuple = ()
    dtype_pairs: object = None
    host_inputs: tuple = ()
    host_outputs: tuple = ()
    layout_sensitive: bool = False
    layout_refusal: bool = False  # claimed before the NHWC layout transformation, refused after it
    notes: str = ""
    line: int = 0
    kernel_requires: tuple = ()  # attr conditions the kernel's constructor enforces (else ORT refuses the session)
    compile_failure: str = ""  # a node this rule claims makes the provider's compile step throw: why


@dataclass(frozen=True)
class RuleTable:
    """A provider's capability table (see docs/contract.md §3)."""

    provider: str
    kind: str
    source: dict
    rules: dict  # (domain, op) -> tuple of OpRule
    aliases: tuple = ()
    cpu_based: bool = False
    layout: str = "NCHW"
    precisions: tuple = ("fp32",)
    compute_precision: str = "fp32"
    partitioning: dict = field(default_factory=dict, hash=False, compare=False)
    notes: tuple = ()
    path: str = ""
    variant: str = ""
    default_variant: bool = False
    overlay: object = None  # None, or (removed (domain, op) keys,): layered over the base table (layer_table)

    @property
    def is_compiling(self):
        return self.kind == "compiling"

    def rules_for(self, domain, op):
        return self.rules.get((domain, op), ())

    def option(self, name, default=None):
        return self.partitioning.get(name, default)


def _freeze(v):
    if isinstance(v, list):
        return tuple(_freeze(x) for x in v)
    return v


def _norm_type(t):
    """``tensor(float)`` -> ``float``; other type strings are kept whole."""
    t = str(t).strip()
    if t.startswith("tensor(") and t.endswith(")"):
        return t[7:-1]
    return t


def adhoc_table(ops, name="EP", kind="kernel"):
    """The ``--support OP,OP`` provider: takes those op types for every dtype and shape."""
    rules = {}
    for op in ops:
        domain, _, op_type = op.rpartition(":")
        domain = normalize_domain(domain)
        rules[(domain, op_type)] = (OpRule(op=op_type, domain=domain),)
    return RuleTable(provider=name, kind=kind,
                     source={"description": "--support on the command line", "version": "adhoc"},
                     rules=rules, partitioning={"qdq_node_units": kind == "compiling"},
                     path="<--support>")
