"""The default-level prediction against the session a user would create instead (issues 18, 32).

``partsim simulate swin_t.ts.onnx -p cuda`` at the default level (ORT_ENABLE_ALL) on the graph-only
model (weights absent, as users often have them), as a whole CLI process, side by side with the
whole process of a Python script that creates a real ORT CPU session at ORT_ENABLE_ALL on the same
model with its weights (materialized once, before timing).  No background process exists: every
partsim run starts ORT's optimizer in children of its own.  partsim runs three ways per round:

- ``cold``: ``PARTSIM_NO_CACHE=1``, as shipped: the two sessions' children started first of all, before
  the command line is parsed (``cli._prestart``);
- ``cold, late child``: the early start switched off (each child started only when its request is
  ready), to show what the early start buys;
- ``warm``: a cache folder of this run, filled before timing (the model checked again unchanged).

The four commands run in turn, round after round (paired, so a drift of the machine's speed hits
all alike); min and median of ``--runs`` per command, and the median of the per-round ratios.
partsim's modules are compiled first, as ``pip install`` leaves them.
Target (issue 32): cold partsim <= 1.5x the session's whole process.

    python benchmarks/bench_pipeline.py [--runs 9] [--model PATH]
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import CLI, ROOT, timed_process  # noqa: E402

SESSION = """
import sys, time
import onnxruntime as ort
so = ort.SessionOptions()
so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
t0 = time.perf_counter()
ort.InferenceSession(sys.argv[1], so, providers=["CPUExecutionProvider"])
print(time.perf_counter() - t0)
"""

# the CLI with the early start off: no child before the command line is parsed, and start_children()
# gives none, so each optimizer child is started when its request is ready (runtime/optimizer.run_optimizer)
LATE_CHILD = ("import sys; sys.argv[0] = 'partsim'; import partsim.cli as cli; cli._prestart = lambda argv: []; "
              "from partsim.runtime import ort_pipeline; ort_pipeline.start_children = lambda n, lazy=False: [None] * n; "
              "cli.run()")


def _stats(xs):
    return {"min": round(min(xs), 3), "median": round(statistics.median(xs), 3)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--model", default=str(ROOT.parent / "shared" / "corpus" / "graph_only" / "swin_t.ts.onnx"))
    ap.add_argument("--json", default=str(ROOT / "benchmarks" / "results" / "bench_pipeline.json"))
    args = ap.parse_args()
    import compileall

    from partsim.io.materialize import materialize_weights

    # partsim as `pip install` leaves it: its modules compiled (onnx and onnxruntime in the venv are), also where
    # the environment sets PYTHONDONTWRITEBYTECODE and a checkout would compile every module in every run
    compileall.compile_dir(str(ROOT / "partsim"), quiet=1)

    times = {"partsim_cold": [], "partsim_cold_late_child": [], "partsim_warm": [], "session_process": [],
             "session_create": []}
    with tempfile.TemporaryDirectory(prefix="bench-pipeline-") as tmp:
        runnable = materialize_weights(args.model, Path(tmp) / "m")
        out = Path(tmp) / "summary.json"
        argv = ["simulate", args.model, "-p", "cuda", "-f", "json", "-o", str(out)]
        base = {k: v for k, v in os.environ.items() if k not in ("PARTSIM_NO_CACHE",)}
        base["PYTHONPATH"] = str(ROOT)
        cold_env = {**base, "PARTSIM_NO_CACHE": "1"}
        warm_env = {**base, "PARTSIM_CACHE_DIR": str(Path(tmp) / "cache")}
        timed_process(CLI + argv, env=warm_env)  # fills the cache
        cold_summary = None
        for _ in range(args.runs):
            times["partsim_cold"].append(timed_process(CLI + argv, env=cold_env)[0])
            cold_summary = out.read_bytes()
            times["partsim_cold_late_child"].append(timed_process([sys.executable, "-c", LATE_CHILD, *argv],
                                                                  env=cold_env)[0])
            if out.read_bytes() != cold_summary:
                raise SystemExit("the run with a late child gave another summary than the cold run")
            times["partsim_warm"].append(timed_process(CLI + argv, env=warm_env)[0])
            if out.read_bytes() != cold_summary:
                raise SystemExit("the warm (cached) run's summary differs from the cold run's")
            dt, stdout = timed_process([sys.executable, "-c", SESSION, str(runnable)])
            times["session_process"].append(dt)
            times["session_create"].append(float(stdout.strip().splitlines()[-1]))
        summary = json.loads(out.read_text())
    ratios = {k: round(statistics.median(a / b for a, b in zip(times[k], times["session_process"])), 2)
              for k in ("partsim_cold", "partsim_cold_late_child", "partsim_warm")}
    result = {"model": Path(args.model).name, "runs": args.runs, "nodes_predicted": summary["model"]["nodeCount"],
              "level": summary["level"], "seconds": {k: _stats(v) for k, v in times.items()},
              "median_ratio_vs_session_process": ratios,
              "all_s": {k: [round(x, 3) for x in v] for k, v in times.items()}}
    Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    print(f"{result['model']} ({result['nodes_predicted']} nodes predicted, level {result['level']}), "
          f"{args.runs} rounds, seconds min / median, ratio = median of per-round ratios to the session process:")
    labels = {"partsim_cold": "partsim simulate -p cuda, cold (whole CLI process)",
              "partsim_cold_late_child": "  the same, early start off",
              "partsim_warm": "partsim simulate -p cuda, warm cache",
              "session_process": "ORT CPU session, ENABLE_ALL: whole process",
              "session_create": "ORT CPU session, ENABLE_ALL: creation alone"}
    for key, label in labels.items():
        s = result["seconds"][key]
        tail = f"   {ratios[key]}x" if key in ratios else ""
        print(f"  {label:<52} {s['min']:.3f} / {s['median']:.3f}{tail}")


if __name__ == "__main__":
    main()
