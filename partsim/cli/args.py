"""Option groups shared by commands (model, providers, output)."""

from ..errors import UsageError
from ..sim.assign import POLICIES

__all__ = ["add_model_args", "add_level_args", "add_ort_arg", "add_ort_python_arg", "level_of", "LEVEL_CHOICES",
           "add_provider_args", "add_output_args",
           "split_list", "add_tolerance_run_args", "add_dim_arg", "parse_dims", "DIM_HELP", "RUN_DIM_HELP",
           "request_words", "provider_request"]


def split_list(values):
    out = []
    for v in values or ():
        out.extend(x.strip() for x in v.split(",") if x.strip())
    return out


DIM_HELP = ("fix a symbolic (dim_param) input dimension to VALUE, a positive integer; repeat the option or "
            "separate with commas (batch=1,seq=128)")
RUN_DIM_HELP = "size of a symbolic (dim_param) input dimension in the generated inputs (repeatable; NAME=VALUE)"


def parse_dims(values, option="--dim"):
    """``["batch=1,seq=128", "n=2"]`` -> ``{"batch": 1, "seq": 128, "n": 2}``: the one NAME=VALUE parser.

    A missing ``=``, an empty name or a VALUE that is not a positive integer is a one-line
    :class:`UsageError` naming the option.

    >>> parse_dims(["batch=1,seq=128", "n=2"])
    {'batch': 1, 'seq': 128, 'n': 2}
    """
    out = {}
    for v in split_list(values):
        name, sep, val = v.partition("=")
        name, val = name.strip(), val.strip()
        num = int(val) if val.isdigit() else 0
        if not sep or not name or num < 1:
            raise UsageError(f"{option} {v!r}: expected NAME=VALUE with a positive integer VALUE")
        out[name] = num
    return out


def add_dim_arg(p, help_text=DIM_HELP, group=None):
    """``--dim NAME=VALUE`` (repeatable), the same option on every command that takes a model."""
    (group or p).add_argument("--dim", action="append", default=[], metavar="NAME=VALUE", help=help_text)


def provider_request(values):
    """``-p`` values as a request: ``None`` when the option was not given (CPU only), else the
    names (possibly none: ``-p ""`` is then refused as an empty list by the API)."""
    return None if values is None else split_list(values)


LEVEL_CHOICES = ("disable", "basic", "extended", "all")


def add_model_args(p, optimize=True):
    p.add_argument("model", metavar="MODEL", help="ONNX model file (weights need not be present)")
    if optimize:
        add_level_args(p)


def add_level_args(p, level_help=None):
    """``--level`` (ORT's GraphOptimizationLevel of the session predicted, default all) and
    the older ``--optimize none|basic`` (an alias)."""
    p.add_argument("--level", choices=LEVEL_CHOICES, default=None,
                   help=level_help or "ORT graph optimization level of the session predicted: disable "
                        "(ORT_DISABLE_ALL: the graph as written, after function inlining and DQ duplication), "
                        "basic, extended, all (ORT's default, the default here). basic and above run ORT's own "
                        "optimizer on a CPU session (weights materialized in a temp folder if absent)")
    p.add_argument("--optimize", choices=("none", "basic"), default=None,
                   help="older spelling of --level: none = disable, basic = basic")
    add_ort_arg(p)


def add_ort_arg(p):
    """``--ort VERSION``: predict for that ORT release (its optimizer and CPU kernels, in a venv partsim
    makes with pip and keeps in its cache; :mod:`partsim.versions`)."""
    p.add_argument("--ort", metavar="VERSION", default=None,
                   help="predict for this onnxruntime release instead of the installed one (e.g. 1.32.0): "
                        "ORT's optimizer runs in a venv partsim makes with pip once and keeps in its cache "
                        "folder; the CPU table is that release's kernel registry (docs/versions.md)")


def add_ort_python_arg(p):
    """``--python PATH``: predict for the ORT of that interpreter (a venv the user made)."""
    p.add_argument("--python", metavar="PATH", dest="ort_python", default=None,
                   help="predict for the onnxruntime of this interpreter (a venv you made) instead of the "
                        "installed one")


def level_of(args):
    """The level ``args`` ask for (``--level``, or ``--optimize``; default all)."""
    from ..api import resolve_level

    return resolve_level(getattr(args, "level", None), getattr(args, "optimize", None))


def add_provider_args(p):
    g = p.add_argument_group("providers", "Which execution providers, in priority order, with which tables.")
    g.add_argument("--providers", "-p", action="append", metavar="EP[,EP…]",
                   help="requested providers, highest priority first; ORT names or aliases "
                        "(cuda, tensorrt, openvino, nnapi, coreml, coreml:neuralnetwork, qnn, xnnpack, webgpu, "
                        "cpu). ORT's order is kept; CPU is appended last if absent. Default: CPU only")
    g.add_argument("--rules", "-r", action="append", default=[], metavar="FILE|DIR",
                   help="extra or replacement rule tables (YAML); replace shipped tables of the same provider")
    g.add_argument("--support", action="append", metavar="OP[,OP…]",
                   help="define an ad-hoc provider that accepts exactly these op types (any dtype, any shape)")
    g.add_argument("--support-name", default="EP", metavar="NAME", help="name of the --support provider (EP)")
    g.add_argument("--support-kind", default="kernel", choices=("kernel", "compiling"),
                   help="kernel: claims single nodes; compiling: ORT's wave partitioning with QDQ units")
    g.add_argument("--policy", default="per-node", choices=POLICIES,
                   help="per-node: unclaimed nodes fall to CPU (ORT default); whole-graph: predict failure "
                        "when any node would (session.disable_cpu_ep_fallback=1)")


def add_output_args(p, formats=("table", "json")):
    g = p.add_argument_group("output")
    g.add_argument("--format", "-f", choices=formats, default=formats[0],
                   help=f"output format (default {formats[0]})")
    g.add_argument("--output", "-o", metavar="FILE", help="write the result here (atomically) instead of stdout")


def add_tolerance_run_args(p, python_help):
    """MODEL, providers, project tolerances and the candidate interpreter (run-compare, receipt)."""
    p.add_argument("model", metavar="MODEL")
    p.add_argument("--providers", "-p", action="append", metavar="EP[,EP…]", required=True)
    p.add_argument("--abs-tol", type=float, help="projectAbsTolerance (required)")
    p.add_argument("--rel-tol", type=float, help="projectRelTolerance (required)")
    p.add_argument("--python", metavar="PATH", help=python_help)


def request_words(args):
    """MODEL and the provider options as the user gave them (defaults left out), for commands printed
    back to paste: ``["m.onnx", "-p", "nnapi", "-r", "my.yaml"]``."""
    words = [str(args.model)]
    if args.providers:
        words += ["-p", ",".join(split_list(args.providers))]
    for r in args.rules or ():
        words += ["-r", str(r)]
    if args.support:
        words += ["--support", ",".join(split_list(args.support))]
        if args.support_name != "EP":
            words += ["--support-name", args.support_name]
        if args.support_kind != "kernel":
            words += ["--support-kind", args.support_kind]
    if args.policy != "per-node":
        words += ["--policy", args.policy]
    return words


def add_ep_option_arg(p):
    """``--ep-option KEY=VALUE`` (repeatable): a provider option of the session predicted."""
    p.add_argument("--ep-option", action="append", default=[], metavar="KEY=VALUE",
                   help="a provider option of the session (repeatable): WebGPU's enableInt64=1, "
                        "preferredLayout=NCHW, forceCpuNodeNames=a,b")


def parse_ep_option_list(items):
    """``["k=v", ...]`` as a dict (strings, as ORT wants them); a malformed item is a usage error."""
    out = {}
    for item in items or ():
        key, sep, value = str(item).partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--ep-option expects KEY=VALUE, got {item!r}")
        out[key.strip()] = value.strip()
    return out
