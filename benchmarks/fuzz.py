"""Fuzz partsim's file parsers and input surfaces: >= 10,000 executions per target, outcome counts printed.

    python benchmarks/fuzz.py [--n 10000] [--target model_bytes ...] [--surfaces] [--seed 0] [--report FILE]

The targets and input strategies are those of ``tests/io/test_fuzz.py`` (which runs a
few dozen of each in ``make test``).  ``--surfaces`` picks the structured-file surfaces
(``surface_*``: lock, baseline, calibrate, observation, config, require, rules — see
``tests/fuzz_surfaces.py``), each example a hostile file given to the real CLI in-process.
A clean outcome is a result or a one-line PartsimError (exit 0, 1 or 2); anything else (a
traceback, a hang over 20 s, an input file changed, exit 2 without exactly one stderr line)
is reported with its input saved under ``out/fuzz/`` and the exit code is 1.  The process
lowers its own priority (``--nice``, default 10): the campaign is meant to run beside other work.
``--report FILE`` appends a Markdown table of the counts.
"""

import argparse
import json
import os
import signal
import sys
import time
import traceback
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]


_STOP = {"asked": False}


def _stop(_signum, _frame):
    """SIGTERM: finish the example under way, then stop the campaign and report what ran."""
    _STOP["asked"] = True


def _write_status(path, name, counts, secs):
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump({"target": name, "executions": sum(counts.values()), "seconds": round(secs, 1),
                   "counts": dict(sorted(counts.items()))}, f, indent=1)
    os.replace(tmp, path)


def run_target(name, n, seed, status=None):
    """Run ``n`` examples of target ``name``; ``(counts, crashes, seconds)``.  ``status``: a JSON file
    rewritten every 25 examples with the counts so far (a campaign stopped early still has its numbers)."""
    from hypothesis import HealthCheck, Phase, given, seed as hseed, settings

    from test_fuzz import TARGETS

    strategy, fn = TARGETS[name]
    counts = Counter()
    crashes = []
    started = time.perf_counter()

    @hseed(seed)
    @settings(max_examples=n, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def drive(data):
        if _STOP["asked"]:
            raise KeyboardInterrupt
        if status and sum(counts.values()) % 25 == 0:
            _write_status(status, name, counts, time.perf_counter() - started)
        try:
            counts[fn(data)] += 1
        except Exception as exc:  # the finding: record it and keep going
            what = str(exc).split(":")[0] if type(exc).__name__ == "Finding" else type(exc).__name__
            counts[f"CRASH:{what}"] += 1
            if len(crashes) < 20:
                crashes.append((data, traceback.format_exc()))

    t0 = time.perf_counter()
    try:
        drive()
    except KeyboardInterrupt:
        print(f"{name}: stopped after {sum(counts.values())} executions", flush=True)
    if status:
        _write_status(status, name, counts, time.perf_counter() - t0)
    return counts, crashes, time.perf_counter() - t0


def _append_report(path, rows, seed, first):
    """Markdown rows: target, executions, exit 0/1/2 (a surface with two commands counts each run's
    worst exit), tracebacks, hangs, other findings, seconds."""
    with open(path, "a", encoding="utf-8") as f:
        if first:
            f.write(f"\n| target (seed {seed}) | executions | exit 0 | exit 1 | exit 2 | tracebacks | hangs | "
                    "other findings | seconds |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
        for name, total, counts, secs in rows:
            exits = Counter()
            for outcome, c in counts.items():
                if not outcome.startswith("CRASH:"):
                    codes = [int(x[-1]) for x in outcome.split("+") if x.startswith("exit")] or [0]
                    exits[max(codes)] += c
            tb = sum(c for o, c in counts.items() if o.startswith("CRASH:") and "hang" not in o
                     and ("traceback" in o or o.split(":")[1][:1].isupper()))
            hangs = sum(c for o, c in counts.items() if o == "CRASH:hang")
            other = sum(c for o, c in counts.items() if o.startswith("CRASH:")) - tb - hangs
            f.write(f"| {name} | {total} | {exits[0]} | {exits[1]} | {exits[2]} | {tb} | {hangs} | {other} | "
                    f"{secs:.0f} |\n")


def main(argv=None):
    from test_fuzz import TARGETS

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=10000, help="executions per target (default 10000)")
    ap.add_argument("--target", action="append", choices=sorted(TARGETS), help="default: all")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--surfaces", action="store_true", help="every surface_* target")
    ap.add_argument("--nice", type=int, default=10, help="added to the process's niceness (default 10)")
    ap.add_argument("--report", metavar="FILE", help="append a Markdown table of the outcome counts here")
    ap.add_argument("--status", metavar="FILE", help="JSON counts so far, rewritten as the campaign runs")
    args = ap.parse_args(argv)
    os.nice(args.nice)
    signal.signal(signal.SIGTERM, _stop)
    import warnings

    warnings.filterwarnings("ignore")  # hypothesis warns about large example reprs
    failed = False
    names = args.target or ([t for t in sorted(TARGETS) if t.startswith("surface_")] if args.surfaces
                            else sorted(TARGETS))
    rows = []
    for name in names:
        counts, crashes, secs = run_target(name, args.n, args.seed, args.status)
        total = sum(counts.values())
        rows.append((name, total, counts, secs))
        if args.report:
            _append_report(args.report, rows[-1:], args.seed, first=len(rows) == 1)
        print(f"{name}: {total} executions in {secs:.1f} s ({total / secs:.0f}/s)", flush=True)
        for outcome, c in sorted(counts.items()):
            print(f"  {outcome:40s} {c}")
        if crashes:
            failed = True
            out = ROOT / "out" / "fuzz"
            out.mkdir(parents=True, exist_ok=True)
            for k, (data, tb) in enumerate(crashes):
                ext = "bin" if name.startswith("surface_") else ("onnx" if isinstance(data, bytes) else "yaml")
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
