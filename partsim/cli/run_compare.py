"""partsim run-compare: CPU baseline vs an accelerated path in real ORT, as a receipt, compared."""

import argparse

from ..errors import EXIT_FAIL, EXIT_OK, UsageError
from ..outputs import atomic_write, to_json, write_output
from .args import add_output_args, split_list

HELP = """\
Run MODEL on the CPU EP (baseline) and on the requested providers (accelerated
path, optionally under another interpreter with --python) on the same seeded
input, each in an isolated child process; record the delegate stages
(availabilityChecked, delegateCreated, prepareCompleted, invocationCompleted),
a finite fallbackReason and a partitionSummary excerpt; write the receipt
(--receipt) and check it as `partsim compare` does.  --abs-tol and --rel-tol are
required: there is no default tolerance.

  partsim run-compare model.onnx -p openvino --python .venv-openvino/bin/python \\
      --abs-tol 1e-4 --rel-tol 1e-3 --receipt receipt.json
  partsim run-compare model.onnx -p cpu --level all --cpu-level disable --abs-tol 1e-5 --rel-tol 1e-4
"""


def add_parser(sub):
    p = sub.add_parser("run-compare", help="CPU vs accelerated run in real ORT -> receipt -> compare",
                       description=HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", metavar="MODEL")
    p.add_argument("--providers", "-p", action="append", metavar="EP[,EP…]", required=True)
    p.add_argument("--abs-tol", type=float, help="projectAbsTolerance (required)")
    p.add_argument("--rel-tol", type=float, help="projectRelTolerance (required)")
    p.add_argument("--python", metavar="PATH", help="interpreter for the accelerated side (another ORT build)")
    p.add_argument("--level", default="all", help="optimization level of the accelerated side (default all)")
    p.add_argument("--threads", type=int, default=1, help="intra-op threads of the accelerated side")
    p.add_argument("--cpu-level", default="disable", help="optimization level of the CPU baseline (default disable)")
    p.add_argument("--cpu-threads", type=int, default=1)
    p.add_argument("--top-k", type=int, help="business layer: compare the top-k classes (set and order)")
    p.add_argument("--threshold", type=float, action="append", help="business layer: decision threshold")
    p.add_argument("--receipt", metavar="FILE", help="write the receipt here (atomically)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--inputs", metavar="FILE.npz", help="inputs keyed by name (no pickles)")
    p.add_argument("--dim", action="append", default=[], metavar="NAME=VALUE")
    p.add_argument("--timeout", type=float, default=300.0)
    add_output_args(p, formats=("table", "json"))
    p.set_defaults(run=run)


def _tol(value, flag):
    import math

    if value is None:
        raise UsageError(f"{flag} is required: compare has no built-in tolerance")
    if not math.isfinite(value) or value < 0:
        raise UsageError(f"{flag} must be a finite number >= 0, got {value}")
    return value


def run(args):
    from ..numerics.inputs import load_npz
    from ..numerics.run_compare import run_compare
    from .compare import render_table
    from .observe import _dims

    abs_tol, rel_tol = _tol(args.abs_tol, "--abs-tol"), _tol(args.rel_tol, "--rel-tol")
    receipt, res = run_compare(args.model, split_list(args.providers), abs_tol, rel_tol, seed=args.seed,
                               inputs=load_npz(args.inputs) if args.inputs else None, python=args.python,
                               level=args.level, threads=args.threads, cpu_level=args.cpu_level,
                               cpu_threads=args.cpu_threads, top_k=args.top_k, thresholds=args.threshold,
                               timeout=args.timeout, dims=_dims(args.dim))
    if args.receipt:
        atomic_write(args.receipt, to_json(receipt))
    d = receipt["cases"][0]["delegate"]
    res["delegate"] = {k: d.get(k) for k in ("requestedProviders", "grantedProviders", "stages", "fallbackReason",
                                             "partitionSummary", "delegateState", "runtime")}
    if args.format == "json":
        text = to_json(res)
    else:
        st = d.get("stages", {})
        text = (f"delegate {d.get('delegateState')}  fallbackReason {d.get('fallbackReason')}  stages "
                + " ".join(f"{k}={st.get(k)}" for k in ("availabilityChecked", "delegateCreated",
                                                        "prepareCompleted", "invocationCompleted"))
                + f"\npartitionSummary {d.get('partitionSummary')}\n" + render_table(res))
    write_output(text, args.output)
    return EXIT_OK if res["passed"] else EXIT_FAIL
