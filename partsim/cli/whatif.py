"""partsim whatif: the prediction before and after a change, side by side."""

import argparse

from ..errors import EXIT_OK, UsageError
from ..report.output import to_json, write_output
from ..report.table import format_table
from ..analysis.cost import METRIC_KEYS, parse_link
from ..analysis.context import prepare
from ..analysis.whatif import whatif
from .args import add_model_args, add_output_args, add_provider_args, provider_request, split_list
from .blame import add_link_arg, human_bytes, link_help, parse_dims

__all__ = ["add_parser", "run", "render_whatif_table"]

HELP = f"""\
Simulate MODEL with the requested providers as given ("before") and with one or
more changes ("after"), and show both summaries' counts side by side with the
difference, overall and per provider.

changes:
  --add-support OP[:dtype]   the first provider (after --drop-provider/--reorder)
                             also accepts OP (DOMAIN:OP for other domains), for any
                             dtype and shape, or only when its first input is dtype
  --fix-dim NAME=VALUE       a symbolic input dimension fixed (model reloaded)
  --opset N                  the model converted with onnx.version_converter
  --drop-provider EP         EP removed from the request
  --reorder EP,EP…           these providers first, in this order
  --optimize LEVEL           the ORT optimization level of the "after" run
                             (disable|basic|extended|all, or none = disable); the
                             "before" run uses --level (default all, ORT's default;
                             --base-optimize is its older spelling)

Bytes and --link as in `partsim blame --help`.  Presets:
{link_help()}

examples:
  partsim whatif model.onnx -p nnapi --add-support Erf
  partsim whatif swin_t.onnx -p cuda --level disable --optimize all --link pcie4-x16
  partsim whatif model.onnx -p cuda,openvino --reorder openvino,cuda
  partsim whatif model.onnx -p nnapi --fix-dim batch=1 --format json
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
                   help="the first provider also accepts this op type (any shape; any dtype unless given)")
    g.add_argument("--fix-dim", action="append", metavar="NAME=VALUE", help="fix a symbolic input dimension")
    g.add_argument("--opset", type=int, metavar="N", help="convert the model to this ai.onnx opset first")
    g.add_argument("--drop-provider", action="append", metavar="EP", help="remove a requested provider")
    g.add_argument("--reorder", metavar="EP,EP…", help="new priority order of (some of) the requested providers")
    g.add_argument("--optimize", choices=("none", "disable", "basic", "extended", "all"), default=None,
                   help="ORT optimization level of the 'after' run (default: as the 'before' run)")
    g.add_argument("--level", choices=("disable", "basic", "extended", "all"), default=None,
                   help="ORT optimization level of the 'before' run (default all, ORT's default)")
    g.add_argument("--base-optimize", choices=("none", "basic"), default=None,
                   help="older spelling of --level for the 'before' run: none = disable")
    p.set_defaults(run=run)


def run(args):
    link = parse_link(args.link) if args.link else None
    fix = parse_dims(args.fix_dim, "--fix-dim")
    add = split_list(args.add_support)
    drop = split_list(args.drop_provider)
    reorder = split_list([args.reorder] if args.reorder else [])
    if args.opset is not None and args.opset < 1:
        raise UsageError("--opset must be a positive integer")
    from ..api import resolve_level

    base = resolve_level(args.level, args.base_optimize)
    after = resolve_level(args.optimize) if args.optimize else None
    if not (add or fix or drop or reorder or args.opset is not None or (after and after != base)):
        raise UsageError("nothing to compare: give at least one change (--add-support, --fix-dim, --opset, "
                         "--drop-provider, --reorder, --optimize)")
    ctx = prepare(args.model, provider_request(args.providers), args.rules, split_list(args.support),
                  args.support_name, args.support_kind, args.policy, optimize=base)
    result = whatif(ctx, add=add, fix_dims=fix, opset=args.opset, drop=drop, reorder=reorder,
                    optimize=after, link=link)
    text = to_json(result) if args.format == "json" else render_whatif_table(result)
    write_output(text, args.output)
    return EXIT_OK


_LABELS = {
    "partitions": "partitions (all providers)", "acceleratorPartitions": "partitions on accelerators",
    "fragments": "fragments", "transfers": "transfers", "memcpy": "Memcpy nodes", "memcpyFromHost": "  from host",
    "memcpyToHost": "  to host", "boundaryBytes": "boundary bytes", "copies": "copies per inference",
    "unsizedCopies": "  of unknown size", "feedTransfers": "feed transfers", "feedBytes": "feed bytes",
    "delegatedNodes": "nodes off the CPU", "copyTimeUs": "copy time (us/inference)",
}


def _signed(v):
    if isinstance(v, float):
        return f"{v:+.1f}" if v else "0"
    return f"{v:+d}" if v else "0"


def render_whatif_table(r):
    """Text report of a whatif result (pure)."""
    b, a = r["before"], r["after"]
    out = [f"model    {r['model']['path']}  ({r['model']['nodeCount']} nodes)"]
    out.append("changes  " + "; ".join(f"{c['change']} {c['value']}" for c in r["changes"]))
    out.append(f"before   {' > '.join(b['providers'])}, optimize {b['optimize']}, {b['status']}"
               + ("" if b["accelerated"] else ", NOT accelerated"))
    out.append(f"after    {' > '.join(a['providers'])}, optimize {a['optimize']}, {a['status']}"
               + ("" if a["accelerated"] else ", NOT accelerated"))
    out.append("")
    keys = list(METRIC_KEYS) + (["copyTimeUs"] if "copyTimeUs" in b else [])
    rows = []
    for k in keys:
        bv, av, cv = b[k], a[k], r["change"][k]
        if k in ("boundaryBytes", "feedBytes"):
            rows.append([_LABELS[k], human_bytes(bv), human_bytes(av), _signed(cv)])
        elif k == "copyTimeUs":
            rows.append([_LABELS[k], f"{bv:.1f}", f"{av:.1f}", _signed(cv)])
        else:
            rows.append([_LABELS[k], bv, av, _signed(cv)])
    out.append(format_table(["", "before", "after", "change"], rows, ["<", ">", ">", ">"]))
    out.append("")
    rows = []
    for ep, v in r["perProvider"].items():
        rows.append([ep] + [f"{v['before'][k]} -> {v['after'][k]} ({_signed(v['change'][k])})"
                            for k in ("nodes", "partitions", "fragments")])
    out.append(format_table(["provider", "nodes", "partitions", "fragments"], rows))
    if r["link"]:
        out.append("")
        out.append(f"link {r['link']['name']}: {r['link']['bandwidthBytesPerSecond'] / 1e9:.2f} GB/s, "
                   f"{r['link']['latencyMicroseconds']:g} us per copy ({r['link']['source']})")
    return "\n".join(out) + "\n"

