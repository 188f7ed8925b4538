"""Child process: run ORT's graph optimizer on one model and write the optimized copy.

Run by :mod:`partsim.runtime.optimizer` as ``python optimize_child.py`` with a JSON
request on stdin (``model``, ``target``, ``level``, ``external``; optional ``disabled``, the
transformers to switch off, and ``lean``, a session that is never run: one thread, no
prepacking, no arena, none of which changes the saved graph); prints one JSON
line: ``{"state": "ok"}`` or ``{"state": "failed", "error": ...}``.  Imports only
onnxruntime, so another interpreter (``--python``) can run it.
"""

import json
import sys


def main():
    import onnxruntime as ort  # first: a caller may start this child before its request is ready

    req = json.load(sys.stdin)

    so = ort.SessionOptions()
    so.optimized_model_filepath = req["target"]
    so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, req["level"])
    so.log_severity_level = 3
    so.add_session_config_entry("session.optimized_model_external_initializers_file_name", req["external"])
    if req.get("lean"):
        so.intra_op_num_threads = 1
        so.inter_op_num_threads = 1
        so.add_session_config_entry("session.disable_prepacking", "1")
        so.enable_cpu_mem_arena = False
        so.enable_mem_pattern = False
    try:
        ort.InferenceSession(req["model"], so, providers=["CPUExecutionProvider"],
                             disabled_optimizers=list(req.get("disabled") or ()))
    except Exception as exc:  # onnxruntime raises its own exception types (Fail, InvalidGraph, ...)
        text = str(exc).strip()
        print(json.dumps({"state": "failed", "error": text.splitlines()[0] if text else type(exc).__name__}))
        return
    print(json.dumps({"state": "ok", "runtime": f"onnxruntime {ort.__version__}"}))


if __name__ == "__main__":
    main()
