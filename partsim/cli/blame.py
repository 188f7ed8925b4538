"""partsim blame: which cause keeps nodes off the first-choice accelerator, and what lifting it saves."""

import argparse

from ..errors import EXIT_OK, UsageError
from ..report.output import to_json, write_output
from ..report.blame_table import render_blame_table
from ..analysis.lift import LIFTABLE_REASONS
from ..analysis.cost import LINK_PRESETS, parse_link
from ..analysis.blame import blame
from ..analysis.context import prepare
from .args import (add_dim_arg, add_model_args, add_output_args, add_provider_args, level_of, parse_dims,
                   provider_request, split_list)

__all__ = ["add_parser", "run", "link_help", "add_link_arg"]


def link_help():
    lines = []
    for name, link in sorted(LINK_PRESETS.items()):
        lines.append(f"  {name:<11} {link.bandwidth / 1e9:.2f} GB/s, {link.latency * 1e6:g} us: {link.source}")
    return "\n".join(lines)


HELP = f"""\
For every op type and every rejection category that keeps nodes of MODEL off the
first provider (the accelerator), lift that one cause and simulate again on the
same loaded model: how much accelerator coverage it wins and how many
partitions, transfers, Memcpy nodes and boundary bytes disappear.

Lifting means a copy of the first provider's rule table that:
  op type              accepts that op for any dtype, shape and attribute
{chr(10).join(f"  {k:<20} {v}" for k, v in LIFTABLE_REASONS.items())}
--dim NAME=VALUE fixes a symbolic input dimension in the model blamed (as
simulate --dim: the baseline, and every change measured, keep it).  The other
symbolic input dimensions (dim_param names) are fixed one at a time and all
together (to --dim-value, default 1) and the model reloaded; ORT's higher optimization levels (its own constant folding, e.g.
"level basic" on a model predicted at none) are measured on ORT's rewrite; and
when nodes are rejected for their schema version, the nearest opsets at which
the table has a kernel ("opset N", converted with onnx.version_converter).

Ranked by accelerator coverage gained (the share of the graph's nodes on the
first provider; a level that folds nodes away changes the total), then
accelerator partitions saved; ties go to causes you can act on.  "who" says who
can act: you (a session option; an export or conversion: dims, opset, level,
constant inputs, dtype, rank, attributes), the provider's vendor (an op with no
kernel at any version, a kernel version not registered, partitioning hooks;
your own table via -r only predicts the change), or ORT (its CPU-preferred
pass).  The last line names the best change you can make.

"saved" = before - after; a negative number means lifting that cause makes
more of it (e.g. lifting cpu_preferred on CUDA moves shape computations to the
GPU and ORT then copies their host-memory outputs: more Memcpy).
"Memcpy at nodes" attributes each predicted Memcpy of the unchanged model to the
causes whose nodes produce or read its tensor (for cpu_preferred: the integer
shape subgraphs those nodes belong to); it is an attribution, not a
re-simulation.

Bytes: sum of transferList bytes plus Memcpy tensors that are not already a
transfer (static shapes only; unsized copies are counted apart).  With --link,
copy time per inference = bytes / bandwidth + copies x latency.  Presets:
{link_help()}

examples:
  partsim blame model.onnx -p nnapi
  partsim blame swin_t.onnx -p cuda --link pcie4-x16
  partsim blame model.onnx --support MatMul,Add,Relu --format json -o blame.json
"""


def add_link_arg(p):
    p.add_argument("--link", metavar="BW[,LAT]|PRESET",
                   help="estimate copy time per inference over this link: bandwidth and per-copy latency "
                        f"(e.g. 12GB/s,8us) or a preset ({', '.join(sorted(LINK_PRESETS))}; sources in the "
                        "description above)")


def add_parser(sub):
    p = sub.add_parser("blame", help="rank the causes that keep nodes off the accelerator (re-simulated)",
                       description=HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_model_args(p)
    add_provider_args(p)
    add_output_args(p)
    add_link_arg(p)
    g = p.add_argument_group("symbolic dimensions")
    g.add_argument("--dim-value", type=int, default=1, metavar="N",
                   help="size a symbolic input dimension is fixed to when its effect is measured (default 1)")
    add_dim_arg(p, "a symbolic input dimension fixed to VALUE in the model blamed (as simulate --dim; the others "
                   "are measured at --dim-value)", g)
    g.add_argument("--no-dims", action="store_true", help="do not measure symbolic input dimensions")
    p.add_argument("--no-variants", action="store_true",
                   help="measure only table lifts: no dims, optimization levels or opsets (no model reloads)")
    p.add_argument("--top", type=int, default=20, metavar="N", help="rows of the table (JSON has all; default 20)")
    p.set_defaults(run=run)


def run(args):
    if args.dim_value < 1:
        raise UsageError("--dim-value must be a positive integer")
    link = parse_link(args.link) if args.link else None
    dims = parse_dims(args.dim)
    ctx = prepare(args.model, provider_request(args.providers), args.rules, split_list(args.support),
                  args.support_name, args.support_kind, args.policy, optimize=level_of(args), dims=dims)
    result = blame(ctx, link=link, dim_value=args.dim_value, analyse_dims=not (args.no_dims or args.no_variants),
                   analyse_levels=not args.no_variants, analyse_opsets=not args.no_variants)
    text = to_json(result) if args.format == "json" else render_blame_table(result, top=args.top)
    write_output(text, args.output)
    return EXIT_OK
