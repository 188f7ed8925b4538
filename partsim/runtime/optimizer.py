"""ORT's own graph optimizer, run on a CPU-only session (in a child process) to get the graph ORT partitions.
"""

from pathlib import Path

from ..errors import ModelError
from .child import run_child

__all__ = ["optimize_for_checker", "optimize_model"]

CHILD = Path(__file__).with_name("optimize_child.py")


def optimize_model(model_path, out_dir, level="ORT_ENABLE_BASIC", seed=0, timeout=600):
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
    r = run_child(CHILD, {"model": str(copy.resolve()), "target": str(target.resolve()), "level": level,
                          "external": "external_data.pb"}, timeout=timeout)
    if r.state != "ok":
        raise ModelError(f"ONNX Runtime's optimizer did not finish ({r.state}): {r.error}", model_path)
    if r.record.get("state") != "ok":
        raise ModelError(f"ONNX Runtime cannot optimize the model ({level}): {r.record.get('error', '')}",
                         model_path)
    if not target.is_file():
        raise ModelError("ONNX Runtime wrote no optimized model", model_path)
    return target


def optimize_for_checker(model_path, out_dir, seed=0):
    """ORT_ENABLE_BASIC on a materialized copy, as ORT's mobile usability checker does."""
    return optimize_model(model_path, out_dir, "ORT_ENABLE_BASIC", seed)
