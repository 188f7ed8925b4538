"""partsim synth: seeded random layered DAG models of any size."""

import argparse

from ..errors import EXIT_OK, UsageError
from ..report.output import write_file

HELP = """\
Write a seeded random layered DAG model (valid ONNX, passes onnx.checker, shape
inference types every tensor) of exactly --nodes nodes.  Same arguments, same
bytes.  For benchmarks, and for exploring how a support list fragments a graph:

  partsim synth --nodes 100000 --seed 1 -o synth100k.onnx
  partsim synth --nodes 500 --ops Add,Relu,Erf,MatMul --branching 4 -o small.onnx
  partsim simulate small.onnx -p nnapi
"""


def add_parser(sub):
    p = sub.add_parser("synth", help="write a seeded random DAG model", description=HELP,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nodes", type=int, required=True, help="number of nodes")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--ops", metavar="OP[,OP…]", help="op types to draw from (default: a mixed set)")
    p.add_argument("--branching", type=int, default=8, help="nodes per layer (default 8)")
    p.add_argument("--reach", type=int, default=3, help="how many earlier layers a node may read (default 3)")
    p.add_argument("--opset", type=int, default=17)
    p.add_argument("--output", "-o", required=True, metavar="FILE.onnx")
    p.set_defaults(run=run)


def run(args):
    from ..io.synth import DEFAULT_OPS, synthesize

    ops = tuple(o.strip() for o in args.ops.split(",") if o.strip()) if args.ops else DEFAULT_OPS
    if args.nodes < 1 or args.nodes > 50_000_000:
        raise UsageError("--nodes must be between 1 and 50,000,000")
    try:
        model = synthesize(args.nodes, args.seed, ops, args.branching, args.reach, args.opset)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    write_file(args.output, model.SerializeToString(deterministic=True))
    return EXIT_OK
