"""partsim: predict how ONNX Runtime splits a model across execution providers.

>>> from partsim import predict
>>> summary, assignment = predict("model.onnx", ["nnapi"])   # doctest: +SKIP
"""

__version__ = "0.1.0"

__all__ = ["predict", "load_tables", "load_model", "PartsimError", "ModelError", "RuleTableError",
           "UsageError", "__version__"]

# where each public name lives; imported on first use, so that ``partsim`` on the command line starts
# ORT's optimizer process before it loads the simulation (PEP 562)
_HOME = {"predict": "api", "load_tables": "api", "load_model": "io.load", "PartsimError": "errors",
         "ModelError": "errors", "RuleTableError": "errors", "UsageError": "errors"}


def __getattr__(name):
    if name in _HOME:
        import importlib

        value = getattr(importlib.import_module(f".{_HOME[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + [n for n in _HOME if n not in globals()])
