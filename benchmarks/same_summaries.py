"""Same summaries before and after a refactor: ``simulate --format json`` over a grid, from two checkouts.

Runs ``partsim simulate MODEL -p P --level L --format json`` (no cache) with the code of ``--tree`` for
7 corpus models (quantized and float, graph-only and with weights) × 5 provider lists × 2 levels, one
JSON file per case in ``--out``; ``--compare A B`` lists the cases whose bytes differ between two such
folders (exit 1 when any does).  Refactors that promise "same behaviour" are checked this way.

    python benchmarks/same_summaries.py --tree /path/to/old/checkout --out /tmp/old
    python benchmarks/same_summaries.py --tree . --out /tmp/new
    python benchmarks/same_summaries.py --compare /tmp/old /tmp/new
"""

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus"
MODELS = ["full/q_tiny_resnet.ts.qdq", "full/q_tiny_transformer.dynamo.qop", "full/tiny_unet.ts",
          "graph_only/efficientnet_b0.ts", "graph_only/bert_tiny.dynamo", "graph_only/gpt2_tiny.ts",
          "graph_only/googlenet.ts"]
PROVIDERS = ["cuda", "qnn", "nnapi,coreml", "openvino", "webgpu"]
LEVELS = ["disable", "all"]


def run(tree, out):
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PARTSIM_NO_CACHE="1", PYTHONPATH=str(tree))
    for m in MODELS:
        for p in PROVIDERS:
            for level in LEVELS:
                case = f"{Path(m).name}-{p}-{level}"
                proc = subprocess.run([sys.executable, "-m", "partsim", "simulate", str(CORPUS / f"{m}.onnx"),
                                       "-p", p, "--level", level, "--format", "json"],
                                      cwd=tree, env=env, capture_output=True, timeout=600)
                (out / f"{case}.json").write_bytes(proc.stdout)
                (out / f"{case}.rc").write_text(f"{proc.returncode}\n")
                print(case, proc.returncode, flush=True)


def compare(a, b):
    differ = [f.name for f in sorted(a.iterdir()) if not (b / f.name).is_file()
              or f.read_bytes() != (b / f.name).read_bytes()]
    for name in differ:
        print("differs:", name)
    print(f"{len(differ)} of {len(list(a.iterdir()))} files differ")
    return 1 if differ else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tree", type=Path, default=ROOT)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--compare", nargs=2, type=Path)
    args = ap.parse_args()
    if args.compare:
        sys.exit(compare(*args.compare))
    if args.out is None:
        ap.error("--out is needed to run the grid")
    run(args.tree.resolve(), args.out)


if __name__ == "__main__":
    main()
