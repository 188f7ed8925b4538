"""partsim simulate: predict provider assignment, partitions, copies and conversions."""

from ..api import predict
from ..errors import EXIT_OK
from ..report.output import to_json, write_output
from ..report.summary_table import render_summary_table
from .args import add_ep_option_arg, parse_ep_option_list
from .args import (add_ort_python_arg, add_dim_arg, add_model_args, level_of, add_output_args, add_provider_args, parse_dims,
                   provider_request, request_words, split_list)

HELP = """\
Predict how ONNX Runtime assigns every node of MODEL to the requested execution
providers, and count what that costs: fragments, partitions, boundary transfers,
Memcpy nodes, missing layout/precision conversions.  Every node not on the first
provider gets a reason.

examples:
  partsim simulate model.onnx --providers nnapi
  partsim simulate model.onnx -p cuda --format json -o summary.json
  partsim simulate model.onnx --support MatMul            # ad-hoc provider 'EP'
  partsim simulate model.onnx -p coreml --policy whole-graph
  partsim simulate model.onnx -p cuda --level disable      # the graph as written (ORT_DISABLE_ALL)
  partsim simulate model.onnx --compat usability-checker  # ORT's mobile usability checker

The JSON is the partitionSummary of docs/contract.md §4 (schema:
partsim/data/summary.schema.json).  Exit 0 on success (also when nothing is
accelerated: check "accelerated"), 2 on a bad model, table or option.

words used in the table:
{glossary}

reasons (why a node is not on the first provider) and what to change:
{reasons}

The table ends with next steps: the largest cause and the exact `partsim whatif`
and `partsim blame` commands to run on it.

The session predicted is ORT's default, ORT_ENABLE_ALL (--level all): function
inlining for the providers asked, DQ duplication, ORT's own Level 1-3 optimizer
(run on a CPU session, weights stand-ins when absent) with each transformer only
on nodes of its providers.  The summary says which level; every node its origin.

known limitations:
  1. CUDA-only fusions (GroupQueryAttention, BiasDropout) and InsertCast are
     not simulated; see docs/limitations.md.
  2. QDQ node units follow a structural approximation of ORT's selectors.
  3. Tables other than CPU, CUDA and OpenVINO were not checked against real
     devices; every table says where its facts came from (its `source`).
"""


def add_parser(sub):
    from ..report.glossary import glossary_text, reasons_text

    p = sub.add_parser("simulate", help="predict provider assignment and partitions",
                       description=HELP.format(glossary=glossary_text(width=80), reasons=reasons_text()),
                       formatter_class=__import__("argparse").RawDescriptionHelpFormatter)
    add_model_args(p)
    add_ort_python_arg(p)
    add_dim_arg(p)
    add_ep_option_arg(p)
    add_provider_args(p)
    add_output_args(p)
    p.add_argument("--compat", choices=("usability-checker",),
                   help="usability-checker: reproduce 'python -m onnxruntime.tools."
                        "check_onnx_model_mobile_usability MODEL' (ORT BASIC optimization, the checker's op "
                        "lists and semantics for NNAPI, CoreML NeuralNetwork and MLProgram) instead of a "
                        "prediction; takes no provider options")
    p.set_defaults(run=run)


def run(args):
    if getattr(args, "compat", None):
        return _run_compat(args)
    summary, assignment = predict(args.model, provider_request(args.providers), args.rules, split_list(args.support),
                                  args.support_name, args.support_kind, args.policy, level=level_of(args),
                                  dims=parse_dims(args.dim), ep_options=parse_ep_option_list(args.ep_option),
                                  children=getattr(args, "prestarted", None))
    from ..progress import stage

    with stage(f"writing the {args.format}", f"wrote the {args.format}"):
        if args.format == "json":
            from ..report.stream import write_json

            write_json(summary, args.output)  # encoded piece by piece, never one big string
        else:
            from ..analysis.advice import next_steps
            from ..io.variants import dim_params

            from ..io.variants import decomposable
            from ..analysis.advice import summary_counts
            from .whatif import measured_effect

            opset = assignment.model.opsets.get("", 0)
            graph_ops = {n.op_type for n in assignment.model.nodes if n.domain == ""}
            graph_ops |= {o.partition(":")[2] for o in (n.get("origin") or "" for n in summary["nodes"])
                          if o.startswith("inlined:")}  # function ops ORT inlined (HardSwish)
            ops = {op for op in graph_ops if decomposable(op, opset)}
            steps = next_steps(summary, request_words(args), list(dim_params(assignment.model)),
                               optimized=summary["level"] != "disable", fixed_dims=parse_dims(args.dim),
                               level=summary["level"], decomposable=ops,
                               measure=lambda words: measured_effect(words, summary_counts(summary)))
            write_output(render_summary_table(summary, steps=steps), args.output)
    return EXIT_OK


def _run_compat(args):
    from ..report.compat_table import render_compat_table
    from ..analysis.compat import usability_checker_analysis
    from ..errors import UsageError

    if args.providers or args.support or args.rules or args.dim:
        raise UsageError("--compat usability-checker uses the checker's own op lists; "
                         "drop --providers/--support/--rules/--dim")
    result = usability_checker_analysis(args.model)
    text = to_json(result) if args.format == "json" else render_compat_table(result)
    write_output(text, args.output)
    return EXIT_OK
