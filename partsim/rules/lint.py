"""``partsim lint``: check capability rule tables against the operator schemas.

A table can be valid against ``rules.schema.json`` and still be wrong: an op that no
schema knows, a version range that starts where the op never changed, a dtype the op
cannot carry, an attribute the op does not have, two rules that say the same thing.
:func:`lint_file` reports each such problem as a :class:`Finding` with a rule id, a level
(``error`` or ``warning``), the file and the 1-based line of the offending field.

Rule ids (:data:`RULES` has the one-line description of each):

``unreadable`` (raised, not reported), ``yaml``, ``schema``, ``unknown-key``, ``missing-source``,
``unversioned-source``, ``unknown-provider``, ``alias-conflict``, ``unknown-domain``,
``unknown-op``, ``empty-version-range``, ``version-not-since``, ``version-before-op``,
``unknown-type-constraint``, ``unknown-port``, ``dtype-outside-constraint``,
``unknown-dtype``, ``unknown-attribute``, ``contradictory-predicate``, ``duplicate-rule``,
``overlapping-rules``, ``contradicting-rules``, ``unknown-partition-op``.

Schemas come from ``onnx.defs`` (every version) and, for ORT's own domains, the
snapshot ``partsim/data/contrib_schemas.json``; ORT also registers a few ops in the
ONNX domain that ONNX itself does not have (:data:`ORT_ONNX_DOMAIN_EXTRAS`).  Where a
schema lacks a fact (the contrib snapshot has no attribute names), that check is skipped
for the op rather than guessed.
"""

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ..errors import RuleTableError
from ..ir.schemas import _contrib, normalize_domain

__all__ = ["Finding", "RULES", "LEVELS", "lint_file", "lint_text", "lint_paths", "ORT_ONNX_DOMAIN_EXTRAS"]

RULES = {
    "yaml": "the file is not valid YAML (or uses anchors/aliases, or nests too deep)",
    "schema": "the table does not validate against partsim/data/rules.schema.json",
    "unknown-key": "a key the table format does not have (a typo: the message names the closest known key)",
    "missing-source": "the table does not say where its facts come from",
    "unversioned-source": "the table's source.version names no version (no digit in it)",
    "unknown-provider": "the provider is not an execution provider ORT knows",
    "alias-conflict": "an alias already names another provider",
    "unknown-domain": "no operator schema is known in the rule's domain",
    "unknown-op": "the op does not exist in its domain (ONNX or ORT schemas)",
    "empty-version-range": "a version range whose end is below its start",
    "version-not-since": "a version range starts at a version where the op's schema did not change",
    "version-before-op": "a version range ends before the op's first schema version",
    "unknown-type-constraint": "a types key that is neither a type constraint of the op nor a port",
    "unknown-port": "a port (iK/oK) the op does not have",
    "dtype-outside-constraint": "a dtype the op's type constraint does not allow in that version range",
    "unknown-dtype": "a dtype name ONNX does not have",
    "unknown-attribute": "a predicate on an attribute the op does not have",
    "contradictory-predicate": "a predicate no node can satisfy (min above max, in and not_in overlap, …)",
    "duplicate-rule": "a rule identical to an earlier one",
    "overlapping-rules": "rules with the same predicates whose version ranges overlap",
    "contradicting-rules": "rules that match the same nodes but disagree on host memory or layout",
    "unknown-partition-op": "a partitioning option names an op no schema knows",
}

LEVELS = {
    "yaml": "error", "schema": "error", "unknown-key": "error", "missing-source": "error", "unversioned-source": "warning",
    "unknown-provider": "error", "alias-conflict": "error", "unknown-domain": "error",
    "unknown-op": "error", "empty-version-range": "error", "version-not-since": "error",
    "version-before-op": "error", "unknown-type-constraint": "error", "unknown-port": "error",
    "dtype-outside-constraint": "error", "unknown-dtype": "error", "unknown-attribute": "error",
    "contradictory-predicate": "error", "duplicate-rule": "warning", "overlapping-rules": "warning",
    "contradicting-rules": "error", "unknown-partition-op": "warning",
}

# Ops ORT registers in the ONNX domain that onnx 1.23.2 does not have (read from onnxruntime 1.31.1
# ``onnxruntime.capi._pybind_state.get_all_operator_schema()``, domain "", minus onnx.defs).
# op -> (since versions, attribute names).  Their type constraints are not recorded: dtypes unchecked.
ORT_ONNX_DOMAIN_EXTRAS = {
    "Affine": ((1, 10), ("alpha", "beta")),
    "Crop": ((1, 10), ("border", "scale")),
    "DisentangledAttention_TRT": ((1,), ("factor", "span")),
    "DynamicSlice": ((1, 10), ()),
    "EfficientNMS_TRT": ((1,), ("background_class", "box_coding", "iou_threshold", "max_output_boxes",
                                "plugin_version", "score_activation", "score_threshold")),
    "GRUUnit": ((1, 10), ("drop_states",)),
    "GivenTensorFill": ((1, 10), ("extra_shape", "input_as_shape", "shape", "values")),
    "ImageScaler": ((1, 10), ("bias", "scale")),
    "LayerNormalization": ((1,), ("axis", "epsilon", "stash_type")),
    "MeanVarianceNormalization": ((1,), ("across_channels", "normalize_variance")),
    "MemcpyFromHost": ((1,), ()),
    "MemcpyToHost": ((1,), ()),
    "MultilevelCropAndResize_TRT": ((1,), ("image_size", "plugin_version", "pooled_size")),
    "ParametricSoftplus": ((1, 10), ("alpha", "beta")),
    "PyramidROIAlign_TRT": ((1,), ("plugin_version", "pooled_size")),
    "Scale": ((1, 10), ("scale",)),
    "ScaledTanh": ((1, 10), ("alpha", "beta")),
    "SimplifiedLayerNormalization": ((1,), ("axis", "epsilon", "stash_type")),
    "ThresholdedRelu": ((1,), ("alpha",)),
}

# dtype names partsim tables use (ONNX TensorProto names as in ``tensor(...)``)
KNOWN_DTYPES = frozenset((
    "float", "float16", "bfloat16", "double", "int8", "int16", "int32", "int64", "uint8", "uint16",
    "uint32", "uint64", "bool", "string", "complex64", "complex128", "float8e4m3fn", "float8e4m3fnuz",
    "float8e5m2", "float8e5m2fnuz", "float8e8m0", "uint4", "int4", "float4e2m1", "int2", "uint2"))


@dataclass(frozen=True, order=True)
class Finding:
    """One problem in one file: ``file:line: level[rule] message`` (``line`` None: the whole file, as
    ``partsim check`` reports a model)."""

    file: str
    line: int | None
    rule: str
    level: str
    message: str

    def as_dict(self):
        return {"file": self.file, "line": self.line, "rule": self.rule, "level": self.level,
                "message": self.message}


class _Schema:
    """Every version of one op: since versions, and per version its ports/constraints/attributes."""

    def __init__(self):
        self.versions = {}  # since -> dict(inputs, outputs, constraints, attrs or None)

    @property
    def since(self):
        return sorted(self.versions)

    def in_range(self, lo, hi):
        """Schema versions a rule [lo, hi] (hi None: exactly lo) can match."""
        if hi is None:
            return [v for v in self.since if v == lo]
        return [v for v in self.since if lo <= v <= hi]


@lru_cache(maxsize=1)
def _schemas():
    import onnx.defs

    out = {}
    variadic = onnx.defs.OpSchema.FormalParameterOption.Variadic
    for s in onnx.defs.get_all_schemas_with_history():
        sch = out.setdefault((normalize_domain(s.domain), s.name), _Schema())
        sch.versions[s.since_version] = {
            "inputs": [(p.type_str, p.option == variadic) for p in s.inputs],
            "outputs": [(p.type_str, p.option == variadic) for p in s.outputs],
            "constraints": {tc.type_param_str: frozenset(_norm(t) for t in tc.allowed_type_strs)
                            for tc in s.type_constraints},
            # ORT's kernel defs may name a formal parameter instead of its constraint (Reshape "shape")
            "names": {p.name: p.type_str for p in list(s.inputs) + list(s.outputs)},
            "attrs": frozenset(s.attributes),
        }
    for key, by_version in _contrib().items():
        domain, _, op = key.partition(":")
        sch = out.setdefault((normalize_domain(domain), op), _Schema())
        for v, entry in by_version.items():
            sch.versions[int(v)] = {
                "inputs": [tuple(p) for p in entry["inputs"]],
                "outputs": [tuple(p) for p in entry["outputs"]],
                "constraints": {k: frozenset(_norm(t) for t in ts) for k, ts in entry["constraints"].items()},
                "attrs": None,  # the snapshot does not record attributes
                "names": None,  # nor parameter names
            }
    for op, (versions, attrs) in ORT_ONNX_DOMAIN_EXTRAS.items():
        sch = out.setdefault(("", op), _Schema())
        for v in versions:
            sch.versions.setdefault(v, {"inputs": None, "outputs": None, "constraints": None,
                                        "attrs": frozenset(attrs), "names": None})
    return out


@lru_cache(maxsize=1)
def _domains():
    return frozenset(d for d, _ in _schemas())


def _known_dtype(t):
    if t.startswith("map(") and t.endswith(")") and "," in t:
        key, _, value = t[4:-1].partition(",")
        return key in KNOWN_DTYPES and _known_dtype(value)
    for wrap in ("seq(", "optional(", "sparse_tensor("):
        if t.startswith(wrap) and t.endswith(")"):
            return _known_dtype(t[len(wrap):-1])
    return t in KNOWN_DTYPES


def _norm(t):
    """``tensor(float)`` -> ``float``; inside maps too (ORT writes ``map(int64,tensor(float))``, ONNX
    ``map(int64, float)``), without spaces."""
    import re

    t = str(t).replace(" ", "")
    while True:
        u = re.sub(r"(?<![a-z_])tensor\(([a-z0-9_]+)\)", r"\1", t)
        if u == t:
            return t
        t = u


def _range_text(lo, hi):
    return f"[{lo}, {'null' if hi is None else hi}]"


class _Linter:
    def __init__(self, path, text):
        self.path = str(path)
        self.text = text
        self.findings = []
        self.lines = {}

    def add(self, rule, where, message, line=None):
        if line is None:
            line = self.line(where)
        self.findings.append(Finding(self.path, int(line or 1), rule, LEVELS[rule], message))

    def line(self, where):
        where = tuple(where)
        while where and where not in self.lines:
            where = where[:-1]
        return self.lines.get(where, 1)

    # ------------------------------------------------------------------------------------------
    def run(self):
        from .load import _compose, table_schema
        from .schema_errors import schema_problems
        import jsonschema

        try:
            data, self.lines = _compose(self.text, self.path)
        except RuleTableError as exc:
            self.findings.append(Finding(self.path, int(exc.line or 1), "yaml", "error", exc.message))
            return self.findings
        if not isinstance(data, dict):
            self.add("schema", (), "a rule table must be a mapping")
            return self.findings
        validator = jsonschema.Draft202012Validator(table_schema())
        self.invalid = set()  # (key,) and (key, index) prefixes with a schema error: not checked further
        for e in validator.iter_errors(data):
            path = tuple(e.absolute_path)
            self.invalid.add(path[:2])
            self.invalid.add(path[:1])
            if e.validator == "required" and not path and "'source'" in e.message:
                self.add("missing-source", (), "no 'source': say where the facts come from, with a version",
                         line=1)
                continue
            for where, message in schema_problems(e):
                self.add("unknown-key" if "unknown key" in message and e.validator == "additionalProperties"
                         else "schema", where, message)
        self._top(data)
        ops = data.get("ops")
        if isinstance(ops, list):
            self._ops(data, ops)
        return self.findings

    def _top(self, data):
        from .providers import ALIASES, KNOWN_PROVIDERS

        provider = data.get("provider")
        if isinstance(provider, str) and provider not in KNOWN_PROVIDERS:
            self.add("unknown-provider", ("provider",),
                     f"provider {provider!r} is not an execution provider ORT knows")
        aliases = data.get("aliases")
        for i, alias in enumerate(aliases if isinstance(aliases, list) else ()):  # a scalar: a schema finding
            if isinstance(alias, str) and ALIASES.get(alias, provider) != provider:
                self.add("alias-conflict", ("aliases", i),
                         f"alias {alias!r} already names {ALIASES[alias]}, not {provider}")
        src = data.get("source")
        if isinstance(src, dict):
            version = src.get("version")
            if isinstance(version, str) and version and not any(c.isdigit() for c in version):
                self.add("unversioned-source", ("source", "version"),
                         f"source.version {version!r} names no version")
        part = data.get("partitioning")
        if isinstance(part, dict) and ("partitioning",) not in self.invalid:
            for key in ("stop_ops", "reject_single_ops"):
                for i, op in enumerate(part.get(key) or ()):
                    if isinstance(op, str) and not any(o == op for _, o in _schemas()):
                        self.add("unknown-partition-op", ("partitioning", key, i),
                                 f"partitioning.{key} names {op!r}, which no schema knows")

    # ------------------------------------------------------------------------------------------
    def _ops(self, data, ops):
        schemas = _schemas()
        seen = {}  # (domain, op) -> [(index, rule dict)]
        for i, r in enumerate(ops):
            if not isinstance(r, dict) or not isinstance(r.get("op"), str) or ("ops", i) in self.invalid:
                continue  # a rule the schema refused is reported as such, not checked further
            domain = r.get("domain", "")
            if not isinstance(domain, str):
                continue
            domain = normalize_domain(domain)
            op = r["op"]
            here = ("ops", i)
            label = f"{domain + ':' if domain else ''}{op}"
            versions = r.get("versions")
            lo = hi = None
            if isinstance(versions, list) and len(versions) == 2 and isinstance(versions[0], int) \
                    and (versions[1] is None or isinstance(versions[1], int)):
                lo, hi = versions
                if hi is not None and hi < lo:
                    self.add("empty-version-range", here + ("versions",),
                             f"{label}: version range {_range_text(lo, hi)} is empty")
                    lo = None
            self._predicates(r, here, label)
            seen.setdefault((domain, op), []).append((i, r))
            sch = schemas.get((domain, op))
            if sch is None:
                if domain not in _domains():
                    self.add("unknown-domain", here + ("domain",) if "domain" in r else here,
                             f"{label}: no operator schema is known in domain {domain!r}")
                else:
                    self.add("unknown-op", here + ("op",),
                             f"{label}: no such op in {'ai.onnx' if not domain else domain} "
                             "(onnx.defs / ORT schemas)")
                continue
            matched = sch.since
            if lo is not None:
                matched = sch.in_range(lo, hi)
                if lo not in sch.versions:
                    if hi is not None and hi < sch.since[0]:
                        self.add("version-before-op", here + ("versions",),
                                 f"{label}: range {_range_text(lo, hi)} ends before the op's first version "
                                 f"{sch.since[0]}")
                        continue
                    self.add("version-not-since", here + ("versions",),
                             f"{label}: range {_range_text(lo, hi)} starts at {lo}, which is not a "
                             f"since_version of the op (those are {', '.join(map(str, sch.since))})")
                    if not matched:
                        continue
            self._types(r, here, label, sch, matched)
            self._attrs(r, here, label, sch, matched)
        self._pairs(seen)

    def _types(self, r, here, label, sch, matched):
        types = r.get("types")
        if not isinstance(types, dict):
            return
        entries = [sch.versions[v] for v in matched]
        if any(e["constraints"] is None for e in entries):
            return  # schema without type facts
        every = [sch.versions[v] for v in sch.since if sch.versions[v]["constraints"] is not None]
        for key, dtypes in types.items():
            if not isinstance(dtypes, list):
                continue
            where = here + ("types", key)
            port = len(key) >= 2 and key[0] in "io" and key[1:].isdigit()
            covered = self._allowed(key, port, entries)
            if covered is None:
                if any(e["names"] is None for e in entries):
                    continue  # ORT snapshot without parameter names: cannot tell
                if port:
                    self.add("unknown-port", where, f"{label}: the op has no {'input' if key[0] == 'i' else 'output'} "
                             f"{key[1:]} in the versions this rule covers")
                else:
                    names = sorted({c for e in entries for c in e["constraints"]})
                    self.add("unknown-type-constraint", where,
                             f"{label}: {key!r} is neither a type constraint of the op "
                             f"({', '.join(names) or 'none'}), a parameter name, nor a port iK/oK")
                continue
            # ORT's kernel registrations list types beyond the schema (Identity registers
            # seq(tensor(bfloat16)), Scatter bfloat16): such extra entries are dead but harmless, so a
            # list is an error only when not one of its dtypes is allowed by any version of the op.
            anywhere = self._allowed(key, port, every) or set()
            good = False
            for j, t in enumerate(dtypes):
                t = _norm(t)
                if not _known_dtype(t):
                    self.add("unknown-dtype", where + (j,), f"{label}: {key}: {t!r} is not an ONNX dtype")
                    good = True  # reported already
                elif t in covered or t in anywhere:
                    good = True
            if dtypes and not good:
                self.add("dtype-outside-constraint", where,
                         f"{label}: {key} allows {', '.join(sorted(covered))} in the covered versions; "
                         f"none of {', '.join(_norm(t) for t in dtypes)} can ever match")

    @staticmethod
    def _allowed(key, port, entries):
        """Union of dtypes ``key`` (constraint, parameter name or port) allows in ``entries``; None: unknown key."""
        allowed, known = set(), False
        for e in entries:
            if port:
                params = e["inputs"] if key[0] == "i" else e["outputs"]
                k = int(key[1:])
                if k < len(params):
                    type_str = params[k][0]
                elif params and params[-1][1]:
                    type_str = params[-1][0]
                else:
                    continue
            elif key in e["constraints"]:
                type_str = key
            elif e.get("names") and key in e["names"]:
                type_str = e["names"][key]
            else:
                continue
            known = True
            allowed |= e["constraints"].get(type_str, {_norm(type_str)})
        return allowed if known else None

    def _attrs(self, r, here, label, sch, matched):
        entries = [sch.versions[v] for v in matched]
        if not entries or any(e["attrs"] is None for e in entries):
            return
        known = set().union(*(e["attrs"] for e in entries))
        for key in ("attrs", "kernel_requires"):  # predicates, and what the kernel constructor enforces
            attrs = r.get(key)
            if not isinstance(attrs, list):
                continue
            for j, a in enumerate(attrs):
                if isinstance(a, dict) and isinstance(a.get("name"), str) and a["name"] not in known:
                    self.add("unknown-attribute", here + (key, j, "name"),
                             f"{label}: attribute {a['name']!r} is not an attribute of the op in the covered "
                             f"versions ({', '.join(sorted(known)) or 'it has none'})")

    def _predicates(self, r, here, label):
        lo, hi = r.get("min_rank"), r.get("max_rank")
        if isinstance(lo, int) and isinstance(hi, int) and lo > hi:
            self.add("contradictory-predicate", here + ("min_rank",),
                     f"{label}: min_rank {lo} is above max_rank {hi}")
        for j, a in enumerate(r.get("attrs") or ()):
            if not isinstance(a, dict):
                continue
            where = here + ("attrs", j)
            name = a.get("name")
            ins, outs = a.get("in"), a.get("not_in")
            if isinstance(ins, list) and isinstance(outs, list):
                both = [x for x in ins if x in outs]
                if both:
                    self.add("contradictory-predicate", where,
                             f"{label}: attribute {name!r}: {both[0]!r} is both in 'in' and 'not_in'")
            if isinstance(ins, list) and not ins:
                self.add("contradictory-predicate", where, f"{label}: attribute {name!r}: empty 'in' list")
            mn, mx = a.get("min"), a.get("max")
            if isinstance(mn, (int, float)) and isinstance(mx, (int, float)) and mn > mx:
                self.add("contradictory-predicate", where, f"{label}: attribute {name!r}: min {mn} > max {mx}")
            if a.get("absent") is True and any(k in a for k in ("in", "min", "max", "symmetric_pads")):
                self.add("contradictory-predicate", where,
                         f"{label}: attribute {name!r} must be absent yet has a value condition")

    def _pairs(self, seen):
        match_keys = ("types", "static_shape", "static_outputs", "max_outputs", "min_inputs", "max_inputs", "min_rank", "max_rank", "rank_inputs", "const_inputs",
                      "attrs", "dtype_pairs")
        side_keys = ("host_inputs", "host_outputs", "layout_sensitive")
        for (domain, op), rules in sorted(seen.items()):
            label = f"{domain + ':' if domain else ''}{op}"
            for a in range(len(rules)):
                i, ra = rules[a]
                for b in range(a):
                    j, rb = rules[b]
                    if ra == rb:
                        self.add("duplicate-rule", ("ops", i),
                                 f"{label}: identical to the rule at line {self.line(('ops', j))}")
                        break
                    if not _overlap(ra.get("versions"), rb.get("versions")):
                        continue
                    if all(_canon(ra.get(k)) == _canon(rb.get(k)) for k in match_keys):
                        if any(_canon(ra.get(k)) != _canon(rb.get(k)) for k in side_keys):
                            self.add("contradicting-rules", ("ops", i),
                                     f"{label}: matches the same nodes as the rule at line "
                                     f"{self.line(('ops', j))} but disagrees on host memory/layout")
                        else:
                            self.add("overlapping-rules", ("ops", i, "versions") if "versions" in ra
                                     else ("ops", i),
                                     f"{label}: version range overlaps the rule at line "
                                     f"{self.line(('ops', j))} with the same predicates")
                        break


def _canon(v):
    if isinstance(v, dict):
        return tuple(sorted((k, _canon(x)) for k, x in v.items()))
    if isinstance(v, list):
        return tuple(_canon(x) for x in v)
    return v


def _overlap(va, vb):
    """Do two ``versions`` fields cover a common schema version?  ``[lo, null]`` covers lo only."""
    def rng(v):
        if not (isinstance(v, list) and len(v) == 2 and isinstance(v[0], int)):
            return (1, 10 ** 9)  # absent: any version
        lo, hi = v
        return (lo, lo if hi is None else hi)

    (alo, ahi), (blo, bhi) = rng(va), rng(vb)
    return alo <= bhi and blo <= ahi


def lint_text(text, path="<rules>"):
    """Findings for one table given as text, sorted by line."""
    return sorted(_Linter(path, text).run(), key=lambda f: (f.file, f.line, f.rule, f.message))


def lint_file(path):
    """Findings for one table file; :class:`RuleTableError` when it cannot be read at all."""
    from .load import read_table_text

    text = read_table_text(path)
    return lint_text(text, str(path))


def lint_paths(paths):
    """Findings for several files or folders (folders: their ``*.yaml``), in path order."""
    files = []
    for p in paths:
        p = Path(p)
        files.extend(sorted(p.glob("*.yaml")) if p.is_dir() else [p])
    out = []
    for f in files:
        out.extend(lint_file(f))
    return files, out
