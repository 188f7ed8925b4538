"""partsim whatif: the prediction before and after a change, side by side."""

import argparse

from ..errors import EXIT_OK, UsageError
from ..report.output import to_json, write_output
from ..report.whatif_table import render_whatif_table
from ..analysis.cost import parse_link
from ..analysis.context import prepare
from ..analysis.whatif import whatif
from .args import add_dim_arg, add_model_args, add_output_args, add_provider_args, parse_dims, provider_request, split_list
from .blame import add_link_arg, link_help

__all__ = ["add_parser", "run"]

HELP = f"""\
Simulate MODEL with the requested providers as given ("before") and with one or
more changes ("after"), and show both summaries' counts side by side with the
difference, overall and per provider.

The changes are the options under "changes" below; give at least one.

Bytes and --link as in `partsim blame --help`.  Presets:
{link_help()}

examples:
  partsim whatif model.onnx -p nnapi --add-support Erf
  partsim whatif model.onnx -p nnapi --decompose HardSigmoid
  partsim whatif swin_t.onnx -p cuda --level disable --optimize all --link pcie4-x16
  partsim whatif model.onnx -p cuda,openvino --reorder openvino,cuda
  partsim whatif model.onnx -p nnapi --dim batch=1 --format json
"""


def add_parser(sub):
    p = sub.add_parser("whatif", help="compare the prediction before and after a change (support, dims, opset, "
                                      "providers, optimization)", description=HELP,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    add_model_args(p, optimize=False)
    add_provider_args(p)
    add_output_args(p)
    add_link_arg(p)
    g = p.add_argument_group("changes")
    g.add_argument("--add-support", action="append", metavar="OP[:dtype][,…]",
                   help="the first provider (after --drop-provider/--reorder) also accepts OP (DOMAIN:OP for other "
                        "domains), for any dtype and shape, or only when its first input is dtype")
    add_dim_arg(p, "a symbolic input dimension fixed to VALUE (the model reloaded); repeatable, or "
                   "comma-separated", group=g)
    g.add_argument("--fix-dim", action="append", dest="dim", help=argparse.SUPPRESS)  # the old name of --dim
    p.add_argument("--base-dim", action="append", default=[], metavar="NAME=VALUE",
                   help="a symbolic input dimension fixed in both runs (the prediction you compare from, as "
                        "simulate --dim); not a change")
    g.add_argument("--decompose", action="append", metavar="OP[,…]",
                   help="OP nodes of the main graph replaced by the ops that define them (HardSigmoid as Mul, Add, "
                        "Clip; Gelu, HardSwish, Mish, LayerNormalization; else ONNX's function body)")
    g.add_argument("--opset", type=int, metavar="N", help="the model converted with onnx.version_converter first")
    g.add_argument("--drop-provider", action="append", metavar="EP", help="EP removed from the request")
    g.add_argument("--reorder", metavar="EP,EP…", help="these providers first, in this order")
    g.add_argument("--optimize", choices=("none", "disable", "basic", "extended", "all"), default=None,
                   help="ORT optimization level of the 'after' run (default: as the 'before' run)")
    g.add_argument("--level", choices=("disable", "basic", "extended", "all"), default=None,
                   help="ORT optimization level of the 'before' run (default all, ORT's default)")
    g.add_argument("--base-optimize", choices=("none", "basic"), default=None,
                   help="older spelling of --level for the 'before' run: none = disable")
    p.set_defaults(run=run)


def run(args):
    result = compute(args)
    text = to_json(result) if args.format == "json" else render_whatif_table(result)
    write_output(text, args.output)
    return EXIT_OK


def measured_effect(words, before=None):
    """What ``partsim whatif WORDS`` changes, as :func:`partsim.analysis.advice.effect_text` says it
    (None: no count changes, or the change cannot be made), against ``before`` (the counts of the
    prediction the suggestion is printed under) when given; for suggestions printed elsewhere."""
    from ..analysis.advice import effect_text
    from ..errors import PartsimError
    from . import build_parser

    args = build_parser("whatif").parse_args(["whatif", *words])
    try:
        return effect_text(compute(args), before)
    except PartsimError:
        return None


def compute(args):
    """The whatif result of parsed ``args``."""
    link = parse_link(args.link) if args.link else None
    fix = parse_dims(args.dim)
    add = split_list(args.add_support)
    drop = split_list(args.drop_provider)
    decompose = tuple(split_list(args.decompose))
    reorder = split_list([args.reorder] if args.reorder else [])
    if args.opset is not None and args.opset < 1:
        raise UsageError("--opset must be a positive integer")
    from ..api import resolve_level

    base = resolve_level(args.level, args.base_optimize)
    after = resolve_level(args.optimize) if args.optimize else None
    if not (add or fix or drop or reorder or decompose or args.opset is not None or (after and after != base)):
        raise UsageError("nothing to compare: give at least one change (--add-support, --dim, --decompose, --opset, "
                         "--drop-provider, --reorder, --optimize)")
    ctx = prepare(args.model, provider_request(args.providers), args.rules, split_list(args.support),
                  args.support_name, args.support_kind, args.policy, optimize=base,
                  dims=parse_dims(args.base_dim, "--base-dim"))
    return whatif(ctx, add=add, fix_dims=fix, opset=args.opset, drop=drop, reorder=reorder,
                    optimize=after, link=link, decompose=decompose)
