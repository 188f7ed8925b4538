"""Calibration on half of the node observations, judged on the other half.

    PYTHONPATH=. .venv/bin/python benchmarks/calibrate_split.py \
        ../shared/observed/nodes/cuda-ort1.31.1.jsonl -p cuda -r fixtures/cuda-1.25-735e69a.yaml

The cases are split by the parity of sha256(case name) (partsim.analysis.calibrate.split_cases); each
half calibrates the table given with -r (default: the shipped one) and the other half, which
the calibration has not seen, is predicted before and after.  Results are in docs/tables.md.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import observations_parser  # noqa: E402
from partsim.api import load_tables  # noqa: E402
from partsim.analysis.calibrate import _with, agreement, calibrate, read_cases, split_cases  # noqa: E402
from partsim.rules.load import layer_table, parse_table  # noqa: E402
from partsim.rules.providers import canonical_name  # noqa: E402


def main(argv=None):
    ap = observations_parser(__doc__)
    args = ap.parse_args(argv)
    cases = read_cases(args.observations)
    tables = load_tables(args.rules)
    base = tables[canonical_name(args.provider)][0]
    print("learnt on  judged on   nodes  before              after               changes  contradictions")
    for part in (0, 1):
        train, held = split_cases(cases, part), split_cases(cases, 1 - part)
        r = calibrate(train, args.provider, tables)
        layered = _with(tables, base, layer_table(base, parse_table(r["text"], "<overlay>"))) if r["text"] else tables
        b = agreement(held, [args.provider, "cpu"], tables)
        a = agreement(held, [args.provider, "cpu"], layered)
        print(f"half {part} ({len(train)})  half {1 - part} ({len(held)})  {b['nodes']:5d}  "
              f"{b['agreeing']:5d} ({100 * b['share']:.2f} %)  {a['agreeing']:5d} ({100 * a['share']:.2f} %)  "
              f"{len(r['report']['changes']):7d}  {len(r['report']['contradictions']):14d}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
