"""partsim check: every model of a model zoo against configured budgets and a lock file."""

import argparse
import os
import sys

from ..errors import EXIT_FAIL, EXIT_OK, UsageError
from .args import add_output_args

HELP = """\
Check every model named by partsim.toml (or [tool.partsim] in pyproject.toml)
against its budgets, and against partsim.lock.json when there is one.

  [[check]]
  name = "nnapi"                      # optional, default: the providers joined
  models = ["models/*.onnx"]          # globs, relative to the config file
  providers = ["nnapi"]               # one priority list
  level = "all"                       # optional: disable (as written), basic, extended, all (default)
  max_partitions = 3                  # partitions of the first provider
  min_delegated_share = 0.9           # nodes on the first provider / nodes
  max_transfers = 10                  # optional budgets: also max_memcpy,
  forbid_reasons = ["dynamic_shape"]  #   accelerated = true, status = "ok"
  dims = {batch = 1, seq = 128}       # symbolic dims fixed as --dim (in the models that have them)

  [check.model."models/vad.onnx"]     # one model of the check above: its own dims and expectation
  dims = {seq = 512}
  expect = {accelerated = false, reason = "LSTM inside an If body"}

  partsim check                        # partsim.toml or pyproject.toml here
  partsim check --update               # (re)write the lock: today's counts become budgets
  partsim check -f junit -o partsim.xml     # one testcase per (model, check)
  partsim check -f markdown            # for a pull-request comment; also json, sarif

The lock holds, per (check, model), the counts of the last --update: a later run
fails when the first provider loses nodes, "accelerated" turns false, the status
changes, or partitions, fragments, transfers or Memcpy nodes grow.  Each model is
loaded once for all its checks; models run in parallel (--jobs, default: all cores).
A failure is three lines: what changed, why (the reason behind it) and the next
command; every budget and node is in -f json, junit, sarif and markdown.

Exit codes: 0 every budget met, 1 a budget exceeded or a regression against the
lock, 2 bad config (file:line), bad model or a lock made with other providers,
level, tables or partsim version.
"""


def add_parser(sub):
    p = sub.add_parser("check", help="check a model zoo against budgets and a lock file (CI)",
                       description=HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", "-c", metavar="FILE",
                   help="partsim.toml or a pyproject.toml with [tool.partsim] (default: found in this folder)")
    p.add_argument("--jobs", "-j", type=int, metavar="N", help="models checked in parallel (default: all cores)")
    p.add_argument("--update", action="store_true",
                   help="write the lock file with the current counts (no-regression budgets from now on)")
    p.add_argument("--upgrade-to", metavar="SIDE",
                   help="also gate an ORT upgrade: predict every model under SIDE (ort==VERSION, python=PATH) too "
                        "and fail where it costs the first provider nodes or breaks a session (partsim diff)")
    add_output_args(p, formats=("table", "json", "junit", "sarif", "markdown"))
    p.set_defaults(run=run)


class _Bar:
    """A one-line progress bar on stderr (a terminal, or --progress always)."""

    def __init__(self):
        self.width = 30

    def __call__(self, done, total):
        fill = int(self.width * done / total) if total else self.width
        sys.stderr.write(f"\r[partsim] check {'█' * fill}{'░' * (self.width - fill)} {done}/{total} models")
        if done == total:
            sys.stderr.write("\n")
        sys.stderr.flush()


def run(args):
    from ..analysis.check import lock_document, run_checks
    from ..io.config import find_config, load_config
    from ..progress import enabled
    from ..report.output import atomic_write, output_target, to_json, write_output

    if args.jobs is not None and args.jobs < 1:
        raise UsageError("--jobs must be 1 or more")
    path = args.config or find_config()
    if path is None:
        raise UsageError(f"no partsim.toml or pyproject.toml with [tool.partsim] in {os.getcwd()} "
                         "(give --config FILE)")
    config = load_config(path)
    if args.output not in (None, "-"):
        output_target(args.output)  # refused before anything is written (the lock included)
    if args.update:
        output_target(config.lock)
    doc, new_lock = run_checks(config, args.jobs, args.update, _Bar() if enabled() else None)
    if args.upgrade_to:
        from ..analysis.upgrade import gate_upgrade, parse_side

        gate_upgrade(doc, config, parse_side("installed"), parse_side(args.upgrade_to))
    if args.format == "json":
        text = to_json(doc)
    elif args.format == "junit":
        from ..report.check_junit import render_check_junit
        text = render_check_junit(doc)
    elif args.format == "sarif":
        from ..report.check_sarif import render_check_sarif
        text = render_check_sarif(doc)
    elif args.format == "markdown":
        from ..report.check_markdown import render_check_markdown
        text = render_check_markdown(doc)
    else:
        from ..report.check_table import render_check_table
        text = render_check_table(doc)
    if new_lock is not None:
        atomic_write(config.lock, to_json(lock_document(new_lock)))
    write_output(text, args.output)
    return EXIT_OK if doc["passed"] else EXIT_FAIL
