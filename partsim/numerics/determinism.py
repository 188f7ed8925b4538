"""Determinism grid (docs/contract.md §6, §6a): one model, one seeded input, many session settings.

Cells are ``providers × graph_optimization_level × intra_op_num_threads`` in that
nesting order; the first cell is the reference.  Per cell: ``maxAbs`` = max over
all outputs and elements of ``|x − ref|``, ``maxRel`` = max of ``|x − ref| / |ref|``
over elements with ``ref != 0`` (elements where ``ref == 0`` count in maxAbs only),
``bitwiseEqual`` = every output has the same dtype, shape and bytes.  Every
provider list runs in its own child process (:mod:`partsim.runtime.sessions`).
A cell whose session failed has ``state`` other than ``ok`` and null numbers.
"""

from ..runtime.observation import normalize_level

__all__ = ["determinism_grid", "diff_outputs"]


def diff_outputs(ref, out):
    """(maxAbs, maxRel, bitwiseEqual) of ``out`` against ``ref`` (dicts name -> array).

    Examples
    --------
    >>> import numpy as np
    >>> diff_outputs({"y": np.array([1.0, 0.0])}, {"y": np.array([1.5, 0.25])})
    (0.5, 0.5, False)
    """
    import numpy as np

    max_abs = max_rel = 0.0
    bitwise = list(ref) == list(out)
    for name in ref:
        a, b = np.asarray(ref[name]), np.asarray(out.get(name))
        if b is None or a.shape != b.shape:
            return None, None, False
        bitwise = bitwise and a.dtype == b.dtype and a.tobytes() == b.tobytes()
        if a.dtype.kind in "fciub" and a.size:
            a64, b64 = a.astype(np.float64), b.astype(np.float64)
            d = np.abs(b64 - a64)
            if not np.all(np.isfinite(d)):
                same = (a64 == b64) | (np.isnan(a64) & np.isnan(b64))
                if not np.all(same):
                    return None, None, False
                d = np.where(same, 0.0, d)
            max_abs = max(max_abs, float(d.max()))
            nz = a64 != 0
            if np.any(nz):
                max_rel = max(max_rel, float((d[nz] / np.abs(a64[nz])).max()))
    return max_abs, max_rel, bool(bitwise)


def determinism_grid(model, seed=0, providers_list=(("CPUExecutionProvider",),), threads=(1, 2, 4),
                     levels=("disable", "basic", "extended", "all"), inputs=None, python=None, timeout=300.0,
                     dims=None):
    """Run the grid; returns ``{seed, model, inputDigest, cells: […]}`` (docs/contract.md §6a)."""
    from .inputs import input_digest
    from .inputs import prepare_feeds
    from ..runtime.sessions import fallback_reason, run_configs

    levels = [normalize_level(v) for v in levels]
    feeds = prepare_feeds(model, seed, inputs, dims)
    cells, ref = [], None
    runtime = None
    for providers in providers_list:
        configs = [{"tag": f"c{len(cells) + k}", "providers": list(providers), "level": lv, "threads": t}
                   for k, (lv, t) in enumerate((lv, t) for lv in levels for t in threads)]
        rec, arrays = run_configs(model, configs, feeds, python=python, timeout=timeout, seed=seed)
        runtime = runtime or rec.get("runtime")
        runs = {r["tag"]: r for r in rec.get("runs", [])}
        for c in configs:
            r = runs.get(c["tag"], {})
            out = arrays.get(c["tag"])
            cell = {"optLevel": c["level"], "threads": c["threads"], "providers": list(providers),
                    "granted": r.get("granted"), "state": "ok" if out is not None else (
                        rec["state"] if rec["state"] != "ok" else "failed"),
                    "maxAbs": None, "maxRel": None, "bitwiseEqual": None}
            if out is None:
                cell["failure"] = fallback_reason(r, rec["state"])
                if r.get("error") or rec.get("error"):
                    cell["error"] = r.get("error") or rec.get("error")
            if out is not None:
                if ref is None:
                    ref = out
                cell["maxAbs"], cell["maxRel"], cell["bitwiseEqual"] = diff_outputs(ref, out)
            cells.append(cell)
    return {"seed": seed, "model": str(model), "inputs": "file" if inputs is not None else "seeded",
            "inputDigest": input_digest(feeds), "runtime": runtime, "cells": cells,
            "allBitwiseEqual": all(c["bitwiseEqual"] for c in cells)}
