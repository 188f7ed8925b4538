"""partsim layer-error: per-boundary quantization error, FP32 vs quantized model (docs/contract.md §6, §6a)."""

import argparse

from ..errors import EXIT_OK
from ..report.output import to_json, write_file, write_output
from ..report.layer_error_table import render_layer_error_table
from .args import RUN_DIM_HELP, add_dim_arg, add_output_args, parse_dims

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
    add_dim_arg(p, RUN_DIM_HELP)
    p.add_argument("--svg", metavar="FILE", help="also write a line plot of relError per boundary (SVG)")
    add_output_args(p, formats=("table", "json"))
    p.set_defaults(run=run)


def run(args):
    from ..numerics.inputs import load_npz
    from ..numerics.layer_error import layer_error
    from ..numerics.plot import layer_error_svg

    inputs = load_npz(args.inputs) if args.inputs else None
    res = layer_error(args.fp32_model, args.quant_model, seed=args.seed, inputs=inputs, dims=parse_dims(args.dim))
    if args.svg:
        write_file(args.svg, layer_error_svg(res))
    write_output(to_json(res) if args.format == "json" else render_layer_error_table(res), args.output)
    return EXIT_OK
