"""What-if analysis: lift one cause, re-simulate, count what disappears.

``partsim blame`` and ``partsim whatif`` are built from the pieces here:

* **lifting** -- a modified copy of the first provider's :class:`~partsim.rules.table.RuleTable`
  (``dataclasses.replace``; tables and rules are frozen) that no longer applies one cause:
  an op type accepted for any dtype and shape (:func:`partsim.analysis.lift.lift_op_type`), or one rejection
  category switched off for every rule (:func:`partsim.analysis.lift.lift_reason`);
* **re-simulation** -- :func:`partsim.sim.simulate` and :func:`partsim.sim.summarize` are
  pure, so the model is loaded and shape-inferred once (:func:`partsim.analysis.context.prepare`) and every lifted
  table is simulated on the same :class:`~partsim.ir.model.Model`; only a change of the graph
  itself (a fixed symbolic dimension, another opset, another optimization level) loads a
  variant (:func:`partsim.io.variants.load_variant`);
* **cost** -- bytes that cross a provider boundary per inference and, for a link
  (bandwidth, per-copy latency), the time those copies take (:func:`partsim.analysis.cost.metrics`,
  :func:`partsim.analysis.cost.parse_link`).

Every number is a count of the re-simulated summary, never an estimate from the
baseline: "partitions saved" by lifting a cause is ``before - after``.

Copies per inference (decision; docs/contract.md §1 counts transfers and Memcpy apart):
every pair of ``transferList`` is one copy of its tensor, and every predicted Memcpy
whose tensor is not already a transfer (a graph input copied by a node, a device
output read from host memory by a device kernel's host port) is one more.  A
tensor moved for one transfer and one Memcpy (the usual CUDA case) is counted once.
Graph inputs copied at feed time are reported apart (``feedBytes``), not as
boundary bytes.  Copies whose tensor has no static shape count towards ``copies``
and the latency but not towards bytes; ``unsizedCopies`` says how many.
"""

from dataclasses import replace

from ..errors import UsageError
from ..rules.providers import CPU, canonical_name
from .blame import _head
from .context import SCHEMA_VERSION
from .cost import _saved
from .lift import add_support, parse_support_spec
from ..io.variants import check_dims

__all__ = ["whatif"]


def _apply_provider_changes(requested, drop=(), reorder=()):
    req = list(requested)
    canon = [canonical_name(r.partition(":")[0]) for r in req]
    for d in drop:
        c = canonical_name(d.partition(":")[0])
        if c not in canon:
            raise UsageError(f"--drop-provider {d}: not among the requested providers ({', '.join(canon)})")
        k = canon.index(c)
        del req[k], canon[k]
    if reorder:
        picked = []
        for r in reorder:
            c = canonical_name(r.partition(":")[0])
            if c not in canon:
                raise UsageError(f"--reorder {r}: not among the requested providers ({', '.join(canon)})")
            k = canon.index(c)
            if k in picked:
                raise UsageError(f"--reorder names {r} twice")
            picked.append(k)
        req = [req[k] for k in picked] + [req[k] for k in range(len(req)) if k not in picked]
    return req


def _per_provider(before, after):
    out = {}
    for ep in sorted(set(before) | set(after)):
        b = before.get(ep, {"nodes": 0, "partitions": 0, "fragments": 0})
        a = after.get(ep, {"nodes": 0, "partitions": 0, "fragments": 0})
        out[ep] = {"before": b, "after": a, "change": {k: a[k] - b[k] for k in ("nodes", "partitions", "fragments")}}
    return out


def whatif(ctx, add=(), fix_dims=None, opset=None, drop=(), reorder=(), optimize=None, link=None, decompose=()):
    """Simulate the request as given and with the changes; both summaries' counts side by side.

    ``add`` (``OP``, ``DOMAIN:OP``, ``OP:dtype``) is applied to the first provider of the
    changed list.  ``optimize`` is the level of the changed run (default: the baseline's).
    ``decompose`` (op types) replaces those nodes by the ops that define them
    (:func:`partsim.io.variants.decompose_in_proto`).  Above level ``disable`` the changed model
    is prepared for the changed providers and tables: the graph ORT partitions depends on them.
    """
    before_res = ctx.resolution()
    before_s, _ = ctx.run(before_res)
    before_m = ctx.metrics(before_s, before_res, link=link)
    after_opt = optimize or ctx.optimize
    changes = []
    if fix_dims:
        check_dims(ctx.model, fix_dims)
        changes.append({"change": "fix-dim", "value": ",".join(f"{k}={v}" for k, v in sorted(fix_dims.items()))})
    if opset is not None:
        changes.append({"change": "opset", "value": int(opset)})
    for op in decompose:
        changes.append({"change": "decompose", "value": op})
    if after_opt != ctx.optimize:
        changes.append({"change": "optimize", "value": f"{ctx.optimize} -> {after_opt}"})
    requested = _apply_provider_changes(ctx.requested, drop, reorder)
    for d in drop:
        changes.append({"change": "drop-provider", "value": canonical_name(d.partition(":")[0])})
    if reorder:
        changes.append({"change": "reorder", "value": ",".join(canonical_name(r.partition(":")[0]) for r in reorder)})
    res = ctx.resolution(requested)
    if add:
        if not res.tables or res.tables[0].provider == CPU:
            raise UsageError("--add-support needs an accelerator first in the provider list")
        table = res.tables[0]
        for spec in add:
            domain, op, dtype = parse_support_spec(spec)
            table = add_support(table, domain, op, dtype, ctx.model)
            changes.append({"change": "add-support", "value": spec, "provider": table.provider})
        res = replace(res, tables=(table,) + res.tables[1:])
    model = None  # the context's own graph
    dims = {**(ctx.dims or {}), **(fix_dims or {})}  # the base dims (--base-dim) stay fixed after the change
    if fix_dims or opset is not None or decompose:
        from ..io.variants import load_variant_prepared
        from ..sim.pipeline import normalize_level, partitioning_level

        model = load_variant_prepared(ctx.path, partitioning_level(normalize_level(after_opt) or "all"), dims or None,
                                      opset, seed=ctx.seed, resolution=res, decompose=decompose)
    elif after_opt != "disable" and (after_opt != ctx.optimize or res != before_res):
        from ..api import prepare_graph

        model = prepare_graph(ctx.path, after_opt, seed=ctx.seed, dims=dims or None, resolution=res)
    after_s, _ = ctx.run(res, model=model)
    after_m = ctx.metrics(after_s, res, model=model, link=link)
    change = _saved(after_m, before_m)  # after - before
    return {
        "schemaVersion": SCHEMA_VERSION,
        "command": "whatif",
        "model": _head(ctx),
        "changes": changes,
        "before": {"optimize": ctx.optimize, "providers": before_s["effectiveProviders"],
                   "status": before_s["status"], "accelerated": before_s["accelerated"], **before_m},
        "after": {"optimize": after_opt, "providers": after_s["effectiveProviders"],
                  "status": after_s["status"], "accelerated": after_s["accelerated"], **after_m},
        "change": change,
        "perProvider": _per_provider(before_s["perProvider"], after_s["perProvider"]),
        "link": link.to_json() if link else None,
    }
