"""partsim verify: prediction vs a real ORT observation, or vs a committed baseline."""

import argparse
from pathlib import Path

from ..api import predict
from ..errors import EXIT_FAIL, EXIT_OK, UsageError
from .args import parse_ep_option_list
from ..runtime.observation import import_observation
from ..report.output import to_json, write_file, write_output
from ..report.baseline_junit import render_baseline_junit
from ..report.junit_xml import join_junit_documents
from ..report.verify_junit import render_verify_junit
from ..report.verify_table import render_verify_table
from ..analysis.verify import baseline_record, check_baseline_context, compare, compare_baseline
from .args import (add_dim_arg, add_model_args, add_output_args, add_provider_args, level_of, parse_dims,
                   provider_request, split_list)

HELP = """\
Check a prediction against where a real ONNX Runtime session put every node, or
gate CI on a committed baseline.

  partsim verify MODEL -p cuda --observation observed.json [--level all]
        agreement share, every disagreeing node with both reasons, fragment and
        Memcpy counts side by side; exit 1 below --min-agreement (default 1.0 = exact)
        or when Memcpy counts differ.  Observations: partsim observation JSON,
        shared/observed/*/observed.json (one record per optimization level), or an
        ORT profiling JSON (enable_profiling) from a device.
  partsim verify MODEL -p cpu --observe
        the same against a session run here now.  When this machine's onnxruntime
        lacks a requested provider (NNAPI on a PC), ORT would silently run those
        nodes on the CPU: verify says it cannot check that provider here and exits
        2 -- a check that cannot run is not a pass (1 is kept for a prediction that
        disagrees with a real session).
  partsim verify MODEL -p nnapi --baseline partsim-baseline.json [--update-baseline]
        exit 1 when the first provider lost nodes, "accelerated" turned false, the
        status changed, or partitions, fragments, transfers or Memcpy nodes grew; the
        message names the nodes and ops that moved and why.  The baseline records
        providers, level, policy, table digests, partsim version and model sha256:
        another providers/level/policy/tables/version exits 2.

--level (default all, ORT's default) is the level of the session predicted and of
the observation record compared; an observation made at another level is refused.
verify fails when the predicted status (ok / session_would_fail) differs from the
observed one (a session that ran, or did not).
"""


def add_parser(sub):
    p = sub.add_parser("verify", help="check a prediction against a real ORT observation or a baseline",
                       description=HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_model_args(p)
    add_dim_arg(p, "fix a symbolic input dimension (NAME=VALUE, repeatable) in the prediction and, with --observe, "
                   "in the real session's inputs")
    add_provider_args(p)
    g = p.add_argument_group("what to compare with")
    g.add_argument("--observation", metavar="FILE", help="observation recorded earlier (here or on a device)")
    g.add_argument("--observe", action="store_true",
                   help="run a real ORT session here now (child process) with the same providers and compare")
    g.add_argument("--python", metavar="PATH", help="with --observe: interpreter with another ORT build")
    g.add_argument("--timeout", type=float, default=120.0, help="with --observe: session timeout in seconds")
    from .observe import add_qnn_args
    add_qnn_args(g)
    g.add_argument("--min-agreement", type=float, default=1.0, help="share of nodes that must agree (default 1.0)")
    g.add_argument("--min-final-agreement", type=float, default=None, metavar="SHARE",
                   help="also gate on the final graph (after Level 2/3): share of the nodes the session ran "
                        "(its profile) that must be predicted on their provider (default: reported, not gated)")
    g.add_argument("--ignore-counts", action="store_true", help="pass on node agreement alone (not Memcpy counts)")
    g.add_argument("--baseline", metavar="FILE", help="committed baseline of fragment/transfer/Memcpy counts")
    g.add_argument("--update-baseline", action="store_true", help="rewrite --baseline with the current counts")
    add_output_args(p, formats=("table", "json", "junit"))
    p.set_defaults(run=run)


def run(args):
    if not (args.observation or args.observe or args.baseline):
        raise UsageError("give --observation FILE, --observe or --baseline FILE")
    if args.observation and args.observe:
        raise UsageError("give either --observation FILE or --observe, not both")
    if not 0.0 <= args.min_agreement <= 1.0:
        raise UsageError("--min-agreement must be between 0 and 1")
    if args.min_final_agreement is not None and not 0.0 <= args.min_final_agreement <= 1.0:
        raise UsageError("--min-final-agreement must be between 0 and 1")
    if args.update_baseline and not args.baseline:
        raise UsageError("--update-baseline needs --baseline FILE")
    from ..rules.providers import check_provider_request

    # before any real session runs: a misspelt name is refused, not observed on CPU only
    check_provider_request(provider_request(args.providers), (args.support_name,) if args.support else ())
    level = level_of(args)
    observation = import_observation(args.observation, level) if args.observation else None
    if args.observe:
        observation = _observe_now(args, level)
    if observation is not None:
        _refuse_unchecked(observation, args, here=args.observe)
    if observation is not None and observation.get("level") and observation["level"] != level:
        raise UsageError(f"the observation was made at level {observation['level']} and the prediction is for "
                         f"level {level}: partsim does not compare across levels (give --level "
                         f"{observation['level']})", args.observation)
    summary, assignment = predict(args.model, provider_request(args.providers), args.rules, split_list(args.support),
                                  args.support_name, args.support_kind, args.policy, level=level,
                                  dims=parse_dims(args.dim), ep_options=parse_ep_option_list(args.ep_option))
    result = {"model": args.model}
    passed = True
    if observation is not None:
        _warn_openvino_build(observation, assignment.resolution.tables)
        v = compare(summary, assignment, observation, args.min_agreement, not args.ignore_counts,
                    args.min_final_agreement)
        result["verify"] = v
        passed = passed and v["passed"]
    if args.baseline:
        path = Path(args.baseline)
        now = baseline_record(summary, assignment.resolution, level)
        if args.update_baseline:
            write_file(path, to_json(now))
            result["baseline"] = {"passed": True, "updated": str(path),
                                  "now": {k: v for k, v in now.items() if k != "nodes"}}
        else:
            base = read_baseline(path)
            check_baseline_context(now, base, path)
            b = compare_baseline(summary, base, now)
            result["baseline"] = b
            passed = passed and b["passed"]
    result["passed"] = passed
    if args.format == "json":
        text = to_json(result)
    elif args.format == "junit":
        text = ""
        if observation is not None:
            text = render_verify_junit(result["verify"], args.model)
        if args.baseline:
            b_text = render_baseline_junit(result["baseline"], args.model)
            text = b_text if not text else join_junit_documents(text, b_text)
    else:
        text = render_verify_table(result)
    write_output(text, args.output)
    return EXIT_OK if passed else EXIT_FAIL


#: the two OpenVINO builds partsim has tables of: PyPI package -> the -p name of its table
OPENVINO_BUILDS = {"onnxruntime-ep-openvino": "openvino", "onnxruntime-openvino": "openvino:1.24"}


def _warn_openvino_build(observation, tables):
    """One ``partsim: warning:`` line when the OpenVINO table describes the other build than the session ran:
    the plugin (``onnxruntime-ep-openvino``, recorded under ``plugins``) or the legacy full ORT build."""
    import sys

    ran = "onnxruntime-ep-openvino" if "onnxruntime-ep-openvino" in (observation.get("plugins") or {}) else None
    for t in tables:
        describes = (t.source or {}).get("describes") or {}
        if t.provider != "OpenVINOExecutionProvider" or not any(k in describes for k in OPENVINO_BUILDS):
            continue
        table_build = "onnxruntime-ep-openvino" if "onnxruntime-ep-openvino" in describes else "onnxruntime-openvino"
        session_build = ran or "onnxruntime-openvino"
        if table_build != session_build:
            name = f"openvino{':' + t.variant if t.variant else ''}"
            print(f"partsim: warning: the {name} table describes {table_build} but the session ran "
                  f"{session_build} ({observation.get('runtime') or 'onnxruntime'}): compare with -p "
                  f"{OPENVINO_BUILDS[session_build]}", file=sys.stderr)


def read_baseline(path):
    """The JSON object in a baseline file, or a one-line UsageError."""
    from ..io.files import lexists

    if not lexists(path):
        raise UsageError("baseline file does not exist (create it with --update-baseline)", path)
    from ..io.structured import read_structured

    return read_structured(path, "json", "baseline", 1 << 30, what="baseline")


def _observe_now(args, level):
    import tempfile

    from ..rules.providers import KNOWN_PROVIDERS, canonical_name
    from ..runtime.observe import observation_from_run, run_session
    from .observe import ep_options, refuse_unavailable

    providers = ([canonical_name(p.partition(":")[0]) for p in split_list(args.providers)]
                 or ["CPUExecutionProvider"])
    providers = [p for p in providers if p in KNOWN_PROVIDERS]
    with tempfile.TemporaryDirectory(prefix="partsim-verify-") as tmp:
        try:
            from ..io.materialize import materialize_weights
            runnable = materialize_weights(args.model, Path(tmp))
        except ImportError:  # pragma: no cover
            runnable = args.model
        from ..versions import target_python

        # --ort: the real session runs under the ORT predicted (unless --python names another interpreter)
        rec = run_session(runnable, providers, level, args.python or target_python(), args.timeout,
                          dims=parse_dims(args.dim), ep_options=ep_options(args, providers))
    refuse_unavailable(rec, args.model)
    if rec.get("state") == "create_failed":  # ORT refused the session (QNN refused the graph, an optimizer
        return observation_from_run(rec, level)  # error): an observed refusal, compared with the prediction
    if rec.get("state") != "ok":
        raise UsageError(f"the real session did not run ({rec.get('state')}): {rec.get('error', '')}", args.model)
    return observation_from_run(rec, level)


def _refuse_unchecked(obs, args, here):
    """A session where ORT dropped a requested accelerator ran its nodes elsewhere (ORT only
    warns); comparing it with the prediction measures nothing about that provider, so verify
    refuses (exit 2): a check that cannot run is not a pass."""
    from ..rules.providers import canonical_name

    wanted = {canonical_name(p.partition(":")[0]) for p in split_list(args.providers)}
    missing = [d["name"] for d in obs.get("dropped") or ()
               if d.get("name") in wanted and d.get("name") != "CPUExecutionProvider"]
    if not missing:
        return
    ran = ", ".join(obs.get("granted") or []) or "no provider"
    if here:
        raise UsageError(
            f"cannot check {', '.join(missing)} here: this {obs.get('runtime') or 'onnxruntime'} build has "
            f"{', '.join(obs.get('available') or []) or 'no providers'} (ORT dropped the request and ran every "
            f"node on {ran}); record an observation where the provider exists (partsim observe MODEL -p "
            f"{','.join(split_list(args.providers))} -o obs.json) and run verify --observation obs.json, or point "
            "--python at an interpreter whose onnxruntime has it", args.model)
    raise UsageError(f"cannot check {', '.join(missing)} with this observation: its session dropped the "
                     f"provider and ran every node on {ran}; record it where the provider exists",
                     args.observation)
