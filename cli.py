#!/usr/bin/env python3
"""Run partsim from a checkout: ``python cli.py simulate model.onnx``."""

from partsim.cli import run

if __name__ == "__main__":
    run()
