"""partsim blame: which cause keeps nodes off the first-choice accelerator, and what lifting it saves."""

import argparse

from ..errors import EXIT_OK, UsageError
from ..report.output import to_json, write_output
from ..report.table import format_table
from ..analysis.lift import LIFTABLE_REASONS
from ..analysis.cost import LINK_PRESETS, parse_link
from ..analysis.blame import blame
from ..analysis.context import prepare
from .args import level_of, add_model_args, add_output_args, add_provider_args, provider_request, split_list

__all__ = ["add_parser", "run", "render_blame_table", "link_help", "add_link_arg", "parse_dims", "human_bytes"]


def link_help():
    lines = []
    for name, link in sorted(LINK_PRESETS.items()):
        lines.append(f"  {name:<11} {link.bandwidth / 1e9:.2f} GB/s, {link.latency * 1e6:g} us: {link.source}")
    return "\n".join(lines)


HELP = f"""\
For every op type and every rejection category that keeps nodes of MODEL off the
first provider (the accelerator), lift that one cause and simulate again on the
same loaded model: how many partitions, transfers, Memcpy nodes and boundary
bytes disappear.  Ranked: most partitions saved first, then transfers.

Lifting means a copy of the first provider's rule table that:
  op type              accepts that op for any dtype, shape and attribute
{chr(10).join(f"  {k:<20} {v}" for k, v in LIFTABLE_REASONS.items())}
Symbolic input dimensions (dim_param names) are fixed one at a time (to
--dim-value, default 1, or --dim NAME=VALUE) and the model reloaded.

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


def parse_dims(values, option="--dim"):
    out = {}
    for v in split_list(values):
        name, sep, val = v.partition("=")
        name = name.strip()
        try:
            num = int(val)
        except ValueError:
            num = 0
        if not sep or not name or num < 1:
            raise UsageError(f"{option} {v!r}: expected NAME=VALUE with a positive integer VALUE")
        out[name] = num
    return out


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
    g.add_argument("--dim", action="append", metavar="NAME=VALUE",
                   help="size for one symbolic dimension (overrides --dim-value)")
    g.add_argument("--no-dims", action="store_true", help="do not measure symbolic input dimensions")
    p.add_argument("--top", type=int, default=20, metavar="N", help="rows of the table (JSON has all; default 20)")
    p.set_defaults(run=run)


def run(args):
    if args.dim_value < 1:
        raise UsageError("--dim-value must be a positive integer")
    link = parse_link(args.link) if args.link else None
    dims = parse_dims(args.dim)
    ctx = prepare(args.model, provider_request(args.providers), args.rules, split_list(args.support),
                  args.support_name, args.support_kind, args.policy, optimize=level_of(args))
    result = blame(ctx, link=link, dim_value=args.dim_value, dims=dims, analyse_dims=not args.no_dims)
    text = to_json(result) if args.format == "json" else render_blame_table(result, top=args.top)
    write_output(text, args.output)
    return EXIT_OK


def human_bytes(n):
    """``14676`` -> ``14.3 KiB`` (exact bytes are in the JSON)."""
    if n is None:
        return "?"
    sign = "-" if n < 0 else ""
    n = abs(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{sign}{n} {unit}" if unit == "B" else f"{sign}{n:.1f} {unit}"
        n /= 1024
    return f"{sign}{n}"


def _short(names, limit=4):
    if len(names) <= limit:
        return ", ".join(names)
    return ", ".join(names[:limit]) + f", … (+{len(names) - limit})"


def baseline_line(m, link):
    text = (f"partitions {m['partitions']} ({m['acceleratorPartitions']} on accelerators)   "
            f"transfers {m['transfers']}   Memcpy {m['memcpyFromHost']} from host + {m['memcpyToHost']} to host   "
            f"boundary {human_bytes(m['boundaryBytes'])} in {m['copies']} copies")
    if m["unsizedCopies"]:
        text += f" ({m['unsizedCopies']} of unknown size)"
    if link is not None:
        text += f"   copy time {m['copyTimeUs']:.1f} us/inference over {link['name']}"
    return text


def render_blame_table(r, top=20):
    """Text report of a blame result (pure)."""
    out = []
    m = r["model"]
    out.append(f"model      {m['path']}  ({m['nodeCount']} nodes, optimize {r['optimize']})")
    out.append(f"providers  {' > '.join(r['effectiveProviders'])}")
    out.append(f"baseline   {baseline_line(r['baseline'], r['link'])}")
    reasons = ", ".join(f"{k} {v}" for k, v in r["reasons"].items()) or "none"
    out.append(f"off {r['firstProvider']}: {r['undelegatedNodes']} nodes ({reasons})")
    if r["baseline"]["memcpy"]:
        at = ", ".join(f"{k} {v}" for k, v in r["memcpyCauses"].items() if v) or "none"
        out.append(f"Memcpy at the nodes of: {at} (of {r['baseline']['memcpy']})")
    out.append("")
    rows_in = r["causes"]
    if not rows_in:
        out.append("nothing keeps nodes off the first provider: nothing to blame")
        return "\n".join(out) + "\n"
    link = r["link"] is not None
    headers = ["rank", "cause", "kind", "nodes", "partitions", "transfers", "Memcpy", "bytes"]
    if link:
        headers.append("copy us")
    headers.append("Memcpy at nodes")
    kinds = {"opType": "op type", "reason": "reason", "dim": "dim"}
    rows = []
    for row in rows_in[:top]:
        s = row["saved"]
        cells = [row["rank"], row["cause"], kinds.get(row["kind"], row["kind"]), row["nodeCount"], s["partitions"],
                 s["transfers"], s["memcpy"], s["boundaryBytes"]]
        if link:
            cells.append(f"{s['copyTimeUs']:.1f}")
        cells.append(len(row["memcpyAtNodes"]) if "memcpyAtNodes" in row else "")
        rows.append(cells)
    out.append("saved by lifting each cause alone (before - after; negative = more):")
    out.append(format_table(headers, rows, [">", "<", "<"] + [">"] * (len(headers) - 3)))
    if len(rows_in) > top:
        out.append(f"… {len(rows_in) - top} more causes (--top, or --format json for all)")
    if r["notLiftable"]:
        out.append("not liftable on a table: " + ", ".join(f"{k} ({v} nodes)" for k, v in r["notLiftable"].items()))
    out.append("")
    out.append("nodes concerned:")
    for row in rows_in[:top]:
        if row["kind"] == "reason" and row.get("groups"):
            what = "shape subgraphs" if row["cause"] == "cpu_preferred" else "groups"
            line = (f"  {row['cause']}: {row['nodeCount']} nodes in {len(row['groups'])} {what}, e.g. "
                    f"[{_short(row['groups'][0], 6)}]")
        elif row["kind"] == "dim":
            line = (f"  {row['cause']} ({', '.join(row['inputs'])}): {row['nodeCount']} nodes move to the first "
                    f"provider" + (f": {_short(row['nodes'])}" if row["nodes"] else ""))
        else:
            line = f"  {row['cause']}: {_short(row['nodes'])}"
            if row.get("reasons"):
                line += "  (" + ", ".join(f"{k} {v}" for k, v in row["reasons"].items()) + ")"
        out.append(line)
    return "\n".join(out) + "\n"
