"""``partsim check``: every configured check over every model, budgets and a lock file.

Each model is loaded once (per optimization level) for all the checks that name it; the
models run in parallel worker processes (``jobs``).  A check's budgets come from the
config (:mod:`partsim.io.config`); a lock file (``partsim.lock.json``) adds, per
(check, model), the gate rules of :func:`partsim.analysis.verify.compare_baseline`
against the counts recorded when it was last updated: no regression.
"""

import os
from pathlib import Path

from ..errors import PartsimError, UsageError
from ..io.structured import validate
from .verify import baseline_record, check_baseline_context, compare_baseline, node_gist

__all__ = ["run_checks", "evaluate_budgets", "read_lock", "lock_document", "LOCK_VERSION"]

LOCK_VERSION = "1"
MAX_LOCK_BYTES = 1 << 30


def _first_share(summary):
    first = summary["effectiveProviders"][0]
    on_first = [n for n in summary["nodes"] if n["provider"] == first]
    total = summary["model"]["nodeCount"]
    return first, on_first, (len(on_first) / total if total else 0.0)


def _describe(nodes):
    return [{"node": n["name"], "opType": n["opType"], "provider": n["provider"], "reason": n["reason"],
             "reasonDetail": n.get("reasonDetail")} for n in nodes]


def reason_counts(nodes):
    """``{reason: nodes}`` over ``nodes`` (``none`` for a node without one), most frequent first."""
    counts = {}
    for n in nodes:
        counts[n["reason"] or "none"] = counts.get(n["reason"] or "none", 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def evaluate_budgets(summary, budgets, expect=None):
    """``[{budget, limit, actual, passed, message, nodes}]`` for the config's budgets, in a fixed order.

    ``max_partitions`` counts the first provider's partitions, ``min_delegated_share`` its
    nodes over all nodes, ``max_memcpy`` Memcpy nodes in both directions; a failure names
    the nodes off the first provider (op and reason) that explain it.  ``expect`` (a model's
    ``{accelerated, reason}``) replaces the ``accelerated`` budget; a model expected on the CPU
    is not held to the accelerator's budgets (partitions, share, forbidden reasons).
    """
    if expect is not None:
        skip = ("accelerated",) + (() if expect["accelerated"] else
                                   ("max_partitions", "min_delegated_share", "forbid_reasons"))
        budgets = {k: v for k, v in budgets.items() if k not in skip}
    first, on_first, share = _first_share(summary)
    off = _describe(n for n in summary["nodes"] if n["provider"] != first)
    per = summary["perProvider"].get(first, {"partitions": 0})
    memcpy = summary["memcpy"]["fromHost"] + summary["memcpy"]["toHost"]
    out = []

    def add(name, limit, actual, ok, message, nodes=()):
        nodes = list(nodes)
        out.append({"budget": name, "limit": limit, "actual": actual, "passed": ok,
                    "message": "" if ok else message, "nodes": [] if ok else nodes[:100],
                    "reasons": {} if ok else reason_counts(nodes)})

    why = f"; off {first}: {node_gist(off)}" if off else ""
    if "max_partitions" in budgets:
        v, lim = per["partitions"], budgets["max_partitions"]
        add("max_partitions", lim, v, v <= lim, f"{first} has {v} partitions, budget {lim}{why}", off)
    if "min_delegated_share" in budgets:
        lim = budgets["min_delegated_share"]
        add("min_delegated_share", lim, round(share, 6), share >= lim,
            f"{len(on_first)}/{summary['model']['nodeCount']} nodes on {first} = {share:.3f}, budget >= {lim}{why}",
            off)
    if "max_transfers" in budgets:
        v, lim = summary["transfers"], budgets["max_transfers"]
        add("max_transfers", lim, v, v <= lim, f"{v} boundary transfers, budget {lim}{why}", off)
    if "max_memcpy" in budgets:
        lim = budgets["max_memcpy"]
        add("max_memcpy", lim, memcpy, memcpy <= lim,
            f"{memcpy} Memcpy nodes ({summary['memcpy']['fromHost']} from host, {summary['memcpy']['toHost']} "
            f"to host), budget {lim}")
    if "accelerated" in budgets:
        want, v = budgets["accelerated"], summary["accelerated"]
        add("accelerated", want, v, v == want,
            ("NOT accelerated: no node on an accelerator" + why) if want else "accelerated, expected not", off)
    if "forbid_reasons" in budgets:
        bad = [n for n in off if n["reason"] in budgets["forbid_reasons"]]
        add("forbid_reasons", list(budgets["forbid_reasons"]), len(bad), not bad,
            f"forbidden reasons on {first}: {node_gist(bad)}", bad)
    if "status" in budgets:
        want, v = budgets["status"], summary["status"]
        add("status", want, v, v == want, f"status {v}, expected {want}"
            + (f": {summary['failure']}" if summary.get("failure") else ""))
    if expect is not None:
        want, v = expect["accelerated"], summary["accelerated"]
        add("expect", want, v, v == want,
            (f"NOT accelerated, expected accelerated ({expect['reason']}){why}" if want else
             f"accelerated now ({len(on_first)} nodes on {first}), expected not ({expect['reason']})"), off)
    return out


def _entry_key(check_name, rel):
    return f"{check_name} :: {rel}"


def _relative(path, root):
    from ..io.config import model_relpath

    return model_relpath(path, root)


def read_lock(path):
    """The lock's entries (``{key: record}``), ``None`` when there is no lock file."""
    from ..io.structured import read_structured

    from ..io.files import lexists

    path = Path(path)
    if not lexists(path):
        return None
    data = read_structured(path, "json", None, MAX_LOCK_BYTES, what="lock file")
    if not isinstance(data, dict) or data.get("lockVersion") != LOCK_VERSION:
        raise UsageError(f"not a partsim lock file (lockVersion {LOCK_VERSION} with entries); "
                         "rewrite it with partsim check --update", path)
    validate(data, "lock", path)
    return data["entries"]


def lock_document(entries):
    from .. import __version__

    return {"lockVersion": LOCK_VERSION, "partsimVersion": __version__,
            "entries": dict(sorted(entries.items()))}


# --- the work of one model (runs in a worker process) ---------------------------------

_TABLES: dict = {}


def _tables(rules):
    from ..api import load_tables

    if rules not in _TABLES:
        _TABLES[rules] = load_tables(rules)
    return _TABLES[rules]


def _resolution(check):
    from ..api import build_request
    from ..rules.resolve import refuse_tableless, resolve_providers

    requested, extra = build_request(list(check.providers))
    resolution = resolve_providers(requested, _tables(check.rules), extra)
    refuse_tableless(resolution, _tables(check.rules))
    return resolution


def _model_job(path, items, root, lock_path):
    """Load ``path`` once per (level, providers, dims) and run every check of ``items``:
    ``[(index, Check, lock entry)]``.

    Returns ``[(index, result, record)]``, or ``("error", message)`` for a PartsimError.
    """
    from ..api import _gc_paused, prepare_graph
    from ..sim import simulate, summarize

    out = []
    try:
        with _gc_paused():
            models = {}
            rel = _relative(path, root)
            symbolic = None
            for index, check, entry in items:
                resolution = _resolution(check)
                settings = check.settings_for(rel)
                if settings["dims"] and symbolic is None:
                    symbolic = _symbolic_dims(path)
                dims = _dims_for(check, rel, settings, symbolic or {})
                # the graph ORT partitions depends on the level and, above disable, on the providers
                key = (check.optimize, resolution.effective if check.optimize != "disable" else (),
                       tuple(sorted(dims.items())))
                if key not in models:
                    models[key] = prepare_graph(path, check.optimize, dims=dims or None, resolution=resolution)
                    if models[key].failure:
                        models[key].model.warnings.append(models[key].failure)
                summary = summarize(simulate(models[key].model, resolution, check.policy, facts=models[key].facts))
                summary["model"]["path"] = rel
                record = baseline_record(summary, resolution, check.level)
                if dims:
                    record["dims"] = dims
                context = {"dims": dims, "expect": settings["expect"], "line": settings["line"],
                           "unfixed": sorted(set(symbolic or _symbolic_dims_of(models[key].model)) - set(dims))}
                result = _result(check, rel, summary, record, entry, lock_path, context)
                out.append((index, result, record))
    except PartsimError as exc:
        return ("error", str(exc))
    return out


def _symbolic_dims(path):
    from ..io.load import load_model
    from ..io.variants import dim_params

    return dim_params(load_model(path, infer_shapes=False))


def _symbolic_dims_of(model):
    from ..io.variants import dim_params

    return dim_params(model)


def _dims_for(check, rel, settings, symbolic):
    """The dims fixed on this model: the check's that it has, and every one its own table names."""
    missing = sorted(settings["own_dims"] - set(symbolic))
    if missing:
        raise UsageError(f"check {check.name!r}, model {rel}: dims {missing[0]}: no graph input has that symbolic "
                         f"dimension (symbolic: {', '.join(symbolic) or 'none'})")
    return {name: size for name, size in settings["dims"].items() if name in symbolic}


def _result(check, rel, summary, record, entry, lock_path, context):
    expect = context["expect"]
    budgets = evaluate_budgets(summary, check.budgets, expect)
    first, on_first, share = _first_share(summary)
    lock = {"status": "absent" if lock_path is None else "not_in_lock", "failures": [], "rules": []}
    if entry is not None:
        key = _entry_key(check.name, rel)
        try:
            check_baseline_context(record, entry, lock_path)
            if entry.get("dims") != record.get("dims"):
                raise UsageError(f"baseline was measured with other dims (baseline {entry.get('dims') or {}}, now "
                                 f"{record.get('dims') or {}}); re-record it (check --update)", lock_path)
        except UsageError as exc:
            raise UsageError(f"entry {key!r}: {exc.message}", lock_path) from None
        b = compare_baseline(summary, entry, record)
        for r in b["rules"]:  # the rule's nodes: those that left the first provider since the lock (and new ones)
            full = b["moved"] if r["rule"] == "firstProviderNodes" else b["moved"] + b["added"]
            r["reasons"] = reason_counts(full) if not r["passed"] and r["nodes"] else {}
        lock = {"status": "compared", "failures": b["failures"], "rules": b["rules"],
                "modelChanged": b["modelChanged"]}
    passed = all(b["passed"] for b in budgets) and not lock["failures"]
    result = {"check": check.name, "model": rel, "providers": list(summary["effectiveProviders"]),
              "level": check.level, "dims": context["dims"], "passed": passed, "status": summary["status"],
              "accelerated": summary["accelerated"],
              "counts": dict(record["counts"], nodeCount=summary["model"]["nodeCount"],
                             delegatedShare=round(share, 6),
                             firstProviderPartitions=summary["perProvider"].get(first, {}).get("partitions", 0)),
              "budgets": budgets, "lock": lock}
    if expect is not None:
        result["expect"] = dict(expect)
    # what the three-line failure (report/check_table.py) names: the command to run, the line to edit
    result["hints"] = {"requested": list(check.providers), "unfixedDims": context["unfixed"],
                       "checkLine": check.line, "dimsLine": check.dims_line or check.line,
                       "budgetLine": next((check.budget_lines.get(b["budget"]) for b in budgets if not b["passed"]
                                           and check.budget_lines.get(b["budget"])), check.line),
                       "modelLine": context["line"]}
    return result


# --- the whole run ----------------------------------------------------------------------

def run_checks(config, jobs=None, update=False, progress=None):
    """Run every check of ``config``; returns ``(document, lock entries to write or None)``.

    ``progress(done, total)`` is called as models finish.  The document lists one result per
    (check, model), in config order and then model order, and is the same whatever ``jobs``.
    """
    lock_entries = None if update else read_lock(config.lock)
    lock_path = None if update or lock_entries is None else config.lock
    by_model = {}
    index = 0
    order = []
    for check in config.checks:
        for path in check.models:
            rel = _relative(path, config.root)
            entry = None if lock_entries is None else lock_entries.get(_entry_key(check.name, rel))
            by_model.setdefault(path, []).append((index, check, entry))
            order.append(index)
            index += 1
    # warm the tables here so forked workers inherit them parsed
    for check in config.checks:
        _resolution(check)
    paths = sorted(by_model, key=lambda p: (-_size(p), p))  # big models first: better packing
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(paths)))
    results = {}
    errors = {}
    done = 0
    if progress:
        progress(0, len(paths))
    if jobs == 1:
        for p in paths:
            got = _model_job(p, by_model[p], config.root, lock_path)
            _collect(p, got, results, errors)
            done += 1
            if progress:
                progress(done, len(paths))
    else:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor, as_completed

        ctx = multiprocessing.get_context("fork") if "fork" in multiprocessing.get_all_start_methods() else None
        with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
            futures = {pool.submit(_model_job, p, by_model[p], config.root, lock_path): p for p in paths}
            for f in as_completed(futures):
                _collect(futures[f], f.result(), results, errors)
                done += 1
                if progress:
                    progress(done, len(paths))
    if errors:  # a bad model or table: one line, the first in config order
        first = min(errors, key=lambda p: by_model[p][0][0])
        raise UsageError(errors[first])
    ordered = [results[i] for i in order]
    docs = [r for r, _ in ordered]
    _unused_dims(config, docs)
    new_lock = None
    if update:
        new_lock = {}
        for (r, record) in ordered:
            new_lock[_entry_key(r["check"], r["model"])] = record
    from .. import __version__

    summary = {"checks": len(config.checks), "models": len(paths), "results": len(docs),
               "failed": sum(1 for r in docs if not r["passed"])}
    document = {"schemaVersion": "1.0", "partsimVersion": __version__,
                "config": config.path.name, "lock": {"path": config.lock.name,
                                                     "state": "updated" if update else
                                                     ("absent" if lock_entries is None else "compared")},
                "passed": summary["failed"] == 0, "summary": summary, "results": docs}
    return document, new_lock


def _unused_dims(config, docs):
    """A check's dims name no model's symbolic dimension: a typo, one line naming the config line."""
    for check in config.checks:
        used = {name for r in docs if r["check"] == check.name for name in r["dims"]}
        unused = sorted(set(check.dims) - used)
        if unused:
            raise UsageError(f"check {check.name!r}: dims {unused[0]}: none of its models has that symbolic "
                             f"dimension", config.path, check.dims_line)


def _collect(path, got, results, errors):
    if isinstance(got, tuple) and got and got[0] == "error":
        errors[path] = got[1]
        return
    for index, result, record in got:
        results[index] = (result, record)


def _size(p):
    try:
        return os.path.getsize(p)
    except OSError:
        return 0
