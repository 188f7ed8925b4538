"""The simulation: pure functions from (model, rule tables, providers, policy) to a summary.

Nothing here reads files, prints, or imports onnxruntime.
"""

from .assign import simulate, resolve_providers, Assignment
from .summary import summarize

__all__ = ["simulate", "resolve_providers", "summarize", "Assignment"]
