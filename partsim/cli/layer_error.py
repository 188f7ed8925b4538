"""partsim layer-error: per-boundary quantization error, FP32 vs quantized model (SPEC §6, §6a)."""

import argparse

from ..errors import EXIT_OK
from ..report.output import atomic_write, to_json, write_output
from ..report.table import format_table
from .args import add_output_args

HELP = """\
Run an FP32 model and its quantized version on the same seeded input (ORT,
ORT_DISABLE_ALL, one thread) with the float tensors feeding every linear operator
(MatMul, Gemm, Conv and their integer/QLinear forms) exposed as outputs, and
tabulate per boundary: relError = ||q - f||2 / ||f||2 (float64), growthVsFirst,
stepRatio, sqnrDb, jump (stepRatio >= 3).  Boundaries are matched structurally in
topological order; how the quantized side's tensor is chosen (QDQ, QOperator,
dynamic) is documented in partsim/numerics/layer_error.py.

  partsim layer-error fp32.onnx int8.onnx --seed 0 --svg layers.svg -f json
"""


def add_parser(sub):
    p = sub.add_parser("layer-error", help="per-layer relative error, FP32 vs quantized model", description=HELP,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("fp32_model", metavar="FP32.onnx")
    p.add_argument("quant_model", metavar="QUANT.onnx")
    p.add_argument("--seed", type=int, default=0, help="seed of the random input (default 0)")
    p.add_argument("--inputs", metavar="FILE.npz", help="inputs keyed by name instead of seeded ones (no pickles)")
    p.add_argument("--dim", action="append", default=[], metavar="NAME=VALUE", help="value of a dynamic dimension")
    p.add_argument("--svg", metavar="FILE", help="also write a line plot of relError per boundary (SVG)")
    add_output_args(p, formats=("table", "json"))
    p.set_defaults(run=run)


def _f(v, spec=".4g"):
    return "-" if v is None else format(v, spec)


def render_table(res):
    rows = [[b["index"], b["consumerOp"], b["quantConsumerOp"], b["tensor"], _f(b["relError"]),
             _f(b["growthVsFirst"], ".3g"), _f(b["stepRatio"], ".3g"), _f(b["sqnrDb"], ".1f"),
             "JUMP" if b["jump"] else ""] for b in res["boundaries"]]
    head = f"{res['quantModel']} vs {res['fp32Model']}  (seed {res['seed']}, inputs {res['inputs']})"
    return head + "\n" + format_table(["#", "fp32 op", "quant op", "tensor", "relError", "vsFirst", "step",
                                       "SQNR dB", ""], rows, [">", "<", "<", "<", ">", ">", ">", ">", "<"]) + "\n"


def run(args):
    from ..numerics.inputs import load_npz
    from ..numerics.layer_error import layer_error
    from ..numerics.plot import layer_error_svg
    from .observe import _dims

    inputs = load_npz(args.inputs) if args.inputs else None
    res = layer_error(args.fp32_model, args.quant_model, seed=args.seed, inputs=inputs, dims=_dims(args.dim))
    if args.svg:
        atomic_write(args.svg, layer_error_svg(res))
    write_output(to_json(res) if args.format == "json" else render_table(res), args.output)
    return EXIT_OK
