"""partsim run-compare: CPU baseline vs an accelerated path in real ORT, as a receipt, compared."""

import argparse

from ..errors import EXIT_FAIL, EXIT_OK, UsageError
from ..report.output import to_json, write_file, write_output
from .args import RUN_DIM_HELP, add_dim_arg, add_output_args, add_tolerance_run_args, parse_dims, split_list

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
    add_tolerance_run_args(p, "interpreter for the accelerated side (another ORT build)")
    p.add_argument("--level", default="all", help="optimization level of the accelerated side (default all)")
    p.add_argument("--threads", type=int, default=1, help="intra-op threads of the accelerated side")
    p.add_argument("--cpu-level", default="disable", help="optimization level of the CPU baseline (default disable)")
    p.add_argument("--cpu-threads", type=int, default=1)
    p.add_argument("--top-k", type=int, help="business layer: compare the top-k classes (set and order)")
    p.add_argument("--threshold", type=float, action="append", help="business layer: decision threshold")
    p.add_argument("--receipt", metavar="FILE", help="write the receipt here (atomically)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--inputs", metavar="FILE.npz", help="inputs keyed by name (no pickles)")
    add_dim_arg(p, RUN_DIM_HELP)
    p.add_argument("--timeout", type=float, default=300.0)
    p.add_argument("--expected", metavar="FILE.npz|DIR",
                   help="authoritative outputs: the CPU baseline is checked first; if it disagrees the "
                        "comparison is blocked")
    p.add_argument("--lifecycle", action="store_true",
                   help="also run the lifecycle matrix (first, repeat, shape_change, rebuild, fallback) as "
                        "`partsim receipt` does, in one child under --python; cells go into the receipt")
    p.add_argument("--repeat", type=int, default=3, help="--lifecycle: invocations of one session (default 3)")
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
    from ..report.run_compare_table import render_run_compare_table

    abs_tol, rel_tol = _tol(args.abs_tol, "--abs-tol"), _tol(args.rel_tol, "--rel-tol")
    receipt, res = run_compare(args.model, split_list(args.providers), abs_tol, rel_tol, seed=args.seed,
                               inputs=load_npz(args.inputs) if args.inputs else None, python=args.python,
                               level=args.level, threads=args.threads, cpu_level=args.cpu_level,
                               cpu_threads=args.cpu_threads, top_k=args.top_k, thresholds=args.threshold,
                               timeout=args.timeout, dims=parse_dims(args.dim))
    if args.expected:
        _baseline_gate(args, receipt, res)
    if args.lifecycle:
        _lifecycle(args, receipt, res, abs_tol, rel_tol)
    if args.receipt:
        write_file(args.receipt, to_json(receipt))
    d = receipt["cases"][0]["delegate"]
    res["delegate"] = {k: d.get(k) for k in ("requestedProviders", "grantedProviders", "stages", "fallbackReason",
                                             "partitionSummary", "delegateState", "runtime")}
    text = to_json(res) if args.format == "json" else render_run_compare_table(res)
    write_output(text, args.output)
    return EXIT_OK if res["passed"] else EXIT_FAIL


def _baseline_gate(args, receipt, res):
    """CPU baseline vs authoritative outputs before any accelerator comparison counts."""
    import numpy as np

    from ..numerics.cells import baseline_check
    from ..numerics.expected import load_expected

    cpu = {c["output"]: np.asarray(c["cpu"]["values"], dtype=c["cpu"]["dtype"]).reshape(c["cpu"]["shape"])
           for c in receipt["cases"]}
    expected, source, _ = load_expected(args.expected, list(cpu))
    check = baseline_check(cpu, expected, source, receipt["projectAbsTolerance"], receipt["projectRelTolerance"])
    receipt["baselineCheck"] = res["baselineCheck"] = check
    if check["result"] != "pass":
        res.update(rawTensorResult="blocked", businessResult="blocked", passed=False)


def _lifecycle(args, receipt, res, abs_tol, rel_tol):
    from ..numerics.inputs import load_npz
    from ..numerics.receipt import make_receipt

    ex = make_receipt(args.model, split_list(args.providers), abs_tol, rel_tol, python=args.python, seed=args.seed,
                      inputs=load_npz(args.inputs) if args.inputs else None, dims=parse_dims(args.dim),
                      expected=args.expected, level=args.level, threads=args.threads, cpu_level=args.cpu_level,
                      cpu_threads=args.cpu_threads, repeat=args.repeat, top_k=args.top_k,
                      thresholds=args.threshold, timeout=args.timeout)
    cells = ex["lifecycle"]
    if not args.expected:  # run-compare does not require expected outputs: report the observed states
        for c in cells.values():
            if "observedState" in c:
                c["state"] = c.pop("observedState")
    receipt["lifecycle"] = cells
    res["lifecycle"] = {k: v["state"] for k, v in cells.items()}
    if any(v not in ("passed", "not_applicable") for v in res["lifecycle"].values()):
        res["passed"] = False
