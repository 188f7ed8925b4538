"""``predict`` as written against what it cannot do without: ONNX's loader and shape inference (issue 32).

In one process, alternating, ``--runs`` rounds of:

- ``predict(MODEL, ["nnapi", "coreml"], level="disable")``: load, shape inference, partsim's own
  shape-value propagation, the IR, the assignment over NNAPI > CoreML > CPU, the summary;
- ``onnx.load(MODEL, load_external_data=False)`` + ``onnx.shape_inference.infer_shapes(m,
  data_prop=True)``: the floor any tool that reads the model's shapes pays.

One warm-up of each first (imports, the rule tables).  Min and median of each, and the median of
the per-round ratios, in wall time and in this process's CPU time (``time.process_time``: on a machine
shared with other work, much less swayed by it than the wall clock).  Target (issue 32): predict <= 2x
the floor.  ``--profile`` prints cProfile's top functions of predict instead.  ``--only predict|floor``
runs just that one ``--runs`` times, untimed: under an instruction counter, the count of one warm call is
(count at ``--runs 4`` - count at ``--runs 1``) / 3, whatever else the machine runs::

    valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \\
        python benchmarks/bench_predict.py --only predict --runs 4

    python benchmarks/bench_predict.py [--runs 15] [--model PATH] [--profile] [--only predict|floor]
"""

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--model", default=str(ROOT.parent / "shared" / "corpus" / "graph_only" / "swin_t.ts.onnx"))
    ap.add_argument("--json", default=str(ROOT / "benchmarks" / "results" / "bench_predict.json"))
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--only", choices=["predict", "floor"],
                    help="run just this one --runs times, untimed (for an instruction counter)")
    args = ap.parse_args()
    import onnx
    import onnx.shape_inference

    from partsim.api import predict

    def partsim():
        predict(args.model, ["nnapi", "coreml"], level="disable")

    def floor():
        onnx.shape_inference.infer_shapes(onnx.load(args.model, load_external_data=False), data_prop=True)

    if args.only:
        for _ in range(args.runs):
            (partsim if args.only == "predict" else floor)()
        return
    partsim()
    floor()
    if args.profile:
        import cProfile
        import pstats

        prof = cProfile.Profile()
        prof.runcall(lambda: [partsim() for _ in range(3)])
        pstats.Stats(prof).sort_stats("cumulative").print_stats(40)
        return
    times = {"predict": [], "onnx_load_infer_shapes": []}
    cpu = {"predict": [], "onnx_load_infer_shapes": []}  # this process's CPU time: less swayed by other load
    for _ in range(args.runs):
        for key, f in (("predict", partsim), ("onnx_load_infer_shapes", floor)):
            t0, c0 = time.perf_counter(), time.process_time()
            f()
            times[key].append(time.perf_counter() - t0)
            cpu[key].append(time.process_time() - c0)

    def summary(runs):
        return {k: {"min": round(min(v), 4), "median": round(statistics.median(v), 4)} for k, v in runs.items()}

    def median_ratio(runs):
        return round(statistics.median(a / b for a, b in zip(runs["predict"], runs["onnx_load_infer_shapes"])), 2)

    result = {"model": Path(args.model).name, "runs": args.runs, "seconds": summary(times),
              "median_ratio": median_ratio(times), "all_s": {k: [round(x, 4) for x in v] for k, v in times.items()},
              "cpu_seconds": summary(cpu), "cpu_median_ratio": median_ratio(cpu)}
    Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    print(f"{result['model']}, {args.runs} rounds, seconds min / median (wall; CPU of this process):")
    for key, s in result["seconds"].items():
        c = result["cpu_seconds"][key]
        print(f"  {key:<24} {s['min']:.3f} / {s['median']:.3f}; CPU {c['min']:.3f} / {c['median']:.3f}")
    print(f"  predict / floor, median of per-round ratios: {result['median_ratio']}x (CPU: {result['cpu_median_ratio']}x)")

if __name__ == "__main__":
    main()
