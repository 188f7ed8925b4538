"""partsim diff: what an ORT (or plugin) upgrade changes for a model or a model zoo."""

import argparse
import os

from ..errors import EXIT_FAIL, EXIT_OK, UsageError
from .args import LEVEL_CHOICES, add_dim_arg, add_output_args, parse_dims, provider_request

HELP = """\
Predict MODEL (or every model of partsim.toml's checks) under two ONNX Runtime
releases and list what changes: per model the nodes that move to another
provider (with both reasons), the nodes only one side's graph has (ORT's
optimizer or a new kernel keeps a function whole), and the deltas of partitions,
transfers and Memcpy nodes.  Each side's ORT runs in its own interpreter: the
installed one, a venv partsim makes with pip once (ort==VERSION, kept in its
cache folder) or one you made (python=PATH).

  partsim diff model.onnx --from ort==1.31.1 --to ort==1.32.0
  partsim diff model.onnx -p qnn --from installed --to ort==1.32.0
  partsim diff --config partsim.toml --from ort==1.31.1 --to ort==1.32.0 -f junit -o diff.xml

Exit codes: 0 no model loses accelerator nodes, 1 the upgrade costs accelerator
nodes (or a session that built no longer does), 2 bad input.  docs/versions.md.
"""


def add_parser(sub):
    p = sub.add_parser("diff", help="what an ORT upgrade changes (nodes moved, partitions, copies)",
                       description=HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", metavar="MODEL", nargs="?", help="ONNX model file (or --config)")
    p.add_argument("--config", "-c", metavar="FILE", help="partsim.toml: every model of every check")
    p.add_argument("--from", dest="before", required=True, metavar="SIDE",
                   help="ort==VERSION, python=PATH or installed (optionally ,qnn==VERSION)")
    p.add_argument("--to", dest="after", required=True, metavar="SIDE", help="as --from")
    p.add_argument("--providers", "-p", action="append", metavar="EP[,EP…]",
                   help="requested providers (with MODEL; default CPU only)")
    p.add_argument("--rules", "-r", action="append", default=[], metavar="FILE|DIR", help="extra rule tables")
    p.add_argument("--level", choices=LEVEL_CHOICES, default="all", help="ORT optimization level (default all)")
    add_dim_arg(p)
    add_output_args(p, formats=("table", "json", "junit", "sarif", "markdown"))
    p.set_defaults(run=run)


def _jobs(args):
    """``[(model path, shown as, providers, rules, level, dims)]`` from MODEL or the config's checks."""
    if bool(args.model) == bool(args.config):
        raise UsageError("give MODEL or --config FILE (one of them)")
    if args.model:
        return [(args.model, args.model, provider_request(args.providers), tuple(args.rules), args.level,
                 parse_dims(args.dim))]
    if args.providers or args.dim:
        raise UsageError("--providers and --dim come from each check of --config")
    from ..analysis.upgrade import check_dims
    from ..io.config import load_config

    config = load_config(args.config)
    out = []
    for check in config.checks:
        for path in check.models:
            shown = os.path.relpath(path, config.root)
            out.append((path, shown, list(check.providers), tuple(check.rules) + tuple(args.rules), check.level,
                        check_dims(check, path, config.root)))
    return out


def run(args):
    from ..analysis.upgrade import diff_document, diff_summaries, parse_side, predict_side
    from ..report.output import write_output

    before, after = parse_side(args.before), parse_side(args.after)
    records = []
    for path, shown, providers, rules, level, dims in _jobs(args):
        a = predict_side(path, before, providers, rules, level, dims)
        b = predict_side(path, after, providers, rules, level, dims)
        a["model"]["path"] = b["model"]["path"] = shown
        records.append(diff_summaries(a, b))
    doc = diff_document(records, before, after)
    write_output(_formatted(doc, args.format), args.output)
    return EXIT_OK if doc["passed"] else EXIT_FAIL


def _formatted(doc, fmt):
    """``doc`` in ``fmt`` (table, json, junit, sarif, markdown): one renderer per format in report/."""
    from ..report.diff_junit import render_diff_junit
    from ..report.diff_markdown import render_diff_markdown
    from ..report.diff_sarif import render_diff_sarif
    from ..report.diff_table import render_diff_table
    from ..report.output import to_json

    if fmt == "json":
        return to_json(doc)
    return {"junit": render_diff_junit, "sarif": render_diff_sarif,
            "markdown": render_diff_markdown}.get(fmt, render_diff_table)(doc)
