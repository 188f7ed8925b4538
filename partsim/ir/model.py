"""partsim's view of an ONNX model: nodes, tensors and the edges between them.

The IR is small and read-only once built: a :class:`Model` holds a list of
:class:`Node` (main graph first, then If/Loop/Scan bodies, depth first), a dict of
:class:`Value` keyed by tensor name, and per-node producer/consumer lists.  It is
built by :func:`partsim.io.load.load_model`; the simulator only reads it.
"""

from dataclasses import dataclass, field

from .order import topological_order

__all__ = ["Value", "Node", "Model", "DTYPE_BYTES"]


# bytes per element, keyed by the ORT/ONNX type name without "tensor(...)"
DTYPE_BYTES = {
    "float": 4, "double": 8, "float16": 2, "bfloat16": 2,
    "int8": 1, "uint8": 1, "int16": 2, "uint16": 2, "int32": 4, "uint32": 4,
    "int64": 8, "uint64": 8, "bool": 1, "complex64": 8, "complex128": 16,
    "float8e4m3fn": 1, "float8e4m3fnuz": 1, "float8e5m2": 1, "float8e5m2fnuz": 1,
}


class Value:
    """A tensor (an edge of the graph).

    Attributes
    ----------
    name : str
        Unique tensor name (subgraph-local names that shadow an outer one are
        renamed ``node/name``).
    dtype : str or None
        ``"float"``, ``"int64"`` … for tensors; the full ORT type string
        (``"seq(tensor(float))"``) for other types; ``None`` when unknown.
    shape : tuple or None
        Per dimension an ``int`` (static), a ``str`` (symbolic) or ``None``
        (unknown); ``None`` when even the rank is unknown.
    kind : str
        ``"input"`` (graph input), ``"initializer"``, ``"constant"`` (output of a
        Constant node, which ORT turns into an initializer), ``"intermediate"``.

    Read-only by convention once the loader has built it (a plain slotted class:
    a model has a million of these, and a frozen dataclass costs 3x to make).

    Examples
    --------
    >>> v = Value("x", "float", (1, 3, 224, 224), "input")
    >>> v.is_static, v.rank, v.nbytes, v.is_constant
    (True, 4, 602112, False)
    >>> Value("y", "float", (1, "N"))
    Value(name='y', dtype='float', shape=(1, 'N'), kind='intermediate')
    """

    __slots__ = ("name", "dtype", "shape", "kind", "is_static")

    def __init__(self, name, dtype=None, shape=None, kind="intermediate", is_static=None):
        self.name = name
        self.dtype = dtype
        self.shape = shape
        self.kind = kind
        if is_static is None:  # the loader passes it (worked out once per distinct type)
            is_static = shape is not None and all(isinstance(d, int) and d >= 0 for d in shape)
        #: every dimension is a known non-negative int
        self.is_static = is_static

    def _key(self):
        return (self.name, self.dtype, self.shape, self.kind)

    def __eq__(self, other):
        return other.__class__ is Value and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return f"Value(name={self.name!r}, dtype={self.dtype!r}, shape={self.shape!r}, kind={self.kind!r})"

    @property
    def rank(self):
        return None if self.shape is None else len(self.shape)

    @property
    def nbytes(self):
        """Static size in bytes, or ``None`` when shape or dtype is not static."""
        if not self.is_static or self.dtype not in DTYPE_BYTES:
            return None
        n = DTYPE_BYTES[self.dtype]
        for d in self.shape:
            n *= d
        return n

    @property
    def is_constant(self):
        return self.kind in ("initializer", "constant")


_NODE_FIELDS = ("index", "name", "op_type", "domain", "inputs", "outputs", "attrs", "since_version",
                "schema_known", "scope", "parent", "implicit_inputs")


class Node:
    """One ONNX NodeProto.

    Attributes
    ----------
    index : int
        Position in :attr:`Model.nodes`.
    name : str
        Unique name (generated as ``<OpType>_<index>`` when the model has none).
    op_type, domain : str
        ``domain`` is ``""`` for ai.onnx.
    inputs, outputs : tuple of str
        Tensor names (``""`` for a missing optional one).
    attrs : dict
        Attribute name -> value (ints, floats, strings, tuples; ``None`` for graphs).
    since_version : int or None
        Resolved schema version; ``None`` when the schema is unknown.
    schema_known : bool
    scope : str
        ``""`` for the main graph, else ``"<parent node name>/<attribute>"``.
    parent : int or None
        Index of the control-flow node whose subgraph holds this node.
    implicit_inputs : tuple
        For If/Loop/Scan: outer-scope tensors its subgraphs read.

    Read-only by convention (a plain slotted class, for the speed of building a
    million of them).  Equality and hash leave ``attrs`` out.

    Examples
    --------
    >>> n = Node(0, "conv1", "Conv", "", ("x", "w"), ("y",), {"group": 1}, 11)
    >>> n.qualified_op, n.scope, n.implicit_inputs
    ('Conv', '', ())
    >>> Node(3, "q", "QLinearConv", "com.microsoft", (), ()).qualified_op
    'com.microsoft:QLinearConv'
    """

    __slots__ = _NODE_FIELDS

    def __init__(self, index, name, op_type, domain, inputs, outputs, attrs=None, since_version=None,
                 schema_known=True, scope="", parent=None, implicit_inputs=()):
        self.index = index
        self.name = name
        self.op_type = op_type
        self.domain = domain
        self.inputs = inputs
        self.outputs = outputs
        self.attrs = {} if attrs is None else attrs
        self.since_version = since_version
        self.schema_known = schema_known
        self.scope = scope
        self.parent = parent
        self.implicit_inputs = implicit_inputs

    def _key(self):
        return (self.index, self.name, self.op_type, self.domain, self.inputs, self.outputs, self.since_version,
                self.schema_known, self.scope, self.parent, self.implicit_inputs)

    def __eq__(self, other):
        return other.__class__ is Node and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return "Node(" + ", ".join(f"{f}={getattr(self, f)!r}" for f in _NODE_FIELDS) + ")"

    @property
    def qualified_op(self):
        return f"{self.domain}:{self.op_type}" if self.domain else self.op_type


@dataclass
class Model:
    """A loaded model.

    Attributes
    ----------
    path, sha256 : str
    opsets : dict
        Domain -> opset version (``""`` for ai.onnx).
    nodes : list of Node
    values : dict of str -> Value
    producer : dict of str -> int
        Tensor name -> index of the node that produces it.
    consumers : dict of str -> list of int
        Tensor name -> indices of consuming nodes (implicit uses by control-flow
        nodes included), in node order, with repeats when a node reads it twice.
    graph_inputs, graph_outputs : list of str
        Of the main graph.
    scope_outputs : dict of str -> set of str
        Per scope, the tensors that leave it (graph outputs / subgraph outputs).
    warnings : list of str
    int_consts : dict
        Name -> tuple of ints, for small integer constants of every graph (unique names).
    scalar_consts : dict
        Name -> ``(dtype, value)`` for the one-element constants of the main graph (the scales
        and zero points ORT's QDQ selectors compare).
    op_schemas : dict
        ``(domain, op_type) -> OpSchemaInfo`` (or ``None``) of every op in the model, under
        its opsets: resolved once when the IR is built, so the matcher reads no schema library.
    """

    path: str
    sha256: str
    opsets: dict
    nodes: list
    values: dict
    producer: dict
    consumers: dict
    graph_inputs: list
    graph_outputs: list
    scope_outputs: dict = field(default_factory=dict)
    warnings: list = field(default_factory=list)
    op_schemas: dict = field(default_factory=dict, repr=False, compare=False)
    ir_version: int = 0  # the file's IR version (ORT refuses newer ones than it knows)
    #: domains of ``opsets`` the file does not import (ORT adds them itself, at the newest opset it knows)
    implied_opsets: frozenset = field(default_factory=frozenset, compare=False)
    #: int32/int64 constants of at most 64 elements of every graph (initializers and Constant nodes):
    #: name -> tuple of ints (the shapes and axes ORT's transpose optimizer reads)
    int_consts: dict = field(default_factory=dict, repr=False, compare=False)
    #: main-graph constants of one element (initializers and Constant nodes): name -> (dtype, value)
    scalar_consts: dict = field(default_factory=dict, repr=False, compare=False)
    _in_edges: list | None = field(default=None, repr=False)
    _out_edges: list | None = field(default=None, repr=False)
    _derived: dict = field(default_factory=dict, repr=False, compare=False)

    def derived(self, key, make):
        """What ``make()`` works out from this model, computed on first use and kept.

        The model is read-only once built, so structure the simulation reads again and
        again (per-graph members and edges, per-node match signatures, ...) is derived
        once per model, under a ``key`` naming it.
        """
        d = self._derived
        if key not in d:
            d[key] = make()
        return d[key]

    def value(self, name):
        return self.values.get(name) or Value(name)

    def node_inputs(self, node):
        """Explicit and implicit input tensor names of ``node`` (empty names skipped)."""
        return [t for t in node.inputs if t] + list(node.implicit_inputs)

    def _build_edges(self):
        producer = self.producer
        ins = []
        outs = [[] for _ in self.nodes]
        for node in self.nodes:
            i = node.index
            mine = []
            for t in node.inputs + node.implicit_inputs if node.implicit_inputs else node.inputs:
                p = producer.get(t) if t else None
                if p is not None:
                    mine.append((p, t))
                    outs[p].append((i, t))
            ins.append(mine)
        self._in_edges, self._out_edges = ins, outs

    def in_edges(self, i):
        """``(producer index, tensor)`` pairs feeding node ``i``, one per input port."""
        if self._in_edges is None:
            self._build_edges()
        return self._in_edges[i]

    def out_edges(self, i):
        """``(consumer index, tensor)`` pairs leaving node ``i``, one per consumer port."""
        if self._out_edges is None:
            self._build_edges()
        return self._out_edges[i]

    def scope_members(self):
        """Scope -> its node indices in topological order (main graph ``""`` first).  Cached."""
        return self.derived("scope_members", self._scope_members)

    def _scope_members(self):
        members = {}
        nodes = self.nodes
        for i in topological_order(self):
            members.setdefault(nodes[i].scope, []).append(i)
        return members

    def scope_edges(self, scope):
        """``(in_count, down)`` for the nodes of one graph (scope): per node, the number of its
        input edges from nodes of that graph, and the nodes of that graph it feeds (one entry
        per edge).  What ORT's partitioning wave walks.  Cached per scope."""
        return self.derived(("scope_edges", scope), lambda: self._scope_edges(scope))

    def _scope_edges(self, scope):
        members = self.scope_members().get(scope, [])
        if self._in_edges is None:
            self._build_edges()
        in_edges, out_edges = self._in_edges, self._out_edges
        in_count, down = {}, {}
        if len(members) == len(self.nodes):  # one graph: every edge stays inside it
            for r in members:
                in_count[r] = len(in_edges[r])
                down[r] = [c for c, _ in out_edges[r]]
        else:
            member_set = set(members)
            for r in members:
                in_count[r] = len([1 for p, _ in in_edges[r] if p in member_set])
                down[r] = [c for c, _ in out_edges[r] if c in member_set]
        return in_count, down

    def to_networkx(self):
        """The model as a ``networkx.MultiDiGraph``.

        Nodes are node names with attributes ``op_type, domain, since_version,
        scope``; one edge per (tensor, consumer port) with attributes
        ``tensor, dtype, shape, bytes, source_kind``.  Graph inputs and
        initializers are not nodes.

        Examples
        --------
        >>> import networkx as nx
        >>> G = model.to_networkx()          # doctest: +SKIP
        >>> nx.is_directed_acyclic_graph(G)  # doctest: +SKIP
        True
        """
        import networkx as nx

        G = nx.MultiDiGraph()
        for n in self.nodes:
            G.add_node(n.name, op_type=n.op_type, domain=n.domain,
                       since_version=n.since_version, scope=n.scope)
        for n in self.nodes:
            for p, t in self.in_edges(n.index):
                v = self.value(t)
                G.add_edge(self.nodes[p].name, n.name, tensor=t, dtype=v.dtype,
                           shape=v.shape, bytes=v.nbytes, source_kind=v.kind)
        return G
