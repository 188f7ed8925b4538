"""What the benchmark scripts share: timing one child process (imports included)."""

import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, str(ROOT / "cli.py")]


def timed_process(argv, env=None):
    """Run ``argv`` from the repository root; return (wall seconds, stdout). A failure stops the benchmark."""
    t0 = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, env=env)
    dt = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(map(str, argv))}\n{proc.stderr.strip()[-2000:]}")
    return dt, proc.stdout


def observations_parser(doc):
    """The options of the scripts that score tables on recorded observations: files, ``-p``, ``-r``."""
    import argparse

    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("observations", nargs="+")
    ap.add_argument("-p", "--provider", required=True)
    ap.add_argument("-r", "--rules", action="append", default=[])
    return ap
