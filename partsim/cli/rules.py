"""partsim rules: list and show the shipped capability tables, regenerate them from their sources."""

import argparse
from pathlib import Path

from ..errors import EXIT_OK, UsageError
from ..report.output import to_json, write_output
from .args import add_output_args

HELP = """\
List the shipped rule tables, print one to copy and edit, or regenerate them from
machine-readable sources (output is deterministic).

  partsim rules list
        every shipped table: name to use with -p, provider, kind, op count, source
  partsim rules show nnapi > my.yaml
        the shipped table exactly as shipped (NAME:variant for one variant, e.g.
        coreml:neuralnetwork); edit it and pass -r my.yaml: it replaces the shipped
        table of its provider (and variant)

  partsim rules import ort-kernels [--provider EP] -o rules/cpu.yaml
        from the installed onnxruntime's kernel registry (get_all_opkernel_def)
  partsim rules import ort-kernels --python VENV/bin/python --variant 1.24 -o rules/cpu-1.24.yaml
        the CPU kernels of the onnxruntime in VENV (here 1.24.1, the release openvino:1.24 runs in)
  partsim rules import contrib-schemas -o partsim/data/contrib_schemas.json
        ORT's own operator schemas (com.microsoft …) used to resolve node versions
  partsim rules import openvino -o rules/openvino-1.24.yaml
        the OpenVINO EP (device CPU) of onnxruntime-openvino 1.24.1 (partsim/gen/openvino.py): openvino:1.24
  partsim rules import openvino-plugin --python .venv-ovplugin/harness/python \
        --evidence rules/sources/openvino-plugin-1.8.1-probes.jsonl -o rules/openvino.yaml
        the OpenVINO plugin EP measured: real onnxruntime-ep-openvino 1.8.1 sessions on one-node and graph probes
        (partsim/gen/openvino_plugin.py; the evidence file is also the cache of probes already run)
  partsim rules import qnn [--models DIR] [--soc-model 60] -o rules/qnn.yaml
        the QNN EP (HTP) measured: real onnxruntime-qnn sessions on single-op probes (and on the
        one-node models of DIR), merged into its op builders' rules (partsim/gen/qnn.py)
  partsim rules import coreml-builders ORT_GIT_DIR --commit C --variant mlprogram -o rules/coreml-mlprogram.yaml
        the CoreML EP from its op builders' source (registrations, ML Program support, opsets, the checks
        a table can express; each rule cites file:line; partsim/gen/coreml_builders.py)
  partsim rules refresh --ort 1.32.0 [--into DIR]
        a new ORT release: every table and fact its wheel can tell regenerated (CPU kernels, mobile
        checker tables, contrib schemas, load limits); what it cannot, listed (docs/versions.md)
  partsim rules import webgpu [--evidence FILE.jsonl] -o rules/webgpu.yaml
        the WebGPU plugin EP measured: real onnxruntime-ep-webgpu sessions on one-node probes (op, version,
        dtypes; CPU-preferred nodes; NHWC conversion), merged into its kernel registrations (partsim/gen/webgpu.py)
  partsim rules calibrate OBS... -p EP -o overlay.yaml
        an overlay table learnt from observations of real sessions (partsim/analysis/calibrate.py)
"""

def add_parser(sub):
    p = sub.add_parser("rules", help="list, show and regenerate the capability tables", description=HELP,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    rs = p.add_subparsers(dest="rules_command", metavar="ACTION")
    rs.required = True
    ls = rs.add_parser("list", help="list the shipped tables", description=HELP,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    add_output_args(ls)
    ls.set_defaults(run=run_list)
    show = rs.add_parser("show", help="print a shipped table (to copy and edit)", description=HELP,
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    show.add_argument("name", metavar="NAME", help="provider name or alias (nnapi, cuda, coreml:neuralnetwork, …)")
    show.add_argument("--output", "-o", metavar="FILE", help="write here (atomically) instead of stdout")
    show.set_defaults(run=run_show)
    imp = rs.add_parser("import", help="generate a table from a source", description=HELP,
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    imp.add_argument("source", choices=sorted(_sources()), help="what to import from")
    imp.add_argument("inputs", nargs="*", metavar="FILE", help="source document(s), where the source needs one")
    imp.add_argument("--provider", default=None, help="provider to import (ort-kernels: default CPU)")
    imp.add_argument("--output", "-o", metavar="FILE", help="write here (atomically) instead of stdout")
    imp.add_argument("--models", action="append", default=[], metavar="DIR",
                     help="qnn: also run the one-node models of DIR (e.g. ONNX backend node tests)")
    imp.add_argument("--soc-model", default="60", metavar="N", help="qnn: SoC model of the HTP emulator")
    imp.add_argument("--python", metavar="PATH", help="qnn, webgpu, openvino-plugin: interpreter with the plugin; "
                     "ort-kernels: with the onnxruntime to read (default: this one)")
    imp.add_argument("--evidence", metavar="FILE.jsonl", help="qnn, webgpu, openvino-plugin: also write what every "
                     "probe session did")
    imp.add_argument("--variant", default=None, help="webgpu: int64 (probes with enableInt64=1); coreml-builders: "
                     "mlprogram (default) or neuralnetwork; ort-kernels: the table's variant (another release)")
    imp.add_argument("--commit", default=None, help="coreml-builders: the commit of the ORT git directory to read")
    imp.set_defaults(run=run_import)
    ref = rs.add_parser("refresh", help="regenerate every table and fact a new ORT wheel can tell",
                        description=HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    ref.add_argument("--ort", metavar="VERSION", help="the release (a venv partsim makes with pip; default: installed)")
    ref.add_argument("--python", metavar="PATH", dest="ort_python", help="the ORT of this interpreter instead")
    ref.add_argument("--into", metavar="DIR",
                     help="write the tables into DIR (and DIR/contrib_schemas.json); default: this checkout's "
                          "rules/ and partsim/data/")
    add_output_args(ref)
    ref.set_defaults(run=run_refresh)
    from .calibrate import add_parser as add_calibrate

    add_calibrate(rs)


def _sources():
    names = {"ort-kernels", "contrib-schemas", "openvino", "openvino-plugin", "ep-table", "qnn", "webgpu",
             "coreml-builders"}
    try:
        from ..gen import mobile_md  # noqa: F401
        names.add("mobile-md")
    except ImportError:
        pass
    try:
        from ..gen import kernel_doc  # noqa: F401
        names.add("kernel-doc")
    except ImportError:
        pass
    return names


def run_list(args):
    from ..report.rules_list_table import render_rules_list_table
    from ..rules.catalog import shipped_tables

    records = shipped_tables()
    write_output(to_json(records) if args.format == "json" else render_rules_list_table(records), args.output)
    return EXIT_OK


def run_show(args):
    from ..rules.catalog import find_shipped

    _, text = find_shipped(args.name)
    write_output(text, args.output)
    return EXIT_OK


def run_refresh(args):
    """``rules refresh`` (the ORT is selected by ``--ort``/``--python`` around every command)."""
    from ..gen.refresh import refresh
    from ..report.refresh_table import render_refresh_table

    root = Path(__file__).resolve().parents[2]
    if args.into:
        rules_dir = data_dir = Path(args.into)
        rules_dir.mkdir(parents=True, exist_ok=True)
    elif (root / "rules").is_dir() and (root / "partsim" / "data").is_dir():
        rules_dir, data_dir = root / "rules", root / "partsim" / "data"
    else:
        raise UsageError("not a partsim checkout: give --into DIR")
    report = refresh(rules_dir, data_dir)
    if not args.into:  # the shipped tables changed: their precompiled store too (make tables)
        from ..rules.load import compile_shipped

        compile_shipped()
    write_output(to_json(report) if args.format == "json" else render_refresh_table(report), args.output)
    return EXIT_OK


def _registry_of(args, provider):
    """ort-kernels ``--python``: the CPU kernel registry of that interpreter's ORT (read in a child of a
    child, :mod:`partsim.runtime.child_facts`); else ``None`` (this interpreter's)."""
    if not args.python:
        return None
    if provider != "CPUExecutionProvider":
        raise UsageError("ort-kernels --python reads the CPU kernel registry only")
    from ..versions import selected, target_facts

    with selected(None, args.python):
        facts = target_facts(refresh=False)
    if facts.get("rows") is None:
        raise UsageError(f"{args.python}: no kernel registry: {facts.get('rowsError', 'not read')}")
    return facts["version"], facts["rows"]


def run_import(args):
    if args.source == "ort-kernels":
        from ..gen.ort_kernels import kernel_table
        provider = args.provider or "CPUExecutionProvider"
        text = kernel_table(provider, aliases=("cpu",) if provider == "CPUExecutionProvider" else (),
                            cpu_based=provider == "CPUExecutionProvider", registry=_registry_of(args, provider),
                            variant=args.variant or "")
    elif args.source == "contrib-schemas":
        from ..gen.contrib_schemas import generate_contrib_schemas
        text = generate_contrib_schemas()
    elif args.source == "openvino":
        from ..gen.openvino import openvino_table
        text = openvino_table()
    elif args.source == "openvino-plugin":
        from ..gen.openvino_plugin import openvino_plugin_table
        text = openvino_plugin_table(args.python, evidence=args.evidence)
    elif args.source == "mobile-md":
        from ..gen.mobile_md import import_mobile_md
        text = import_mobile_md(args.inputs, args.provider)
    elif args.source == "kernel-doc":
        from ..gen.kernel_doc import import_kernel_doc
        text = import_kernel_doc(args.inputs, args.provider)
    elif args.source == "qnn":
        from ..gen.qnn import qnn_table
        for d in args.models:
            if not Path(d).is_dir():
                raise UsageError("--models expects a folder of .onnx files", d)
        text = qnn_table(args.models, args.soc_model, args.python, evidence_out=args.evidence)
    elif args.source == "webgpu":
        from ..gen.webgpu import webgpu_table
        text = webgpu_table(args.python, evidence_out=args.evidence, variant=args.variant or "")
    elif args.source == "coreml-builders":  # ORT's CoreML op builders (partsim/gen/coreml_builders.py)
        from ..gen.coreml_builders import coreml_table
        if len(args.inputs) != 1:
            raise UsageError("coreml-builders takes one ORT source: a checkout, or a git directory with --commit")
        text = coreml_table(args.inputs[0], args.commit, args.variant or "mlprogram")
    elif args.source == "ep-table":  # tensorrt, qnn, xnnpack, webgpu (partsim/gen/ep_tables.py)
        from ..gen.ep_tables import build_table
        text = build_table(args.provider or "")
    else:
        raise UsageError(f"unknown source {args.source!r}")
    write_output(text, args.output)
    return EXIT_OK
