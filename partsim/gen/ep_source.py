"""The ORT sources the EP tables are read from, and the small builders of rule conditions they share.
"""

ORT_COMMIT = "735e69a396afe7e1bdfbc6b38c1d43eeb68b8484"
ORT_VERSION = "onnxruntime main @735e69a (2026-02-13, VERSION_NUMBER 1.25.0)"
# the releases these tables describe (source.describes; partsim.versions compares them with the ORT predicted)
ORT_DESCRIBES = {"onnxruntime": "1.25.0"}
_URL = f"https://github.com/microsoft/onnxruntime/blob/{ORT_COMMIT}/"


def _const(*k):
    return {"const_inputs": list(k)}


def _rank(lo=None, hi=None, inputs=(0,)):
    d = {"rank_inputs": list(inputs)}
    if lo is not None:
        d["min_rank"] = lo
    if hi is not None:
        d["max_rank"] = hi
    return d


def _attr(name, **kw):
    return {"name": name, **kw}


