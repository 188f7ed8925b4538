"""Node agreement of the shipped (or given) tables with recorded node observations.

    PYTHONPATH=. .venv/bin/python benchmarks/node_agreement.py \
        ../shared/observed/nodes/cuda-ort1.31.1.jsonl -p cuda [-r overlay.yaml] [--misses] [--json FILE]

Every case is predicted as ``simulate --level disable`` predicts it (``partsim.api.predict`` at level
``disable``, the path ``benchmarks/session_agreement.py`` takes: function nodes inlined as ORT inlines them,
EnsureUniqueDQForNodeUnit, ORT's refusals).  Every node of every case counts (cases ORT refused are listed
apart: they have no placement; a model partsim cannot load counts as a refusal predicted, and as all its
observed nodes missed when ORT ran it).  Results are written down in docs/tables.md.
"""

import collections
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import observations_parser  # noqa: E402
from partsim.api import load_tables  # noqa: E402
from partsim.analysis.calibrate import agreement, read_cases  # noqa: E402


def main(argv=None):
    ap = observations_parser(__doc__)
    ap.add_argument("--misses", action="store_true", help="list every disagreeing node")
    ap.add_argument("--json", help="write the full result here")
    args = ap.parse_args(argv)
    cases = read_cases(args.observations)
    res = agreement(cases, [args.provider, "cpu"], load_tables(args.rules))
    by_op = collections.Counter()
    for c in res["cases"]:
        for name, op, got, want in c["misses"]:
            by_op[(op, got, want)] += 1
            if args.misses:
                print(f"  {c['case']}: {name} ({op}) predicted {got}, observed {want}"
                      + (f"  [{c['loadError'][:120]}]" if c["loadError"] else ""))
    print(f"{res['agreeing']} of {res['nodes']} nodes agree ({100 * res['share']:.2f} %) "
          f"in {len(res['cases'])} cases; {len(res['refused'])} sessions ORT refused")
    for (op, got, want), k in by_op.most_common():
        print(f"  {k:4d}  {op or '?'}: predicted {got}, observed {want}")
    # a record with neither an assignment nor an error says nothing of the session (as session_agreement.py)
    refused = [r for r in res["refused"] if r["observed"] != "no placement"]
    refused_ok = sum(1 for r in refused if r["predicted"] == "session_would_fail"
                     or r["predicted"].startswith("load error"))  # partsim does not load it: refused either way
    print(f"refused sessions predicted as session_would_fail (or not loaded): {refused_ok} of {len(refused)}; "
          f"recorded with no outcome (left out): {len(res['refused']) - len(refused)}")
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
