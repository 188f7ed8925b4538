"""The probe evidence file of ``partsim rules import openvino-plugin --evidence FILE`` is read like every other
structured input: bounded, each line checked against ``probe-evidence.schema.json``; a damaged file is exit 2 with
one line naming it, before any probe session starts."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from partsim.errors import UsageError
from partsim.gen.openvino_plugin import read_evidence

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "rules" / "sources" / "openvino-plugin-1.8.1-probes.jsonl"
GOOD = {"record": {"assignment": [["OpenVINOExecutionProvider", [["n0_Abs", "Abs", ""]]]]},
        "spec": ["alone", "Abs", 13, 13, "float"]}

BAD = {
    "truncated": json.dumps(GOOD)[:40],
    "not an object": "[1, 2, 3]",
    "no record": json.dumps({"spec": ["alone", "Abs"]}),
    "spec of objects": json.dumps({"spec": [{"op": "Abs"}], "record": {}}),
    "assignment of numbers": json.dumps({"spec": ["alone"], "record": {"assignment": [[1, 2]]}}),
    "node without name": json.dumps({"spec": ["alone"], "record": {"assignment": [["EP", [[]]]]}}),
    "error not text": json.dumps({"spec": ["alone"], "record": {"create_error": 3}}),
    "unknown key": json.dumps({**GOOD, "extra": 1}),
    "NaN": '{"spec": ["alone", NaN], "record": {}}',
    "deep": "[" * 100000 + "]" * 100000,
    "bytes": "\udcff\x00\x01".encode("utf-8", "surrogateescape").decode("latin-1"),
}


def test_the_shipped_evidence_reads():
    evidence = read_evidence(SHIPPED)
    assert len(evidence) == len(SHIPPED.read_text().splitlines())
    assert all(isinstance(spec, tuple) and spec for spec in evidence)


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_damaged_evidence_file_is_one_line_and_exit_2(case, tmp_path):
    bad = tmp_path / "evidence.jsonl"
    bad.write_bytes((json.dumps(GOOD) + "\n" + BAD[case] + "\n").encode("utf-8", "surrogateescape"))
    out = tmp_path / "table.yaml"
    proc = subprocess.run([sys.executable, str(ROOT / "cli.py"), "rules", "import", "openvino-plugin", "--python",
                           sys.executable, "--evidence", bad, "-o", out], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and str(bad) in lines[0] and "Traceback" not in proc.stderr, proc.stderr
    assert not out.exists()


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=300), where=st.integers(0, 2))
def test_any_bytes_are_read_or_refused_as_a_usage_error(data, where, tmp_path_factory):
    """Random bytes before, inside or after a good line: read_evidence returns records or raises UsageError."""
    good = (json.dumps(GOOD) + "\n").encode()
    blob = [data + good, good[:20] + data + good[20:], good + data][where]
    f = tmp_path_factory.mktemp("ev") / "evidence.jsonl"
    f.write_bytes(blob)
    try:
        evidence = read_evidence(f)
    except UsageError as exc:
        assert exc.path == str(f) and exc.line in (None, 1, 2) and "\n" not in str(exc), str(exc)
    else:
        assert all(isinstance(spec, tuple) for spec in evidence)
