"""Fuzz partsim's file parsers: >= 10,000 executions per target, outcome counts printed.

    python benchmarks/fuzz.py [--n 10000] [--target model_bytes ...] [--seed 0]

The targets and input strategies are those of ``tests/test_fuzz.py`` (which runs a
few dozen of each in ``make test``).  A clean outcome is a result or a one-line
PartsimError; anything else is reported with its input saved under ``out/fuzz/``
and the exit code is 1.
"""

import argparse
import sys
import time
import traceback
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]


def run_target(name, n, seed):
    from hypothesis import HealthCheck, Phase, given, seed as hseed, settings

    from test_fuzz import TARGETS

    strategy, fn = TARGETS[name]
    counts = Counter()
    crashes = []

    @hseed(seed)
    @settings(max_examples=n, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def drive(data):
        try:
            counts[fn(data)] += 1
        except Exception as exc:  # the finding: record it and keep going
            counts[f"CRASH:{type(exc).__name__}"] += 1
            if len(crashes) < 20:
                crashes.append((data, traceback.format_exc()))

    t0 = time.perf_counter()
    drive()
    return counts, crashes, time.perf_counter() - t0


def main(argv=None):
    from test_fuzz import TARGETS

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=10000, help="executions per target (default 10000)")
    ap.add_argument("--target", action="append", choices=sorted(TARGETS), help="default: all")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    failed = False
    for name in args.target or sorted(TARGETS):
        counts, crashes, secs = run_target(name, args.n, args.seed)
        total = sum(counts.values())
        print(f"{name}: {total} executions in {secs:.1f} s ({total / secs:.0f}/s)")
        for outcome, c in sorted(counts.items()):
            print(f"  {outcome:40s} {c}")
        if crashes:
            failed = True
            out = ROOT / "out" / "fuzz"
            out.mkdir(parents=True, exist_ok=True)
            for k, (data, tb) in enumerate(crashes):
                ext = "onnx" if isinstance(data, bytes) else "yaml"
                p = out / f"{name}-{k}.{ext}"
                p.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass"))
                print(f"  crash input saved: {p}\n" + "".join("    " + ln for ln in tb.splitlines(True)[-6:]))
    import shutil

    import test_fuzz

    if test_fuzz._TMP is not None:
        shutil.rmtree(test_fuzz._TMP, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
