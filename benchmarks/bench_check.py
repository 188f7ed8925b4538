#!/usr/bin/env python3
"""`partsim check` over a model zoo vs the same `partsim simulate` calls one by one (issue 16).

The zoo: the 30 models of shared/corpus (full + graph_only) x 3 provider lists (NNAPI,
CoreML, CUDA), i.e. 90 predictions.  In one run, interleaved round by round:

1. ``partsim check`` (one process, each model loaded once for its 3 checks, ``--jobs`` all cores),
2. ``partsim check --jobs 1`` (the same, one process, no parallelism: the load-once effect alone),
3. the 90 ``partsim simulate MODEL -p LIST -f json -o …`` processes one after the other.

Whole processes, wall time, medians over ``--repeat`` rounds.  The counts of every check
result are compared with the matching simulate JSON (same numbers, or the run fails).

usage: .venv/bin/python benchmarks/bench_check.py [--repeat 3] [--lists nnapi,coreml,cuda]
Writes benchmarks/results/bench_check.json.
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus"


def timed(argv, env):
    t0 = time.perf_counter()
    r = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t0
    if r.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(map(str, argv))} failed ({r.returncode}): {r.stderr[-400:]}")
    return wall


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--lists", default="nnapi,coreml,cuda", help="provider lists, one name each")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "bench_check.json"))
    args = ap.parse_args()
    models = sorted(CORPUS.glob("full/*.onnx")) + sorted(CORPUS.glob("graph_only/*.onnx"))
    if not models:
        raise SystemExit(f"{CORPUS} is absent")
    lists = args.lists.split(",")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    cli = [sys.executable, str(ROOT / "cli.py"), "--progress", "never"]
    with tempfile.TemporaryDirectory(prefix="bench-check-") as tmp:
        tmp = Path(tmp)
        config = tmp / "partsim.toml"
        globs = json.dumps([str(m) for m in models])
        config.write_text("".join(f'[[check]]\nname = "{p}"\nmodels = {globs}\nproviders = ["{p}"]\n\n'
                                  for p in lists))
        times = {"check": [], "checkJobs1": [], "simulate": []}
        for rnd in range(args.repeat):
            times["check"].append(timed(cli + ["check", "--config", str(config), "-f", "json", "-o",
                                               str(tmp / "check.json")], env))
            times["checkJobs1"].append(timed(cli + ["check", "--config", str(config), "--jobs", "1", "-f",
                                                    "json", "-o", str(tmp / "check1.json")], env))
            t = 0.0
            for p in lists:
                for m in models:
                    t += timed(cli + ["simulate", str(m), "-p", p, "-f", "json", "-o",
                                      str(tmp / f"{p}__{m.name}.json")], env)
            times["simulate"].append(t)
            print(f"  round {rnd + 1}: check {times['check'][-1]:.1f} s, check --jobs 1 "
                  f"{times['checkJobs1'][-1]:.1f} s, {len(models) * len(lists)} x simulate {t:.1f} s", flush=True)
        # the same numbers both ways
        doc = json.loads((tmp / "check.json").read_text())
        assert (tmp / "check1.json").read_bytes() == (tmp / "check.json").read_bytes()
        mismatches = 0
        for r in doc["results"]:
            s = json.loads((tmp / f"{r['check']}__{Path(r['model']).name}.json").read_text())
            first = s["effectiveProviders"][0]
            want = {"firstProviderNodes": s["perProvider"][first]["nodes"], "transfers": s["transfers"],
                    "fragments": s["fragments"], "partitionCount": s["partitionCount"],
                    "memcpyFromHost": s["memcpy"]["fromHost"], "memcpyToHost": s["memcpy"]["toHost"]}
            got = {k: r["counts"][k] for k in want}
            mismatches += got != want
        if mismatches:
            raise SystemExit(f"{mismatches} check results differ from their simulate run")
    med = {k: round(statistics.median(v), 2) for k, v in times.items()}
    report = {"benchmark": "check", "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                                                "platform": platform.platform()},
              "models": len(models), "providerLists": lists, "predictions": len(models) * len(lists),
              "rounds": args.repeat, "seconds": {k: [round(x, 2) for x in v] for k, v in times.items()},
              "medianSeconds": med, "speedup": round(med["simulate"] / med["check"], 2),
              "speedupJobs1": round(med["simulate"] / med["checkJobs1"], 2), "countsAgree": True}
    print(f"\n| contender | seconds (median of {args.repeat}) |\n|---|---:|")
    print(f"| partsim check, {os.cpu_count()} jobs | {med['check']:.1f} |")
    print(f"| partsim check --jobs 1 | {med['checkJobs1']:.1f} |")
    print(f"| {len(models) * len(lists)} x partsim simulate | {med['simulate']:.1f} |")
    print(f"\nspeedup {report['speedup']}x ({report['speedupJobs1']}x with --jobs 1); counts agree on all "
          f"{len(doc['results'])} results")
    Path(args.out).write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
