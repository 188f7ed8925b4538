"""partsim lint: check rule tables against the ONNX / ORT operator schemas."""

import argparse

from ..errors import EXIT_FAIL, EXIT_OK
from ..report.output import write_output

HELP = """\
Check capability rule tables (default: every shipped table) for schema errors, ops and
domains no schema knows, version ranges that do not start at a since_version of the op,
dtypes outside the op's type constraints, unknown attributes, duplicate / overlapping /
contradicting rules, unknown providers and missing sources.

Exit codes: 0 clean, 1 errors (or warnings with --strict), 2 unreadable input.
"""


def add_parser(sub):
    p = sub.add_parser("lint", help="check rule tables against the operator schemas", description=HELP,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("rules", nargs="*", metavar="FILE", help="tables or folders of tables (default: shipped)")
    p.add_argument("--format", "-f", choices=("text", "table", "json", "sarif"), default="text",
                   help="text (= table), json, or SARIF 2.1.0")
    p.add_argument("--strict", action="store_true", help="warnings fail too (exit 1)")
    p.add_argument("--output", "-o", metavar="FILE", help="write here (atomically) instead of stdout")
    p.set_defaults(run=run)


def run(args):
    from ..report.lint_json import render_lint_json
    from ..report.lint_sarif import render_lint_sarif
    from ..report.lint_text import render_lint_text
    from ..rules.lint import lint_paths
    from ..rules.load import builtin_rules_dir

    paths = args.rules or [builtin_rules_dir()]
    files, findings = lint_paths(paths)
    render = {"json": render_lint_json, "sarif": render_lint_sarif}.get(args.format, render_lint_text)
    write_output(render(files, findings), args.output)
    failing = [f for f in findings if f.level == "error" or args.strict]
    return EXIT_FAIL if failing else EXIT_OK
