"""The simulation: pure functions from (model, rule tables, providers, policy) to a summary.

Nothing here reads files, prints, or imports onnxruntime.
"""

from .assign import simulate, Assignment
from .summary import summarize

__all__ = ["simulate", "summarize", "Assignment"]
