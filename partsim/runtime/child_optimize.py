"""The child's ``optimize`` sub-command: ORT's graph optimizer on one model, the optimized copy saved.

Runs inside :mod:`partsim.runtime.ort_child` (standard library and onnxruntime only).  A session
ORT refuses is an answer (``state: failed`` with ORT's message), not an error of the child.
"""

import os

if __package__:  # imported as partsim.runtime.child_optimize (the tests)
    from .ort_protocol import OptimizeRecord
else:  # run by ort_child.py, the modules beside it top-level
    from ort_protocol import OptimizeRecord

_SESSIONS = []  # kept, not torn down: the child ends with os._exit once its answer is out


def run(ort, req):
    """Create the CPU-only session ``req`` (:class:`ort_protocol.OptimizeRequest`) asks for; yields
    its :class:`ort_protocol.OptimizeRecord`."""
    if req.sink_weights:
        _sink_weights(os.path.join(os.path.dirname(req.target), req.external))
    so = ort.SessionOptions()
    so.optimized_model_filepath = req.target
    so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, req.level)
    so.log_severity_level = 3
    so.add_session_config_entry("session.optimized_model_external_initializers_file_name", req.external)
    if req.lean:
        so.intra_op_num_threads = 1
        so.inter_op_num_threads = 1
        so.add_session_config_entry("session.disable_prepacking", "1")
        so.enable_cpu_mem_arena = False
        so.enable_mem_pattern = False
    try:
        _SESSIONS.append(ort.InferenceSession(req.model, so, providers=["CPUExecutionProvider"],
                                              disabled_optimizers=list(req.disabled)))
    except Exception as exc:  # onnxruntime raises its own exception types (Fail, InvalidGraph, ...)
        text = str(exc).strip()
        yield OptimizeRecord("failed", text.splitlines()[0] if text else type(exc).__name__, target=req.target)
        return
    yield OptimizeRecord("ok", runtime=f"onnxruntime {ort.__version__}", target=req.target)


def _sink_weights(weights):
    """Point the weights file at the null device: writing ~100 MB of weights took a third of a
    large model's session, and nobody reads their values."""
    try:
        if os.path.lexists(weights):
            os.unlink(weights)  # left by a session started before and abandoned
        os.symlink(os.devnull, weights)
    except (OSError, NotImplementedError, AttributeError):
        pass  # no symlinks here: ORT writes a real file
