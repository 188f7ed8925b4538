"""Issue 32's size limits, kept: no module of partsim over 600 lines, no function over 80 (docs/development.md).
A module that grows past the limit is split along a seam (as ``gen/openvino_plugin_op_builders.py`` was split from
``gen/openvino_plugin_graphs.py``), not given an exception here."""

import ast

from tests.conftest import ROOT

MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80


def sources():
    return sorted([*(ROOT / "partsim").rglob("*.py"), ROOT / "cli.py"])


def oversized(path_text_pairs):
    """``(where, lines)`` of every module over :data:`MAX_MODULE_LINES` lines and every function or method over
    :data:`MAX_FUNCTION_LINES`, for ``(name, source text)`` pairs."""
    found = []
    for name, text in path_text_pairs:
        count = len(text.splitlines())
        if count > MAX_MODULE_LINES:
            found.append((name, count))
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    found.append((f"{name}:{node.lineno} {node.name}", length))
    return found


def test_no_module_over_600_lines_and_no_function_over_80():
    pairs = [(str(p.relative_to(ROOT)), p.read_text(encoding="utf-8")) for p in sources()]
    assert len(pairs) > 150
    assert oversized(pairs) == []


def test_the_limits_catch_a_long_module_and_a_long_function():
    long_function = "def f():\n" + "    x = 1\n" * 80
    long_module = "x = 1\n" * 601
    assert oversized([("ok.py", "def f():\n    return 1\n")]) == []
    assert oversized([("f.py", long_function)]) == [("f.py:1 f", 81)]
    assert oversized([("m.py", long_module)]) == [("m.py", 601)]
