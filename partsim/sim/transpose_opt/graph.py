"""Permutation algebra and the small mutable graph the optimizer edits.

ORT's ``ApiGraph`` (``onnxruntime/core/optimizer/transpose_optimization/ort_optimizer_api_impl.cc``) as
the layout transformation sees it: nodes, values, shapes, constants and the names ORT gives what it adds.
"""

from dataclasses import dataclass, field

from ..names import NameGenerator


QNN = "QNNExecutionProvider"  # kQnnExecutionProvider: the EP EPAwareHandleReshape special-cases


def invert(perm):
    inv = [0] * len(perm)
    for k, p in enumerate(perm):
        inv[p] = k
    return tuple(inv)


def compose(perm1, perm2):
    """ComposePerm: transposing by perm1 then perm2."""
    return tuple(perm1[p] for p in perm2)


def channel_last_to_first(rank):
    if rank < 2:
        return ()
    return (0, rank - 1) + tuple(range(1, rank - 1))


def channel_first_to_last(rank):
    return invert(channel_last_to_first(rank)) if rank >= 2 else ()


def _is_identity(perm):
    return all(p == k for k, p in enumerate(perm))


def _valid_perm(perm):
    return perm is not None and sorted(perm) == list(range(len(perm)))


def _norm_axes(axes, rank):
    out = []
    for a in axes:
        a = a + rank if a < 0 else a
        if not 0 <= a < rank or a in out:
            return None
        out.append(a)
    return out


def _sorted_axes_for_transposed(axes, perm):
    return sorted({perm[a] for a in axes})


def _squeeze_perm(axes, perm):
    removed = set(axes)
    amap, j = {}, 0
    for i in range(len(perm)):
        if i not in removed:
            amap[i] = j
            j += 1
    return tuple(amap[p] for p in perm if p not in removed)


def _unsqueeze_perm(axes, perm):
    new_rank = len(perm) + len(axes)
    added = set(axes)
    amap = [i for i in range(new_rank) if i not in added]
    out, j = [], 0
    for i in range(new_rank):
        if i in added:
            out.append(i)
        else:
            out.append(amap[perm[j]])
            j += 1
    return tuple(out)


def _unsqueeze_shape(shape, axes):
    if shape is None:
        return None
    new_rank = len(shape) + len(axes)
    out, j = [], 0
    for i in range(new_rank):
        if i in axes:
            out.append(1)
        else:
            out.append(shape[j])
            j += 1
    return tuple(out)


def _permute(shape, perm):
    if shape is None or len(shape) != len(perm):
        return shape if shape is None else None
    return tuple(shape[p] for p in perm)


def _rank_estimate(shape):
    """EstimateValueRank: dimensions other than 1, 5 when the shape is unknown."""
    if shape is None:
        return 5
    return sum(1 for d in shape if d != 1)


@dataclass
class ONode:
    id: int
    name: str
    op: str
    domain: str
    inputs: list
    outputs: list
    attrs: dict
    ep: object = None  # provider; None while unassigned
    orig: object = None  # model node index, None for nodes ORT adds
    since: object = None
    alive: bool = True


@dataclass
class OptGraph:
    """The main graph as ORT's ``ApiGraph`` sees it during the layout transformation."""

    opset: int
    nodes: dict = field(default_factory=dict)
    shapes: dict = field(default_factory=dict)  # value -> shape tuple or None
    dtypes: dict = field(default_factory=dict)
    consts: set = field(default_factory=set)  # constant initializers (GetLocalConstant)
    data: dict = field(default_factory=dict)  # constant -> int values, where known
    graph_outputs: set = field(default_factory=set)
    implicit: set = field(default_factory=set)  # values a subgraph reads (GetValueConsumers: not comprehensive)
    producer: dict = field(default_factory=dict)
    users: dict = field(default_factory=dict)  # value -> [node id] (one entry per consuming node)
    names: NameGenerator = field(default_factory=NameGenerator)  # graph.cc's generator, seeded by the caller
    next_id: int = 0

    # --- names (graph.cc) ---
    def node_name(self, base):
        return self.names.node_name(base)

    def arg_name(self, base):
        return self.names.arg_name(base)

    # --- structure ---
    def add(self, name, op, domain, inputs, outputs, attrs, ep=None, orig=None, since=None):
        i = self.next_id
        self.next_id += 1
        self.nodes[i] = ONode(i, name, op, domain, list(inputs), list(outputs), dict(attrs), ep, orig, since)
        for t in outputs:
            if t:
                self.producer[t] = i
        for t in dict.fromkeys(inputs):  # in input order: GetConsumerNodes keeps insertion order
            if t:
                self.users.setdefault(t, []).append(i)
        return i

    def consumers(self, t):
        """(consumer node ids, comprehensive): not comprehensive for a graph output."""
        return ([c for c in self.users.get(t, ()) if self.nodes[c].alive],
                t not in self.graph_outputs and t not in self.implicit)

    def has_consumers(self, t):
        return bool(self.consumers(t)[0]) or t in self.graph_outputs or t in self.implicit

    def prod(self, t):
        p = self.producer.get(t) if t else None
        return p if p is not None and self.nodes[p].alive else None

    def set_input(self, i, k, t):
        nd = self.nodes[i]
        while k >= len(nd.inputs):
            nd.inputs.append("")
        old = nd.inputs[k]
        nd.inputs[k] = t
        if old and old not in nd.inputs and i in self.users.get(old, ()):
            self.users[old].remove(i)
        if t and i not in self.users.setdefault(t, []):
            self.users[t].append(i)

    def remove(self, i):
        nd = self.nodes[i]
        nd.alive = False
        for t in set(nd.inputs):
            if t and i in self.users.get(t, ()):
                self.users[t].remove(i)

    def add_node(self, op, inputs, n_out=1, domain="", attrs=None):
        """ApiGraph::AddNode (CreateNodeHelper): named after the op type, outputs ``<name>_out<i>``."""
        name = self.node_name(op)
        outs = [self.arg_name(f"{name}_out{k}") for k in range(n_out)]
        return self.add(name, op, domain, inputs, outs, attrs or {})

    def copy_node(self, i, op, domain):
        """ApiGraph::CopyNode as ORT 1.31 does it: the copy is named after the source node."""
        src = self.nodes[i]
        name = self.node_name(src.name)
        outs = [self.arg_name(f"{name}_out{k}") for k in range(len(src.outputs))]
        return self.add(name, op, domain, src.inputs, outs, src.attrs, src.ep, src.orig, src.since)

    def move_output(self, src, si, dst, di):
        s, d = self.nodes[src], self.nodes[dst]
        t = s.outputs[si]
        d.outputs[di] = t
        self.producer[t] = dst
        new = self.arg_name(s.name)
        s.outputs[si] = new
        self.producer[new] = src
        return new

    def add_initializer(self, shape, values=None):
        name = self.arg_name("const_transpose_optimizer")
        self.consts.add(name)
        self.shapes[name] = tuple(shape)
        if values is not None:
            self.data[name] = tuple(values)
        return name

    def copy_info(self, src, dst):
        self.shapes[dst] = self.shapes.get(src)
        if src in self.dtypes:
            self.dtypes[dst] = self.dtypes[src]

    def shape(self, t):
        return self.shapes.get(t)

    def is_const(self, t):
        return t in self.consts and t not in self.producer

    def const_numel(self, t):
        s = self.shapes.get(t)
        if s is None or not all(isinstance(d, int) for d in s):
            return None
        n = 1
        for d in s:
            n *= d
        return n

    def replace_refs(self, ids, old, new):
        for c in ids:
            for k, t in enumerate(list(self.nodes[c].inputs)):
                if t == old:
                    self.set_input(c, k, new)

    def ints(self, t):
        return self.data.get(t) if t else None


