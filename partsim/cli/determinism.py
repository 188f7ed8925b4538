"""partsim determinism: the same model and input across optimization levels, threads and providers."""

import argparse

from ..errors import EXIT_FAIL, EXIT_OK, UsageError
from ..report.output import to_json, write_output
from ..report.determinism_table import render_determinism_table
from .args import RUN_DIM_HELP, add_dim_arg, add_output_args, parse_dims, split_list

HELP = """\
Run one model on one seeded input over a grid of graph_optimization_level x
intra_op_num_threads (x provider lists), each provider list in an isolated child
process, and report per cell the max abs / max rel difference against the first
cell and whether the outputs are bitwise equal.  Floating-point addition is not
associative: fusions (MatMul+Add -> Gemm at basic and above) and thread splits
can change the last bits.  --strict exits 1 unless every cell is bitwise equal.

  partsim determinism model.onnx --seed 0 --threads 1,2,4 --levels disable,basic,extended,all
"""


def add_parser(sub):
    p = sub.add_parser("determinism", help="outputs across optimization levels / threads / providers",
                       description=HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", metavar="MODEL")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--inputs", metavar="FILE.npz", help="inputs keyed by name instead of seeded ones (no pickles)")
    add_dim_arg(p, RUN_DIM_HELP)
    p.add_argument("--providers", "-p", action="append", metavar="EP[,EP…]",
                   help="one provider list per flag (repeat for several); default CPU")
    p.add_argument("--threads", default="1,2,4", help="intra-op thread counts (default 1,2,4)")
    p.add_argument("--levels", default="disable,basic,extended,all", help="optimization levels")
    p.add_argument("--python", metavar="PATH", help="interpreter with another ORT build")
    p.add_argument("--timeout", type=float, default=300.0)
    p.add_argument("--strict", action="store_true", help="exit 1 unless all cells are bitwise equal")
    add_output_args(p, formats=("table", "json"))
    p.set_defaults(run=run)


def _threads(text):
    try:
        out = [int(t) for t in split_list([text])]
    except ValueError:
        raise UsageError(f"--threads expects integers, got {text!r}") from None
    if not out or any(t < 1 for t in out):
        raise UsageError(f"--threads expects integers >= 1, got {text!r}")
    return out


def run(args):
    from ..numerics.determinism import determinism_grid
    from ..numerics.inputs import load_npz
    from ..numerics.run_compare import resolve_providers

    plist = [resolve_providers(split_list([v])) for v in (args.providers or ["CPUExecutionProvider"])]
    res = determinism_grid(args.model, seed=args.seed, providers_list=plist, threads=_threads(args.threads),
                           levels=split_list([args.levels]), inputs=load_npz(args.inputs) if args.inputs else None,
                           python=args.python, timeout=args.timeout, dims=parse_dims(args.dim))
    write_output(to_json(res) if args.format == "json" else render_determinism_table(res), args.output)
    return EXIT_FAIL if args.strict and not res["allBitwiseEqual"] else EXIT_OK
