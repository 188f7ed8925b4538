"""partsim compare: check a CPU-vs-delegate receipt (docs/contract.md §6, JSON per §6a)."""

import argparse

from ..errors import EXIT_FAIL, EXIT_OK
from ..report.output import to_json, write_output
from ..report.compare_table import render_compare_table
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


def run(args):
    from ..numerics.compare import compare_receipt, load_receipt

    res = compare_receipt(load_receipt(args.receipt), args.receipt)
    write_output(to_json(res) if args.format == "json" else render_compare_table(res), args.output)
    return EXIT_OK if res["passed"] else EXIT_FAIL
