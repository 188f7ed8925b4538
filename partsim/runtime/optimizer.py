"""ORT's own graph optimizer, run on a CPU-only session to get the graph ORT partitions at a level.
"""

from pathlib import Path

from ..errors import ModelError

__all__ = ["optimize_for_checker"]


def optimize_for_checker(model_path, out_dir, seed=0):
    """Materialize weights and run ORT_ENABLE_BASIC on the copy, as the checker does.

    Returns the path of the optimized model (``out_dir/optimized/<name>``, its
    initializers in ``external_data.pb`` beside it).  ``model_path`` is never
    written.
    """
    import onnxruntime as ort

    from ..io.materialize import materialize_weights

    out_dir = Path(out_dir)
    copy = materialize_weights(model_path, out_dir / "materialized", seed=seed)
    opt_dir = out_dir / "optimized"
    opt_dir.mkdir(parents=True, exist_ok=True)
    target = opt_dir / Path(model_path).name
    so = ort.SessionOptions()
    so.optimized_model_filepath = str(target.resolve())
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    so.log_severity_level = 3
    so.add_session_config_entry("session.optimized_model_external_initializers_file_name", "external_data.pb")
    try:
        ort.InferenceSession(str(copy.resolve()), so, providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime raises its own exception types (Fail, InvalidGraph, ...)
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelError(f"ONNX Runtime cannot optimize the model (ORT_ENABLE_BASIC): {msg}", model_path) from None
    if not target.is_file():
        raise ModelError("ONNX Runtime wrote no optimized model", model_path)
    return target
