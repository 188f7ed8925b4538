#!/usr/bin/env python3
"""Speed at scale (issue 7): synth models of 10k/100k/1M nodes, the floor, and the field.

Measured on this machine, in one run:

1. scaling: ``partsim simulate SYNTH -p nnapi,coreml`` (two accelerators + CPU, table output)
   as a whole CLI process on seeded ``partsim synth`` models of 10k, 100k and 1M nodes:
   wall time and peak RSS (from ``wait4``); t(1M)/t(100k); and the JSON output of the
   largest model produced twice and compared byte for byte.
2. the floor: on shared/corpus/graph_only/swin_t.ts.onnx, partsim's in-process
   ``predict`` (load + shape inference + simulate + summary) vs ``onnx.load`` +
   ``onnx.shape_inference.infer_shapes`` of the same file, called as partsim calls it
   (``data_prop=True``) and with ONNX's default arguments (see :func:`floor`).
3. the field, same models: partsim (CLI process), ORT's usability checker
   (``analyze_model``, in-process, weights materialized) and creating a real ORT CPU
   session (weights materialized).

usage: .venv/bin/python benchmarks/bench_scale.py [--sizes 10000,100000,1000000] [--repeat N]
Writes benchmarks/results/bench_scale.json and prints markdown tables.

``--json-only [--before CHECKOUT]``: only ``simulate -p nnapi,coreml --format json`` on the
largest size, twice (peak RSS, wall time, byte identity), and once with another
checkout's ``cli.py`` (``--before``, e.g. the main branch) side by side: the streaming
JSON writer against the one-string writer.  Writes bench_scale_json.json.
"""

import argparse
import hashlib
import json
import logging
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SHARED = ROOT.parent / "shared" / "corpus"
CACHE = ROOT / "benchmarks" / "results" / "tmp"


def run_process(argv, stdout=subprocess.DEVNULL):
    """(wall seconds, peak RSS MiB, return code) of one child process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=stdout, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, argv))} failed: {proc.stderr.read().decode()[-500:]}")
    return wall, usage.ru_maxrss / 1024


def synth(n):
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / f"synth_{n}_seed1.onnx"
    if not path.exists():
        subprocess.run([sys.executable, str(ROOT / "cli.py"), "synth", "--nodes", str(n), "--seed", "1",
                        "-o", str(path)], check=True)
    return path


def scaling(sizes, repeat):
    cli = [sys.executable, str(ROOT / "cli.py"), "simulate"]
    rows = []
    for n in sizes:
        model = synth(n)
        walls, rss = [], []
        for _ in range(repeat if n < 1_000_000 else 1):
            w, r = run_process(cli + [str(model), "-p", "nnapi,coreml"])
            walls.append(w)
            rss.append(r)
        rows.append({"nodes": n, "seconds": round(statistics.median(walls), 3), "peakRssMiB": round(max(rss), 1),
                     "fileMiB": round(model.stat().st_size / 2**20, 1)})
        print(f"  synth {n:>9}: {rows[-1]['seconds']:.2f} s, {rows[-1]['peakRssMiB']:.0f} MiB", flush=True)
    largest = synth(max(sizes))
    digests, json_walls = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(2):
            out = Path(tmp) / f"s{k}.json"
            w, r = run_process(cli + [str(largest), "-p", "nnapi,coreml", "-f", "json", "-o", str(out)])
            json_walls.append((w, r))
            digests.append(hashlib.sha256(out.read_bytes()).hexdigest())
    by = {r["nodes"]: r for r in rows}
    ratio = (by[1_000_000]["seconds"] / by[100_000]["seconds"]) if {100_000, 1_000_000} <= set(by) else None
    return {"rows": rows, "t1M_over_t100k": None if ratio is None else round(ratio, 2),
            "json": {"nodes": max(sizes), "seconds": [round(w, 2) for w, _ in json_walls],
                     "peakRssMiB": [round(r, 1) for _, r in json_walls], "byteIdentical": digests[0] == digests[1],
                     "sha256": digests[0]}}


FLOOR_REPEAT = 25  # the floor is ~30 ms and noisy: many interleaved runs, medians


def floor(model, repeat):
    """partsim's in-process ``predict`` vs ``onnx.load`` + ``onnx.shape_inference.infer_shapes``.

    Two floors, interleaved with partsim run by run: ``infer_shapes(m, data_prop=True)``,
    the call partsim itself makes (ORT propagates shape data too, so partsim cannot drop
    it), and ``infer_shapes(m)`` with ONNX's default arguments (no data propagation,
    less work than partsim has to do).  Medians of max(repeat, FLOOR_REPEAT) runs.
    """
    import onnx

    from partsim.api import predict

    predict(model, ["nnapi", "coreml"])  # warm imports and tables
    ours, base, plain = [], [], []
    for _ in range(max(repeat, FLOOR_REPEAT)):
        t0 = time.perf_counter()
        m = onnx.load(str(model), load_external_data=False)
        onnx.shape_inference.infer_shapes(m, data_prop=True)
        base.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        m = onnx.load(str(model), load_external_data=False)
        onnx.shape_inference.infer_shapes(m)
        plain.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        predict(model, ["nnapi", "coreml"])
        ours.append(time.perf_counter() - t0)
    b, d, o = statistics.median(base), statistics.median(plain), statistics.median(ours)
    return {"model": model.name, "runs": len(ours), "onnxLoadPlusInferSeconds": round(b, 4),
            "onnxLoadPlusInferDefaultArgsSeconds": round(d, 4), "partsimSeconds": round(o, 4),
            "ratio": round(o / b, 2), "ratioDefaultArgs": round(o / d, 2)}


def field(models, repeat):
    import onnxruntime as ort
    from onnxruntime.tools.mobile_helpers import usability_checker as uc

    from partsim.io.materialize import materialize_weights

    logger = logging.getLogger("bench-scale-checker")
    logger.handlers[:] = [logging.NullHandler()]
    logger.propagate = False
    logger.setLevel(logging.INFO)
    cli = [sys.executable, str(ROOT / "cli.py"), "simulate"]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for model in models:
            runnable = materialize_weights(model, Path(tmp) / model.stem, seed=0)
            t = {"partsim": [], "checker": [], "ortSession": []}
            for _ in range(repeat):
                t["partsim"].append(run_process(cli + [str(model), "-p", "nnapi,coreml"])[0])
                t0 = time.perf_counter()
                uc.analyze_model(runnable, logger=logger)
                t["checker"].append(time.perf_counter() - t0)
                so = ort.SessionOptions()
                so.log_severity_level = 3
                t0 = time.perf_counter()
                ort.InferenceSession(str(runnable), so, providers=["CPUExecutionProvider"])
                t["ortSession"].append(time.perf_counter() - t0)
            rows.append({"model": model.name, **{k: round(statistics.median(v), 3) for k, v in t.items()}})
            print(f"  {model.name}: {rows[-1]}", flush=True)
    return rows


def json_only(size, before):
    """``simulate -f json`` on the synth model of ``size`` nodes: this checkout twice, ``before`` once."""
    model = synth(size)
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        contenders = [("this checkout", ROOT), ("this checkout", ROOT)] + ([("before", Path(before))] if before else [])
        for k, (label, root) in enumerate(contenders):
            out = Path(tmp) / f"s{k}.json"
            env_root = str(root)
            argv = ["env", f"PYTHONPATH={env_root}", sys.executable, str(root / "cli.py"), "simulate", str(model),
                    "-p", "nnapi,coreml", "-f", "json", "-o", str(out)]
            w, r = run_process(argv)
            runs.append({"contender": label, "root": env_root, "seconds": round(w, 2), "peakRssMiB": round(r, 1),
                         "sha256": hashlib.sha256(out.read_bytes()).hexdigest(), "bytes": out.stat().st_size})
            out.unlink()
            print(f"  {label}: {runs[-1]['seconds']} s, {runs[-1]['peakRssMiB']:.0f} MiB", flush=True)
    return {"nodes": size, "runs": runs, "byteIdentical": len({r["sha256"] for r in runs}) == 1}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=None)
    ap.add_argument("--json-only", action="store_true", help="only the JSON output of the largest size")
    ap.add_argument("--before", metavar="CHECKOUT", help="with --json-only: another checkout to compare with")
    args = ap.parse_args()
    sizes = [int(x) for x in args.sizes.split(",")]
    if args.json_only:
        print(f"simulate -p nnapi,coreml -f json on {max(sizes):,} nodes (whole process):")
        report = {"benchmark": "scale-json", "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                                                          "platform": platform.platform()},
                  "json": json_only(max(sizes), args.before)}
        out = args.out or str(ROOT / "benchmarks" / "results" / "bench_scale_json.json")
        Path(out).write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
        print(f"byte-identical: {report['json']['byteIdentical']}\nwrote {out}")
        return
    args.out = args.out or str(ROOT / "benchmarks" / "results" / "bench_scale.json")
    report = {"benchmark": "scale", "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                                                 "platform": platform.platform()}}
    print("scaling (partsim simulate -p nnapi,coreml, whole process):")
    report["scaling"] = scaling(sizes, args.repeat)
    swin = SHARED / "graph_only" / "swin_t.ts.onnx"
    if swin.exists():
        report["floor"] = floor(swin, args.repeat)
        models = [SHARED / "graph_only" / n for n in ("swin_t.ts.onnx", "resnet50.ts.onnx", "bert_tiny.ts.onnx")]
        print("field (partsim CLI vs usability checker vs ORT CPU session):")
        report["field"] = field(models, args.repeat)
    else:
        report["floor"] = report["field"] = f"skipped: {SHARED} is absent"
    s = report["scaling"]
    print("\n| nodes | partsim simulate (s) | peak RSS (MiB) |\n|---:|---:|---:|")
    for r in s["rows"]:
        print(f"| {r['nodes']:,} | {r['seconds']:.2f} | {r['peakRssMiB']:.0f} |")
    print(f"\nt(1M)/t(100k) = {s['t1M_over_t100k']}; JSON of {s['json']['nodes']:,} nodes twice: "
          f"byte-identical {s['json']['byteIdentical']} ({s['json']['seconds']} s, {s['json']['peakRssMiB']} MiB)")
    if isinstance(report["floor"], dict):
        f = report["floor"]
        print(f"\nswin_t ({f['runs']} runs, medians): partsim {f['partsimSeconds']} s vs onnx.load + "
              f"infer_shapes(data_prop=True) {f['onnxLoadPlusInferSeconds']} s = {f['ratio']}x; vs "
              f"infer_shapes with default arguments {f['onnxLoadPlusInferDefaultArgsSeconds']} s = "
              f"{f['ratioDefaultArgs']}x")
        print("\n| model | partsim CLI (s) | usability checker (s) | ORT CPU session (s) |\n|---|---:|---:|---:|")
        for r in report["field"]:
            print(f"| {r['model']} | {r['partsim']:.2f} | {r['checker']:.2f} | {r['ortSession']:.2f} |")
    Path(args.out).write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
