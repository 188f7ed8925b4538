"""Numerics: bundle identity, CPU-vs-delegate receipts, per-layer quantization error, determinism.

One module per job: :mod:`.bundle` (modelBundleId), :mod:`.inputs` (seeded inputs, inputDigest),
:mod:`.expected` (authoritative outputs), :mod:`.describe` (what a receipt says of a tensor),
:mod:`.compare` (receipt check), :mod:`.layer_error` and :mod:`.plot` (its SVG), :mod:`.determinism`,
:mod:`.run_compare`, :mod:`.receipt` and :mod:`.receipt_schema` (execution receipts), :mod:`.cells` (how a
lifecycle cell is judged), :mod:`.gate` (the release gate).  ORT runs in a child process
(:mod:`partsim.runtime.sessions`); numpy and onnxruntime are imported only when a function needs them.
"""

__all__ = ["bundle", "inputs", "expected", "describe", "compare", "layer_error", "plot", "determinism",
           "run_compare", "receipt", "receipt_schema", "cells", "gate"]
