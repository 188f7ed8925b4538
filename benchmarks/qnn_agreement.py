"""partsim's QNN prediction against the real QNN EP, node for node.

    PYTHONPATH=. .venv/bin/python benchmarks/qnn_agreement.py [--corpus] [--nodes] [--level disable]

--nodes   the recorded node tests (../shared/observed/nodes/qnn-ort1.31.1-qnn2.7.0-soc60.jsonl): every
          node of every record with an assignment, and every recorded refusal (create_error other than a
          model load failure) against the predicted status.
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


def nodes_agreement(path=None):
    base = SHARED / "observed" / "nodes"
    path = path or base / "qnn-ort1.31.1-qnn2.7.0-soc60.jsonl"
    agree = total = 0
    refusals = {"observed": 0, "predicted": 0}
    wrong = {}
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        test = rec["case"][len("node__"):]
        model = base / "models" / f"{test}.onnx"
        if not model.exists():
            continue
        err = rec.get("create_error", "")
        if "assignment" not in rec and ("Load model" in err or "is not a registered" in err):
            continue  # the test model itself does not load: nothing to predict
        try:  # the recordings are sessions at ORT_DISABLE_ALL
            summary, assignment = predict(str(model), ["qnn"], level="disable")
        except PartsimError:
            continue
        if "assignment" not in rec:
            refusals["observed"] += 1
            refusals["predicted"] += summary["status"] == "session_would_fail"
            continue
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
    ap.add_argument("--level", default="disable")
    args = ap.parse_args(argv)
    if args.nodes or not args.corpus:
        agree, total, refusals, wrong = nodes_agreement()
        print(f"node tests: {agree}/{total} nodes agree = {agree / max(total, 1):.4f}; refusals predicted "
              f"{refusals['predicted']}/{refusals['observed']}")
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
