"""Capability rule tables: load, validate (with line numbers) and index.

A table is a YAML file (``rules/*.yaml``) validated by the JSON Schema shipped as
``partsim/data/rules.schema.json``.  Errors name ``file:line``.  YAML is read with
the safe loader; aliases and anchors are refused outright (no "billion laughs"), and so
are nesting deeper than ``MAX_YAML_DEPTH``, non-finite numbers, files that are not
regular files and files over ``MAX_RULE_FILE_BYTES``.
"""

import json
import os
import re
import stat
from collections.abc import Mapping
import math
from functools import lru_cache
from pathlib import Path

from ..errors import RuleTableError
from ..data import data_path
from ..ir.schemas import normalize_domain
from .providers import KNOWN_PROVIDERS
from .table import OpRule, PREDICATE_KEYS, RuleTable, _freeze, _norm_type

__all__ = ["load_table", "parse_table", "parse_checked", "compile_shipped", "builtin_rules_dir", "builtin_tables", "TableSet", "table_schema",
           "layer_table"]


MAX_RULE_FILE_BYTES = 16 * 1024 * 1024


MAX_YAML_DEPTH = 64  # the deepest real table nests 5 levels


@lru_cache(maxsize=1)
def table_schema():
    return json.loads(data_path("rules.schema.json").read_text())


def builtin_rules_dir():
    """The folder of shipped tables: ``rules/`` of a checkout, or the installed copy."""
    package = Path(__file__).resolve().parents[1]
    checkout = package.parent / "rules"
    if checkout.is_dir():
        return checkout
    return package / "_rules"  # package_dir maps partsim._rules to rules/ in a wheel


def _compose(text, path):
    """YAML text -> (python data, {json path tuple: line}), refusing aliases and bad YAML."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when present: same events, 10x faster
    try:
        depth = 0
        for ev in yaml.parse(text, Loader=loader):
            if isinstance(ev, yaml.AliasEvent) or getattr(ev, "anchor", None):
                line = ev.start_mark.line + 1
                raise RuleTableError("YAML aliases and anchors (*name, &name) are not allowed in rule tables",
                                     path, line)
            if isinstance(ev, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                depth += 1
                if depth > MAX_YAML_DEPTH:
                    raise RuleTableError(f"nested deeper than {MAX_YAML_DEPTH} levels", path,
                                         ev.start_mark.line + 1)
            elif isinstance(ev, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                depth -= 1
        node = yaml.compose(text, Loader=loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        raise RuleTableError(f"invalid YAML: {exc.problem or exc}", path, line) from None
    except yaml.YAMLError as exc:
        raise RuleTableError(f"invalid YAML: {exc}", path) from None
    lines = {}
    constructor = yaml.SafeLoader("")

    def construct(n):
        try:
            value = constructor.construct_object(n, deep=True)
        except yaml.MarkedYAMLError as exc:
            raise RuleTableError(f"invalid value: {exc.problem or exc}", path, n.start_mark.line + 1) from None
        except (yaml.YAMLError, ValueError, OverflowError, TypeError, RecursionError) as exc:
            # e.g. an integer of more digits than Python converts, an impossible date
            raise RuleTableError(f"invalid value: {' '.join(str(exc).split())[:200]}", path,
                                 n.start_mark.line + 1) from None
        if isinstance(value, float) and not math.isfinite(value):
            raise RuleTableError(f"non-finite number {n.value!r} is not allowed", path, n.start_mark.line + 1)
        return value

    def build(n, where):
        lines[where] = n.start_mark.line + 1
        if isinstance(n, yaml.MappingNode):
            out = {}
            for k, v in n.value:
                key = construct(k)
                if not isinstance(key, str):
                    raise RuleTableError(f"mapping key {key!r} is not a string", path, k.start_mark.line + 1)
                if key in out:
                    raise RuleTableError(f"duplicate key {key!r}", path, k.start_mark.line + 1)
                out[key] = build(v, where + (key,))
            return out
        if isinstance(n, yaml.SequenceNode):
            return [build(v, where + (i,)) for i, v in enumerate(n.value)]
        return construct(n)

    if node is None:
        raise RuleTableError("empty rule table", path, 1)
    return build(node, ()), lines


def _line_for(lines, where):
    where = tuple(where)
    while where not in lines and where:
        where = where[:-1]
    return lines.get(where)


def parse_table(text, path="<rules>"):
    """Parse and validate rule-table YAML text.

    Returns
    -------
    RuleTable

    Raises
    ------
    RuleTableError
        With ``file:line`` of the first problem.

    Examples
    --------
    >>> t = parse_table('''
    ... provider: EPExecutionProvider
    ... kind: kernel
    ... source: {description: example, version: "1"}
    ... ops: [{op: MatMul}]
    ... ''')
    >>> t.provider, len(t.rules_for("", "MatMul"))
    ('EPExecutionProvider', 1)
    """
    from .precompiled import lookup

    cached = lookup(text, path) or _cache_get(text)
    if cached is not None:
        return _build_table(cached[0], cached[1], path)
    data, lines = parse_checked(text, path)
    table = _build_table(data, lines, path)
    _cache_put(text, data, lines)
    return table


def parse_checked(text, path="<rules>"):
    """The long way: YAML text -> ``(data, {json path: line})`` checked against the schema
    (:class:`RuleTableError` with ``file:line`` of the first problem)."""
    import jsonschema

    data, lines = _compose(text, path)
    if not isinstance(data, dict):
        raise RuleTableError("a rule table must be a mapping", path, 1)
    from .schema_errors import schema_problems

    validator = jsonschema.Draft202012Validator(table_schema())
    problems = sorted(((_line_for(lines, where) or 0, message) for e in validator.iter_errors(data)
                       for where, message in schema_problems(e)))
    if problems:
        line, message = problems[0]
        raise RuleTableError(message, path, line or None)
    return data, lines


def compile_shipped(directory=None, store=None):
    """Parse and validate every shipped table the long way and write the store of
    :mod:`partsim.rules.precompiled` (``make tables``).  Returns the files written."""
    from .precompiled import write_store

    entries = {}
    for f in sorted(Path(directory or builtin_rules_dir()).glob("*.yaml")):
        text = read_table_text(f)
        data, lines = parse_checked(text, str(f))
        _build_table(data, lines, str(f))  # the semantic checks too: a broken table is not stored
        # a built table keeps the line of each op rule only (OpRule.line, for reasons and lint)
        entries[f.stem] = (text, data, {k: v for k, v in lines.items() if len(k) == 2 and k[0] == "ops"})
    return write_store(entries, store)


def _cache_file(text):
    from ..io.cache import cache_root

    base = cache_root()
    if base is None:
        return None
    from .precompiled import table_key

    return Path(base) / "tables" / f"{table_key(text)}.json"


def _cache_get(text):
    f = _cache_file(text)
    if f is None:
        return None
    from ..io.cache import read_sealed

    blob = read_sealed(f)  # None when absent or damaged (a replaced, cut or emptied entry)
    if blob is None:
        return None
    try:
        doc = json.loads(blob)
        return doc["data"], {tuple(k): v for k, v in doc["lines"]}
    except (ValueError, KeyError, TypeError):
        return None


def _cache_put(text, data, lines):
    f = _cache_file(text)
    if f is None:
        return
    from ..io.cache import write_sealed

    try:
        text = json.dumps({"data": data, "lines": [[list(k), v] for k, v in lines.items()]})
    except (TypeError, ValueError):
        return
    write_sealed(f, text.encode("utf-8"))  # a cache that cannot be written is no cache


def _build_table(data, lines, path):
    defaults = data.get("defaults", {})
    rules = {}
    for i, r in enumerate(data["ops"]):
        line = lines.get(("ops", i), 0)
        versions = r.get("versions")
        if versions is not None:
            lo, hi = versions
            if hi is not None and hi < lo:
                raise RuleTableError(f"ops/{i}: version range [{lo}, {hi}] is empty", path, line)
            versions = (lo, hi)
        merged = {k: r.get(k, defaults.get(k)) for k in PREDICATE_KEYS}
        types = {}
        for k, v in (r.get("types") or {}).items():
            types[k] = frozenset(_norm_type(t) for t in v)
        rule = OpRule(
            op=r["op"], domain=normalize_domain(r.get("domain", "")), versions=versions, types=types,
            static_shape=bool(merged["static_shape"]), static_outputs=bool(merged["static_outputs"]),
            max_outputs=merged["max_outputs"], min_inputs=merged["min_inputs"],
            max_inputs=merged["max_inputs"],
            min_rank=merged["min_rank"],
            max_rank=merged["max_rank"],
            rank_inputs=tuple(merged["rank_inputs"]) if merged["rank_inputs"] is not None else None,
            const_inputs=tuple(merged["const_inputs"] or ()), attrs=tuple(
                tuple(sorted((k, _freeze(v)) for k, v in a.items())) for a in (merged["attrs"] or ())),
            dtype_pairs=frozenset(tuple(_norm_type(x) for x in p) for p in merged["dtype_pairs"])
            if merged["dtype_pairs"] else None,
            host_inputs=tuple(r.get("host_inputs", ())), host_outputs=tuple(r.get("host_outputs", ())),
            layout_sensitive=bool(r.get("layout_sensitive", False)),
            layout_refusal=bool(r.get("layout_refusal", False)), notes=r.get("notes", ""), line=line,
            kernel_requires=tuple(tuple(sorted((k, _freeze(v)) for k, v in a.items()))
                                  for a in r.get("kernel_requires", ())),
            compile_failure=r.get("compile_failure", ""))
        rules.setdefault((rule.domain, rule.op), []).append(rule)
    return RuleTable(
        provider=data["provider"], kind=data["kind"], source=dict(data["source"]),
        rules={k: tuple(v) for k, v in rules.items()}, aliases=tuple(data.get("aliases", ())),
        cpu_based=bool(data.get("cpu_based", data["provider"] == "CPUExecutionProvider")),
        layout=data.get("layout", "NCHW"), precisions=tuple(data.get("precisions", ("fp32",))),
        compute_precision=data.get("compute_precision", "fp32"),
        partitioning=dict(data.get("partitioning", {})), notes=tuple(data.get("notes", ())),
        path=str(path), variant=data.get("variant", ""),
        default_variant=bool(data.get("default_variant", False)),
        overlay=None if "overlay" not in data else tuple(
            (normalize_domain(r.get("domain", "")), r["op"]) for r in data["overlay"].get("remove", ())))


def layer_table(base, overlay):
    """``overlay`` (a table with ``overlay:``) layered over ``base``: each (domain, op) the
    overlay names gets the overlay's rules instead of the base's; ``remove`` drops ops.
    Everything else (kind, partitioning hooks, notes) stays the base's."""
    import dataclasses

    rules = {k: v for k, v in base.rules.items() if k not in overlay.overlay}
    rules.update(overlay.rules)
    return dataclasses.replace(base, rules=rules, path=f"{base.path} + {overlay.path}",
                               source=dict(base.source, overlay=overlay.source.get("version", "")))


def read_table_text(path):
    """The text of a rule-table file, read safely: a regular file, at most
    :data:`MAX_RULE_FILE_BYTES` (bounded even if it grows while read), UTF-8.
    :class:`RuleTableError` (one line, naming the file) otherwise."""
    from ..io.files import read_text

    return read_text(path, MAX_RULE_FILE_BYTES, RuleTableError)


def load_table(path):
    """Read and validate one rule-table file."""
    text = read_table_text(path)
    table = parse_table(text, str(path))
    if table.provider not in KNOWN_PROVIDERS:
        # resolve_providers would drop it as unknown_provider: a table nobody can select is a mistake
        raise RuleTableError(f"provider {table.provider!r} is not an execution provider ORT knows "
                             f"(see partsim.rules.providers.KNOWN_PROVIDERS)", path, 1)
    return table


_HEADER_PROVIDER = re.compile(r"^provider:[ \t]*['\"]?([A-Za-z0-9_]+)", re.M)


_HEADER_VARIANT = re.compile(r"^variant:[ \t]*['\"]?([a-z0-9_.-]+)", re.M)


_HEADER_KIND = re.compile(r"^kind:[ \t]*['\"]?([a-z]+)", re.M)
_HEADER_DEFAULT = re.compile(r"^default_variant:[ \t]*(true|false)", re.M)


def _scan_header(path):
    """(provider, variant, kind, default_variant) read cheaply from a table's top-level keys, or
    (None, "", None, None); a key not found is ``None`` (the table's parse decides).  Read once per process
    while the file keeps its size and modification time (every prediction lists the shipped tables)."""
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):  # a FIFO would block the open: the parse refuses it
            return None, "", None, None
        return _header_of_file(str(path), st.st_size, st.st_mtime_ns)
    except OSError:  # not kept: a file unreadable now may be readable later
        return None, "", None, None


@lru_cache(maxsize=256)
def _header_of_file(path, _size, _mtime):
    with open(path, encoding="utf-8", errors="replace") as f:
        head = f.read(65536)
    m = _HEADER_PROVIDER.search(head)
    v = _HEADER_VARIANT.search(head)
    k = _HEADER_KIND.search(head)
    d = _HEADER_DEFAULT.search(head)
    return ((m.group(1) if m else None), (v.group(1) if v else ""), (k.group(1) if k else None),
            (d.group(1) == "true" if d else None))


class TableHeader:
    """A table as its header lines describe it (:meth:`TableSet.headers`)."""

    __slots__ = ("provider", "variant", "default_variant", "kind")

    def __init__(self, provider, variant, default_variant, kind):
        self.provider, self.variant, self.default_variant, self.kind = provider, variant, default_variant, kind

    @property
    def is_compiling(self):
        return self.kind == "compiling"


class TableSet(Mapping):
    """Provider name -> list of RuleTable (variants), loaded only when asked for.

    The shipped folder holds tables for many providers; a run needs two or three.
    Files are indexed by their ``provider:``/``variant:`` lines and parsed and
    validated on first access, so a run pays only for the tables it uses.
    """

    def __init__(self):
        self._entries = {}  # provider -> list of [path, variant, RuleTable or None]
        self._headers = {}  # path -> (kind, default_variant) as its header lines say

    def add_file(self, path, front=False):
        provider, variant, kind, default = _scan_header(path)
        if provider is None:  # no readable header: parse now so the user gets the real error
            t = load_table(path)
            provider, variant = t.provider, t.variant
            entry = [str(path), variant, t]
        else:
            entry = [str(path), variant, None]
            self._headers[str(path)] = (kind, default)
        self._insert(provider, entry, front)

    def headers(self):
        """``{provider: [TableHeader]}``: what the header lines of every table say (provider,
        variant, default variant, kind), no table parsed; ``None`` when a header lacks one of
        them.  :func:`partsim.rules.resolve.resolve_providers` takes it in place of the tables to
        guess, early and cheaply, the provider list a run will have (work started on that guess
        is checked against the real list later)."""
        out = {}
        for provider, entries in self._entries.items():
            heads = []
            for path, variant, table in entries:
                if table is not None:
                    heads.append(TableHeader(provider, variant, table.default_variant, table.kind))
                    continue
                kind, default = self._headers.get(path, (None, None))
                if kind is None:
                    return None
                heads.append(TableHeader(provider, variant, bool(default), kind))
            out[provider] = heads
        return out

    def add_table(self, table, front=True):
        if table.overlay is not None:  # layered over the table it overlays, not in place of it
            entries = self._entries.get(table.provider, [])
            for e in entries:
                if e[1] == table.variant:
                    if e[2] is None:
                        e[2] = _cached_load(e[0])
                    e[2] = layer_table(e[2], table)
                    e[0] = e[2].path
                    return
            raise RuleTableError(f"overlay for {table.provider}"
                                 f"{':' + table.variant if table.variant else ''} has no table to layer over",
                                 table.path, 1)
        self._insert(table.provider, [table.path, table.variant, table], front)

    def _insert(self, provider, entry, front):
        entries = self._entries.setdefault(provider, [])
        if front:  # a user table replaces the shipped one of the same provider and variant
            entries[:] = [e for e in entries if e[1] != entry[1]]
            entries.insert(0, entry)
        elif not entry[1] and all(e[1] for e in entries):  # the one without variant first (cpu.yaml before
            entries.insert(0, entry)  # cpu-1.24.yaml, which sorts first): tables[provider][0] is the default
        else:
            entries.append(entry)

    def __getitem__(self, provider):
        entries = self._entries[provider]
        for e in entries:
            if e[2] is None:
                e[2] = _cached_load(e[0])
        return [e[2] for e in entries]

    def __iter__(self):
        return iter(self._entries)

    def __len__(self):
        return len(self._entries)


_LOAD_CACHE: dict = {}


def _cached_load(path):
    """Parse a table file once per process (keyed by path, size and mtime)."""
    st = os.stat(path)
    key = (str(path), st.st_size, st.st_mtime_ns)
    if key not in _LOAD_CACHE:
        _LOAD_CACHE[key] = load_table(path)
    return _LOAD_CACHE[key]


def builtin_tables(directory=None):
    """The tables in ``directory`` (default: the shipped ones) as a lazily loading :class:`TableSet`."""
    d = Path(directory) if directory else builtin_rules_dir()
    tables = TableSet()
    for f in sorted(d.glob("*.yaml")):
        tables.add_file(f)
    if not directory:
        from ..versions import cpu_table_for_target, load_limits

        load_limits()  # of the ORT predicted, known before the simulation (which reads no file)
        found = cpu_table_for_target(d / "cpu.yaml")  # the ORT predicted is another release than it describes
        if found is not None:
            tables.add_table(parse_table(*found), front=True)
    return tables
