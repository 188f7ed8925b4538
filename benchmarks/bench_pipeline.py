"""The default-level prediction against the session a user would create instead (issue 18).

``partsim simulate swin_t.ts.onnx -p cuda`` at the default level (ORT_ENABLE_ALL), as a whole CLI
process, side by side with a real ORT CPU session at ORT_ENABLE_ALL on the same model with its
weights materialized (done once, before timing): the session's creation alone, and the whole
process a user would run for it (``python -c "import onnxruntime; InferenceSession(...)"``).
partsim runs three times per round: cold with no worker (``PARTSIM_NO_CACHE=1``,
``PARTSIM_WORKER=0``: ORT's optimizer session in a new child, which imports onnxruntime first, as
on a machine's first run), cold with the warm worker an earlier run left
(:mod:`partsim.runtime.ort_worker`, in a folder of this run, started by one run before timing;
``PARTSIM_NO_CACHE=1``: the session still runs), and warm (a cache folder of this run, filled by one
run before timing: the model checked again unchanged, as on every commit).  Runs alternate;
medians of ``--runs``.  Target: partsim <= 1.5x the session.

    python benchmarks/bench_pipeline.py [--runs 7] [--model PATH]
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


def _wait_for_worker(folder, timeout=30.0):
    """Until the worker the priming run left answers on its socket."""
    import socket
    import time

    end = time.monotonic() + timeout
    while time.monotonic() < end:
        for sock in folder.glob("*.sock"):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                s.connect(str(sock))
                return
            except OSError:
                pass
            finally:
                s.close()
        time.sleep(0.05)
    raise SystemExit(f"no worker answered in {folder}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--model", default=str(ROOT.parent / "shared" / "corpus" / "graph_only" / "swin_t.ts.onnx"))
    ap.add_argument("--json", default=str(ROOT / "benchmarks" / "results" / "bench_pipeline.json"))
    args = ap.parse_args()
    from partsim.io.materialize import materialize_weights

    partsim_s, worker_s, warm_s, process_s, create_s = [], [], [], [], []
    with tempfile.TemporaryDirectory(prefix="bench-pipeline-") as tmp:
        runnable = materialize_weights(args.model, Path(tmp) / "m")
        out = Path(tmp) / "summary.json"
        cmd = CLI + ["simulate", args.model, "-p", "cuda", "-f", "json", "-o", str(out)]
        base = {k: v for k, v in os.environ.items() if k not in ("PARTSIM_NO_CACHE", "PARTSIM_WORKER")}
        cold_env = {**base, "PARTSIM_NO_CACHE": "1", "PARTSIM_WORKER": "0"}
        worker_dir = Path(tmp) / "worker"
        worker_env = {**base, "PARTSIM_NO_CACHE": "1", "PARTSIM_WORKER_DIR": str(worker_dir),
                      "PARTSIM_WORKER_IDLE": "120"}
        warm_env = {**base, "PARTSIM_CACHE_DIR": str(Path(tmp) / "cache"), "PARTSIM_WORKER": "0"}
        timed_process(cmd, env=warm_env)  # fills the cache
        timed_process(cmd, env=worker_env)  # leaves the worker
        _wait_for_worker(worker_dir)
        cold_summary = None
        for _ in range(args.runs):
            dt, _ = timed_process(cmd, env=cold_env)
            partsim_s.append(dt)
            cold_summary = out.read_bytes()
            dt, _ = timed_process(cmd, env=worker_env)
            worker_s.append(dt)
            if out.read_bytes() != cold_summary:
                raise SystemExit("the run with the worker gave another summary than the cold run")
            dt, _ = timed_process(cmd, env=warm_env)
            warm_s.append(dt)
            if out.read_bytes() != cold_summary:
                raise SystemExit("the warm (cached) run's summary differs from the cold run's")
            dt, stdout = timed_process([sys.executable, "-c", SESSION, str(runnable)])
            process_s.append(dt)
            create_s.append(float(stdout.strip().splitlines()[-1]))
        summary = json.loads(out.read_text())
        for sock in worker_dir.glob("*.sock"):
            sock.unlink()  # the worker sees its socket gone and ends
    med = {k: statistics.median(v) for k, v in (("partsim", partsim_s), ("partsim_worker", worker_s),
                                                ("partsim_warm", warm_s),
                                                ("session_process", process_s), ("session_create", create_s))}
    result = {
        "model": Path(args.model).name, "runs": args.runs, "nodes_predicted": summary["model"]["nodeCount"],
        "level": summary["level"], "median_s": {k: round(v, 3) for k, v in med.items()},
        "ratio_vs_session_create": round(med["partsim"] / med["session_create"], 2),
        "ratio_vs_session_process": round(med["partsim"] / med["session_process"], 2),
        "worker_ratio_vs_session_create": round(med["partsim_worker"] / med["session_create"], 2),
        "worker_ratio_vs_session_process": round(med["partsim_worker"] / med["session_process"], 2),
        "warm_ratio_vs_session_create": round(med["partsim_warm"] / med["session_create"], 2),
        "warm_ratio_vs_session_process": round(med["partsim_warm"] / med["session_process"], 2),
        "all_s": {"partsim": [round(x, 3) for x in partsim_s], "partsim_worker": [round(x, 3) for x in worker_s],
                  "partsim_warm": [round(x, 3) for x in warm_s],
                  "session_process": [round(x, 3) for x in process_s],
                  "session_create": [round(x, 3) for x in create_s]},
    }
    Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    print(f"{result['model']} ({result['nodes_predicted']} nodes predicted, level {result['level']}), "
          f"medians of {args.runs}:")
    print(f"  partsim simulate -p cuda, cold, no worker (whole CLI process) {med['partsim']:.3f} s"
          f"   -> {result['ratio_vs_session_create']}x creation, {result['ratio_vs_session_process']}x process")
    print(f"  partsim simulate -p cuda, cold, warm worker (same)          {med['partsim_worker']:.3f} s"
          f"   -> {result['worker_ratio_vs_session_create']}x creation, {result['worker_ratio_vs_session_process']}x process")
    print(f"  partsim simulate -p cuda, warm cache (same)                 {med['partsim_warm']:.3f} s"
          f"   -> {result['warm_ratio_vs_session_create']}x creation, {result['warm_ratio_vs_session_process']}x process")
    print(f"  ORT CPU session, ENABLE_ALL: creation alone                  {med['session_create']:.3f} s")
    print(f"  ORT CPU session, ENABLE_ALL: whole process                   {med['session_process']:.3f} s")

if __name__ == "__main__":
    main()
