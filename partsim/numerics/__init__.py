"""Numerics: bundle identity, CPU-vs-delegate receipts, per-layer quantization error, determinism.

One module per job: :mod:`.bundle` (modelBundleId), :mod:`.inputs` (seeded
inputs, inputDigest), :mod:`.compare` (receipt check), :mod:`.layer_error`,
:mod:`.determinism`, :mod:`.run_compare`; :mod:`.sessions` runs ORT in a child
process (:mod:`.ort_outputs_child`), :mod:`.plot` draws the layer-error SVG.
numpy and onnxruntime are imported only when a function needs them.
"""

__all__ = ["bundle", "inputs", "compare", "layer_error", "determinism", "run_compare", "sessions", "plot"]
