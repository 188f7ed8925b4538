"""partsim receipt: run the lifecycle matrix on this machine and write an execution receipt."""

import argparse

from ..errors import EXIT_FAIL, EXIT_OK
from ..report.output import to_json, write_output
from .args import RUN_DIM_HELP, add_dim_arg, add_output_args, add_tolerance_run_args, parse_dims, split_list

HELP = """\
Run MODEL in real ORT (one isolated child process under --python, so the CPU
baseline and the accelerator use the same runtime build) through the lifecycle
matrix: first invocation, --repeat invocations (no drift), a change of a dynamic
input dimension (not_applicable without one), a session rebuild, and an induced
accelerator failure followed by a fresh CPU session that must equal the baseline.
With --expected (a .npz keyed by output name, or a folder of ONNX test data
output_<n>.pb [+ input_<n>.pb]) the CPU baseline is checked first; without it, or
when it disagrees, every accelerator cell is `blocked`.  The receipt (JSON, schema
partsim/data/receipt.schema.json) holds digests, shapes, dtypes and quantization
parameters, never inputs.  Exit 0 when every cell passed (or is not applicable).

  partsim receipt model.onnx -p openvino --python .venv-openvino/bin/python \\
      --sample s1 --expected golden/ --abs-tol 1e-4 --rel-tol 1e-3 -o r.json
  partsim receipt model.onnx -p openvino --python … --force-failure …   # a device whose EP fails
"""


def add_parser(sub):
    p = sub.add_parser("receipt", help="lifecycle matrix in real ORT -> execution receipt (for `partsim gate`)",
                       description=HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_tolerance_run_args(p, "interpreter of the candidate runtime (another ORT build)")
    p.add_argument("--sample", metavar="NAME", help="sample id in the matrix (default seed<N> or 'inputs')")
    p.add_argument("--device", metavar="NAME", help="device name in the matrix (default <os>-<machine>-<ep>)")
    p.add_argument("--expected", metavar="FILE.npz|DIR", help="authoritative outputs for the CPU baseline check")
    p.add_argument("--inputs", metavar="FILE.npz", help="inputs keyed by name (no pickles)")
    p.add_argument("--seed", type=int, default=0)
    add_dim_arg(p, RUN_DIM_HELP)
    p.add_argument("--shape-dim", action="append", default=[], metavar="NAME=VALUE",
                   help="the dynamic dim's value in the shape-change cell (default: its value + 1)")
    p.add_argument("--level", default="all", help="optimization level of the accelerator sessions (default all)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--cpu-level", default="disable", help="optimization level of the CPU baseline (default disable)")
    p.add_argument("--cpu-threads", type=int, default=1)
    p.add_argument("--repeat", type=int, default=3, help="invocations of one session (>= 2; default 3)")
    p.add_argument("--force-failure", action="store_true",
                   help="make every accelerator session fail (a device whose delegate never runs)")
    p.add_argument("--failure-method", choices=("invalid_option", "unknown_provider"),
                   help="how the failure is induced (default invalid_option where one is known)")
    p.add_argument("--fallback-policy", choices=("cpu", "disable_feature", "reject_device"), default="cpu")
    p.add_argument("--top-k", type=int, help="business layer: compare the top-k classes (set and order)")
    p.add_argument("--threshold", type=float, action="append", help="business layer: decision threshold")
    for part in ("metadata", "labels", "tokenizer", "preprocessing", "postprocessing"):
        p.add_argument(f"--{part}", metavar="FILE", help=f"{part} file, part of the modelBundleId")
    p.add_argument("--timeout", type=float, default=300.0)
    add_output_args(p, formats=("json", "table"))
    p.set_defaults(run=run)


def run(args):
    from ..numerics.bundle import bundle_id
    from ..numerics.inputs import load_npz
    from ..numerics.receipt import make_receipt
    from ..numerics.receipt_schema import validate_receipt
    from ..report.receipt_table import render_receipt_table
    from .run_compare import _tol

    abs_tol, rel_tol = _tol(args.abs_tol, "--abs-tol"), _tol(args.rel_tol, "--rel-tol")
    bundle = bundle_id(args.model, metadata=args.metadata, labels=args.labels, tokenizer=args.tokenizer,
                       preprocessing=args.preprocessing, postprocessing=args.postprocessing)
    receipt = make_receipt(args.model, split_list(args.providers), abs_tol, rel_tol, python=args.python,
                           sample=args.sample, device=args.device, seed=args.seed,
                           inputs=load_npz(args.inputs) if args.inputs else None, dims=parse_dims(args.dim),
                           shape_dims=parse_dims(args.shape_dim, "--shape-dim"), expected=args.expected, level=args.level,
                           threads=args.threads, cpu_level=args.cpu_level, cpu_threads=args.cpu_threads,
                           repeat=args.repeat, force_failure=args.force_failure,
                           failure_method=args.failure_method, fallback_policy=args.fallback_policy,
                           top_k=args.top_k, thresholds=args.threshold, bundle=bundle, timeout=args.timeout)
    validate_receipt(receipt)
    write_output(to_json(receipt) if args.format == "json" else render_receipt_table(receipt), args.output)
    ok = all(c["state"] in ("passed", "not_applicable") for c in receipt["lifecycle"].values())
    return EXIT_OK if ok else EXIT_FAIL
