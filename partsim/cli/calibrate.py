"""partsim rules calibrate: learn a table overlay from what real sessions did."""

import argparse

from ..errors import EXIT_OK, UsageError
from ..report.output import to_json, write_output

HELP = """\
Compare a provider's table with observations of real sessions, explain every disagreement
as the smallest change of one op's rules (a kernel for a schema version, a dtype added or
removed, an attribute value vetoed, a rank/static-shape/constant-input predicate), check
each change against all observations, and write the changes as an overlay table:

  partsim rules calibrate ../shared/observed/nodes/cuda-ort1.31.1.jsonl -p cuda -o cuda-1.31.yaml
  partsim simulate model.onnx -p cuda -r cuda-1.31.yaml      # layered over the shipped table

Observations: node records (*.jsonl, models/ beside them), shared/observed/<m>/observed.json
(model.onnx beside it; --level picks the record), partsim observation JSON and ORT profiling
JSON (--model names the model).  Changes that would break an agreeing node, and nodes seen
on different providers in different files, are reported as contradictions, never written.
The report (stdout, or --report FILE) gives agreement before/after per observation file.
"""


def add_parser(rs):
    p = rs.add_parser("calibrate", help="learn an overlay table from observations", description=HELP,
                      formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("observation", nargs="+", metavar="OBS", help="observation files")
    p.add_argument("--providers", "-p", required=True, help="the provider whose table is calibrated")
    p.add_argument("--rules", "-r", action="append", default=[], metavar="PATH",
                   help="tables to calibrate instead of (or layered over) the shipped ones")
    p.add_argument("--model", "-m", help="the model of observations that do not name theirs")
    p.add_argument("--level", default=None, help="optimization level to take from observed.json (default disable)")
    p.add_argument("--device", default="", help="the device, for provenance, when the observations do not say")
    p.add_argument("--output", "-o", metavar="FILE", help="write the overlay table here (atomically)")
    p.add_argument("--report", metavar="FILE", help="write the report here instead of stdout")
    p.add_argument("--format", "-f", choices=("table", "json"), default="table", help="report format")
    p.set_defaults(run=run)


def run(args):
    from ..api import load_tables
    from ..analysis.calibrate import calibrate, read_cases

    if "," in args.providers:
        raise UsageError("calibrate takes one provider (-p cuda), not a list")
    cases = read_cases(args.observation, model=args.model, level=args.level)
    if not cases:
        raise UsageError("no sessions in the observation files")
    command = "partsim rules calibrate " + " ".join(
        [*(_short(o) for o in args.observation), "-p", args.providers])
    result = calibrate(cases, args.providers, load_tables(args.rules), command=command, device=args.device)
    report = result["report"]
    report["overlayWritten"] = bool(args.output and result["text"])
    if args.format == "json":
        text = to_json(report)
    else:
        from ..report.calibrate_table import render_calibrate_table

        text = render_calibrate_table(report)
    if args.output and result["text"]:
        write_output(result["text"], args.output)
    write_output(text, args.report)
    return EXIT_OK


def _short(path):
    from pathlib import Path

    return Path(path).name
