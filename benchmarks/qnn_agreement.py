"""partsim's QNN prediction against the real QNN EP, node for node.

    PYTHONPATH=. .venv/bin/python benchmarks/qnn_agreement.py [--corpus] [--nodes] [--level disable]

--nodes   the recorded node tests (../shared/observed/nodes/qnn-ort1.31.1-qnn2.7.0-soc60.jsonl): every
          node of every record with an assignment, and every recorded refusal (create_error other than a
          model load failure) against the predicted status.
--holdout with --nodes: generate the QNN table now (real sessions, as `partsim rules import qnn`) from
          the probes plus the node-test models of one half and score the recordings of the OTHER half,
          both ways.  Halves: parity of the first byte of sha256(case name, "node__<test>"), as
          partsim.analysis.calibrate.split_cases (benchmarks/calibrate_split.py) splits them.
          About 3 minutes per half.
--corpus  real QNN sessions now (onnxruntime-qnn, soc_model 60) on every corpus model: node agreement
          (renamed nodes matched to their originals), layout-Transpose counts, refusals.
Numbers are measured against real sessions or recordings, never against partsim itself.
"""

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SHARED = ROOT.parent / "shared"

from partsim.api import predict  # noqa: E402
from partsim.errors import PartsimError  # noqa: E402
from partsim.analysis.verify import compare  # noqa: E402


NODES = SHARED / "observed" / "nodes"
RECORDS = NODES / "qnn-ort1.31.1-qnn2.7.0-soc60.jsonl"


def half_of(case, part):
    """Whether ``case`` (``node__<test>``) is in half ``part`` (0 or 1): sha256 parity, as split_cases."""
    import hashlib

    return hashlib.sha256(case.encode("utf-8")).digest()[0] % 2 == part


def holdout_table(part, out, work):
    """Generate the QNN table from the probes plus the node-test models of half ``part`` into ``out``."""
    from partsim.gen.qnn import qnn_table

    models = Path(work) / f"half{part}"
    models.mkdir(parents=True, exist_ok=True)
    for m in sorted((NODES / "models").glob("*.onnx")):
        if half_of(f"node__{m.stem}", part):
            (models / m.name).symlink_to(m)
    Path(out).write_text(qnn_table([str(models)]))
    return out


def nodes_agreement(path=None, rules=(), part=None):
    """Node agreement on the recordings (of half ``part`` only, when given) with the shipped table or ``rules``."""
    base = NODES
    path = path or RECORDS
    agree = total = 0
    refusals = {"observed": 0, "predicted": 0, "false": 0, "false_cases": [], "missed": []}  # false: created, yet predicted to fail
    wrong = {}
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        if part is not None and not half_of(rec["case"], part):
            continue
        test = rec["case"][len("node__"):]
        model = base / "models" / f"{test}.onnx"
        if not model.exists():
            continue
        err = rec.get("create_error", "")
        if "assignment" not in rec and ("Load model" in err or "is not a registered" in err):
            continue  # the test model itself does not load: nothing to predict
        try:  # the recordings are sessions at ORT_DISABLE_ALL
            summary, assignment = predict(str(model), ["qnn"], rule_paths=list(rules), level="disable")
        except PartsimError:
            continue
        if "assignment" not in rec:
            refusals["observed"] += 1
            refusals["predicted"] += summary["status"] == "session_would_fail"
            if summary["status"] != "session_would_fail":
                refusals["missed"].append(test)
            continue
        if summary["status"] == "session_would_fail":
            refusals["false"] += 1
            refusals["false_cases"].append(f"{test}: {summary.get('failure', '')[:120]}")
        obs = {"nodes": {m[0]: ep for ep, ms in rec["assignment"] for m in ms},
               "opTypes": {m[0]: m[1] for ep, ms in rec["assignment"] for m in ms}, "memcpy": {}, "state": "ok"}
        v = compare(summary, assignment, obs, 1.0, False)
        agree += v["agreeing"]
        total += v["compared"]
        for d in v["disagreements"]:
            wrong.setdefault((d["opType"], d["observed"]), []).append(test)
    return agree, total, refusals, wrong


def corpus_agreement(level="disable", timeout=300):
    from partsim.io.materialize import materialize_weights
    from partsim.runtime.observe import observation_from_run, run_session

    rows = []
    for model in sorted((SHARED / "corpus").glob("*/*.onnx")):
        with tempfile.TemporaryDirectory(prefix="partsim-qnn-bench-") as tmp:
            runnable = materialize_weights(str(model), Path(tmp))
            rec = run_session(runnable, ["QNNExecutionProvider"], level, timeout=timeout, run=False,
                              ep_options={"soc_model": "60"})
        obs = observation_from_run(rec, level)
        try:
            summary, assignment = predict(str(model), ["qnn"], level=level)
        except PartsimError as exc:
            rows.append((model.name, "predict failed", str(exc)[:80]))
            continue
        v = compare(summary, assignment, obs, 1.0, True)
        lay = {k: c for k, c in v["counts"].items() if k.startswith("layoutTransposes")}
        rows.append((model.name, rec.get("state"), v["agreeing"], v["compared"], summary["status"],
                     json.dumps(lay, sort_keys=True), v["passed"]))
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", action="store_true")
    ap.add_argument("--corpus", action="store_true")
    ap.add_argument("--holdout", action="store_true")
    ap.add_argument("--level", default="disable")
    args = ap.parse_args(argv)
    if args.holdout:
        with tempfile.TemporaryDirectory(prefix="partsim-qnn-holdout-") as tmp:
            sums = [0, 0, 0, 0, 0]
            for learnt in (0, 1):
                table = holdout_table(learnt, Path(tmp) / f"qnn-half{learnt}.yaml", tmp)
                for judged, label in ((1 - learnt, "held out"), (learnt, "seen")):
                    agree, total, refusals, wrong = nodes_agreement(rules=[str(table)], part=judged)
                    print(f"table from probes + half {learnt}, judged on half {judged} ({label}): {agree}/{total} "
                          f"nodes agree = {agree / max(total, 1):.4f}; refusals predicted "
                          f"{refusals['predicted']}/{refusals['observed']}; created sessions predicted to fail "
                          f"{refusals['false']}")
                    for case in refusals["false_cases"]:
                        print(f"  predicted to fail, created: {case}")
                    for case in refusals["missed"]:
                        print(f"  refusal not predicted: {case}")
                    if label == "held out":
                        sums = [sums[0] + agree, sums[1] + total, sums[2] + refusals["predicted"],
                                sums[3] + refusals["observed"], sums[4] + refusals["false"]]
                        for (op, ep), tests in sorted(wrong.items(), key=lambda kv: -len(kv[1]))[:12]:
                            print(f"  {len(tests):4d} {op} observed on {ep}, e.g. {tests[0]}")
            print(f"held out, both halves: {sums[0]}/{sums[1]} nodes agree = {sums[0] / max(sums[1], 1):.4f}; "
                  f"refusals predicted {sums[2]}/{sums[3]}; created sessions predicted to fail {sums[4]}")
    elif args.nodes or not args.corpus:
        agree, total, refusals, wrong = nodes_agreement()
        print(f"node tests: {agree}/{total} nodes agree = {agree / max(total, 1):.4f}; refusals predicted "
              f"{refusals['predicted']}/{refusals['observed']}; created sessions predicted to fail {refusals['false']}")
        for case in refusals["false_cases"]:
            print(f"  predicted to fail, created: {case}")
        for case in refusals["missed"]:
            print(f"  refusal not predicted: {case}")
        for (op, ep), tests in sorted(wrong.items(), key=lambda kv: -len(kv[1]))[:25]:
            print(f"  {len(tests):4d} {op} observed on {ep}, e.g. {tests[0]}")
    if args.corpus:
        a = c = 0
        for row in corpus_agreement(args.level):
            print("  ".join(str(x) for x in row))
            if len(row) > 3 and isinstance(row[2], int):
                a, c = a + row[2], c + row[3]
        print(f"corpus ({args.level}): {a}/{c} nodes agree = {a / max(c, 1):.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
