"""partsim render: draw the prediction as DOT, SVG or a one-file HTML report."""

import argparse
import sys
from pathlib import Path

from ..api import predict
from ..errors import EXIT_ERROR, EXIT_OK, UsageError
from ..report.output import write_output
from ..render import (DEFAULT_COLLAPSE_THRESHOLD, HTML_COLLAPSE_THRESHOLD, find_dot, partition_detail_dots,
                      plan_render, render_html, render_svg, render_svgs)
from ..render.dot import memcpy_device
from ..render.svg import DEFAULT_TIMEOUT, INSTALL_HINT
from .args import add_ort_python_arg, add_dim_arg, add_model_args, add_provider_args, level_of, parse_dims, provider_request, split_list

FORMATS = ("svg", "html", "dot", "model-explorer")

HELP = f"""\
Draw where ONNX Runtime will run every node of MODEL: nodes filled with their
provider's colour (Okabe-Ito colour-blind-safe palette, CPU always grey, legend
included), partitions as framed clusters, edges between providers in bold with
tensor name and bytes, Memcpy and missing conversions written on their edges,
a tooltip on every node (op, domain, provider, reason).

The output format follows the extension of -o (.svg, .html, .dot; .json is
model-explorer) or --format.

Nodes kept off the first-choice provider show their reason code ([non_constant_input])
in the picture itself.  Edge labels are drawn as small text nodes of their own, so
they never overlap each other or the nodes.

The HTML report is one self-contained file: the verdict, the summary and the
reasons (with one detail sentence each) first, then the picture (drag to pan,
wheel or buttons to zoom), then transfers, conversions and Memcpy.  Above
{DEFAULT_COLLAPSE_THRESHOLD} nodes for SVG/DOT and {HTML_COLLAPSE_THRESHOLD} for HTML (--collapse-threshold), or with
--collapse, one box is drawn per partition, with node count and most frequent
ops, and one edge per pair of connected partitions with the number of tensors
and bytes crossing; in the HTML report a click on a partition expands it, node by
node, below the picture.

SVG and HTML need graphviz's `dot`.  Without it, the DOT text is written next to
the requested output (out.svg -> out.dot) and the command exits 2.

--format model-explorer writes node data for Google's AI Edge Model Explorer
(pip install ai-edge-model-explorer model-explorer-onnx): one entry per node of
the main graph, keyed by the ONNX graph and node names, coloured by provider, its
value "provider · partition N · reason: detail".  Open the model with it:
  model-explorer MODEL --extensions=model_explorer_onnx --node_data_paths=out.json
or from Python:
  config = model_explorer.config(); config.add_model_from_path(MODEL)
  config.add_node_data_from_path("out.json"); model_explorer.visualize_from_config(config)

examples:
  partsim render model.onnx -p nnapi -o model.svg
  partsim render model.onnx --support Conv,Relu -o report.html
  partsim render big.onnx -p cuda --collapse -o big.svg
  partsim render model.onnx -p nnapi -o nnapi.json --format model-explorer
"""


def add_parser(sub):
    p = sub.add_parser("render", help="draw the predicted assignment (SVG, HTML report, DOT)", description=HELP,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    add_model_args(p)
    add_ort_python_arg(p)
    add_dim_arg(p)
    add_provider_args(p)
    g = p.add_argument_group("output")
    g.add_argument("--output", "-o", metavar="FILE",
                   help="write here (atomically): .svg, .html, .dot or .json (model-explorer); default: DOT text to stdout")
    g.add_argument("--format", "-f", choices=FORMATS, help="output format (default: from the -o extension)")
    v = g.add_mutually_exclusive_group()
    v.add_argument("--collapse", dest="collapse", action="store_true", default=None,
                   help="one box per partition, whatever the size")
    v.add_argument("--expand", dest="collapse", action="store_false",
                   help="every node, whatever the size (graphviz may take long on big graphs)")
    g.add_argument("--collapse-threshold", type=int, default=None, metavar="N",
                   help=f"collapse automatically above N nodes (default {DEFAULT_COLLAPSE_THRESHOLD} for SVG and DOT, "
                        f"{HTML_COLLAPSE_THRESHOLD} for the HTML report, which expands partitions on a click)")
    g.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                   help=f"time allowed to graphviz (default {DEFAULT_TIMEOUT:g})")
    p.set_defaults(run=run)


def _format(args):
    if args.format:
        return args.format
    if args.output in (None, "-"):
        return "dot"
    ext = Path(args.output).suffix.lower().lstrip(".")
    if ext == "htm":
        ext = "html"
    if ext == "json":
        ext = "model-explorer"
    if ext not in FORMATS:
        raise UsageError(f"cannot tell the format from {args.output!r}: use .svg, .html, .dot or .json, or --format")
    return ext


def run(args):
    fmt = _format(args)
    threshold = args.collapse_threshold
    if threshold is None:
        threshold = HTML_COLLAPSE_THRESHOLD if fmt == "html" else DEFAULT_COLLAPSE_THRESHOLD
    if threshold < 0:
        raise UsageError("--collapse-threshold must be >= 0")
    if args.timeout <= 0:
        raise UsageError("--timeout must be > 0")
    summary, assignment = predict(args.model, provider_request(args.providers), args.rules, split_list(args.support),
                                  args.support_name, args.support_kind, args.policy, level=level_of(args),
                                  dims=parse_dims(args.dim))
    if fmt == "model-explorer":
        from ..io.read import read_model_proto
        from ..report.model_explorer import render_model_explorer

        proto, _ = read_model_proto(args.model)
        write_output(render_model_explorer(summary, assignment.model, proto.graph), args.output)
        return EXIT_OK
    plan = plan_render(summary, assignment.model, collapse=args.collapse, threshold=threshold,
                       device=memcpy_device(assignment))
    if plan.mode == "collapsed" and args.collapse is None:
        print(f"partsim: {plan.collapsed_reason}: drawing one box per partition (--expand draws every node)",
              file=sys.stderr)
    if fmt == "dot":
        write_output(plan.dot, args.output)
        return EXIT_OK
    if find_dot() is None:
        if args.output in (None, "-"):
            print(f"partsim: error: graphviz 'dot' not found; {INSTALL_HINT}; or use --format dot",
                  file=sys.stderr)
            return EXIT_ERROR
        dot_path = Path(args.output).with_suffix(".dot")
        write_output(plan.dot, str(dot_path), announce=False)  # the error below says where it is
        print(f"partsim: error: graphviz 'dot' not found, so no {fmt.upper()} was written; the DOT text is in "
              f"{dot_path}. To get the picture, {INSTALL_HINT}, then run this command again "
              f"(or: dot -Tsvg {dot_path} -o {Path(args.output).with_suffix('.svg')})", file=sys.stderr)
        return EXIT_ERROR
    svg = render_svg(plan.dot, plan.annotations, timeout=args.timeout)
    if fmt == "svg":
        text = svg
    else:
        details = {}
        if plan.mode == "collapsed":
            dots = partition_detail_dots(plan, assignment.model, device=memcpy_device(assignment))
            details = render_svgs(dots, plan.annotations, timeout=args.timeout)
        from .args import request_words

        level = summary.get("level")
        kept = [w for d in getattr(args, "dim", None) or () for w in ("--dim", d)]  # blame keeps the fixed dims
        blame = (["partsim", "blame"] + request_words(args) + (["--level", level] if level and level != "all" else [])
                 + kept)
        text = render_html(summary, plan, svg, details, blame_command=blame)
    write_output(text, args.output)
    return EXIT_OK
