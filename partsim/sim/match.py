"""Does a provider's rule table accept a node?  ORT's kernel match, plus predicates.

The version rule is ORT's (``KernelRegistry::VerifyKernelDef`` in
``onnxruntime/core/framework/kernel_registry.cc``): a kernel registered for
``[start, end]`` matches a node whose schema ``since_version`` lies in that range,
except that an open-ended kernel (``end`` = INT_MAX, ``null`` here) matches only
``since_version == start``.  Type constraints are checked per formal parameter,
as ORT does, with the node's inferred dtypes (unknown dtypes do not veto).
"""


__all__ = ["Matcher", "Rejection", "accepts_other_dtypes", "accepts_dtypes"]

# order in which a failing rule's reasons are reported (earliest check first)
_ORDER = ("op_not_in_table", "opset_version", "dtype", "dynamic_shape", "rank", "attribute",
          "non_constant_input")


class Rejection(tuple):
    """``(category, detail)``; category is one of docs/contract.md §3's reason names."""

    __slots__ = ()

    def __new__(cls, category, detail):
        return tuple.__new__(cls, (category, detail))

    @property
    def category(self):
        return self[0]

    @property
    def detail(self):
        return self[1]


def _version_ok(rule, since):
    if rule.versions is None or since is None:
        return True
    lo, hi = rule.versions
    if hi is None:
        return since == lo
    return lo <= since <= hi


def _dtype_of(model, name):
    return model.value(name).dtype if name else None


def _check_types(rule, node, model):
    """``None`` or a Rejection for a port whose dtype the rule does not allow."""
    if not rule.types:
        return None
    schema = None
    for key, allowed in sorted(rule.types.items()):
        if len(key) >= 2 and key[0] in "io" and key[1:].isdigit():
            ports = [(key[0], int(key[1:]))]
        else:
            if schema is None:
                schema = model.op_schemas.get((node.domain, node.op_type))
                if schema is None:
                    return None  # unknown schema: dtypes cannot be bound to constraints
            ports = list(schema.ports_of(key, len(node.inputs), len(node.outputs)))
        for kind, k in ports:
            seq = node.inputs if kind == "i" else node.outputs
            if k >= len(seq):  # an optional port the node leaves out
                continue
            name = seq[k]
            dt = _dtype_of(model, name)
            if dt is not None and dt not in allowed:
                port = f"input {k}" if kind == "i" else f"output {k}"
                return Rejection("dtype", f"{port} is {dt}; {key} allows {', '.join(sorted(allowed))}")
    return None


def accepts_dtypes(rule, node, model):
    """Whether ``rule``'s dtype constraints take ``node``'s tensors (an unknown dtype does not refuse)."""
    return _check_types(rule, node, model) is None


def _attr_ok(cond, node, rank=None):
    """``None`` when ``node`` meets the attribute condition ``cond``, else why not; ``rank`` is the
    rank of input 0 (for ``last_axis``; unknown: the condition holds)."""
    c = dict(cond)
    name = c["name"]
    present = name in node.attrs
    value = node.attrs.get(name, c.get("default"))
    if c.get("absent") is True and present:
        return f"attribute {name} must be absent"
    if c.get("absent") is False and not present:
        return f"attribute {name} is required"
    if value is None:
        return None
    if "in" in c and value not in c["in"]:
        return f"{name}={value!r} not in {list(c['in'])}"
    if "not_in" in c and value in c["not_in"]:
        return f"{name}={value!r} is not supported"
    # min/max bound a number, or each number of a list (dilations: max 1)
    numbers = value if isinstance(value, tuple) and all(isinstance(v, (int, float)) for v in value) else (
        (value,) if isinstance(value, (int, float)) else ())
    if "min" in c and any(v < c["min"] for v in numbers):
        return f"{name}={value!r} below {c['min']}"
    if "max" in c and any(v > c["max"] for v in numbers):
        return f"{name}={value!r} above {c['max']}"
    if c.get("last_axis") and isinstance(value, int) and rank and value not in (rank - 1, -1):
        return f"{name}={value} is not the last axis (rank {rank})"
    if c.get("symmetric_pads") and isinstance(value, tuple) and len(value) % 2 == 0:
        h = len(value) // 2
        if tuple(value[:h]) != tuple(value[h:]):
            return f"{name}={list(value)} is asymmetric"
    return None


def _check_rule(rule, node, model):
    """``None`` when ``rule`` accepts ``node``, else ``(category, detail, port)``: when ``port``
    is not None, ``detail`` is a template whose ``{t}`` is the name of input ``port``."""
    if not _version_ok(rule, node.since_version):
        lo, hi = rule.versions
        rng = f"[{lo}, {hi}]" if hi is not None else f"{lo} (open-ended: exact match only)"
        return "opset_version", f"schema version {node.since_version}, table has {rng}", None
    bad = _check_types(rule, node, model)
    if bad:
        return bad[0], bad[1], None
    if rule.dtype_pairs is not None and node.inputs and node.outputs:
        pair = (_dtype_of(model, node.inputs[0]), _dtype_of(model, node.outputs[0]))
        if None not in pair and pair not in rule.dtype_pairs:
            return "dtype", f"{pair[0]} -> {pair[1]} is not a supported dtype pair", None
    if rule.static_shape:
        for k, t in enumerate(node.inputs):
            if t and not model.value(t).is_static:
                return "dynamic_shape", "input {t} has no static shape", k
    if rule.static_outputs:
        for t in node.outputs:
            if t and not model.value(t).is_static:
                return "dynamic_shape", "an output has no static shape", None
    if rule.min_inputs is not None:
        given = sum(1 for t in node.inputs if t)
        if given < rule.min_inputs:
            return "attribute", f"{given} input(s) given; the provider needs at least {rule.min_inputs}", None
    if rule.max_inputs is not None:
        late = [k for k, t in enumerate(node.inputs) if t and k >= rule.max_inputs]
        if late:
            return "attribute", f"input {late[0]} is given; the provider takes inputs 0..{rule.max_inputs - 1} only", None
    if rule.max_outputs is not None:
        used = sum(1 for t in node.outputs if t)
        if used > rule.max_outputs:
            return "attribute", f"{used} outputs used; the provider builds at most {rule.max_outputs}", None
    if rule.min_rank is not None or rule.max_rank is not None:
        idx = rule.rank_inputs if rule.rank_inputs is not None else range(len(node.inputs))
        for k in idx:
            if k >= len(node.inputs) or not node.inputs[k]:
                continue
            r = model.value(node.inputs[k]).rank
            if r is None:
                continue
            if rule.max_rank is not None and r > rule.max_rank:
                return "rank", f"input {k} has rank {r} > {rule.max_rank}", None
            if rule.min_rank is not None and r < rule.min_rank:
                return "rank", f"input {k} has rank {r} < {rule.min_rank}", None
    for cond in rule.attrs:
        why = _attr_ok(cond, node, model.value(node.inputs[0]).rank if node.inputs and node.inputs[0] else None)
        if why:
            return "attribute", why, None
    for k in rule.const_inputs:
        if k < len(node.inputs) and node.inputs[k] and not _constant_or_empty(model.value(node.inputs[k])):
            return "non_constant_input", f"input {k} ({{t}}) must be a constant initializer", k
    return None


def accepts_other_dtypes(table, node, model):
    """The first rule of ``table`` for ``node``'s op that accepts it once its dtype lists are set aside
    (QNN's passthrough ops on quantized tensors, :mod:`partsim.sim.qnn_tensors`), or ``None``."""
    from dataclasses import replace

    for rule in table.rules_for(node.domain, node.op_type):
        if rule.layout_refusal:
            continue
        loose = replace(rule, types={}, dtype_pairs=None)
        if _check_rule(loose, node, model) is None:
            return rule
    return None


class _OpEntry:
    """What one table needs to know about a node of one ``(domain, op)`` to judge it."""

    __slots__ = ("rules", "missing", "static", "static_out", "rank", "const", "shaped", "attr_names")

    def __init__(self, table, node):
        self.rules = rules = table.rules_for(node.domain, node.op_type)
        self.missing = None if rules else (
            None, Rejection("op_not_in_table", f"{node.qualified_op} is not in the {table.provider} table"))
        self.static = any(r.static_shape for r in rules)
        self.static_out = any(r.static_outputs for r in rules)
        self.rank = any(r.min_rank is not None or r.max_rank is not None for r in rules)
        self.const = any(r.const_inputs for r in rules)
        self.shaped = self.static or self.rank or self.const or self.static_out
        names = []
        for r in rules:
            for cond in r.attrs:
                name = dict(cond)["name"]
                if name not in names:
                    names.append(name)
        self.attr_names = tuple(names)


def _signatures(model):
    """Per node: the number of its signature ``(domain, op, since_version, input dtypes, "|", output dtypes)``
    among the model's distinct ones (a memo key hashes an int, not nested tuples), cached."""
    return model.derived("match.signatures", lambda: _work_out_signatures(model))


def _work_out_signatures(model):
    dtype_of = {name: v.dtype for name, v in model.values.items()}
    dtype_of[""] = ""  # a missing optional port; a name the model does not define has no dtype (None)
    get = dtype_of.get
    sigs = []
    number = {}  # distinct signature -> its number: a million nodes share a few thousand
    for node in model.nodes:
        sig = (node.domain, node.op_type, node.since_version, tuple(map(get, node.inputs)), "|",
               tuple(map(get, node.outputs)))
        sigs.append(number.setdefault(sig, len(number)))
    return sigs


def _shape_facts(model, node):
    """``(first input without a static shape or -1, input ranks, input constness)``."""
    values = model.values
    ranks, consts = [], []
    first_dynamic = -1
    for k, t in enumerate(node.inputs):
        v = values.get(t) if t else None
        if v is None:
            ranks.append(None)
            consts.append(not t)
            if t and first_dynamic < 0:
                first_dynamic = k  # an unknown tensor has no static shape
            continue
        ranks.append(None if v.shape is None else len(v.shape))
        consts.append(_constant_or_empty(v))
        if first_dynamic < 0 and not v.is_static:
            first_dynamic = k
    return first_dynamic, tuple(ranks), tuple(consts)


def _constant_or_empty(v):
    """A constant input, or one of a static shape with no element: it carries no values to wait for
    (QNN's Reduce* builders take an empty ``axes`` fed at run time as the default axes,
    onnxruntime-qnn ``builder/opbuilder/reduce_op_builder.cc`` GetAxesSet)."""
    return v.kind in ("initializer", "constant") or (v.is_static and 0 in v.shape)


def _outputs_static(model, node):
    get = model.values.get
    return all((v := get(t)) is not None and v.is_static for t in node.outputs if t)


def _render(verdict, node):
    rule, category, detail, port = verdict
    if rule is not None:
        return rule, None
    if port is not None:
        detail = detail.format(t=repr(node.inputs[port]))
    return None, Rejection(category, detail)


class Matcher:
    """Judges the nodes of one model against one table: ``match(node)`` returns
    ``(OpRule, None)``, the first rule that accepts the node, or ``(None, Rejection)``,
    the most telling rejection (the one that failed latest in the check order).

    Verdicts are memoized, keyed by exactly what the op's rules read: the schema
    version, port dtypes, and -- only when some rule asks -- the first input without a
    static shape, input ranks, input constness and the named attributes.  Big models
    repeat the same few hundred such keys thousands of times.
    """

    def __init__(self, table, model):
        self.table = table
        self.model = model
        self.entries = {}  # (domain, op) -> _OpEntry
        self.memo = {}  # key -> match's answer, or (rule, category, detail, port) when the detail names a port
        self.sigs = _signatures(model)
        self.forced = table.partitioning.get("force_cpu_node_names")  # WebGPU's forceCpuNodeNames
        # per node, filled on first need, and one tuple per distinct facts (shared by all tables)
        self.facts, self.same_facts = model.derived("match.shape_facts", lambda: ([None] * len(model.nodes), {}))

    @classmethod
    def of(cls, table, model):
        """The matcher of ``(table, model)``, kept on the model for re-simulations."""
        held = model.derived("match.matchers", dict)
        m = held.get(id(table))
        if m is None or m.table is not table:  # the matcher holds its table, so the id is not reused
            m = held[id(table)] = cls(table, model)
        return m

    def match(self, node):
        forced = self.forced
        if forced and node.name in forced:  # WebGPU's forceCpuNodeNames (rules/ep_options.py)
            return None, Rejection("cpu_preferred", "named in the provider option forceCpuNodeNames")
        entry = self.entries.get((node.domain, node.op_type))
        if entry is None:
            entry = self.entries[(node.domain, node.op_type)] = _OpEntry(self.table, node)
        if entry.missing is not None:
            return entry.missing
        i = node.index
        if entry.shaped:
            facts = self.facts[i]
            if facts is None:
                facts = _shape_facts(self.model, node)
                facts = self.facts[i] = self.same_facts.setdefault(facts, facts)
            key = (self.sigs[i], facts[0] if entry.static else None, facts[1] if entry.rank else None,
                   facts[2] if entry.const else None, _outputs_static(self.model, node) if entry.static_out else None)
        else:
            key = self.sigs[i]
        if entry.attr_names:
            attrs = node.attrs
            key = (key,) + tuple([(n in attrs, attrs.get(n)) for n in entry.attr_names])
        memo = self.memo
        try:
            hit = memo.get(key)
        except TypeError:  # a tensor-valued attribute: judge this node on its own
            key = hit = None
        if hit is not None:  # the answer itself, or a verdict whose detail names this node's input
            return hit if len(hit) == 2 else _render(hit, node)
        best = None
        verdict = None
        model = self.model
        for rule in entry.rules:
            why = _check_rule(rule, node, model)
            if why is None:
                verdict = (rule, None, None, None)
                break
            if best is None or _ORDER.index(why[0]) > _ORDER.index(best[0]):
                best = why
        if verdict is None:
            verdict = (None,) + best
        answer = _render(verdict, node)
        if key is not None:
            memo[key] = answer if verdict[3] is None else verdict
        return answer
