"""partsim compare: check a CPU-vs-delegate receipt (SPEC §6, JSON per §6a)."""

import argparse

from ..errors import EXIT_FAIL, EXIT_OK
from ..report.output import to_json, write_output
from ..report.table import format_table
from .args import add_output_args

HELP = """\
Check a CPU-vs-delegate comparison receipt, with the seed checker's semantics:
metadata gate first (modelBundleId, inputDigest, shape, dtype, scale/zeroPoint
for quantized outputs, delegateState == "invoked"), then every element:
|d - c| <= max(projectAbsTolerance, projectRelTolerance * |c|), CPU as reference;
NaN/inf rejected; one element over the limit fails its case and is named.
Optional business layer: topK (set and order) and decisionThresholds (a
threshold crossed by either side fails even inside tolerance).  The receipt must
give both tolerances: there is no default.

Exit codes: 0 both layers pass, 1 mismatch, 2 missing/malformed receipt or tolerance.
JSON: {rawTensorResult, businessResult, cases: [{index, result, firstFailure:
{position, cpu, delegate, limit}, minAbsTolerance, minRelTolerance}]}.

  partsim compare receipt.json -f json
"""


def add_parser(sub):
    p = sub.add_parser("compare", help="check a CPU-vs-delegate receipt (tolerances, metadata, business layer)",
                       description=HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("receipt", metavar="RECEIPT.json")
    add_output_args(p, formats=("table", "json"))
    p.set_defaults(run=run)


def render_table(res):
    """Text report of a compare result."""
    rows = []
    for c in res["cases"]:
        ff = c.get("firstFailure") or {}
        where = "" if not ff else (f"pos {ff['position']}: cpu {ff['cpu']} delegate {ff['delegate']} "
                                   f"limit {ff['limit']}")
        rows.append([c["index"], c["result"], c["rawResult"], c["businessResult"], c["minAbsTolerance"],
                     c["minRelTolerance"], where])
    head = (f"rawTensorResult {res['rawTensorResult']}  businessResult {res['businessResult']}  "
            f"(abs {res['projectAbsTolerance']}, rel {res['projectRelTolerance']}, {res['caseCount']} cases)")
    table = format_table(["case", "result", "raw", "business", "minAbs", "minRel", "first failure"], rows)
    return head + "\n" + table + "\n"


def run(args):
    from ..numerics.compare import compare_receipt, load_receipt

    res = compare_receipt(load_receipt(args.receipt), args.receipt)
    write_output(to_json(res) if args.format == "json" else render_table(res), args.output)
    return EXIT_OK if res["passed"] else EXIT_FAIL
