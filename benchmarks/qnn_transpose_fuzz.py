"""The layout transformation's transpose optimizer on random graphs, against real QNN sessions.

    PYTHONPATH=. .venv/bin/python benchmarks/qnn_transpose_fuzz.py [--seeds 0:200] [--level disable|all]

Each seed builds a small float graph on ``x`` (2x3x4x5) of Transposes (random perms), Relu/Sigmoid,
Mul by a scalar, Add of a constant or of an earlier value, Reshapes that insert a size-1 dim, split a
dim into two (a channel shuffle's view) or merge two neighbours,
Shape -> Cast, ReduceSum with an axes input and Softmax; graphs ORT will not load are skipped.  It
prints the seeds where partsim's nodes after the layout transformation (names of converted, kept,
removed and inserted nodes, and their providers) differ from a real QNN session (onnxruntime-qnn,
soc_model 60, ORT_DISABLE_ALL or the ``--level`` given).  Measured against real sessions, never against partsim itself.
"""

import argparse
import random
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
from onnx import TensorProto as T  # noqa: E402
from onnx import helper as h  # noqa: E402

from partsim.api import predict  # noqa: E402
from partsim.runtime.observe import observation_from_run, run_session  # noqa: E402


def random_graph(seed):
    r = random.Random(seed)
    nodes, inits, outs = [], [], []
    shapes = {"x": (2, 3, 4, 5)}
    live = ["x"]

    def new(op, ins, attrs=None, shape=None, extra=()):
        o = f"v{len(nodes) + 1}"
        nodes.append(h.make_node(op, ins, [o], name=f"{op.lower()}{len(nodes) + 1}", **(attrs or {})))
        inits.extend(extra)
        shapes[o] = shape
        live.append(o)
        return o

    for _ in range(r.randint(3, 7)):
        src = r.choice(live[-3:])
        s = shapes[src]
        rank = len(s)
        c = f"c{len(nodes) + 1}"
        kind = r.choice(["tr", "tr", "tr", "relu", "add_const", "add_branch", "reshape1", "shape", "reduce",
                         "softmax", "mul", "split", "merge"])
        if kind == "tr":
            p = list(range(rank))
            r.shuffle(p)
            new("Transpose", [src], {"perm": p}, tuple(s[i] for i in p))
        elif kind == "mul":
            new("Mul", [src, c], None, s, [h.make_tensor(c, T.FLOAT, [], [0.5])])
        elif kind == "add_const":
            cs = list(s[-2:])
            new("Add", [src, c], None, s, [h.make_tensor(c, T.FLOAT, cs, [0.1] * int(np.prod(cs)))])
        elif kind == "add_branch":
            other = [v for v in live if shapes[v] == s and v != src]
            if other:
                new("Add", [src, r.choice(other)], None, s)
            else:
                new("Sigmoid", [src], None, s)
        elif kind == "reshape1" and rank < 5:
            pos = r.randint(0, rank)
            ns = list(s[:pos]) + [1] + list(s[pos:])
            new("Reshape", [src, c], None, tuple(ns), [h.make_tensor(c, T.INT64, [len(ns)], ns)])
        elif kind == "split" and rank < 5 and any(d in (4, 6) for d in s):
            pos = r.choice([i for i, d in enumerate(s) if d in (4, 6)])
            ns = list(s[:pos]) + [2, s[pos] // 2] + list(s[pos + 1:])
            new("Reshape", [src, c], None, tuple(ns), [h.make_tensor(c, T.INT64, [len(ns)], ns)])
        elif kind == "merge" and rank > 2:
            pos = r.randrange(rank - 1)
            ns = list(s[:pos]) + [s[pos] * s[pos + 1]] + list(s[pos + 2:])
            new("Reshape", [src, c], None, tuple(ns), [h.make_tensor(c, T.INT64, [len(ns)], ns)])
        elif kind == "shape":
            sh = new("Shape", [src], None, (rank,))
            outs.append(new("Cast", [sh], {"to": 1}, (rank,)))
            live.remove(sh)
            live.remove(outs[-1])
        elif kind == "reduce":
            ax = r.randrange(rank)
            new("ReduceSum", [src, c], {"keepdims": 1}, tuple(1 if i == ax else d for i, d in enumerate(s)),
                [h.make_tensor(c, T.INT64, [1], [ax])])
        elif kind == "softmax":
            new("Softmax", [src], {"axis": r.randrange(rank)}, s)
        else:
            new("Relu", [src], None, s)
    outputs = list(dict.fromkeys([live[-1]] + outs))
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", T.FLOAT, [2, 3, 4, 5])],
                     [h.make_tensor_value_info(o, T.FLOAT, None) for o in outputs], inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def after_layout(summary):
    got = {n.get("ortName", n["name"]): n["provider"] for n in summary["nodes"] if not n.get("ortRemoved")}
    got.update({n["name"]: n["provider"] for n in summary["insertedNodes"] if n["origin"] == "inserted:layout"})
    return got


def main(argv=None):
    import onnx

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", default="0:200")
    ap.add_argument("--level", default="disable", choices=["disable", "basic", "extended", "all"])
    args = ap.parse_args(argv)
    lo, hi = (int(x) for x in args.seeds.split(":"))
    tmp = Path(tempfile.mkdtemp(prefix="partsim-transpose-fuzz-"))
    ran = agree = 0
    for seed in range(lo, hi):
        path = tmp / f"g{seed}.onnx"
        onnx.save(random_graph(seed), path)
        rec = run_session(str(path), ["QNNExecutionProvider"], args.level, run=False, ep_options={"soc_model": "60"})
        if rec.get("state") != "ok":
            continue  # not a valid model for ORT (the generator does not type-check)
        ran += 1
        obs = observation_from_run(rec, args.level)
        summary, _ = predict(str(path), ["qnn"], level=args.level)
        got = after_layout(summary)
        if got == obs["nodes"]:
            agree += 1
            continue
        print(f"seed {seed}: only predicted {sorted(set(got.items()) - set(obs['nodes'].items()))}, "
              f"only real {sorted(set(obs['nodes'].items()) - set(got.items()))}")
    print(f"{agree} of {ran} graphs agree node for node (seeds {lo}:{hi}, level {args.level})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
