"""The CoreML capability tables, read from ORT's CoreML op builders (ML Program and NeuralNetwork).

Input: an ORT source tree, a checkout folder or a git directory and a commit (``partsim rules import
coreml-builders SRC [--commit C] --variant mlprogram|neuralnetwork``).  What is read mechanically, each
rule citing ``onnxruntime@<commit> <file>:<line>`` in its ``source``:

- ``builders/op_builder_factory.cc``: the op types registered (``CreateXOpBuilder("Op", ...)``) and the
  builder each one uses; the builder's file is the one defining ``void CreateXOpBuilder(``;
- ``SupportsMLProgram() const override { return true; }``: an op whose builder lacks it is not in the
  ML Program table (``BaseOpBuilder::IsOpSupported`` refuses it when the EP creates an ML Program);
- ``GetMinSupportedOpSet`` / ``GetMaxSupportedOpSet`` when they return a number (or a number per op
  type); the defaults of ``impl/base_op_builder.h`` otherwise.  The node's since-version must lie in
  that range (``BaseOpBuilder::HasSupportedOpSet``);
- input 0's dtype (``BaseOpBuilder::IsInputDtypeSupport``: float; float16 and int64 in an ML Program)
  when the builder does not override ``HasSupportedInputsImpl``;
- ``IsTrivial``: the ops whose partitions the EP drops when every node of one is trivial
  (``partitioning.trivial_ops``, coreml_execution_provider.cc ``on_group_closed``).

The checks of a builder's own ``IsOpSupportedImpl`` / ``HasSupportedInputsImpl`` are C++; those a table
can express are written down below (:data:`CONDITIONS`), each quoting the source text it reads.  A
condition is used only when that text is still in the file (its line is recorded), so a changed builder
drops it and says so.  What a builder checks beyond them is named in the rule's ``notes`` (reported as an
unchecked caveat), never guessed.  ORT's markdown op lists (the usability checker's) stay what
``--compat usability-checker`` reads (partsim/analysis/compat.py).

Regenerate (the ORT source of the shipped tables: microsoft/onnxruntime main @ae857d7a, the last commit
touching ``onnxruntime/core/providers/coreml`` in the stored snapshot read; any clone of it works)::

    partsim rules import coreml-builders ORT_GIT_DIR --commit ae857d7aae39 --variant mlprogram \\
        -o rules/coreml-mlprogram.yaml
    partsim rules import coreml-builders ORT_GIT_DIR --commit ae857d7aae39 --variant neuralnetwork \\
        -o rules/coreml-neuralnetwork.yaml
"""

import itertools
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UsageError
from ..ir.schemas import onnx_schema_history
from .coreml_conditions import CONDITIONS
from .yamlout import dump_table

__all__ = ["OrtSource", "builder_facts", "coreml_table", "VARIANTS", "CONDITIONS"]

BUILDERS = "onnxruntime/core/providers/coreml/builders/"
IMPL = BUILDERS + "impl/"
MAX_SOURCE_BYTES = 1024 * 1024
VARIANTS = ("mlprogram", "neuralnetwork")


class OrtSource:
    """Files of an ORT source tree: a git directory or checkout read at ``commit`` (default HEAD), or a plain
    folder of ORT's layout whose commit is given."""

    def __init__(self, root, commit=None):
        self.root = Path(root)
        if not self.root.is_dir():
            raise UsageError("not a folder (an ORT checkout or git directory)", root)
        if (self.root / ".git").exists():
            self.git_dir = self.root / ".git"
        elif (self.root / "HEAD").is_file() and (self.root / "objects").is_dir():
            self.git_dir = self.root
        else:
            self.git_dir = None
        if self.git_dir is not None:
            self.commit = self._git("rev-parse", "--verify", f"{commit or 'HEAD'}^{{commit}}").strip()
        elif commit:
            self.commit = str(commit)  # a plain folder: the commit its files come from, as given (it is cited)
        else:
            raise UsageError("a folder that is not a git checkout: give --commit (the ORT commit its files come "
                             "from; every rule cites it)", root)

    def _git(self, *args):
        try:
            out = subprocess.run(["git", "--git-dir", str(self.git_dir), *args], capture_output=True, timeout=60,
                                 check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise UsageError(f"git failed: {exc}", self.root) from None
        if out.returncode != 0:
            first = (out.stderr.decode("utf-8", "replace").strip().splitlines() or ["git failed"])[0]
            raise UsageError(first, self.root)
        if len(out.stdout) > MAX_SOURCE_BYTES:
            raise UsageError(f"{args[-1]}: larger than {MAX_SOURCE_BYTES} bytes", self.root)
        return out.stdout.decode("utf-8", "replace")

    def read(self, rel):
        if self.git_dir is not None:
            return self._git("show", f"{self.commit}:{rel}")
        from ..io.files import read_text

        return read_text(self.root / rel, MAX_SOURCE_BYTES)

    def listdir(self, rel):
        if self.git_dir is not None:
            return sorted(self._git("ls-tree", "--name-only", f"{self.commit}:{rel}").split())
        folder = self.root / rel
        if not folder.is_dir():
            raise UsageError(f"no {rel} here: not an ORT source tree", self.root)
        return sorted(p.name for p in folder.iterdir())


@dataclass
class Builder:
    """What one op builder's file declares (line numbers are 1-based)."""

    file: str
    text: str
    ml_program: int = 0                                 # line of SupportsMLProgram() { return true; }, 0: none
    min_opset: dict = field(default_factory=dict)        # op type or "" (any) -> (version, line)
    max_opset: dict = field(default_factory=dict)
    trivial: dict = field(default_factory=dict)          # op type or "" (any) -> line
    overrides: dict = field(default_factory=dict)        # IsOpSupportedImpl / HasSupportedInputsImpl -> (first, last)
    allow_empty: int = 0                                 # line of BaseOpBuilder(/*allow empty inputs*/ true)
    creates: dict = field(default_factory=dict)          # CreateXOpBuilder -> line of its definition

    def line_of(self, snippet):
        at = self.text.find(snippet)
        return 0 if at < 0 or self.text.find(snippet, at + 1) >= 0 else self.text.count("\n", 0, at) + 1


def _line(text, pos):
    return text.count("\n", 0, pos) + 1


_OPSET = re.compile(r"int (?:\w+::)?Get(Min|Max)SupportedOpSet\(const Node&[^)]*\) const(?: override)?\s*\{")
_PER_OP = re.compile(r'if \(op_type == "(\w+)"\) \{\s*return (\d+);\s*\}')


def _body(text, open_at):
    """The text between the brace at ``open_at`` and its match."""
    depth = 0
    for k in range(open_at, len(text)):
        depth += {"{": 1, "}": -1}.get(text[k], 0)
        if depth == 0:
            return text[open_at + 1:k]
    return text[open_at + 1:]


def _opsets(text, b):
    for m in _OPSET.finditer(text):
        body = re.sub(r"//[^\n]*", "", _body(text, m.end() - 1))
        target = b.min_opset if m.group(1) == "Min" else b.max_opset
        rest = body
        for per in _PER_OP.finditer(body):
            target[per.group(1)] = (int(per.group(2)), _line(text, m.start()))
            rest = rest.replace(per.group(0), "")
        rest = re.sub(r"const auto& op_type\(node\.OpType\(\)\);|const auto& op_type = node\.OpType\(\);", "", rest)
        last = re.fullmatch(r"\s*return (\d+);\s*", rest)
        if not last:
            raise UsageError(f"{b.file}:{_line(text, m.start())}: Get{m.group(1)}SupportedOpSet is not a number "
                             "per op type: the generator cannot read it")
        target[""] = (int(last.group(1)), _line(text, m.start()))


def builder_facts(text, file):
    """:class:`Builder` facts of one ``*_op_builder.cc``."""
    b = Builder(file=file, text=text)
    m = re.search(r"bool SupportsMLProgram\(\) const override \{ return true; \}", text)
    b.ml_program = _line(text, m.start()) if m else 0
    _opsets(text, b)
    for m in re.finditer(r"bool IsTrivial\(const Node&[^)]*\) const override \{ return ([^;]+); \}", text):
        expr = m.group(1).strip()
        if expr == "true":
            b.trivial[""] = _line(text, m.start())
        else:
            for op in re.findall(r'node\.OpType\(\) == "(\w+)"', expr):
                b.trivial[op] = _line(text, m.start())
    for name in ("IsOpSupportedImpl", "HasSupportedInputsImpl"):
        m = re.search(rf"^bool \w+::{name}\(", text, re.M)
        if m:
            close = re.search(r"^\}", text[m.start():], re.M)
            last = _line(text, m.start() + close.start()) if close else _line(text, len(text))
            b.overrides[name] = (_line(text, m.start()), last)
    m = re.search(r"BaseOpBuilder\(/\*allow empty inputs\*/ true\)", text)
    b.allow_empty = _line(text, m.start()) if m else 0
    return b


def _registrations(src):
    """``[(op type, builder function, line)]`` of op_builder_factory.cc, in file order."""
    text = src.read(BUILDERS + "op_builder_factory.cc")
    out = [(m.group(2), m.group(1), _line(text, m.start()))
           for m in re.finditer(r'\b(Create\w+OpBuilder)\("(\w+)", op_registrations\)', text)]
    if not out:
        raise UsageError("no CreateXOpBuilder(\"Op\", op_registrations) calls: not ORT's CoreML factory",
                         BUILDERS + "op_builder_factory.cc")
    return out


def _builders(src):
    """builder function -> :class:`Builder` of the file defining it."""
    out = {}
    for name in src.listdir(IMPL):
        if name.endswith("_op_builder.cc"):
            text = src.read(IMPL + name)
            facts = builder_facts(text, IMPL + name)
            for m in re.finditer(r"^void (Create\w+OpBuilder)\(", text, re.M):
                facts.creates[m.group(1)] = _line(text, m.start())
                out[m.group(1)] = facts
    return out


def _base_defaults(src):
    """(min opset, max opset, their line) of ``BaseOpBuilder`` (impl/base_op_builder.h)."""
    text = src.read(IMPL + "base_op_builder.h")
    lo = re.search(r"GetMinSupportedOpSet\(const Node& /\*node\*/\) const \{ return (\d+); \}", text)
    hi = re.search(r"GetMaxSupportedOpSet\(const Node& /\*node\*/\) const \{ return (\d+); \}", text)
    if not lo or not hi:
        raise UsageError("BaseOpBuilder's default opset range is not where the generator reads it",
                         IMPL + "base_op_builder.h")
    return int(lo.group(1)), int(hi.group(1)), _line(text, hi.start())


def _domain_versions(op, lo, hi):
    """``(domain, [first since-version >= lo, hi])`` of the op (a node's since-version must lie in [lo, hi]);
    an op ai.onnx lacks is ORT's com.microsoft one (FusedConv, QuickGelu: since-version 1)."""
    since = sorted({s.since_version for s in onnx_schema_history(op)})
    if not since:
        return "com.microsoft", ([1, 1] if lo <= 1 <= hi else None)
    firsts = [v for v in since if lo <= v <= hi]
    return "", ([firsts[0], hi] if firsts else None)


def _cite(src, file, line):
    return f"onnxruntime@{src.commit[:12]} {file}:{line}"


def _default_dtypes(variant):
    # base_op_builder.cc IsInputDtypeSupport: float; ML Program also float16 and int64
    # (under CAN_BUILD_COREML6_OR_LATER, true for the macOS/iOS release builds)
    return ["float", "float16", "int64"] if variant == "mlprogram" else ["float"]


def _conditions(op, b, variant):
    """The :data:`CONDITIONS` of ``op`` that apply to ``variant`` and are found in the file, their
    lines, and the ones whose quoted text is gone."""
    found, gone = [], []
    for c in CONDITIONS.get(op, ()):
        if variant not in c.variants:
            continue
        line = b.line_of(c.quote)
        (found if line else gone).append((c, line))
    return found, gone


def _op_rules(src, op, fn, reg_line, b, variant, base):
    """Rules (dicts) of one registered op for ``variant``, or ``[]`` when the builder refuses it."""
    if variant == "mlprogram" and not b.ml_program:
        return []
    lo, lo_line = b.min_opset.get(op, b.min_opset.get("", (base[0], 0)))
    hi, hi_line = b.max_opset.get(op, b.max_opset.get("", (base[1], 0)))
    domain, versions = _domain_versions(op, lo, hi)
    found, gone = _conditions(op, b, variant)
    if versions is None or any(c.refuses for c, _ in found):
        return []
    cites = [f"registered at {BUILDERS}op_builder_factory.cc:{reg_line}"]
    if variant == "mlprogram":
        cites.append(f"SupportsMLProgram at line {b.ml_program}")
    cites += [f"opset {lo} from line {lo_line}" if lo_line else f"opset {lo} (BaseOpBuilder default)",
              f"opset <= {hi} from line {hi_line}" if hi_line else f"opset <= {hi} (BaseOpBuilder default)"]
    base_rule = {"op": op, **({"domain": domain} if domain else {}), "versions": versions}
    if "HasSupportedInputsImpl" not in b.overrides:
        base_rule["types"] = {"i0": _default_dtypes(variant)}
    alternatives = [[{}]] + [list(c.any_of) for c, _ in found]
    notes = []
    for name, (first, last) in sorted(b.overrides.items()):
        told = [c.says for c, _ in found if c.reads == name]
        left = [c.left for c, _ in found if c.reads == name and c.left]
        complete = any(c.complete for c, _ in found if c.reads == name)
        if not complete:
            notes.append(f"{name} ({b.file}:{first}-{last}) checks more than this rule encodes"
                         + (f": {'; '.join(left)}" if left else ""))
        cites += [f"{s} (line {line})" for s, (c, line) in zip(told, [(c, ln) for c, ln in found if c.reads == name])]
    notes += [f"a condition of {b.file} was not found in this source: {c.says}" for c, _ in gone]
    out = []
    for combo in itertools.product(*alternatives):
        rule = dict(base_rule)
        for preds in combo:
            for k, v in preds.items():
                rule[k] = rule.get(k, []) + v if k == "attrs" else ({**rule[k], **v} if k == "types" and k in rule
                                                                      else v)
        rule["source"] = f"{_cite(src, b.file, b.ml_program or b.creates[fn])}; " + "; ".join(cites)
        if notes:
            rule["notes"] = " ".join(notes)
        out.append(rule)
    return out


def coreml_table(root, commit=None, variant="mlprogram"):
    """YAML text of the CoreML table of ``variant`` read from the ORT source at ``root``."""
    if variant not in VARIANTS:
        raise UsageError(f"--variant must be one of {', '.join(VARIANTS)} for coreml-builders, not {variant!r}")
    src = OrtSource(root, commit)
    base = _base_defaults(src)
    builders = _builders(src)
    ops, trivial, fallback = [], set(), set()
    for op, fn, line in _registrations(src):
        b = builders.get(fn)
        if b is None:
            raise UsageError(f"{fn} (registered at line {line}) is defined in no impl/*_op_builder.cc",
                             BUILDERS + "op_builder_factory.cc")
        rules = _op_rules(src, op, fn, line, b, variant, base)
        ops += rules
        if rules and ("" in b.trivial or op in b.trivial):
            trivial.add(op)
        if rules and not b.allow_empty:
            fallback.add(op)
    ops.sort(key=lambda r: (r.get("domain", ""), r["op"]))  # stable: alternatives keep their order
    release = src.read("VERSION_NUMBER").strip()
    return dump_table(_table_dict(src, variant, ops, sorted(trivial), sorted(fallback), base, release))


def _table_dict(src, variant, ops, trivial, fallback, base, release):
    short = src.commit[:12]
    gen = (f"partsim rules import coreml-builders ORT_GIT_DIR --commit {short} --variant {variant}")
    return {
        "provider": "CoreMLExecutionProvider",
        "aliases": ["coreml"],
        "variant": variant,
        **({"default_variant": True} if variant == "mlprogram" else {}),
        "kind": "compiling",
        "cpu_based": True,
        "precisions": ["fp32", "fp16"],
        "compute_precision": "fp32",
        "source": {
            "description": f"ORT's CoreML op builders ({BUILDERS}): registrations, "
                           f"{'ML Program support, ' if variant == 'mlprogram' else ''}opset ranges, input dtypes "
                           "and the IsOpSupportedImpl checks a table can express (partsim/gen/coreml_conditions.py)",
            "version": f"onnxruntime main @{short} (VERSION_NUMBER {release})",
            "generated_by": gen,
            "describes": {"onnxruntime": release},
        },
        "partitioning": {"subgraphs": "unsupported", "trivial_ops": trivial,
                         "zero_size_tensors": {"fallback_ops": fallback}},
        "defaults": {"max_rank": 5},
        "notes": [
            f"max_rank 5 on every input: {BUILDERS}helper.cc IsInputSupported (CoreML refuses rank > 5). It refuses an "
            "input with a 0 dimension too: zero_size_tensors, which partsim checks on input 0 and the outputs.",
            f"opset range [{base[0]}, {base[1]}] unless the builder says otherwise ({IMPL}base_op_builder.h:{base[2]}).",
            "compute_precision fp32: CoreML may run on the GPU/ANE in fp16; low precision is not assumed.",
            "Not encoded: the EP option RequireStaticInputShapes (off by default), coreml_version-dependent checks "
            "(CoreML 6/7 on the target device), EnableOnSubgraph (off: nodes inside If/Loop bodies stay on the CPU).",
            "trivial_ops: coreml_execution_provider.cc GetCapability drops a partition whose nodes are all trivial "
            "(the builders' IsTrivial; Unary's only for Ceil).",
            "ORT's CreateSupportedPartitions gets no node-unit map from the CoreML EP: QDQ groups are not kept "
            "together (no qdq_node_units).",
        ],
        "ops": ops,
    }
