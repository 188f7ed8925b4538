#!/usr/bin/env python3
"""Time `partsim render` on two real graphs of the corpus.

  swin_t.ts.onnx    (3608 nodes) collapsed, one box per partition   target < 5 s
  vit_tiny.ts.onnx  (793 nodes)  every node                         target < 15 s

Each case runs with every provider configuration available: the shipped NNAPI and
CUDA tables when present, and always the ad-hoc `--support MatMul,Add,Conv`.
Phases timed separately (best of --repeat runs): predict (load + simulate +
summarize), plan (DOT text), dot (graphviz -Tsvg + annotation), html (report);
`total` is their sum for the fastest run; `first` is the first (cold) in-process
run; `CLI` is one fresh `python cli.py render -o x.html` process, imports
included, and is what the targets are judged on.  Prints a table and writes
benchmarks/results/bench_render.json.

usage: .venv/bin/python benchmarks/bench_render.py [--repeat N] [--out FILE]
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from common import CLI, timed_process  # noqa: E402  (benchmarks/common.py)

from partsim.api import load_tables, predict  # noqa: E402
from partsim.render import find_dot, plan_render, render_html, render_svg  # noqa: E402
from partsim.render.dot import memcpy_device  # noqa: E402

CORPUS = ROOT.parent / "shared" / "corpus" / "graph_only"
CASES = [("swin_t.ts.onnx", True, 5.0), ("vit_tiny.ts.onnx", False, 15.0)]
SUPPORT = ["MatMul", "Add", "Conv"]


def configs():
    tables = load_tables()
    out = []
    for alias, name in (("nnapi", "NnapiExecutionProvider"), ("cuda", "CUDAExecutionProvider")):
        if name in tables:
            out.append({"label": f"-p {alias}", "providers": [alias], "support": None})
    out.append({"label": "--support " + ",".join(SUPPORT), "providers": None, "support": SUPPORT})
    return out


def run_once(path, collapse, cfg):
    t0 = time.perf_counter()
    summary, a = predict(str(path), cfg["providers"], support=cfg["support"])
    t1 = time.perf_counter()
    plan = plan_render(summary, a.model, collapse=collapse, device=memcpy_device(a))
    t2 = time.perf_counter()
    svg = render_svg(plan.dot, plan.annotations, timeout=300)
    t3 = time.perf_counter()
    html = render_html(summary, plan, svg)
    t4 = time.perf_counter()
    return {"predict": t1 - t0, "plan": t2 - t1, "dot": t3 - t2, "html": t4 - t3, "total": t4 - t0,
            "nodes": len(summary["nodes"]), "partitions": len(summary["partitions"]), "mode": plan.mode,
            "dotBytes": len(plan.dot.encode()), "svgBytes": len(svg.encode()), "htmlBytes": len(html.encode())}


def cli_seconds(path, collapse, cfg):
    """Wall time of one `python cli.py render ... -o x.html` in a fresh process (imports included)."""
    out = ROOT / "benchmarks" / "results" / "tmp"
    out.mkdir(parents=True, exist_ok=True)
    argv = CLI + ["render", str(path), "-o", str(out / "bench_render.html")]
    argv += ["--collapse"] if collapse else ["--expand"]
    argv += ["-p", ",".join(cfg["providers"])] if cfg["providers"] else ["--support", ",".join(cfg["support"])]
    return timed_process(argv)[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "bench_render.json"))
    args = ap.parse_args()
    if not CORPUS.is_dir():
        print(f"skip: {CORPUS} is absent")
        return 0
    if find_dot() is None:
        print("skip: graphviz 'dot' is not installed (make graphviz)")
        return 0
    dot_version = subprocess.run(["dot", "-V"], capture_output=True, text=True).stderr.strip()
    results = []
    for model, collapse, target in CASES:
        path = CORPUS / model
        if not path.exists():
            print(f"skip {model}: absent")
            continue
        for cfg in configs():
            runs = [run_once(path, collapse, cfg) for _ in range(max(1, args.repeat))]
            best = min(runs, key=lambda r: r["total"])
            cli = cli_seconds(path, collapse, cfg)
            row = {"model": model, "providers": cfg["label"], "collapse": collapse, "targetSeconds": target,
                   "withinTarget": cli < target, "repeat": len(runs), "cliSeconds": round(cli, 3),
                   "firstRunTotal": round(runs[0]["total"], 3),
                   **{k: (round(v, 3) if isinstance(v, float) else v) for k, v in best.items()}}
            results.append(row)
            print(f"{model:18s} {cfg['label']:26s} {row['mode']:9s} nodes {row['nodes']:5d} "
                  f"partitions {row['partitions']:4d}  predict {row['predict']:6.2f}s  plan {row['plan']:5.2f}s  "
                  f"dot {row['dot']:6.2f}s  html {row['html']:5.2f}s  best {row['total']:5.2f}s  "
                  f"first {row['firstRunTotal']:5.2f}s  CLI {row['cliSeconds']:5.2f}s "
                  f"(target < {target:g} s: {'ok' if row['withinTarget'] else 'MISSED'})")
    report = {"benchmark": "render", "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                                                  "platform": platform.platform(), "graphviz": dot_version},
              "results": results}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
    print(f"wrote {out}")
    return 0 if all(r["withinTarget"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
