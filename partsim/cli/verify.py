"""partsim verify: prediction vs a real ORT observation, or vs a committed baseline."""

import argparse
import json
from pathlib import Path

from ..api import predict
from ..errors import EXIT_FAIL, EXIT_OK, UsageError
from ..runtime.observation import import_observation
from ..report.output import atomic_write, to_json, write_output
from ..report.junit import render_baseline_junit, render_verify_junit
from ..report.table import format_table
from ..analysis.verify import baseline_record, check_baseline_context, compare, compare_baseline
from .args import add_model_args, add_output_args, add_provider_args, level_of, provider_request, split_list

HELP = """\
Check a prediction against where a real ONNX Runtime session put every node, or
gate CI on a committed baseline.

  partsim verify MODEL -p cuda --observation observed.json [--level all]
        agreement share, every disagreeing node with both reasons, fragment and
        Memcpy counts side by side; exit 1 below --min-agreement (default 1.0 = exact)
        or when Memcpy counts differ.  Observations: partsim observation JSON,
        shared/observed/*/observed.json (one record per optimization level), or an
        ORT profiling JSON (enable_profiling) from a device.
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
    add_provider_args(p)
    g = p.add_argument_group("what to compare with")
    g.add_argument("--observation", metavar="FILE", help="observation recorded earlier (here or on a device)")
    g.add_argument("--observe", action="store_true",
                   help="run a real ORT session here now (child process) with the same providers and compare")
    g.add_argument("--python", metavar="PATH", help="with --observe: interpreter with another ORT build")
    g.add_argument("--timeout", type=float, default=120.0, help="with --observe: session timeout in seconds")
    g.add_argument("--min-agreement", type=float, default=1.0, help="share of nodes that must agree (default 1.0)")
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
    if args.update_baseline and not args.baseline:
        raise UsageError("--update-baseline needs --baseline FILE")
    from ..rules.providers import check_provider_request

    # before any real session runs: a misspelt name is refused, not observed on CPU only
    check_provider_request(provider_request(args.providers), (args.support_name,) if args.support else ())
    level = level_of(args)
    observation = import_observation(args.observation, level) if args.observation else None
    if args.observe:
        observation = _observe_now(args, level)
    if observation is not None and observation.get("level") and observation["level"] != level:
        raise UsageError(f"the observation was made at level {observation['level']} and the prediction is for "
                         f"level {level}: partsim does not compare across levels (give --level "
                         f"{observation['level']})", args.observation)
    summary, assignment = predict(args.model, provider_request(args.providers), args.rules, split_list(args.support),
                                  args.support_name, args.support_kind, args.policy, level=level)
    result = {"model": args.model}
    passed = True
    if observation is not None:
        v = compare(summary, assignment, observation, args.min_agreement, not args.ignore_counts)
        result["verify"] = v
        passed = passed and v["passed"]
    if args.baseline:
        path = Path(args.baseline)
        now = baseline_record(summary, assignment.resolution, level)
        if args.update_baseline:
            atomic_write(path, to_json(now))
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
            text = b_text if not text else _join_suites(text, b_text)
    else:
        text = _table(result)
    write_output(text, args.output)
    return EXIT_OK if passed else EXIT_FAIL


def read_baseline(path):
    """The JSON object in a baseline file, or a one-line UsageError."""
    if not path.exists():
        raise UsageError("baseline file does not exist (create it with --update-baseline)", path)
    from ..io.files import read_text

    try:
        base = json.loads(read_text(path, 1 << 30, what="baseline"))
    except ValueError as exc:
        raise UsageError(f"cannot read baseline: {exc}", path) from None
    if not isinstance(base, dict):
        raise UsageError("baseline must be a JSON object", path)
    return base


def _join_suites(a, b):
    """Two JUnit documents with one <testsuite> each -> one <testsuites> document."""
    head = '<?xml version="1.0" encoding="UTF-8"?>\n'
    body = [t[len(head):] if t.startswith(head) else t for t in (a, b)]
    return head + "<testsuites>\n" + "".join(body) + "</testsuites>\n"


def _observe_now(args, level):
    import tempfile

    from ..runtime.observe import observation_from_run, run_session
    from ..rules.providers import KNOWN_PROVIDERS
    from ..rules.providers import canonical_name

    providers = ([canonical_name(p.partition(":")[0]) for p in split_list(args.providers)]
                 or ["CPUExecutionProvider"])
    providers = [p for p in providers if p in KNOWN_PROVIDERS]
    with tempfile.TemporaryDirectory(prefix="partsim-verify-") as tmp:
        try:
            from ..io.materialize import materialize_weights
            runnable = materialize_weights(args.model, Path(tmp))
        except ImportError:  # pragma: no cover
            runnable = args.model
        rec = run_session(runnable, providers, level, args.python, args.timeout)
    if rec.get("state") == "create_failed":  # ORT refused the session: compared with the predicted status
        return observation_from_run(rec, level)
    if rec.get("state") != "ok":
        raise UsageError(f"the real session did not run ({rec.get('state')}): {rec.get('error', '')}", args.model)
    return observation_from_run(rec, level)


def _table(result):
    out = []
    v = result.get("verify")
    if v:
        o = v["observation"]
        out.append(f"observation  {o.get('source')} {o.get('runtime') or ''} {o.get('device') or ''} "
                   f"level={o.get('level')}")
        out.append(f"agreement    {v['agreeing']}/{v['compared']} nodes = {v['agreement']:.4f} "
                   f"(need {v['minAgreement']})")
        st = v.get("status", {})
        if st.get("observed") is not None:
            mark = "" if st["predicted"] == st["observed"] else "   <- differ"
            out.append(f"status       predicted {st['predicted']}, observed {st['observed']}{mark}")
        rows = [[k, c["predicted"], "?" if c["observed"] is None else c["observed"]]
                for k, c in sorted(v["counts"].items())]
        out.append(format_table(["count", "predicted", "observed"], rows, ["<", ">", ">"]))
        if v["disagreements"]:
            out.append("")
            rows = [[d["node"], d["opType"], d["predicted"], d["observed"], d["predictedReason"] or ""]
                    for d in v["disagreements"][:60]]
            out.append(format_table(["node", "op", "predicted", "observed", "predicted reason"], rows))
        if v["unobserved"]:
            out.append(f"{len(v['unobserved'])} predicted node(s) absent from the observation "
                       f"(removed or fused by ORT), e.g. {', '.join(v['unobserved'][:5])}")
    b = result.get("baseline")
    if b:
        if b.get("updated"):
            out.append(f"baseline     updated {b['updated']}")
        elif b["failures"]:
            for f in b["failures"]:
                out.append(f"baseline     FAIL {f['rule']}: {f['message']}")
        else:
            out.append("baseline     no node left the first provider, no count grew, status and "
                       "acceleration unchanged")
    out.append("PASSED" if result["passed"] else "FAILED")
    return "\n".join(out) + "\n"
