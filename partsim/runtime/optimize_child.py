"""Child process: run ORT's graph optimizer on one model and write the optimized copy.

Run by :mod:`partsim.runtime.optimizer` as ``python optimize_child.py`` with a JSON
request on stdin (``model``, ``target``, ``level``, ``external``; optional ``disabled``, the
transformers to switch off, ``lean``, a session that is never run: one thread, no
prepacking, no arena, none of which changes the saved graph, and ``sink_weights``: the saved
weights go to the null device, as nobody reads their values; the offsets ORT records are the
same, and the caller makes a sparse file of the size they imply); prints one JSON
line: ``{"state": "ok"}`` or ``{"state": "failed", "error": ...}``.  Imports only
onnxruntime, so another interpreter (``--python``) can run it.
"""

import json
import sys

_SESSIONS = []


def main():
    try:  # first: a caller may start this child before its request is ready
        import onnxruntime  # noqa: F401
    except ImportError:
        if not sys.flags.no_site:
            raise
        import site  # started with -S (EarlyChild quick=True) where site-packages need site's .pth files

        site.main()
        import onnxruntime  # noqa: F401

    print(json.dumps(optimize(json.load(sys.stdin))))


def optimize(req):
    """Run the session ``req`` asks for; its record (``{"state": "ok", "runtime": ...}`` or
    ``{"state": "failed", "error": ...}``).  Also what :mod:`partsim.runtime.ort_worker`'s sessions run."""
    import onnxruntime as ort

    if req.get("sink_weights"):
        import os

        weights = os.path.join(os.path.dirname(req["target"]), req["external"])
        try:  # writing ~100 MB of weights took a third of a large model's session
            if os.path.lexists(weights):
                os.unlink(weights)  # left by a session started before and abandoned
            os.symlink(os.devnull, weights)
        except (OSError, NotImplementedError, AttributeError):
            pass  # no symlinks here: ORT writes a real file

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
        # kept, not torn down: the process ends with os._exit once its answer is out
        _SESSIONS.append(ort.InferenceSession(req["model"], so, providers=["CPUExecutionProvider"],
                                              disabled_optimizers=list(req.get("disabled") or ())))
    except Exception as exc:  # onnxruntime raises its own exception types (Fail, InvalidGraph, ...)
        text = str(exc).strip()
        return {"state": "failed", "error": text.splitlines()[0] if text else type(exc).__name__}
    return {"state": "ok", "runtime": f"onnxruntime {ort.__version__}"}


if __name__ == "__main__":
    main()
    # the answer is out; tearing the session and the interpreter down took ~0.03 s the caller waited for
    sys.stdout.flush()
    sys.stderr.flush()
    import os

    os._exit(0)
