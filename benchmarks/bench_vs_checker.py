#!/usr/bin/env python3
"""partsim vs ONNX Runtime's mobile usability checker, timed side by side.

Model: /work/shared/corpus/graph_only/swin_t.ts.onnx (graph-only: its weights are
materialized once, seeded, for the checker; the time for that is reported apart).

Measured in one run, interleaved (run i of every contender, then run i+1, ...), the
in-process contenders (and the floor, below) first, then the whole processes:

  partsim CLI        `python cli.py simulate MODEL -p nnapi,coreml` (whole process,
                     table to a pipe): partsim's own prediction, graph as written
  checker in-process `usability_checker.analyze_model(materialized MODEL)` (ORT
                     BASIC optimization + onnx shape inference + 3 EPs), INFO logger
                     with no output handler
  checker CLI        `python -m onnxruntime.tools.check_onnx_model_mobile_usability
                     materialized MODEL` (whole process)
  partsim compat     `python cli.py simulate MODEL --compat usability-checker`
                     (whole process; materializes weights itself each time)

Median and min of --repeat runs.  The two tools answer different questions
(partsim: one assignment over NNAPI > CoreML > CPU on the graph as written, with
partsim's capability tables; checker: each EP alone, on the BASIC-optimized graph,
op-type lists only), so partition counts are printed for context, not compared.

Needs rules/nnapi.yaml and rules/coreml-*.yaml (written separately); waits up to
--wait seconds for them, then skips (exit 0, "skip" in the JSON).

Also in each round: the floor (ONNX's C++ shape inference alone, parsing its result, one read
of every node's fields: what no rewrite of partsim's Python removes), set against the 10x
budget (the checker's median / 10).  Then, apart: partsim's stages one by one (before the
processes run), and whether that inference holds the GIL (if it does, a thread cannot overlap it).

Prints markdown tables; writes benchmarks/results/bench_vs_checker.json.

usage: .venv/bin/python benchmarks/bench_vs_checker.py [--repeat N] [--wait S] [--out FILE]
"""

import argparse
import json
import logging
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from common import timed_process  # noqa: E402  (benchmarks/common.py)

MODEL = ROOT.parent / "shared" / "corpus" / "graph_only" / "swin_t.ts.onnx"
RULES = (ROOT / "rules" / "nnapi.yaml", ROOT / "rules" / "coreml-neuralnetwork.yaml",
         ROOT / "rules" / "coreml-mlprogram.yaml")


def wait_for_rules(wait):
    deadline = time.monotonic() + wait
    while True:
        missing = [p.name for p in RULES if not p.is_file()]
        if not missing or time.monotonic() >= deadline:
            return missing
        time.sleep(5)


def _timer(times):
    """``timed(key, f)``: call ``f()``, add its wall time to ``times[key]``, return its result."""

    def timed(key, f):
        t0 = time.perf_counter()
        r = f()
        times.setdefault(key, []).append(time.perf_counter() - t0)
        return r

    return timed


def _medians(times):
    return {k: round(statistics.median(v), 4) for k, v in times.items()}


def partsim_stages(runs):
    """Where partsim's in-process time goes: the loader's steps as ``load_model`` runs them
    (internal functions, timed one by one), then the simulation and the summary."""
    import hashlib

    from partsim.io import load, read, shape_inference
    from partsim.api import build_request, load_tables
    from partsim.rules.resolve import resolve_providers
    from partsim.sim import simulate, summarize

    requested, extra = build_request(["nnapi", "coreml"])
    resolution = resolve_providers(requested, load_tables(()), extra)
    times = {}
    timed = _timer(times)

    import gc

    gc.disable()  # as predict() runs: the cyclic GC paused while the IR is built
    for _ in range(runs):
        proto, data = timed("read and parse", lambda: read.read_model_proto(MODEL, check_node_text=False))
        timed("sha256", lambda: hashlib.sha256(data).hexdigest())
        timed("declared-dimension check", lambda: load._check_declared_dims(proto, str(MODEL)))
        inferred = timed("ONNX shape inference (data_prop)", lambda: shape_inference._infer_shapes_as_listed(proto, []))
        model = timed("build the IR (+ UTF-8, external-data, order checks)",
                      lambda: load._try_build(inferred, str(MODEL), "", [], None, True)[0])
        assignment = timed("simulate NNAPI > CoreML > CPU", lambda: simulate(model, resolution))
        timed("summary", lambda: summarize(assignment))
        proto = data = inferred = model = assignment = None  # freed before the collection
        gc.collect()
    gc.enable()
    out = _medians(times)
    out["runs"] = runs
    return out


def _read_fields(m):
    g = m.graph
    nodes = [(n.op_type, n.domain, n.name, n.input[:], n.output[:], [(a.name, a.type) for a in n.attribute])
             for n in g.node]
    types = [(vi.name, vi.type.SerializeToString()) for vis in (g.value_info, g.input, g.output) for vi in vis]
    return nodes, types


def floor_once(data, times):
    """One run of the part of the in-process prediction that rewriting partsim's Python cannot
    remove, timed step by step into ``times`` (with the cyclic GC paused, as ``predict`` runs):

    * ONNX's C++ shape inference with data propagation, called directly on the file's bytes
      (no Python wrapper, no memory cap, no re-serialization), and parsing what it returns;
    * reading, once, through protobuf, each node's op type, domain, name, inputs, outputs and
      attribute names/types, and each value_info's name and type: the least any IR needs.
    """
    import gc

    from onnx import ModelProto
    from onnx.onnx_cpp2py_export import shape_inference as C

    timed = _timer(times)
    gc.disable()
    try:
        out = timed("C++ shape inference (data_prop), bytes in, bytes out",
                    lambda: C.infer_shapes(data, False, False, True))
        m = timed("parse its result", lambda: ModelProto.FromString(out))
        timed("read every node's and value_info's fields once", lambda: _read_fields(m))
    finally:
        gc.enable()


def gil_check(data):
    """A pure-Python loop timed alone (best of 3), then beside a thread running ONNX's shape
    inference: if the inference holds the GIL, the loop waits and no thread can overlap it."""
    import threading

    from onnx.onnx_cpp2py_export import shape_inference as C

    def spin():
        t0 = time.perf_counter()
        x = 0
        for i in range(1_500_000):
            x += i
        return time.perf_counter() - t0

    alone = min(spin() for _ in range(3))
    worker = threading.Thread(target=lambda: [C.infer_shapes(data, False, False, True) for _ in range(8)])
    worker.start()
    beside = spin()
    worker.join()
    return round(alone, 4), round(beside, 4)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--wait", type=float, default=0, help="seconds to wait for the NNAPI/CoreML rule tables")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "bench_vs_checker.json"))
    args = ap.parse_args()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)

    def skip(reason):
        print(f"skip: {reason}")
        out.write_text(json.dumps({"benchmark": "vs_checker", "skip": reason}, indent=2, sort_keys=True) + "\n")
        return 0

    if not MODEL.is_file():
        return skip(f"{MODEL} is absent (../shared/corpus not checked out)")
    missing = wait_for_rules(args.wait)
    if missing:
        return skip(f"rule tables not written yet: {', '.join(missing)}")

    import onnxruntime
    from onnxruntime.tools.mobile_helpers import usability_checker as uc

    from partsim.io.materialize import materialize_weights

    cli = [sys.executable, str(ROOT / "cli.py")]
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    logger = logging.getLogger("bench-usability-checker")
    logger.handlers[:] = [logging.NullHandler()]
    logger.propagate = False
    logger.setLevel(logging.INFO)  # the checker's default level: print_analysis runs, output goes nowhere

    with tempfile.TemporaryDirectory(prefix="partsim-bench-") as tmp:
        t0 = time.perf_counter()
        runnable = materialize_weights(MODEL, Path(tmp) / "materialized", seed=0)
        materialize_s = time.perf_counter() - t0
        times = {"partsim": [], "partsimInProcess": [], "checkerInProcess": [], "checkerCli": [],
                 "partsimCompat": []}
        from partsim.api import predict
        floor_times = {}
        model_bytes = MODEL.read_bytes()
        predict(MODEL, ["nnapi", "coreml"])  # warm: imports and the three tables, as the checker's are warm
        # in-process contenders first, interleaved with each other only: a child process run
        # just before an in-process one slowed it (seen here, both tools alike)
        for _ in range(max(1, args.repeat)):
            t0 = time.perf_counter()
            predict(MODEL, ["nnapi", "coreml"])  # load + shape inference + simulate + summary
            times["partsimInProcess"].append(time.perf_counter() - t0)
            floor_once(model_bytes, floor_times)
            t0 = time.perf_counter()
            uc.analyze_model(runnable, logger=logger)
            times["checkerInProcess"].append(time.perf_counter() - t0)
        stages = partsim_stages(max(args.repeat, 15))  # before any child process runs
        for _ in range(max(1, args.repeat)):  # then the whole processes, interleaved
            times["partsim"].append(timed_process(cli + ["simulate", str(MODEL), "-p", "nnapi,coreml"], env)[0])
            times["checkerCli"].append(timed_process(
                [sys.executable, "-m", "onnxruntime.tools.check_onnx_model_mobile_usability", str(runnable)])[0])
            times["partsimCompat"].append(timed_process(
                cli + ["simulate", str(MODEL), "--compat", "usability-checker", "-f", "json"], env)[0])
        # context (untimed): what each tool says
        summary = json.loads(timed_process(cli + ["simulate", str(MODEL), "-p", "nnapi,coreml", "-f", "json"],
                                           env)[1])
        compat = json.loads(timed_process(cli + ["simulate", str(MODEL), "--compat", "usability-checker",
                                                 "-f", "json"], env)[1])

    rows = [
        ("partsim", "`partsim simulate swin_t -p nnapi,coreml` (process)"),
        ("partsimInProcess", "partsim `predict(swin_t, [nnapi, coreml])` (in-process)"),
        ("checkerInProcess", "checker `analyze_model` (in-process, weights materialized)"),
        ("checkerCli", "`python -m onnxruntime.tools.check_onnx_model_mobile_usability` (process)"),
        ("partsimCompat", "`partsim simulate swin_t --compat usability-checker` (process)"),
    ]
    results = {k: {"runs": [round(x, 4) for x in v], "medianSeconds": round(statistics.median(v), 4),
                   "minSeconds": round(min(v), 4)} for k, v in times.items()}
    ratio = results["checkerInProcess"]["medianSeconds"] / results["partsim"]["medianSeconds"]
    ratio_in = results["checkerInProcess"]["medianSeconds"] / results["partsimInProcess"]["medianSeconds"]
    print(f"model: {MODEL.name} ({summary['model']['nodeCount']} nodes as written; "
          f"{compat['eps']['NNAPI']['totalNodes']} after ORT BASIC optimization)  repeat {args.repeat}  "
          f"cpus {os.cpu_count()}  onnxruntime {onnxruntime.__version__}\n")
    print("| contender | median s | min s |")
    print("|---|---:|---:|")
    for key, label in rows:
        r = results[key]
        print(f"| {label} | {r['medianSeconds']:.2f} | {r['minSeconds']:.2f} |")
    print(f"| (one-off) materialize swin_t weights | {materialize_s:.2f} | |")
    print(f"\nchecker in-process / partsim CLI (medians): {ratio:.2f}x")
    print(f"checker in-process / partsim in-process (medians): {ratio_in:.2f}x\n")
    per = summary.get("perProvider", {})
    print("| partitions (context, not comparable) | NNAPI | CoreML NeuralNetwork | CoreML MLProgram |")
    print("|---|---:|---:|---:|")
    print(f"| checker (each EP alone, optimized graph) | {compat['eps']['NNAPI']['partitions']} | "
          f"{compat['eps']['CoreML NeuralNetwork']['partitions']} | {compat['eps']['CoreML MLProgram']['partitions']} |")
    nn = per.get("NnapiExecutionProvider", {}).get("partitions", "-")
    cm = per.get("CoreMLExecutionProvider", {}).get("partitions", "-")
    print(f"| partsim (NNAPI > CoreML > CPU, as written) | {nn} | {cm} (CoreML, default format) | |")

    print("\n| partsim in-process, by stage (median of "
          f"{stages.pop('runs')} runs) | ms |\n|---|---:|")
    for k, v in stages.items():
        print(f"| {k} | {v * 1000:.1f} |")

    floor = _medians(floor_times)
    floor_runs = args.repeat
    alone, beside = gil_check(model_bytes)
    floor_total = sum(floor.values())
    budget = results["checkerInProcess"]["medianSeconds"] / 10
    print(f"\n| the floor: what no rewrite of partsim's Python removes (median of {floor_runs} runs, "
          "interleaved with the above) | ms |"
          "\n|---|---:|")
    for k, v in floor.items():
        print(f"| {k} | {v * 1000:.1f} |")
    print(f"| **floor** | **{floor_total * 1000:.1f}** |")
    print(f"\n10x budget (checker in-process median / 10): {budget * 1000:.1f} ms; floor "
          f"{floor_total * 1000:.1f} ms ({100 * floor_total / budget:.0f} % of it); partsim's own logic "
          f"(in-process median - floor) {(results['partsimInProcess']['medianSeconds'] - floor_total) * 1000:.1f} ms "
          f"would have to fit in {(budget - floor_total) * 1000:.1f} ms")
    print(f"GIL: a Python loop takes {alone * 1000:.0f} ms alone, {beside * 1000:.0f} ms beside a thread running "
          f"the inference ({'held: no overlap possible' if beside > 1.5 * alone else 'released'})")

    report = {
        "benchmark": "vs_checker",
        "floorSeconds": dict(floor, total=round(floor_total, 4)),
        "tenTimesBudgetSeconds": round(budget, 4),
        "gil": {"spinAloneSeconds": alone, "spinBesideInferenceSeconds": beside},
        "partsimStagesSeconds": stages,
        "model": str(MODEL.relative_to(ROOT.parent)),
        "repeat": args.repeat,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform(),
                    "onnxruntime": onnxruntime.__version__},
        "materializeSeconds": round(materialize_s, 4),
        "results": results,
        "checkerOverPartsimMedianRatio": round(ratio, 3),
        "checkerOverPartsimInProcessMedianRatio": round(ratio_in, 3),
        "context": {
            "partsimPerProvider": per,
            "checker": {k: {"partitions": v["partitions"], "supportedNodes": v["supportedNodes"],
                            "totalNodes": v["totalNodes"]} for k, v in compat["eps"].items()},
        },
    }
    out.write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
