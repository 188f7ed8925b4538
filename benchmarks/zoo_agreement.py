"""partsim against real sessions on a folder of models of your own (a model zoo), node for node.

    PYTHONPATH=. .venv/bin/python benchmarks/zoo_agreement.py DIR [DIR ...] -p qnn [--level disable]
    PYTHONPATH=. .venv/bin/python benchmarks/zoo_agreement.py DIR -p openvino --python .venv-openvino/bin/python

For each ``*.onnx`` under the folders: ``partsim verify --observe`` (a real session in a child
process, weights materialized when absent), then one line per model: nodes agreeing / compared in
the partitioning view (the names ORT's assignment info reports), the absent ones (observed, not in
partsim's ``nodes``), the final view where the session was profiled (``final a/c``: the kernels ORT
ran after Level 2/3 against ``finalNodes``), whether the counts (layout Transposes, Memcpy) agree,
and the first disagreeing op types; a total line per view at the end.  ``benchmarks/export_zoo.py`` writes such a folder from torchvision and Hugging
Face models (it needs torch, which partsim does not).  Measured against real sessions, never
against partsim itself.
"""

import argparse
import collections
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


class _Pair(collections.namedtuple("_Pair", "predicted observed")):
    """A predicted/observed pair of counts that adds up element-wise."""

    def __add__(self, other):
        return _Pair(self.predicted + other[0], self.observed + other[1])


def observe(model, provider, level, python, timeout, cache):
    """The observation file of one model in ``cache`` (made by ``partsim observe`` when absent), or
    ``None`` and the reason when the session could not be observed (a timeout is no fact)."""
    obs = Path(cache) / f"{model.parent.name}.{model.stem}.{provider.replace(':', '_')}.{level}.json"
    if obs.exists():
        return obs, ""
    argv = [sys.executable, str(ROOT / "cli.py"), "observe", str(model), "-p", provider, "--level", level,
            "--timeout", str(timeout), "-o", str(obs)]
    if python:
        argv += ["--python", str(python)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout + 60, cwd=ROOT)
    if not obs.exists():
        return None, (proc.stderr.strip().splitlines() or ["no observation"])[-1][:160]
    return obs, ""


def verify(model, provider, level, python=None, timeout=900, cache=None):
    """The verify report of one model (``None`` and the reason when verify could not run); with
    ``cache`` (a folder) against the observation kept there, observed once."""
    source = ["--observe"]
    if cache:
        obs, why = observe(model, provider, level, python, timeout, cache)
        if obs is None:
            return None, why
        source = ["--observation", str(obs)]
    with tempfile.TemporaryDirectory(prefix="partsim-zoo-") as tmp:
        out = Path(tmp) / "verify.json"
        argv = [sys.executable, str(ROOT / "cli.py"), "verify", str(model), "-p", provider, *source,
                "--level", level, "-f", "json", "-o", str(out)]
        if python:
            argv += ["--python", str(python)]
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout + 60, cwd=ROOT)
        if not out.exists():
            return None, (proc.stderr.strip().splitlines() or ["no report"])[-1][:160]
        return json.loads(out.read_text())["verify"], ""


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folders", nargs="+")
    ap.add_argument("-p", "--provider", required=True)
    ap.add_argument("--level", default="all", choices=["disable", "basic", "extended", "all"])
    ap.add_argument("--python", help="the interpreter whose onnxruntime has the provider (OpenVINO)")
    ap.add_argument("--timeout", type=int, default=900, help="seconds a real session may take (default 900)")
    ap.add_argument("--observations", metavar="DIR",
                    help="keep each real session's observation in DIR and reuse it on the next run")
    args = ap.parse_args(argv)
    models = sorted(p for d in map(Path, args.folders) for p in ([d] if d.is_file() else d.rglob("*.onnx")))
    agree = total = exact = refusals = absent = final_agree = final_total = final_extra = refused_wrong = 0
    tally = collections.defaultdict(lambda: _Pair(0, 0))  # predicted/observed sums per count
    for m in models:
        rep, why = verify(m, args.provider, args.level, args.python, args.timeout, args.observations)
        if rep is None:
            print(f"{m.name:45s} not checked: {why}")
            continue
        if rep["observation"].get("state") == "create_failed":
            refusals += 1
            refused_wrong += not rep["passed"]
            print(f"{m.name:45s} real session refused; predicted {'refused' if rep['passed'] else 'ok'}")
            exact += rep["passed"]
            continue
        agree += rep["agreeing"]
        total += rep["compared"]
        exact += rep["passed"]
        absent += len(rep.get("unpredicted", ()))
        final = rep.get("final")
        if final:
            final_agree += final["agreeing"]
            final_total += final["compared"]
            final_extra += len(final["unobserved"])
        for k, v in rep["counts"].items():
            if k.startswith(("layoutTransposes", "memcpy")) and v["observed"] is not None:
                tally[k] += (v["predicted"], v["observed"])
        counts = {k: v for k, v in rep["counts"].items()
                  if k.startswith(("layoutTransposes", "memcpy")) and v["observed"] is not None
                  and v["predicted"] != v["observed"]}
        ops = collections.Counter(d["opType"] for d in rep["disagreements"])
        print(f"{m.name:45s} {rep['agreeing']:5d}/{rep['compared']:<5d} {'exact' if rep['passed'] else 'DIFFERS'}"
              + (f"  absent {len(rep['unpredicted'])}" if rep.get("unpredicted") else "")
              + (f"  final {final['agreeing']}/{final['compared']}" if final else "")
              + (f" (+{len(final['unobserved'])} not run)" if final and final["unobserved"] else "")
              + (f"  status {rep['status']}" if rep.get("status", {}).get("observed") not in
                 (None, rep.get("status", {}).get("predicted")) else "")
              + (f"  counts {counts}" if counts else "") + (f"  ops {dict(ops.most_common(4))}" if ops else ""))
    share = f"{agree / total:.2%}" if total else "-"
    print(f"total: {agree}/{total} nodes ({share}), {absent} absent, {exact} of {len(models)} models exact "
          f"({refusals} real sessions refused, {refused_wrong} of them predicted ok), "
          f"-p {args.provider} --level {args.level}")
    if tally:
        print("counts predicted/observed: " + ", ".join(f"{k} {v.predicted}/{v.observed}"
                                                       for k, v in sorted(tally.items())))
    if final_total:
        print(f"final view: {final_agree}/{final_total} kernels ({final_agree / final_total:.2%}); "
              f"{final_extra} predicted final nodes the session did not run")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
