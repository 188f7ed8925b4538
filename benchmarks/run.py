#!/usr/bin/env python3
"""Run every benchmark (``benchmarks/bench_*.py``) one after another; each writes benchmarks/results/<name>.json.

``python benchmarks/run.py`` runs them all; ``python benchmarks/run.py scale blame`` only those named.
They need ../shared/corpus (the real models) beside the checkout.
"""

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv):
    scripts = sorted(HERE.glob("bench_*.py"))
    if argv:
        wanted = {a.removeprefix("bench_").removesuffix(".py") for a in argv}
        unknown = wanted - {s.stem.removeprefix("bench_") for s in scripts}
        if unknown:
            raise SystemExit(f"no such benchmark: {', '.join(sorted(unknown))} "
                             f"(have: {', '.join(s.stem.removeprefix('bench_') for s in scripts)})")
        scripts = [s for s in scripts if s.stem.removeprefix("bench_") in wanted]
    failed = []
    for s in scripts:
        print(f"== {s.name}", flush=True)
        if subprocess.run([sys.executable, str(s)], cwd=HERE.parent).returncode != 0:
            failed.append(s.name)
    if failed:
        raise SystemExit(f"failed: {', '.join(failed)}")


if __name__ == "__main__":
    main(sys.argv[1:])
