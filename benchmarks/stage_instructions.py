"""Instructions per stage of one warm ``predict`` (issue 32), counted by valgrind's callgrind.

``bench_predict.py --only predict`` under cachegrind gives the instructions of a whole warm call; this
splits them by stage: the script re-runs itself under ``valgrind --tool=callgrind --collect-atstart=yes``,
wraps the stage functions below, and at every stage entry and exit asks callgrind to write its counts
(``CALLGRIND_DUMP_STATS_AT``, through a three-line C helper built with ``cc`` from valgrind's header
``valgrind/callgrind.h``); each dump holds the instructions since the previous one and is charged to the
innermost stage open.  Two warm-up predictions first, then one counted.  Needs valgrind, its headers and
a C compiler (``apt-get install valgrind gcc``)::

    python benchmarks/stage_instructions.py [--model PATH] [--providers nnapi,coreml] [--level disable]
"""

import argparse
import collections
import ctypes
import functools
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
HELPER = '#include <valgrind/callgrind.h>\nvoid dump(const char *label) { CALLGRIND_DUMP_STATS_AT(label); }\n'
# (module, attribute, label): the stages of api.predict at level disable, outermost first
STAGES = [("partsim.api", "load_tables", "load_tables"), ("partsim.io.read", "read_model_proto", "read proto"),
          ("partsim.runtime.pipeline", "_Written.read_nodes", "read_nodes"),
          ("partsim.runtime.pipeline", "function_claims", "function_claims"),
          ("partsim.io.load", "_check_declared_dims", "check declared dims"),
          ("onnx.shape_inference", "infer_shapes", "onnx infer_shapes"),
          ("partsim.io.shape_inference", "_onnx_inference", "onnx infer_shapes"),
          ("partsim.io.shape_inference", "propagate_shape_values", "shape values"),
          ("partsim.io.build", "_Builder.build", "IR build"),
          ("partsim.runtime.pipeline", "_origins", "origins"), ("partsim.runtime.pipeline", "_facts", "facts"),
          ("partsim.api", "simulate", "simulate"), ("partsim.api", "summarize", "summarize"),
          ("partsim.api", "_report_stage", "report")]


def _wrap(lib, stack, live):
    import importlib

    for module, attr, label in STAGES:
        owner = importlib.import_module(module)
        *path, name = attr.split(".")
        for p in path:
            owner = getattr(owner, p)
        f = getattr(owner, name)

        def staged(*a, _f=f, _label=label, **k):
            if live[0]:
                lib.dump(f"S:{stack[-1]}".encode())
            stack.append(_label)
            try:
                return _f(*a, **k)
            finally:
                if live[0]:
                    lib.dump(f"S:{stack[-1]}".encode())
                stack.pop()

        setattr(owner, name, functools.wraps(f)(staged))


def _child(args):
    """Under callgrind: the predictions, with a dump at every stage boundary."""
    lib = ctypes.CDLL(args.helper)
    stack, live = ["other"], [False]
    _wrap(lib, stack, live)
    from partsim.api import predict

    for _ in range(2):
        predict(args.model, args.providers.split(","), level=args.level)
    live[0] = True
    lib.dump(b"S:start")
    predict(args.model, args.providers.split(","), level=args.level)
    lib.dump(b"S:other")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=str(ROOT.parent / "shared" / "corpus" / "graph_only" / "swin_t.ts.onnx"))
    ap.add_argument("--providers", default="nnapi,coreml")
    ap.add_argument("--level", default="disable")
    ap.add_argument("--helper", help=argparse.SUPPRESS)  # set in the child
    args = ap.parse_args()
    if args.helper:
        return _child(args)
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "helper.c").write_text(HELPER)
        subprocess.run(["cc", "-O1", "-shared", "-fPIC", "-o", f"{tmp}/helper.so", f"{tmp}/helper.c"], check=True)
        env = dict(os.environ, PARTSIM_NO_CACHE="1")
        subprocess.run(["valgrind", "--tool=callgrind", "--dump-instr=no", f"--callgrind-out-file={tmp}/cg.out",
                        sys.executable, __file__, "--model", args.model, "--providers", args.providers,
                        "--level", args.level, "--helper", f"{tmp}/helper.so"], check=True, env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=3600)
        counts = collections.Counter()
        for f in Path(tmp).glob("cg.out*"):
            text = f.read_text(errors="replace")
            label = re.search(r"^desc: Trigger: Client Request: S:(.*)$", text, re.M)
            total = re.search(r"^(?:summary|totals): (\d+)", text, re.M)
            if label and total and label.group(1) != "start":
                counts[label.group(1)] += int(total.group(1))
    whole = sum(counts.values())
    print(f"{Path(args.model).name}, -p {args.providers}, level {args.level}: instructions of one warm predict")
    for label, n in counts.most_common():
        print(f"  {label:<22} {n / 1e6:8.1f} M  {100 * n / whole:5.1f} %")
    print(f"  {'total':<22} {whole / 1e6:8.1f} M")


if __name__ == "__main__":
    main()
