"""partsim: predict how ONNX Runtime splits a model across execution providers.

>>> from partsim import predict
>>> summary, assignment = predict("model.onnx", ["nnapi"])   # doctest: +SKIP
"""

__version__ = "0.1.0"

from .api import predict, load_tables
from .errors import PartsimError, ModelError, RuleTableError, UsageError
from .io.load import load_model

__all__ = ["predict", "load_tables", "load_model", "PartsimError", "ModelError", "RuleTableError",
           "UsageError", "__version__"]
