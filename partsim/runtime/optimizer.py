"""ORT's own graph optimizer, run on a CPU-only session (in a child process) to get the graph ORT partitions.
"""

from pathlib import Path

from ..errors import ModelError, SessionError
from .ort_protocol import OptimizeRecord, OptimizeRequest
from .process import ChildFailure, run_request

__all__ = ["optimize_for_checker", "optimize_model", "run_optimizer", "SESSION_TIMEOUT_S"]

SESSION_TIMEOUT_S = 600  # one optimizer session, per try


def run_optimizer(request, timeout=None, child=None, shown_as=None, python=None):
    """ORT's answer to ``request`` (an :class:`OptimizeRequest`): an :class:`OptimizeRecord`,
    ``state`` ``failed`` when ORT refused the session.  A child that times out or dies is
    replaced once by a fresh one; after that, :class:`partsim.errors.SessionError` (exit 2)
    naming the cause, since a session that never finished says nothing about the model.
    ``child``: an :class:`partsim.runtime.process.OrtProcess` started early for it; ``shown_as``:
    the file the error names (the user's, not the copy ORT opened); ``python``: another interpreter
    (another ORT) for the fresh child."""
    try:
        return run_request("optimize", request, OptimizeRecord, timeout or SESSION_TIMEOUT_S, python,
                           child=child)
    except ChildFailure as exc:
        if exc.cause == "protocol":
            raise SessionError(f"ONNX Runtime's optimizer session: {exc.message}", shown_as or request.model) from None
        what = "timed out" if exc.cause == "timeout" else "crashed"
        raise SessionError(f"ONNX Runtime's optimizer session {what}, in a fresh process too ({exc.message}); "
                           "that says nothing about the model, so partsim predicts nothing from it",
                           shown_as or request.model) from None


def optimize_model(model_path, out_dir, level="ORT_ENABLE_BASIC", seed=0, timeout=None):
    """Materialize weights and run ORT's optimizer at ``level`` on the copy, in a child process.

    Returns the path of the optimized model (``out_dir/optimized/<name>``, its
    initializers in ``external_data.pb`` beside it).  ``model_path`` is never
    written.  :class:`ModelError` when ORT refuses the model or the child dies.
    """
    from ..io.materialize import materialize_weights

    out_dir = Path(out_dir)
    copy = materialize_weights(model_path, out_dir / "materialized", seed=seed)
    opt_dir = out_dir / "optimized"
    opt_dir.mkdir(parents=True, exist_ok=True)
    target = opt_dir / Path(model_path).name
    record = run_optimizer(OptimizeRequest(str(copy.resolve()), str(target.resolve()), level, "external_data.pb"),
                           timeout, shown_as=model_path)
    if record.state != "ok":
        raise ModelError(f"ONNX Runtime cannot optimize the model ({level}): {record.error}", model_path)
    if not target.is_file():
        raise ModelError("ONNX Runtime wrote no optimized model", model_path)
    return target


def optimize_for_checker(model_path, out_dir, seed=0):
    """ORT_ENABLE_BASIC on a materialized copy, as ORT's mobile usability checker does."""
    return optimize_model(model_path, out_dir, "ORT_ENABLE_BASIC", seed)
