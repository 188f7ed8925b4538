"""The input surfaces of partsim's structured files, for fuzzing: a valid seed per surface, the
command that reads it, and hypothesis strategies for hostile versions of it.

Surfaces: ``lock`` (``check``), ``baseline`` (``verify --baseline``), ``calibrate`` (node-record
``.jsonl`` of ``rules calibrate``), ``observation`` (``verify --observation``), ``config``
(``partsim.toml``), ``require`` (``gate --require``), ``rules`` (a rule table, through
``simulate -r`` and ``rules lint``).

An example is a file's bytes: written over the surface's file in a prepared folder, the
command runs in-process (:func:`partsim.cli.main`), and :func:`run_surface` returns the outcome
(``exit0``, ``exit1``, ``exit2``) or raises :class:`Finding` for a broken property: an exit code
outside {0, 1, 2}, an exception escaping ``main`` (a traceback), not exactly one stderr line on
exit 2, an input file changed, or a run longer than :data:`HANG_SECONDS` (a hang).

Strategies: mutations of the valid seed (byte flips, cuts, splices, deep nesting, non-finite
numbers, control characters; structure-aware: a value anywhere replaced by another type, a huge
number, a deep nest) and documents drawn from the surface's JSON Schema (:func:`from_schema`).
"""

import contextlib
import hashlib
import io
import json
import shutil
import signal
import tempfile
from pathlib import Path

import onnx
import yaml
from hypothesis import strategies as st
from onnx import TensorProto as T
from onnx import helper

HANG_SECONDS = 20.0
ROOT = Path(__file__).resolve().parents[1]


class Finding(Exception):
    """A broken robustness property (the message says which)."""


# ---------------------------------------------------------------- the prepared folder

def _tiny_model(path, names=("relu", "add", "sig")):
    x = helper.make_tensor_value_info("x", T.FLOAT, [2, 4])
    y = helper.make_tensor_value_info("y", T.FLOAT, [2, 4])
    nodes = [helper.make_node("Relu", ["x"], ["a"], name=names[0]),
             helper.make_node("Add", ["a", "x"], ["b"], name=names[1]),
             helper.make_node("Sigmoid", ["b"], ["y"], name=names[2])]
    m = helper.make_model(helper.make_graph(nodes, "g", [x], [y]), opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)


CONFIG = """\
lock = "partsim.lock.json"

[[check]]
name = "cpu"
models = ["models/*.onnx"]
providers = ["nnapi", "cpu"]
level = "disable"
max_partitions = 3
min_delegated_share = 0.5
max_transfers = 4
max_memcpy = 0
accelerated = true
forbid_reasons = ["dynamic_shape"]
status = "ok"
"""

REQUIRE = "devices: [cpu]\nsamples: [s1]\ncells: [first, repeat]\n"

RULES = """\
provider: NnapiExecutionProvider
aliases: [nnapi]
kind: compiling
cpu_based: true
source:
  description: a small test table
  version: onnxruntime 1.31.1
partitioning:
  qdq_node_units: true
defaults:
  static_shape: true
ops:
- op: Relu
- op: Add
  min_rank: 1
  max_rank: 4
  rank_inputs: [0]
- op: Sigmoid
  types:
    T: [float]
- op: Conv
  const_inputs: [1, 2]
  attrs:
  - name: group
    default: 1
    in: [1]
"""


def _observation():
    return {"runtime": "onnxruntime 1.31.1", "device": "test", "records": [{
        "level": "disable", "requested": ["NnapiExecutionProvider", "CPUExecutionProvider"],
        "granted": ["CPUExecutionProvider"],
        "assignment": [["CPUExecutionProvider", [["relu", "Relu"], ["add", "Add"], ["sig", "Sigmoid"]]]],
        "profile_nodes": [["relu", "Relu", "CPUExecutionProvider"], ["add", "Add", "CPUExecutionProvider"]],
        "optimized_ops": [["relu", "Relu"], ["add", "Add"], ["sig", "Sigmoid"]],
        "placement": {"CPUExecutionProvider": {"nodes": [["Relu", "relu"]]}},
        "memcpy_log": ["1 Memcpy nodes are added to the graph main_graph for CPUExecutionProvider"]}]}


def _node_records():
    recs = [{"case": "node__tiny", "level": "disable", "requested": ["CPUExecutionProvider"],
             "granted": ["CPUExecutionProvider"],
             "assignment": [["CPUExecutionProvider", [["relu", "Relu"], ["add", "Add"], ["sig", "Sigmoid"]]]]},
            {"case": "node__tiny", "level": "disable", "create_error": "refused", "assignment": []}]
    return "".join(json.dumps(r) + "\n" for r in recs)


def _cli(*argv):
    from partsim.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()


class Surfaces:
    """One prepared folder holding every surface's seed file, its model(s) and the commands."""

    def __init__(self, folder=None):
        self.dir = Path(folder or tempfile.mkdtemp(prefix="partsim-fuzz-"))
        d = self.dir
        (d / "models").mkdir(parents=True, exist_ok=True)
        _tiny_model(d / "models" / "tiny.onnx")
        self.model = d / "models" / "tiny.onnx"
        (d / "partsim.toml").write_text(CONFIG)
        self._must(_cli("check", "--config", d / "partsim.toml", "--update"), (0, 1), "check --update")
        self._must(_cli("verify", self.model, "-p", "nnapi,cpu", "--level", "disable", "--baseline",
                        d / "baseline.json", "--update-baseline"), (0,), "verify --update-baseline")
        (d / "observed.json").write_text(json.dumps(_observation(), indent=1))
        (d / "nodes.jsonl").write_text(_node_records())
        (d / "require.yaml").write_text(REQUIRE)
        (d / "table.yaml").write_text(RULES)
        self.receipt = d / "receipt.json"
        self.seeds = {}
        self.files = {"lock": d / "partsim.lock.json", "baseline": d / "baseline.json",
                      "observation": d / "observed.json", "calibrate": d / "nodes.jsonl",
                      "config": d / "partsim.toml", "require": d / "require.yaml", "rules": d / "table.yaml"}
        for name, f in self.files.items():
            self.seeds[name] = f.read_bytes()

    @staticmethod
    def _must(result, codes, what):
        if result[0] not in codes:
            raise RuntimeError(f"fuzz setup: {what} exited {result[0]}: {result[2][-500:]}")

    def _make_receipt(self):
        if not self.receipt.exists():
            self._must(_cli("receipt", self.model, "-p", "cpu", "--level", "disable", "--sample", "s1",
                            "--device", "cpu", "--abs-tol", "1e-5", "--rel-tol", "1e-4", "-o", self.receipt), (0, 1), "receipt")
        r = json.loads(self.receipt.read_text())
        return r["candidate"]["modelBundleId"], r["candidate"]["runtime"]["version"]

    def commands(self, name):
        """The command lines (one or more) that read surface ``name``."""
        d, m = self.dir, self.model
        if name in ("lock", "config"):
            return [("check", "--config", d / "partsim.toml", "-f", "json")]
        if name == "baseline":
            return [("verify", m, "-p", "nnapi,cpu", "--level", "disable", "--baseline", d / "baseline.json",
                     "-f", "junit")]
        if name == "observation":
            return [("verify", m, "-p", "cpu", "--level", "disable", "--observation", d / "observed.json",
                     "-f", "json")]
        if name == "calibrate":
            return [("rules", "calibrate", d / "nodes.jsonl", "-p", "cpu", "-f", "json")]
        if name == "require":
            candidate, runtime = self._make_receipt()
            return [("gate", self.receipt, "--candidate", candidate, "--runtime", runtime, "--require",
                     d / "require.yaml", "-f", "json")]
        if name == "rules":
            return [("simulate", m, "-r", d / "table.yaml", "-p", "nnapi", "--level", "disable", "-f", "json"),
                    ("lint", d / "table.yaml", "-f", "json")]
        raise KeyError(name)


_SHARED = {}


def surfaces():
    """The process's prepared folder (made on first use, removed at exit)."""
    if "s" not in _SHARED:
        import atexit

        s = _SHARED["s"] = Surfaces()
        atexit.register(shutil.rmtree, s.dir, True)
    return _SHARED["s"]


# ---------------------------------------------------------------- one run

class _Hang(BaseException):
    pass


def _alarm(_signum, _frame):
    raise _Hang()


def _digest(p):
    try:
        return hashlib.sha256(Path(p).read_bytes()).hexdigest()
    except OSError:
        return None


def run_surface(name, data, s=None):
    """Write ``data`` as surface ``name``'s file, run its command(s); the outcome, or :class:`Finding`."""
    s = s or surfaces()
    target = s.files[name]
    outcomes = []
    commands = s.commands(name)  # the gate's receipt is made before the seed is replaced
    try:
        target.write_bytes(data)
        watched = [target, s.model] + [f for f in s.files.values() if f != target]
        before = {p: _digest(p) for p in watched}
        for argv in commands:
            old = signal.signal(signal.SIGALRM, _alarm)
            signal.setitimer(signal.ITIMER_REAL, HANG_SECONDS)
            try:
                code, _out, err = _cli(*argv)
            except _Hang:
                raise Finding(f"hang: {argv[0]} ran over {HANG_SECONDS} s") from None
            except SystemExit as exc:
                raise Finding(f"SystemExit({exc.code!r}) escaped main") from None
            except Exception as exc:  # noqa: BLE001 - the finding: a traceback
                raise Finding(f"traceback: {type(exc).__name__}: {str(exc)[:200]}") from exc
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
                signal.signal(signal.SIGALRM, old)
            if code not in (0, 1, 2):
                raise Finding(f"exit code {code!r}")
            if "Traceback" in err:
                raise Finding("a traceback on stderr")
            if code == 2 and (len(err.splitlines()) != 1 or not err.startswith("partsim: error: ")):
                raise Finding(f"exit 2 with {len(err.splitlines())} stderr lines: {err[:300]!r}")
            after = {p: _digest(p) for p in watched}
            if after != before:
                changed = [str(p.name) for p in watched if after[p] != before[p]]
                raise Finding(f"input file(s) changed: {', '.join(changed)}")
            outcomes.append(f"exit{code}")
    finally:
        target.write_bytes(s.seeds[name])
    return "+".join(outcomes)


# ---------------------------------------------------------------- strategies

KINDS = {"lock": "json", "baseline": "json", "observation": "json", "calibrate": "jsonl", "config": "toml",
         "require": "yaml", "rules": "yaml"}
SCHEMAS = {"lock": "lock", "baseline": "baseline", "observation": "observation", "calibrate": "calibration-record",
           "config": "config", "require": "require", "rules": "rules"}

_NASTY_TEXT = ["\x1b[2J", "\x1b]0;owned\x07", "\n| forged | row |", "\x00", "\u202e", "&<>\"'", "..", "/",
               "../../etc/passwd", "*", "**", "a" * 300, "", " ", "é", "\ud7ff"]
_NASTY_NUMBERS = ["1e400", "-1e400", "NaN", "Infinity", "-Infinity", "nan", "inf", ".inf", ".nan", "-0",
                  "9" * 5000, "1" * 400, "-1", "0", "2.5", "1e-400", "0x10", "True", "null", "~"]


def _scalars():
    return st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70),
                     st.floats(allow_nan=False, allow_infinity=False), st.sampled_from(_NASTY_TEXT),
                     st.text(max_size=20))


def json_values(max_leaves=12):
    """Any JSON value (small)."""
    return st.recursive(_scalars(), lambda c: st.one_of(st.lists(c, max_size=4),
                                                        st.dictionaries(st.text(max_size=8), c, max_size=4)),
                        max_leaves=max_leaves)


def from_schema(schema, root=None, depth=0):
    """A hypothesis strategy for documents of a JSON Schema (the subset partsim's schemas use):
    mostly valid, with the odd value of another type where the schema allows a choice."""
    root = root or schema
    if depth > 6:
        return _scalars()
    if "$ref" in schema:
        ref = schema["$ref"]
        if ref.startswith("#/"):
            target = root
            for part in ref[2:].split("/"):
                target = target[part]
            return from_schema(target, root, depth + 1)
        from partsim.io.structured import load_schema

        name = ref.rsplit(":", 1)[-1]
        other = load_schema(name)
        return from_schema(other, other, depth + 1)
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return st.one_of([from_schema(s, root, depth + 1) for s in schema[key]])
    if "if" in schema:
        base = {k: v for k, v in schema.items() if k not in ("if", "then", "else")}
        branches = [dict(base, **schema[b]) for b in ("then", "else") if b in schema]
        return st.one_of([from_schema(b, root, depth + 1) for b in branches])
    types = schema.get("type")
    if isinstance(types, list):
        return st.one_of([from_schema(dict(schema, type=t), root, depth + 1) for t in types])
    if types == "object" or "properties" in schema:
        props = schema.get("properties", {})
        required = [k for k in schema.get("required", []) if k in props] + \
            [k for k in schema.get("required", []) if k not in props]
        extra = schema.get("additionalProperties", True)
        fixed = {k: from_schema(props.get(k, {}), root, depth + 1) for k in required}
        optional = {k: from_schema(v, root, depth + 1) for k, v in props.items() if k not in required}
        doc = st.fixed_dictionaries(fixed, optional=optional)
        if isinstance(extra, dict):
            more = st.dictionaries(st.text(min_size=1, max_size=10), from_schema(extra, root, depth + 1), max_size=3)
            doc = st.tuples(doc, more).map(lambda t: {**t[1], **t[0]})
        return doc
    if types == "array":
        prefix = [from_schema(s, root, depth + 1) for s in schema.get("prefixItems", [])]
        items = schema.get("items", {})
        n_min = max(0, schema.get("minItems", 0) - len(prefix))
        rest = st.just([]) if items is False else \
            st.lists(from_schema(items if isinstance(items, dict) else {}, root, depth + 1), min_size=n_min,
                     max_size=n_min + 3)
        return st.tuples(st.tuples(*prefix), rest).map(lambda t: list(t[0]) + t[1])
    if types == "string":
        return st.one_of(st.text(min_size=schema.get("minLength", 0), max_size=12), st.sampled_from(_NASTY_TEXT))
    if types == "integer":
        lo = schema.get("minimum")
        return st.integers(min_value=lo, max_value=None if lo is None else lo + 2**40)
    if types == "number":
        return st.floats(schema.get("minimum"), schema.get("maximum"), allow_nan=False, allow_infinity=False)
    if types == "boolean":
        return st.booleans()
    if types == "null":
        return st.none()
    return json_values()


def _schema_for(name):
    from partsim.io.structured import load_schema

    if name == "rules":
        from partsim.rules.load import table_schema

        return table_schema()
    return load_schema(SCHEMAS[name])


def dump(name, doc):
    """``doc`` written the way surface ``name`` stores it (bytes)."""
    kind = KINDS[name]
    if kind == "json":
        return json.dumps(doc, indent=1, allow_nan=True).encode()
    if kind == "jsonl":
        docs = doc if isinstance(doc, list) and doc and all(isinstance(d, dict) for d in doc) else [doc]
        return "".join(json.dumps(d, allow_nan=True) + "\n" for d in docs).encode()
    if kind == "yaml":
        return yaml.safe_dump(doc, allow_unicode=True, sort_keys=False).encode()
    return _toml(doc).encode()


def _toml_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v) if not isinstance(v, float) or v == v and abs(v) != float("inf") else "nan"
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v if x is not None) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{json.dumps(str(k))} = {_toml_value(x)}" for k, x in v.items() if x is not None) + "}"
    return '""'


def _toml(doc):
    """A small TOML writer (enough for config documents; ``None`` values are left out)."""
    if not isinstance(doc, dict):
        return f"value = {_toml_value(doc)}\n"
    lines = []
    tables = []
    for k, v in doc.items():
        if isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            tables.append((k, v))
        elif v is not None:
            lines.append(f"{json.dumps(str(k))} = {_toml_value(v)}")
    for k, items in tables:
        for item in items:
            lines.append(f"[[{json.dumps(str(k))}]]")
            lines.extend(f"{json.dumps(str(a))} = {_toml_value(b)}" for a, b in item.items() if b is not None)
    return "\n".join(lines) + "\n"


def _parse_seed(name, data):
    kind = KINDS[name]
    text = data.decode()
    if kind == "json":
        return json.loads(text)
    if kind == "jsonl":
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    if kind == "yaml":
        return yaml.safe_load(text)
    import tomllib

    return tomllib.loads(text)


def _paths(doc, prefix=()):
    yield prefix
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _paths(v, prefix + (i,))


def _replace(doc, path, value):
    if not path:
        return value
    import copy

    doc = copy.deepcopy(doc)
    node = doc
    for p in path[:-1]:
        node = node[p]
    node[path[-1]] = value
    return doc


def _deep(n, kind):
    if kind == "toml":
        return "x = " + "[" * n + "]" * n + "\n"
    if kind == "yaml":
        return "a: " + "[" * n + "]" * n + "\n"
    return "[" * n + "]" * n


@st.composite
def structural_mutants(draw, name, seed):
    """The seed document with one value (anywhere, the root included) replaced by another."""
    doc = _parse_seed(name, seed)
    paths = list(_paths(doc))
    path = draw(st.sampled_from(paths))
    value = draw(st.one_of(json_values(), st.sampled_from([float("inf"), float("nan"), -1, 2**64, 10**400, [],
                                                           {}, "", "\x1b[2J", [[[[[[]]]]]]])))
    return dump(name, _replace(doc, path, value))


@st.composite
def text_mutants(draw, name, seed):
    """The seed's bytes cut, flipped, spliced with nasty tokens, deep nests or random bytes."""
    data = bytearray(seed)
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "cut", "insert", "delete", "token", "deep", "dup"]))
        pos = draw(st.integers(0, len(data)))
        if op == "flip" and data:
            i = min(pos, len(data) - 1)
            data[i] ^= 1 << draw(st.integers(0, 7))
        elif op == "cut":
            del data[pos:]
        elif op == "insert":
            data[pos:pos] = draw(st.binary(min_size=1, max_size=8))
        elif op == "delete":
            del data[pos:pos + draw(st.integers(1, 16))]
        elif op == "token":
            token = draw(st.sampled_from(_NASTY_NUMBERS + _NASTY_TEXT + ["{", "}", "[", "]", "\"", "'", ":", ",",
                                                                          "=", "\n", "&a", "*a", "!!python/object"]))
            data[pos:pos] = token.encode("utf-8", "surrogatepass")
        elif op == "deep":
            n = draw(st.sampled_from([63, 64, 65, 200, 5000, 100000]))
            data[pos:pos] = _deep(n, KINDS[name]).encode()
        elif op == "dup" and data:
            a = draw(st.integers(0, len(data) - 1))
            data[pos:pos] = data[a:a + draw(st.integers(1, 64))]
        if len(data) > 1 << 20:
            del data[1 << 20:]
    return bytes(data)


def surface_inputs(name, seed=None):
    """Every kind of hostile file for surface ``name``: text and structural mutants of the seed,
    and documents drawn from its schema."""
    seed = seed if seed is not None else surfaces().seeds[name]
    schema = _schema_for(name)
    drawn = from_schema(schema)
    if KINDS[name] == "jsonl":
        drawn = st.lists(drawn, min_size=1, max_size=3)
    return st.one_of(text_mutants(name, seed), structural_mutants(name, seed), drawn.map(lambda d: dump(name, d)))


SURFACES = tuple(KINDS)
