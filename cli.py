#!/usr/bin/env python3
"""Run partsim from a checkout: ``python cli.py simulate model.onnx``."""

import sys

from partsim.cli import main

if __name__ == "__main__":
    sys.exit(main())
