"""Structured files from strangers: JSON, JSON Lines, TOML and YAML, parsed with limits, checked by a schema.

Every structured input partsim reads (lock files, baselines, observations, calibration
records, ``gate --require`` files, ``partsim.toml``) goes through :func:`read_structured`
(or :func:`read_jsonl`): the bytes come from :func:`partsim.io.files.read_text` (a regular
file, a size cap), then

* nesting deeper than :data:`MAX_DEPTH` is refused *before* the parser can recurse (a
  count of brackets outside strings; the parser's own ``RecursionError`` is the backstop),
* a number that is not finite (``NaN``, ``Infinity``, ``1e400``, TOML ``inf``/``nan``, YAML
  ``.inf``/``.nan``) is refused, and so are YAML anchors and aliases,
* the data is validated against a JSON Schema shipped in ``partsim/data/`` (docs/reliability.md).

Every refusal is one :class:`~partsim.errors.PartsimError` line naming the file.

>>> import tempfile, os
>>> d = tempfile.mkdtemp(); p = os.path.join(d, "x.json")
>>> _ = open(p, "w").write('{"a": 1e400}')
>>> read_structured(p, "json", None)
Traceback (most recent call last):
...
partsim.errors.UsageError: ...x.json: non-finite number 1e400 is not allowed
"""

import json
import math
import re
from functools import lru_cache

from ..errors import UsageError
from .files import read_text

__all__ = ["MAX_DEPTH", "read_structured", "read_jsonl", "parse_text", "validate", "load_schema",
           "check_values"]

MAX_DEPTH = 64  # containers inside containers; partsim's deepest real file (an observation) nests 6
MAX_STRUCTURED_BYTES = 256 * 1024 * 1024


class _Refused(ValueError):
    """A value the parser hands to a hook that partsim refuses (a non-finite number)."""


# strings (and TOML comments) removed before the brackets are counted: a bracket inside one is text
_JSON_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_TOML_STRINGS = re.compile(r'"""(?:[^\\]|\\.)*?"""|\'\'\'.*?\'\'\'|"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'|#[^\n]*', re.S)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


def _bracket_depth(text, strings):
    """The deepest nesting of ``[`` and ``{`` in ``text`` outside strings (C-speed passes only)."""
    import numpy as np

    brackets = _NOT_BRACKET.sub("", strings.sub("", text))
    if not brackets:
        return 0
    codes = np.frombuffer(brackets.encode("ascii"), dtype=np.uint8)
    steps = np.where((codes == ord("[")) | (codes == ord("{")), 1, -1)
    return int(np.cumsum(steps).max())


def _finite_float(text):
    value = float(text)
    if not math.isfinite(value):
        raise _Refused(f"non-finite number {text} is not allowed")
    return value


def _no_constant(name):
    raise _Refused(f"non-finite number {name} is not allowed")


def _parse_json(text):
    return json.loads(text, parse_float=_finite_float, parse_constant=_no_constant)


def _parse_toml(text):
    try:
        import tomllib
    except ImportError:  # Python 3.10: the same parser as a package
        import tomli as tomllib
    try:
        return tomllib.loads(text, parse_float=_finite_float)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"invalid TOML: {exc}") from None


def _parse_yaml(text):
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    depth = 0
    try:
        for ev in yaml.parse(text, Loader=loader):  # events: no recursion, anchors seen before use
            if isinstance(ev, yaml.AliasEvent) or getattr(ev, "anchor", None):
                raise _Refused("YAML anchors and aliases (&name, *name) are not allowed")
            if isinstance(ev, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                depth += 1
                if depth > MAX_DEPTH:
                    raise _Refused(f"nested deeper than {MAX_DEPTH} levels")
            elif isinstance(ev, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                depth -= 1
        return yaml.load(text, Loader=loader)
    except yaml.YAMLError as exc:
        raise ValueError(f"invalid YAML: {' '.join(str(exc).split())[:200]}") from None
    except (OverflowError, TypeError) as exc:  # an impossible date, a key YAML cannot hash
        raise ValueError(f"invalid YAML value: {' '.join(str(exc).split())[:200]}") from None


_PARSERS = {"json": (_parse_json, _JSON_STRINGS), "toml": (_parse_toml, _TOML_STRINGS), "yaml": (_parse_yaml, None)}


def parse_text(text, kind, path=None, error=UsageError, finite=True):
    """``text`` parsed as ``kind`` (json, toml, yaml) with the depth and number limits; ``error`` otherwise.
    ``finite=False`` lets JSON's ``NaN``/``Infinity`` through (data that records a tensor's values)."""
    parse, strings = _PARSERS[kind]
    if not finite and kind == "json":
        parse = json.loads
    if strings is not None and _bracket_depth(text, strings) > MAX_DEPTH:
        raise error(f"nested deeper than {MAX_DEPTH} levels", path)
    try:
        data = parse(text)
    except _Refused as exc:
        raise error(str(exc), path) from None
    except RecursionError:  # the bracket count is exact for valid files; this is the backstop
        raise error(f"nested deeper than {MAX_DEPTH} levels", path) from None
    except json.JSONDecodeError as exc:
        raise error(f"not valid JSON: {exc.msg} at line {exc.lineno}", path) from None
    except ValueError as exc:  # TOML, YAML, an integer of more digits than Python converts
        raise error(" ".join(str(exc).split())[:300] or f"not valid {kind}", path) from None
    check_values(data, path, error, finite)
    return data


def check_values(data, path=None, error=UsageError, finite=True):
    """Refuse nesting deeper than :data:`MAX_DEPTH`, non-finite floats (unless ``finite`` is false) and
    non-string keys (iteratively)."""
    stack = [(data, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, float):
            if finite and not math.isfinite(value):
                raise error(f"non-finite number {value} is not allowed", path)
        elif isinstance(value, (dict, list)):
            if depth >= MAX_DEPTH:
                raise error(f"nested deeper than {MAX_DEPTH} levels", path)
            if isinstance(value, dict):
                for k, v in value.items():
                    if not isinstance(k, str):
                        raise error(f"key {str(k)[:40]!r} is not a string", path)
                    stack.append((v, depth + 1))
            else:
                stack.extend((v, depth + 1) for v in value)


@lru_cache(maxsize=None)
def load_schema(name):
    """The JSON Schema ``partsim/data/<name>.schema.json`` (parsed once)."""
    from ..data import data_path

    return json.loads(data_path(f"{name}.schema.json").read_text(encoding="utf-8"))


@lru_cache(maxsize=None)
def _validator(name):
    import jsonschema

    from referencing import Registry, Resource

    schema = load_schema(name)
    # a schema refers to another by its $id (the lock's entries are baseline records)
    registry = Registry().with_resources(
        (s["$id"], Resource.from_contents(s)) for s in map(load_schema, _LINKED) if "$id" in s)
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema, registry=registry)


_LINKED = ("baseline",)


def _where(parts):
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if re.fullmatch(r"[A-Za-z_][\w-]*", p) else f"[{p!r}]")
    return out.lstrip(".") or "the document"


def validate(data, schema, path=None, error=UsageError, prefix=""):
    """Raise ``error`` (one line: where in the document, what is wrong) unless ``data`` fits ``schema``."""
    import jsonschema

    best = jsonschema.exceptions.best_match(_validator(schema).iter_errors(data))
    if best is None:
        return
    message = best.message
    if len(message) > 200:  # jsonschema quotes the whole offending value
        message = message[:200] + " …"
    raise error(f"{prefix}{_where(best.absolute_path)}: {message} (schema {schema}.schema.json)", path)


def read_structured(path, kind, schema, limit=MAX_STRUCTURED_BYTES, error=UsageError, what="file", finite=True):
    """Read ``path`` (bounded), parse it as ``kind`` and validate it against ``schema`` (None: no schema)."""
    text = read_text(path, limit, error, what)
    data = parse_text(text, kind, path, error, finite)
    if schema is not None:
        validate(data, schema, path, error)
    return data


def read_jsonl(path, schema, limit=MAX_STRUCTURED_BYTES, error=UsageError, what="file"):
    """``[(line number, record)]`` of a JSON Lines file, each record parsed and validated like a JSON file."""
    text = read_text(path, limit, error, what)
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = parse_text(line, "json", path, error)
            if schema is not None:
                validate(record, schema, path, error)
        except error as exc:
            raise error(exc.message, path, n) from None
        out.append((n, record))
    return out
