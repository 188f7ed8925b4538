"""Whole sessions: did partsim predict which recorded sessions fail, and none of those that ran?

For every case of a node-observation file (``../shared/observed/nodes/*.jsonl``, all recorded at
ORT_DISABLE_ALL), ``partsim.api.predict(model, [PROVIDER], level="disable")`` (the whole pipeline,
functions inlined as ORT inlines them) against what the real session did:

- sessions ORT refused that partsim predicts ``session_would_fail`` (or cannot load: the model is refused
  either way), and
- sessions that ran that partsim predicts ``session_would_fail``: false failures, each listed.

A record with neither an assignment nor an error ("no placement") says nothing of the session: left out.

    PYTHONPATH=. .venv/bin/python benchmarks/session_agreement.py \\
        ../shared/observed/nodes/openvino-ort1.24.1.jsonl -p openvino:1.24

``benchmarks/node_agreement.py`` compares the placement of every node; this script the fate of every session.
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from partsim.analysis.cases import read_cases  # noqa: E402
from partsim.api import predict  # noqa: E402
from partsim.errors import PartsimError  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("observations")
    ap.add_argument("-p", "--provider", required=True)
    args = ap.parse_args(argv)
    missed, false_failures, refused, unknown = [], [], 0, 0
    cases = read_cases([args.observations])
    for case in cases:
        try:
            summary, _ = predict(str(case.model), [args.provider], level="disable")
            status, why = summary["status"], summary.get("failure") or ""
        except PartsimError as exc:  # partsim refuses to load the model: no session either
            status, why = "not loaded", str(exc)
        if case.refused == "no placement":  # recorded with neither an assignment nor an error: not known
            unknown += 1
            continue
        if case.refused:
            refused += 1
            if status not in ("session_would_fail", "not loaded"):
                missed.append((case.name, status))
        elif status != "ok":
            false_failures.append((case.name, status, why))
    print(f"{args.provider}: sessions ORT refused, predicted to fail: {refused - len(missed)} of {refused}; "
          f"sessions that ran, predicted to fail: {len(false_failures)} of {len(cases) - refused - unknown}; "
          f"recorded with no outcome (left out): {unknown}")
    for name, status in missed:
        print(f"  refused, predicted {status}: {name}")
    for name, status, why in false_failures:
        print(f"  ran, predicted {status}: {name}: {' '.join(why.split())[:160]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
