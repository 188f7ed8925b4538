"""``partsim check``'s configuration: ``partsim.toml`` or ``[tool.partsim]`` in ``pyproject.toml``.

::

    [[check]]
    name = "nnapi"                      # optional, default: the providers joined
    models = ["models/*.onnx"]          # globs, relative to the config file
    providers = ["nnapi"]               # one priority list
    level = "all"                       # optional: disable (as written), basic, extended, all (default)
    max_partitions = 3                  # accelerator partitions
    min_delegated_share = 0.9           # nodes on the first provider / nodes
    max_transfers = 10
    max_memcpy = 0                      # Memcpy nodes, both directions
    accelerated = true
    forbid_reasons = ["dynamic_shape"]
    status = "ok"
    dims = {batch = 1}                  # symbolic input dimensions fixed, as --dim (models without them: as is)

    [check.model."models/vad.onnx"]     # one model of the check above (a path or glob as in models)
    dims = {seq = 512}                  # added to (and overriding) the check's dims
    expect = {accelerated = false, reason = "LSTM inside an If body"}

Top level (optional): ``lock = "partsim.lock.json"`` (relative to the config file),
``rules = ["my-rules/"]`` (extra tables for every check).  Every mistake is a
:class:`~partsim.errors.UsageError` naming ``file:line``.
"""

import glob
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UsageError
from .files import lexists
from ..sim.pipeline import LEVELS as PREDICTED_LEVELS
from ..sim.pipeline import normalize_level

__all__ = ["Check", "ModelSettings", "Config", "load_config", "find_config", "LEVELS", "BUDGET_KEYS"]

# the level names partsim predicts (ORT's names and aliases are accepted too: normalize_level)
LEVELS = PREDICTED_LEVELS

BUDGET_KEYS = ("max_partitions", "min_delegated_share", "max_transfers", "max_memcpy", "accelerated",
               "forbid_reasons", "status")
_CHECK_KEYS = ("name", "models", "providers", "level", "policy", "rules", "dims", "model") + BUDGET_KEYS
_MODEL_KEYS = ("dims", "expect")
_EXPECT_KEYS = ("accelerated", "reason")
_TOP_KEYS = ("check", "lock", "rules")
_STATUSES = ("ok", "session_would_fail")
MAX_CONFIG_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class Check:
    """One ``[[check]]`` table: which models, which providers, which budgets."""

    name: str
    models: tuple  # resolved model paths (sorted, unique)
    patterns: tuple  # the globs as written
    providers: tuple
    level: str = "all"
    policy: str = "per-node"
    rules: tuple = ()
    budgets: dict = field(default_factory=dict)
    line: int = 0
    dims: dict = field(default_factory=dict)  # {dim_param: size} for every model that has the name
    per_model: tuple = ()  # (ModelSettings, …) in config order
    dims_line: int = 0
    budget_lines: dict = field(default_factory=dict)  # budget key -> its config line

    @property
    def optimize(self):
        return normalize_level(self.level)

    def settings_for(self, rel):
        """The settings of the model at config-relative path ``rel``: ``{dims, own_dims, expect, line}``,
        the check's dims updated by every ``[check.model."…"]`` table whose pattern matches it (in
        order); ``own_dims`` are the names those tables set (the model must have them)."""
        dims, own, expect, line = dict(self.dims), set(), None, self.line
        for s in self.per_model:
            if s.matches(rel):
                dims.update(s.dims)
                own.update(s.dims)
                expect = s.expect if s.expect is not None else expect
                line = s.line
        return {"dims": dims, "own_dims": own, "expect": expect, "line": line}


@dataclass(frozen=True)
class ModelSettings:
    """One ``[check.model."PATTERN"]`` table: dims and an expectation for the models it names."""

    pattern: str
    dims: dict
    expect: dict | None = None  # {"accelerated": bool, "reason": str}
    line: int = 0

    def matches(self, rel):
        import fnmatch

        return rel == self.pattern or fnmatch.fnmatchcase(rel, self.pattern)


@dataclass(frozen=True)
class Config:
    path: Path
    root: Path  # folder the globs and the lock are relative to
    checks: tuple
    lock: Path
    rules: tuple = ()


class _Lines:
    """Where things are in a TOML text, for ``file:line`` errors (tomllib keeps no positions)."""

    def __init__(self, text, table):
        self.lines = text.splitlines()
        header = re.compile(r"^\s*\[\[\s*" + re.escape(table).replace(r"\.", r"\s*\.\s*") + r"\s*\]\]")
        self.starts = [k + 1 for k, line in enumerate(self.lines) if header.match(line)]
        self.any_header = re.compile(r"^\s*\[")

    def check(self, index):
        return self.starts[index] if index < len(self.starts) else 1

    def key(self, index, key):
        """Line of ``key = …`` inside the index-th [[check]] table (or its header)."""
        start = self.check(index)
        pat = re.compile(r"^\s*" + re.escape(key) + r"\s*=")
        for k in range(start, len(self.lines)):
            if self.any_header.match(self.lines[k]):
                break
            if pat.match(self.lines[k]):
                return k + 1
        return start

    def mention(self, index, text):
        """Line of the first mention of ``"text"`` (quoted) from the index-th [[check]] table on."""
        for k in range(self.check(index) - 1, len(self.lines)):
            if f'"{text}"' in self.lines[k] or f"'{text}'" in self.lines[k]:
                return k + 1
        return self.check(index)

    def top_key(self, key):
        pat = re.compile(r"^\s*" + re.escape(key) + r"\s*=")
        for k, line in enumerate(self.lines):
            if pat.match(line):
                return k + 1
        return 1


def find_config(start=None):
    """``partsim.toml`` in ``start`` (default: the current folder), else a ``pyproject.toml``
    there with a ``[tool.partsim]`` table, else None."""
    folder = Path(start or ".")
    toml = folder / "partsim.toml"
    if toml.is_file():
        return toml
    py = folder / "pyproject.toml"
    if py.is_file():
        from .files import read_text

        try:
            text = read_text(py, MAX_CONFIG_BYTES, what="config")
        except UsageError:
            return py  # load_config reports it
        if re.search(r"^\s*\[+\s*tool\s*\.\s*partsim\b", text, re.M):
            return py
    return None


def load_config(path):
    """Read and validate a config file; returns a :class:`Config`."""
    from .files import read_text
    from .structured import parse_text

    path = Path(path)
    text = read_text(path, MAX_CONFIG_BYTES, what="config")
    try:
        data = parse_text(text, "toml", path)
    except UsageError as exc:
        m = re.search(r"\(at line (\d+), column (\d+)\)", exc.message)
        line = int(m.group(1)) if m else (max(1, len(text.splitlines())) if "TOML" in exc.message else None)
        msg = re.sub(r"\s*\(at (line \d+, column \d+|end of document)\)", "", exc.message)
        raise UsageError(msg, path, line) from None
    pyproject = path.name == "pyproject.toml"
    if pyproject:
        tool = data.get("tool")
        data = tool.get("partsim") if isinstance(tool, dict) else None
        if data is None:
            raise UsageError("no [tool.partsim] table in pyproject.toml", path)
        table = "tool.partsim.check"
    else:
        table = "check"
    lines = _Lines(text, table)
    prefix = "tool.partsim." if pyproject else ""

    def fail(message, line):
        raise UsageError(message, path, line)

    _validate(data, path, lines, prefix, lambda: _read(data, path, lines, prefix, fail))
    return _read(data, path, lines, prefix, fail)


def _validate(data, path, lines, prefix, hand_checks):
    """The config's JSON Schema (``partsim/data/config.schema.json``), checked before anything is used.

    A config the schema refuses is first given to the hand-written checks, whose messages say more
    (a line, a close match); when they pass it or stumble on a shape they do not expect, the
    schema's own message is reported, at the line of the key it names.
    """
    import jsonschema

    from .structured import _validator, _where

    best = jsonschema.exceptions.best_match(_validator("config").iter_errors(data))
    if best is None:
        return
    try:
        hand_checks()
    except UsageError:
        raise
    except Exception:  # noqa: BLE001 - a shape the hand checks do not expect: the schema's message follows
        pass
    where = list(best.absolute_path)
    line = 1
    if len(where) >= 3 and where[0] == "check" and isinstance(where[1], int) and isinstance(where[2], str):
        line = lines.key(where[1], where[2])
    elif len(where) >= 2 and where[0] == "check" and isinstance(where[1], int):
        line = lines.check(where[1])
    elif where and isinstance(where[0], str):
        line = lines.top_key(where[0])
    message = best.message if len(best.message) <= 200 else best.message[:200] + " …"
    raise UsageError(f"{prefix}{_where(where)}: {message} (schema config.schema.json)", path, line)


def _read(data, path, lines, prefix, fail):
    """The config's hand-written checks and its models' globs -> :class:`Config`."""
    table = "tool.partsim.check" if prefix else "check"

    if not isinstance(data, dict):
        fail(f"[{prefix.rstrip('.') or 'top level'}] must be a table", 1)
    for key in data:
        if key not in _TOP_KEYS:
            fail(f"unknown key {prefix}{key!r} (known: {', '.join(_TOP_KEYS)})", lines.top_key(key))
    root = path.resolve().parent
    lock = data.get("lock", "partsim.lock.json")
    if not isinstance(lock, str) or not lock:
        fail(f"{prefix}lock must be a file name", lines.top_key("lock"))
    top_rules = _str_list(data.get("rules", []), f"{prefix}rules", lambda: lines.top_key("rules"), fail)
    checks = data.get("check")
    if checks is None:
        fail(f"no [[{table}]] table: nothing to check", 1)
    if not isinstance(checks, list) or not all(isinstance(c, dict) for c in checks):
        fail(f"{table} must be an array of tables ([[{table}]])", lines.top_key("check"))
    out, names = [], {}
    for k, c in enumerate(checks):
        out.append(_check(c, k, lines, fail, root, top_rules))
        if out[-1].name in names:
            fail(f"two checks are named {out[-1].name!r} (the other at line {names[out[-1].name]}); "
                 f"give one a name", lines.key(k, "name"))
        names[out[-1].name] = out[-1].line
    lock_path = _lock_path(lock, root, path, out, lambda message: fail(message, lines.top_key("lock")))
    return Config(path, root, tuple(out), lock_path, tuple(top_rules))


def _lock_path(lock, root, config, checks, fail):
    """Where the lock file goes: a file in the config's folder (or below), never a symlink out of it,
    never the config, a model or a rule table (``check --update`` writes it)."""
    if "\0" in lock:
        fail("lock: a NUL character is not allowed")
    rel = Path(lock)
    if rel.is_absolute() or ".." in rel.parts:
        fail(f"lock {lock!r} must be a file name relative to the config's folder, without '..'")
    full = root / rel
    real = Path(os.path.realpath(full))
    if not real.is_relative_to(root):
        fail(f"lock {lock!r} leads out of the config's folder (to {real})")
    inputs = {Path(os.path.realpath(config)): "the config itself"}
    for check in checks:
        inputs.update((Path(os.path.realpath(m)), f"a model of check {check.name!r}") for m in check.models)
        inputs.update((Path(os.path.realpath(r)), "a rule table") for r in check.rules)
    if real in inputs:
        fail(f"lock {lock!r} is {inputs[real]}: check --update would overwrite it")
    try:
        if stat.S_ISDIR(os.stat(real).st_mode):
            fail(f"lock {lock!r} is a folder")
    except FileNotFoundError:
        pass
    except (OSError, ValueError) as exc:  # a name too long, a NUL byte
        fail(f"lock {lock[:80]!r} is not a usable file name: {getattr(exc, 'strerror', None) or exc}")
    return full


def model_relpath(path, root):
    """``path`` relative to the config's folder ``root`` as the config names it: lexically, so that a model
    that is a symbolic link (a zoo linking its models from elsewhere) keeps its name; else ``path``."""
    p = Path(os.path.abspath(path))
    return p.relative_to(root).as_posix() if p.is_relative_to(root) else str(path)


def _inside(pattern, root):
    """Does the glob ``pattern`` (relative to ``root``, or absolute) stay inside ``root``?"""
    full = os.path.normpath(pattern if os.path.isabs(pattern) else os.path.join(root, pattern))
    return Path(full).is_relative_to(root)


def _str_list(value, what, line, fail, allow_str=False):
    if allow_str and isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        fail(f"{what} must be a list of non-empty strings", line())
    if any("\0" in v for v in value):  # paths and globs: no file name holds a NUL byte
        fail(f"{what}: a NUL character is not allowed", line())
    return [v.strip() for v in value]


def _check(c, k, lines, fail, root, top_rules):
    """Check ``k`` (0-based) of the config, validated: its :class:`Check`, or ``fail(message, line)``."""
    from ..sim.assign import POLICIES

    here = lines.check(k)
    _check_keys(c, k, lines, fail)
    patterns = _str_list(c["models"], "models", lambda: lines.key(k, "models"), fail, allow_str=True)
    if not patterns:
        fail("models is empty", lines.key(k, "models"))
    providers = _check_providers(c, k, lines, fail)
    level = c.get("level", "all")
    if not isinstance(level, str) or normalize_level(level) is None:
        fail(f"level must be one of disable, basic, extended, all, not {level!r}", lines.key(k, "level"))
    policy = c.get("policy", "per-node")
    if policy not in POLICIES:
        fail(f"policy must be one of {', '.join(POLICIES)}, not {policy!r}", lines.key(k, "policy"))
    name = c.get("name", ",".join(p.strip() for p in providers))
    if not isinstance(name, str) or not name.strip():
        fail("name must be a non-empty string", lines.key(k, "name"))
    rules = top_rules + _str_list(c.get("rules", []), "rules", lambda: lines.key(k, "rules"), fail)
    rules = [str(root / r) for r in rules]
    for r in rules:
        if not lexists(r):
            fail(f"rule table {r} does not exist", lines.key(k, "rules") if c.get("rules") else lines.top_key("rules"))
    budgets = _budgets(c, k, lines, fail)
    models = _check_models(patterns, k, lines, fail, root)
    dims = _dims(c["dims"], "dims", lambda: lines.key(k, "dims"), fail) if "dims" in c else {}
    per_model = _per_model(c.get("model"), k, lines, fail, root, models)
    return Check(name.strip(), models, tuple(patterns), tuple(p.strip() for p in providers),
                 normalize_level(level), policy, tuple(rules), budgets, here, dims, per_model,
                 lines.key(k, "dims"), {b: lines.key(k, b) for b in budgets})


def _unknown(value, known, message, line, fail):
    """``fail`` for ``value``, a name not in ``known``: ``message`` and the closest known name as a hint."""
    import difflib

    close = difflib.get_close_matches(value, known, n=1)
    hint = f"; did you mean {close[0]}?" if close else f" (known: {', '.join(known)})"
    fail(f"{message}{hint}", line)


def _check_keys(c, k, lines, fail):
    """No key a check does not know; ``models`` and ``providers`` present."""
    for key in c:
        if key not in _CHECK_KEYS:
            _unknown(key, _CHECK_KEYS, f"unknown key {key!r} in check {k + 1}", lines.key(k, key), fail)
    for key in ("models", "providers"):
        if key not in c:
            fail(f"check {k + 1} has no {key!r}", lines.check(k))


def _check_providers(c, k, lines, fail):
    """The check's ``providers``: a non-empty list of names ORT would take (a string is a list of one)."""
    from ..rules.providers import check_provider_request

    providers = c["providers"]
    if isinstance(providers, str):
        providers = [providers]
    if not isinstance(providers, list) or not all(isinstance(p, str) for p in providers):
        fail("providers must be a list of provider names", lines.key(k, "providers"))
    if not providers:
        fail("providers is empty: name at least one provider", lines.key(k, "providers"))
    try:
        check_provider_request(providers)
    except UsageError as exc:
        fail(exc.message, lines.key(k, "providers"))
    return providers


def _budgets(c, k, lines, fail):
    """The check's budgets (``max_*``, ``min_delegated_share``, ``accelerated``, ``forbid_reasons``,
    ``status``), each validated."""
    budgets = {}
    for key in ("max_partitions", "max_transfers", "max_memcpy"):
        if key in c:
            v = c[key]
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                fail(f"{key} must be a whole number >= 0, not {v!r}", lines.key(k, key))
            budgets[key] = v
    if "min_delegated_share" in c:
        v = c["min_delegated_share"]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1:
            fail(f"min_delegated_share must be a number from 0 to 1, not {v!r}", lines.key(k, "min_delegated_share"))
        budgets["min_delegated_share"] = float(v)
    if "accelerated" in c:
        if not isinstance(c["accelerated"], bool):
            fail(f"accelerated must be true or false, not {c['accelerated']!r}", lines.key(k, "accelerated"))
        budgets["accelerated"] = c["accelerated"]
    if "forbid_reasons" in c:
        from ..analysis.verify import REASON_CATEGORIES

        reasons = _str_list(c["forbid_reasons"], "forbid_reasons", lambda: lines.key(k, "forbid_reasons"), fail,
                            allow_str=True)
        for r in reasons:
            if r not in REASON_CATEGORIES:
                _unknown(r, REASON_CATEGORIES, f"unknown reason {r!r} in forbid_reasons", lines.key(k, "forbid_reasons"),
                         fail)
        budgets["forbid_reasons"] = sorted(set(reasons))
    if "status" in c:
        if c["status"] not in _STATUSES:
            fail(f"status must be one of {', '.join(_STATUSES)}, not {c['status']!r}", lines.key(k, "status"))
        budgets["status"] = c["status"]
    return budgets


def _check_models(patterns, k, lines, fail, root):
    """The model files ``patterns`` match inside ``root``, in order, each once."""
    models = []
    for pat in patterns:
        if not _inside(pat, root):  # "../../**" would walk the whole filesystem
            fail(f"models pattern {pat!r} leads out of the config's folder ({root})", lines.key(k, "models"))
        full = pat if Path(pat).is_absolute() else str(root / pat)
        hits = sorted(p for p in glob.glob(full, recursive=True) if Path(p).is_file())
        if not hits:
            fail(f"no model matches {pat!r} (relative to {root})", lines.key(k, "models"))
        models.extend(hits)
    return tuple(dict.fromkeys(models))


def _dims(value, what, line, fail):
    """``{name: positive int}`` (the meaning of ``--dim NAME=VALUE``), sorted by name."""
    if not isinstance(value, dict):
        fail(f"{what} must be a table of symbolic dimension sizes, e.g. {{batch = 1}}", line())
    for name, size in value.items():
        if not name.strip():
            fail(f"{what}: a dimension name is empty", line())
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            fail(f"{what}.{name} must be a positive whole number, not {size!r}", line())
    return dict(sorted(value.items()))


def _per_model(tables, k, lines, fail, root, models):
    """``[check.model."PATTERN"]`` tables -> ``(ModelSettings, …)``; each pattern must name a model of the check."""
    if tables is None:
        return ()
    if not isinstance(tables, dict) or not all(isinstance(v, dict) for v in tables.values()):
        fail('model must be tables, one per model: [check.model."models/x.onnx"]', lines.key(k, "model"))
    rels = [model_relpath(m, root) for m in models]
    out = []
    for pattern, table in tables.items():
        line = lines.mention(k, pattern)
        norm = pattern[2:] if pattern.startswith("./") else pattern
        for key in table:
            if key not in _MODEL_KEYS:
                fail(f"unknown key {key!r} for model {pattern!r} (known: {', '.join(_MODEL_KEYS)})", line)
        settings = ModelSettings(norm, _dims(table["dims"], f"model {pattern!r} dims", lambda: line, fail)
                                 if "dims" in table else {}, _expect(table.get("expect"), pattern, line, fail), line)
        if not any(settings.matches(r) for r in rels):
            fail(f"model {pattern!r} is none of this check's models (paths relative to {root})", line)
        out.append(settings)
    return tuple(out)


def _expect(value, pattern, line, fail):
    if value is None:
        return None
    if not isinstance(value, dict) or set(value) != set(_EXPECT_KEYS):
        fail(f'model {pattern!r} expect must be {{accelerated = true|false, reason = "why"}}', line)
    if not isinstance(value["accelerated"], bool):
        fail(f"model {pattern!r} expect.accelerated must be true or false", line)
    if not isinstance(value["reason"], str) or not value["reason"].strip():
        fail(f"model {pattern!r} expect.reason must say why, in words", line)
    return {"accelerated": value["accelerated"], "reason": " ".join(value["reason"].split())}
