"""Generators that turn machine-readable sources into partsim data files.

They are the only part of partsim that reads onnxruntime's own registries; their
output is committed, so simulation never imports onnxruntime.
"""
