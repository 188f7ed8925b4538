"""Observations read as *cases* (a model file and the node -> provider map one session produced), and how
well a table set predicts them (:func:`agreement`).  The shapes read are listed in :mod:`partsim.analysis.calibrate`.
"""

import re
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ModelError, ObservationError, PartsimError
from ..runtime.observation import import_observation, is_unnamed, observation_from_records
from .verify import repeated_names


MAX_JSONL_BYTES = 256 * 1024 * 1024
_VERSION_IN_NAME = re.compile(r"ort(\d+(?:\.\d+)+)")


@dataclass
class Case:
    """One observed session: ``nodes`` maps node name -> provider ORT gave it.

    ``refused`` holds ORT's error when the session could not be created (then
    ``nodes`` is empty).  ``source`` names the observation file (and the line).
    """

    name: str
    model: Path
    nodes: dict
    source: str
    runtime: str = ""
    device: str = ""
    requested: list = field(default_factory=list)
    refused: str = ""
    op_types: dict = field(default_factory=dict)


def _runtime_from_name(path):
    m = _VERSION_IN_NAME.search(Path(path).name)
    return f"onnxruntime {m.group(1)}" if m else ""


def read_node_records(path):
    """Cases of a ``shared/observed/nodes/*.jsonl`` file, in file order.

    A record whose session was refused (``create_error``) becomes a case with
    ``refused`` set; one that was created but failed to run keeps its placement.
    """
    from ..io.structured import read_jsonl

    p = Path(path)
    runtime = _runtime_from_name(p)
    cases = []
    for n, rec in read_jsonl(p, "calibration-record", MAX_JSONL_BYTES, ObservationError, "the node records"):
        test = rec["case"][len("node__"):] if rec["case"].startswith("node__") else rec["case"]
        model = p.parent / "models" / f"{test}.onnx"
        obs = observation_from_records(rec, runtime=runtime, path=path, strict=False)
        refused = "" if obs["nodes"] or rec.get("assignment") else str(rec.get("create_error") or rec.get("run_error") or "no placement")
        # a node ORT made without a name (function inlining, inserted casts) cannot be told apart
        nodes = {k: v for k, v in obs["nodes"].items() if not is_unnamed(k)}
        cases.append(Case(name=rec["case"], model=model, nodes=nodes, source=f"{p}:{n}",
                          runtime=runtime, device=str(rec.get("device", "")),
                          requested=list(rec.get("requested") or []), refused=refused,
                          op_types=dict(obs.get("opTypes") or {})))
    return cases


def read_cases(paths, model=None, level=None):
    """Cases from observation files of any supported format (see the module doc).

    ``model`` is the model of observations that do not say (a profile, partsim's
    observation JSON of one model); ``observed.json`` records use ``model.onnx``
    beside them.
    """
    cases = []
    for path in paths:
        p = Path(path)
        if p.suffix == ".jsonl":
            cases.extend(read_node_records(p))
            continue
        obs = import_observation(p, level=level)
        m = Path(model) if model else p.parent / "model.onnx"
        if not m.exists():
            raise ObservationError(f"no model for this observation (looked for {m}; give --model)", path)
        named = {k: v for k, v in obs["nodes"].items() if not is_unnamed(k)}
        cases.append(Case(name=p.parent.name if not model else m.stem, model=m, nodes=named,
                          source=str(p), runtime=str(obs.get("runtime") or ""),
                          device=str(obs.get("device") or ""), requested=list(obs.get("requested") or []),
                          op_types=dict(obs.get("opTypes") or {})))
    return cases


def split_cases(cases, part):
    """Half ``part`` (0 or 1) of ``cases``, split by the parity of the sha256 of each case's
    name: deterministic, and independent of file order."""
    import hashlib

    return [c for c in cases if hashlib.sha256(c.name.encode("utf-8")).digest()[0] % 2 == part]


def predict_case(case, providers, tables, models=None):
    """``(summary, assignment)`` for ``case`` with ``tables``, predicted as ``simulate --level disable`` predicts
    (:func:`partsim.api.predict` at level ``disable``: the function nodes no provider claims inlined as ORT
    inlines them, EnsureUniqueDQForNodeUnit, ORT's refusals), or ``(None, error)`` when partsim cannot load the
    model.  ``models`` caches the answers by model path and table set (the set is kept with them)."""
    from ..api import predict

    key = (str(case.model), id(tables), tuple(providers))
    if models is not None and key in models:
        return models[key][1]
    try:
        got = predict(str(case.model), list(providers), level="disable", tables=tables)
    except (ModelError, PartsimError) as exc:
        got = (None, str(exc))
    if models is not None:
        models[key] = (tables, got)
    return got


def agreement(cases, providers, tables, models=None):
    """Node agreement of ``tables`` on ``cases``.

    Returns
    -------
    dict
        ``nodes`` (observed nodes), ``agreeing``, ``cases`` (per case: name, nodes,
        agreeing, misses [(node, op, predicted, observed)], loadError), and
        ``refused`` (sessions ORT refused: name, predicted status).
    """
    total = agree = 0
    per_case, refused = [], []
    for case in cases:
        summary, extra = predict_case(case, providers, tables, models)
        if case.refused:
            refused.append({"case": case.name, "observed": case.refused[:200],
                            "predicted": summary["status"] if summary else f"load error: {extra}"[:200]})
            continue
        misses = []
        if summary is None:
            misses = [(name, case.op_types.get(name, ""), "load error", ep) for name, ep in sorted(case.nodes.items())]
        else:
            # ORT's names: a node the NHWC layout transformation recreated is <name>_token_<k> (ortName), and the
            # nodes it inserted (Transposes, the Gathers after Shape ...) are predicted under their ORT names too
            predicted = {n.get("ortName") or n["name"]: n["provider"] for n in summary["nodes"]
                         if not n.get("ortRemoved")}
            predicted.update((n["name"], n["provider"]) for n in summary.get("insertedNodes", ()))
            repeats = repeated_names(case.nodes, predicted)
            for name, ep in sorted(case.nodes.items()):
                got = predicted.get(repeats.get(name, name), "absent")
                if got != ep:
                    misses.append((name, case.op_types.get(name, ""), got, ep))
        n = len(case.nodes)
        total += n
        agree += n - len(misses)
        per_case.append({"case": case.name, "nodes": n, "agreeing": n - len(misses), "misses": misses,
                         "loadError": None if summary is not None else extra})
    return {"nodes": total, "agreeing": agree, "share": agree / total if total else 0.0, "cases": per_case,
            "refused": refused}


