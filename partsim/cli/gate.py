"""partsim gate: the release decision from execution receipts."""

import argparse

from ..errors import EXIT_FAIL, EXIT_OK
from ..report.output import to_json, write_output
from .args import add_output_args, split_list

HELP = """\
Read execution receipts (`partsim receipt`, or the same schema recorded on
devices), reject those of another candidate (modelBundleId) or runtime version,
and fill the matrix devices × samples × lifecycle cells.  Each cell goes through
the checks metadata → cpu_baseline → delegate_invoked → partition_summary →
tensor → business → fallback and ends verified, failed, blocked, fallback_only,
missing or not_applicable.  Required devices/samples/cells come from --require
(YAML: devices, samples, cells) and/or --devices/--samples/--cells (default: what
the accepted receipts cover, all five cells).  Exit 0 only when every required
cell is verified (or not_applicable); 1 otherwise; 2 for a malformed receipt.

  partsim gate r/*.json --candidate $(partsim bundle-id m.onnx -f json | jq -r .modelBundleId) \\
      --runtime 1.24.1 --devices pixel8-nnapi,linux-x86_64-openvino --samples s1,s2 -f junit -o gate.xml
"""


def add_parser(sub):
    p = sub.add_parser("gate", help="release gate: receipts -> devices × samples × lifecycle matrix",
                       description=HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("receipt", nargs="+", metavar="RECEIPT", help="execution receipt JSON files")
    p.add_argument("--candidate", required=True, metavar="BUNDLE_ID", help="the candidate's modelBundleId")
    p.add_argument("--runtime", required=True, metavar="VERSION", help="the candidate runtime version (1.24.1)")
    p.add_argument("--require", metavar="devices.yaml", help="required devices, samples, cells (YAML)")
    p.add_argument("--devices", action="append", metavar="A,B", help="required devices")
    p.add_argument("--samples", action="append", metavar="S1,S2", help="required samples")
    p.add_argument("--cells", action="append", metavar="first,repeat,…", help="required lifecycle cells")
    p.add_argument("--require-business", action="store_true",
                   help="a cell without a business-layer result (topK/threshold) is blocked")
    add_output_args(p, formats=("table", "json", "junit"))
    p.set_defaults(run=run)


def run(args):
    from ..numerics.gate import load_receipts, load_requirements, run_gate
    from ..report.gate_junit import render_gate_junit
    from ..report.gate_table import render_gate_table

    req = load_requirements(args.require) if args.require else {}
    devices = split_list(args.devices) or req.get("devices")
    samples = split_list(args.samples) or req.get("samples")
    cells = split_list(args.cells) or req.get("cells")
    receipts = load_receipts(args.receipt)
    res = run_gate(receipts, args.candidate, args.runtime, devices=devices, samples=samples, cells=cells,
                   require_business=args.require_business)
    text = {"json": to_json, "junit": render_gate_junit, "table": render_gate_table}[args.format](res)
    write_output(text, args.output)
    return EXIT_OK if res["passed"] else EXIT_FAIL
