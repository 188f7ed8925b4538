"""Bounded fuzzing of the two parsers that read strangers' files.

Targets
-------
* ``model_bytes``: a valid model's bytes, mutated (bit flips, inserts, deletes,
  truncation, splices between seed models), written to a file and loaded with
  :func:`partsim.io.load.load_model`.
* ``model_proto``: structure-aware mutations of a valid ``ModelProto`` (rewired
  inputs, duplicated outputs, odd dims, unknown ops and domains, opset imports,
  external-data locations, reordered nodes), then loaded the same way.
* ``rules_yaml``: random YAML documents (random data built from the table
  vocabulary, dumped with ``yaml.safe_dump``) and mutated YAML text, parsed with
  :func:`partsim.rules.load.parse_table`.

The only clean outcomes are a result (``Model`` / ``RuleTable``) or a
:class:`partsim.errors.PartsimError`; any other exception fails.  A model that
loads is also simulated and summarized (an ad-hoc compiling EP, then the CPU), so
the simulator sees odd-but-legal graphs too.

``make test`` runs a few dozen examples per target; ``benchmarks/fuzz.py`` drives
the same targets for >= 10,000 executions each and prints the outcome counts.
"""

import tempfile
from pathlib import Path

import numpy as np
import onnx
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto as T
from onnx import helper

from partsim.errors import PartsimError
from partsim.io.load import load_model
from partsim.ir.model import Model
from partsim.report.output import to_json
from partsim.rules.table import RuleTable, adhoc_table
from partsim.rules.load import builtin_tables, parse_table
from partsim.rules.resolve import resolve_providers
from partsim.sim import simulate, summarize

from tests.fuzz_surfaces import SURFACES, run_surface, surface_inputs, surfaces

__all__ = ["SEED_MODELS", "model_bytes_inputs", "model_proto_inputs", "rules_yaml_inputs", "run_model_bytes",
           "run_rules_text", "TARGETS"]

TEST_SETTINGS = settings(max_examples=40, deadline=None, database=None,
                         suppress_health_check=list(HealthCheck))


# ---------------------------------------------------------------- seed models

def _vi(name, shape, dtype=T.FLOAT):
    return helper.make_tensor_value_info(name, dtype, shape)


def _mk(nodes, inputs, outputs, inits=(), opsets=(("", 17),), value_info=()):
    g = helper.make_graph(nodes, "seed", inputs, outputs, list(inits), value_info=list(value_info))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets])
    m.ir_version = 8
    return m


def _seed_models():
    w = helper.make_tensor("w", T.FLOAT, [4, 4], np.full(16, 0.5, np.float32))
    chain = _mk([helper.make_node("MatMul", ["x", "w"], ["a"], name="mm"),
                 helper.make_node("Add", ["a", "x"], ["b"], name="add"),
                 helper.make_node("Relu", ["b"], ["c"], name="relu"),
                 helper.make_node("Concat", ["c", "a"], ["y"], name="cat", axis=0)],
                [_vi("x", [4, 4])], [_vi("y", [8, 4])], [w], value_info=[_vi("a", [4, 4])])
    then_g = helper.make_graph([helper.make_node("Relu", ["x"], ["o1"], name="then_relu")], "then", [],
                               [_vi("o1", [2])])
    else_g = helper.make_graph([helper.make_node("Sigmoid", ["x"], ["o2"], name="else_sig")], "else", [],
                               [_vi("o2", [2])])
    branchy = _mk([helper.make_node("Constant", [], ["k"], name="k",
                                    value=helper.make_tensor("kv", T.FLOAT, [2], [1.0, 2.0])),
                   helper.make_node("Mul", ["x", "k"], ["m"], name="mul"),
                   helper.make_node("If", ["cond"], ["z"], name="if", then_branch=then_g, else_branch=else_g),
                   helper.make_node("Frob", ["m", "z"], ["y"], name="frob", domain="com.example")],
                  [_vi("x", [2]), _vi("cond", [], T.BOOL)], [_vi("y", [2])],
                  opsets=(("", 17), ("com.example", 1)))
    ext = onnx.TensorProto()
    ext.name, ext.data_type = "e", T.FLOAT
    ext.dims.extend([2, 2])
    ext.data_location = onnx.TensorProto.EXTERNAL
    for k, v in (("location", "weights.bin"), ("offset", "0"), ("length", "16")):
        entry = ext.external_data.add()
        entry.key, entry.value = k, v
    qdq = _mk([helper.make_node("DequantizeLinear", ["q", "s", "zp"], ["d"], name="dq"),
               helper.make_node("Add", ["d", "e"], ["a"], name="add"),
               helper.make_node("QuantizeLinear", ["a", "s", "zp"], ["y"], name="q_out")],
              [_vi("q", [2, 2], T.UINT8)], [_vi("y", [2, 2], T.UINT8)],
              [ext, helper.make_tensor("s", T.FLOAT, [], [0.1]), helper.make_tensor("zp", T.UINT8, [], [3])])
    return [chain, branchy, qdq]


SEED_MODELS = _seed_models()
SEED_BYTES = [m.SerializeToString() for m in SEED_MODELS]


# ---------------------------------------------------------------- strategies: model bytes

_byte_ops = st.sampled_from(["flip", "set", "insert", "delete", "truncate", "duplicate", "splice", "varint"])


@st.composite
def model_bytes_inputs(draw):
    data = bytearray(draw(st.sampled_from(SEED_BYTES)))
    for _ in range(draw(st.integers(1, 4))):
        op = draw(_byte_ops)
        n = len(data)
        if n == 0:
            break
        i = draw(st.integers(0, n - 1))
        if op == "flip":
            data[i] ^= 1 << draw(st.integers(0, 7))
        elif op == "set":
            data[i] = draw(st.sampled_from([0x00, 0xFF, 0x7F, 0x80, 0x0A, 0x12, 0x1A, 0x22, 0x3A]))
        elif op == "insert":
            data[i:i] = draw(st.binary(min_size=1, max_size=8))
        elif op == "delete":
            del data[i:i + draw(st.integers(1, 16))]
        elif op == "truncate":
            del data[i:]
        elif op == "duplicate":
            j = min(n, i + draw(st.integers(1, 64)))
            data[j:j] = data[i:j]
        elif op == "splice":
            other = draw(st.sampled_from(SEED_BYTES))
            k = draw(st.integers(0, len(other) - 1))
            data[i:] = other[k:]
        else:  # a huge varint (a length or a dim): 10 bytes of continuation
            data[i:i] = b"\xff" * 9 + b"\x01"
    return bytes(data)


# ---------------------------------------------------------------- strategies: structured model mutations

_names = st.sampled_from(["x", "w", "a", "b", "c", "y", "k", "m", "z", "cond", "q", "d", "e", "s", "zp", "",
                          "ghost", "x/1", "a\u00e9", "o1"])
_ops = st.sampled_from(["Relu", "Add", "MatMul", "Concat", "If", "Loop", "Constant", "Frob", "", "Conv",
                        "QuantizeLinear", "DequantizeLinear", "Shape", "Reshape", "NoSuchOp"])
_domains = st.sampled_from(["", "ai.onnx", "com.microsoft", "com.example", "ai.onnx.ml", "x" * 300])
_dims = st.one_of(st.integers(-3, 8), st.sampled_from([2**31, 2**40, 2**40 + 1, 2**62, 2**63 - 1]))
_locations = st.sampled_from(["weights.bin", "../weights.bin", "/etc/passwd", "sub/../../x", "", ".", "..",
                              "a\x00b", "sub/w.bin", "C:\\w.bin", "\\\\server\\w", "x" * 5000, "./././w"])


@st.composite
def model_proto_inputs(draw):
    m = onnx.ModelProto()
    m.CopyFrom(draw(st.sampled_from(SEED_MODELS)))
    g = m.graph
    for _ in range(draw(st.integers(1, 4))):
        what = draw(st.sampled_from(["rewire", "reoutput", "dim", "op", "domain", "drop", "dup", "opset",
                                     "location", "shuffle", "graph_output", "init_dims", "attr"]))
        nodes = list(g.node)
        k = draw(st.integers(0, max(0, len(nodes) - 1)))
        if what == "rewire" and nodes and nodes[k].input:
            nodes[k].input[draw(st.integers(0, len(nodes[k].input) - 1))] = draw(_names)
        elif what == "reoutput" and nodes and nodes[k].output:
            nodes[k].output[0] = draw(_names)
        elif what == "dim":
            vis = list(g.input) + list(g.output) + list(g.value_info)
            if vis:
                vi = vis[draw(st.integers(0, len(vis) - 1))]
                dims = vi.type.tensor_type.shape.dim
                if len(dims):
                    dims[draw(st.integers(0, len(dims) - 1))].dim_value = draw(_dims)
                else:
                    vi.type.tensor_type.shape.dim.add().dim_param = draw(st.sampled_from(["N", "", "?"]))
        elif what == "op" and nodes:
            nodes[k].op_type = draw(_ops)
        elif what == "domain" and nodes:
            nodes[k].domain = draw(_domains)
        elif what == "drop" and nodes:
            del g.node[k]
        elif what == "dup" and nodes:
            g.node.append(nodes[k])
        elif what == "opset":
            if draw(st.booleans()) and len(m.opset_import):
                del m.opset_import[draw(st.integers(0, len(m.opset_import) - 1))]
            else:
                m.opset_import.append(helper.make_opsetid(draw(_domains), draw(st.integers(-1, 10**6))))
        elif what == "location":
            for init in g.initializer:
                if init.data_location == onnx.TensorProto.EXTERNAL:
                    init.external_data[0].value = draw(_locations)
        elif what == "shuffle" and nodes:
            order = draw(st.permutations(range(len(nodes))))
            del g.node[:]
            g.node.extend(nodes[i] for i in order)
        elif what == "graph_output":
            g.output.append(_vi(draw(_names), [2]))
        elif what == "init_dims" and len(g.initializer):
            init = g.initializer[draw(st.integers(0, len(g.initializer) - 1))]
            init.dims.append(draw(_dims))
        elif what == "attr" and nodes:
            sub = helper.make_graph([helper.make_node("Identity", [draw(_names)], ["sub_out"], name="sub_id")],
                                    "sub", [], [_vi("sub_out", [2])])
            nodes[k].attribute.append(helper.make_attribute(draw(st.sampled_from(["body", "then_branch", "axis"])),
                                                            sub))
    return m.SerializeToString()


# ---------------------------------------------------------------- strategies: rule YAML

_rule_keys = ["provider", "kind", "source", "ops", "aliases", "cpu_based", "layout", "precisions",
              "compute_precision", "partitioning", "defaults", "notes", "variant", "default_variant", "op",
              "domain", "versions", "types", "static_shape", "min_rank", "max_rank", "rank_inputs",
              "const_inputs", "attrs", "dtype_pairs", "host_inputs", "host_outputs", "layout_sensitive",
              "name", "in", "not_in", "min", "max", "absent", "description", "version", "min_nodes",
              "stop_ops", "qdq_node_units", "T", "i0", "bogus"]
_scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 30), st.sampled_from([2**70, -2**70]),
                     st.floats(allow_nan=False, allow_infinity=False, width=32),
                     st.sampled_from(["kernel", "compiling", "NCHW", "NHWC", "fp32", "fp16", "float",
                                      "tensor(float)", "MatMul", "Relu", "CPUExecutionProvider",
                                      "XnnpackExecutionProvider", "FooExecutionProvider", "", "cpu"]),
                     st.text(max_size=12))
_docs = st.recursive(_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4),
    st.dictionaries(st.one_of(st.sampled_from(_rule_keys), st.text(max_size=6)), inner, max_size=5)),
    max_leaves=25)

_BASE_TABLE = {"provider": "XnnpackExecutionProvider", "kind": "kernel",
               "source": {"description": "fuzz", "version": "1"},
               "ops": [{"op": "Relu"}, {"op": "Add", "versions": [7, 12], "types": {"T": ["float"]}}]}


@st.composite
def _table_like(draw):
    """A valid table with a few keys replaced by random values (reaches the checks past the schema)."""
    import copy

    doc = copy.deepcopy(_BASE_TABLE)
    for _ in range(draw(st.integers(1, 3))):
        target = draw(st.sampled_from(["top", "op", "partitioning", "defaults"]))
        key = draw(st.sampled_from(_rule_keys))
        value = draw(_docs)
        ops = doc.get("ops")
        if target == "op" and isinstance(ops, list) and len(ops) == 2 and all(isinstance(o, dict) for o in ops):
            ops[draw(st.integers(0, 1))][key] = value
        elif target in ("partitioning", "defaults") and isinstance(doc.get(target, {}), dict):
            doc.setdefault(target, {})[key] = value
        else:
            doc[key] = value
    return doc


_yaml_chars = st.sampled_from(list(":-[]{}&*!|>'\"#%@`,? \n\t") + ["a", "b", "1", ".nan", "<<", "---", "...",
                                                                    "!!python/object:os.system", "\x00",
                                                                    "\ufeff", "\u2028"])


@st.composite
def rules_yaml_inputs(draw):
    kind = draw(st.sampled_from(["random_doc", "table_like", "mutated_text", "token_soup"]))
    if kind == "random_doc":
        return yaml.safe_dump(draw(_docs), allow_unicode=True)
    if kind == "table_like":
        return yaml.safe_dump(draw(_table_like()), allow_unicode=True, sort_keys=False)
    if kind == "mutated_text":
        text = yaml.safe_dump(_BASE_TABLE, sort_keys=False)
        for _ in range(draw(st.integers(1, 4))):
            i = draw(st.integers(0, len(text)))
            if draw(st.booleans()):
                text = text[:i] + draw(_yaml_chars) + text[i:]
            else:
                text = text[:i] + text[i + draw(st.integers(1, 6)):]
        return text
    return "".join(draw(st.lists(_yaml_chars, max_size=40)))


# ---------------------------------------------------------------- targets

_TMP = None


def _scratch():
    global _TMP
    if _TMP is None:
        import atexit
        import shutil

        _TMP = Path(tempfile.mkdtemp(prefix="partsim-fuzz-"))
        atexit.register(shutil.rmtree, _TMP, True)  # removed at exit, as tests.fuzz_surfaces does its folder
        (_TMP / "models").mkdir()
    return _TMP / "models" / "fuzz.onnx"


def run_model_bytes(data):
    """Load ``data`` as a model file; simulate it when it loads.  Returns the outcome's name."""
    path = _scratch()
    path.write_bytes(data)
    try:
        model = load_model(path)
    except PartsimError as exc:
        assert "\n" not in str(exc)
        return f"error:{type(exc).__name__}"
    assert isinstance(model, Model)
    ops = sorted({n.qualified_op for n in model.nodes})[::2]
    try:
        resolution = resolve_providers(["EP"], builtin_tables(), [adhoc_table(ops, "EP", "compiling")])
        summary = summarize(simulate(model, resolution))
    except PartsimError as exc:
        return f"sim-error:{type(exc).__name__}"
    to_json(summary)
    assert len(summary["nodes"]) == len(model.nodes)
    return "ok"


def run_rules_text(text):
    """Parse ``text`` as a rule table.  Returns the outcome's name."""
    try:
        table = parse_table(text, "fuzz.yaml")
    except PartsimError as exc:
        assert "\n" not in str(exc)
        assert str(exc).startswith("fuzz.yaml")
        return f"error:{type(exc).__name__}"
    assert isinstance(table, RuleTable)
    return "ok"


TARGETS = {
    "model_bytes": (model_bytes_inputs(), run_model_bytes),
    "model_proto": (model_proto_inputs(), run_model_bytes),
    "rules_yaml": (rules_yaml_inputs(), run_rules_text),
}

# the structured-file surfaces (tests/fuzz_surfaces.py): the real CLI in-process on hostile files
for _name in SURFACES:
    TARGETS[f"surface_{_name}"] = (st.deferred(lambda n=_name: surface_inputs(n)),
                                   lambda data, n=_name: run_surface(n, data))


# ---------------------------------------------------------------- the tests (a small, bounded run)

def test_seeds_are_clean():
    for data in SEED_BYTES:
        assert run_model_bytes(data) == "ok"
    assert run_rules_text(yaml.safe_dump(_BASE_TABLE)) == "ok"


@TEST_SETTINGS
@given(model_bytes_inputs())
def test_fuzz_model_bytes(data):
    run_model_bytes(data)


@TEST_SETTINGS
@given(model_proto_inputs())
def test_fuzz_model_proto(data):
    run_model_bytes(data)


@TEST_SETTINGS
@given(rules_yaml_inputs())
def test_fuzz_rules_yaml(text):
    run_rules_text(text)


SURFACE_SETTINGS = settings(max_examples=25, deadline=None, database=None, suppress_health_check=list(HealthCheck))


def test_surface_seeds_are_clean():
    """Every surface's valid seed runs clean (exit 0 or 1): the fuzz starts from files partsim accepts."""
    s = surfaces()
    for name in SURFACES:
        assert run_surface(name, s.seeds[name]) in ("exit0", "exit1", "exit0+exit0", "exit1+exit0"), name


@pytest.mark.parametrize("name", SURFACES)
def test_fuzz_surface(name):
    """Hostile versions of one structured input (mutated seeds, documents drawn from its schema):
    exit 0, 1 or 2 only, no traceback, one stderr line on exit 2, no hang, inputs untouched."""
    @SURFACE_SETTINGS
    @given(surface_inputs(name))
    def drive(data):
        run_surface(name, data)

    drive()


def teardown_module(module):
    import shutil

    if _TMP is not None:
        shutil.rmtree(_TMP, ignore_errors=True)
