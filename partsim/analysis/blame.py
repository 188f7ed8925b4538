"""``partsim blame``: which single cause costs the most accelerator coverage, partitions and copies.
"""

from dataclasses import dataclass, replace
from fractions import Fraction

from ..errors import ModelError, UsageError
from ..ir.graph import weakly_connected_groups
from ..rules.providers import CPU
from .context import SCHEMA_VERSION
from .cost import _saved, metrics
from .lift import LIFTABLE_REASONS, lift_op_type, lift_reason
from .remedies import EFFORT, WHO, actionability, opset_candidates
from ..io.variants import decompose_sources, dim_params

__all__ = ["blame"]


def _head(ctx):
    return {"path": ctx.model.path, "sha256": ctx.model.sha256, "nodeCount": len(ctx.model.nodes)}


def _row(kind, name, concerned_names, before_m, before_s, after_s, after_model, link, device, lifted=""):
    after_m = metrics(after_s, after_model, link, device)
    first = before_s["effectiveProviders"][0]
    before_off = {n["name"] for n in before_s["nodes"] if n["provider"] != first}
    # nodes of the model as given that end up on the first provider (a level's new nodes are not "moved")
    moved = sorted(n["name"] for n in after_s["nodes"] if n["provider"] == first and n["name"] in before_off)
    after_copies = {(c["tensor"], c["direction"]) for c in after_s["memcpy"]["tensors"]}
    gone = sorted(f"{c['tensor']} ({c['direction']})" for c in before_s["memcpy"]["tensors"]
                  if (c["tensor"], c["direction"]) not in after_copies)
    on_before, on_after = _coverage(before_s), _coverage(after_s)
    row = {"kind": kind, "cause": name, "nodes": concerned_names, "nodeCount": len(concerned_names),
           "after": after_m, "saved": _saved(before_m, after_m), "movedToFirstProvider": moved,
           "memcpyRemoved": gone, "status": after_s["status"],
           "coverage": {"before": _cov_json(on_before), "after": _cov_json(on_after),
                        "gainPoints": round(float(_share(on_after) - _share(on_before)) * 100, 2)},
           "_gain": _share(on_after) - _share(on_before)}
    if lifted:
        row["lifted"] = lifted
    return row


def _coverage(summary):
    """(nodes on the first provider, nodes) of a summary."""
    first = summary["effectiveProviders"][0]
    return sum(1 for n in summary["nodes"] if n["provider"] == first), len(summary["nodes"])


def _share(cov):
    on, total = cov
    return Fraction(on, total) if total else Fraction(0)


def _cov_json(cov):
    return {"firstProviderNodes": cov[0], "nodes": cov[1], "percent": round(float(_share(cov)) * 100, 2)}


_INTEGER_DTYPES = frozenset({"int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "bool"})


def _shape_subgraphs(model, cpu_preferred):
    """The shape subgraphs the CPU-preferred nodes belong to.

    A shape subgraph is a weakly-connected set of nodes that compute integer/bool tensors
    only (shape and index arithmetic: Shape, Gather, Concat, Range, Where, Cast to int, ...)
    plus the CPU-preferred nodes themselves; kept when it holds at least one CPU-preferred
    node.  ORT's CPU-preferred pass moves part of such a subgraph to the CPU; the part it
    cannot move (an input lives on the device) stays on the device, and the copies between
    the two parts are Memcpy nodes.
    """
    def integer_only(node):
        outs = [t for t in node.outputs if t]
        return bool(outs) and all(model.value(t).dtype in _INTEGER_DTYPES for t in outs)

    seeds = set(cpu_preferred)
    members = seeds | {n.index for n in model.nodes if integer_only(n)}
    return [g for g in weakly_connected_groups(model, members) if seeds.intersection(g)]


def _memcpy_at(model, summary, members):
    """Baseline Memcpy copies (``tensor (direction)``) whose tensor is produced or read by a node of ``members``."""
    members = set(members)
    out = []
    for c in summary["memcpy"]["tensors"]:
        t = c["tensor"]
        p = model.producer.get(t)
        if (p is not None and p in members) or any(k in members for k in model.consumers.get(t, ())):
            out.append(f"{t} ({c['direction']})")
    return sorted(out)


def _dim_nodes(row):
    """For a fixed dimension the nodes concerned are those it brings onto the first provider."""
    row["nodes"] = list(row["movedToFirstProvider"])
    row["nodeCount"] = len(row["nodes"])
    return row


def _rank_key(row):
    """Accelerator coverage gained (exact fraction of the graph's nodes on the first provider)
    first, then accelerator partitions saved; a tie goes to the cause the user can act on, then
    to fewer transfers, Memcpy, bytes, then to the cheaper change (EFFORT)."""
    s = row["saved"]
    return (-row["_gain"], -s["acceleratorPartitions"], not row["actionable"], -s["transfers"], -s["memcpy"],
            -s["boundaryBytes"], -s["partitions"], EFFORT.get(row["kind"], 9), row["cause"])


def _mark(row, table, op=None):
    actionable, who, remedy = actionability(row["kind"], row["cause"], table, op)
    row.update(actionable=actionable, actionBy=who, remedy=remedy)
    return row


def _variant(ctx, optimize, fix_dims=None, opset=None, decompose=()):
    """A variant of the model, or the one-line reason it cannot be made."""
    from ..api import prepare_graph
    from ..io.variants import load_variant_prepared
    from ..sim.pipeline import normalize_level, partitioning_level

    fix_dims = {**(ctx.dims or {}), **(fix_dims or {})}  # the dims the user fixed stay fixed
    try:  # the graph ORT partitions depends on the providers (inlining, Level 2/3 sets)
        if not fix_dims and opset is None and not decompose:
            return prepare_graph(ctx.path, optimize, seed=ctx.seed, resolution=ctx.resolution()), None
        at = partitioning_level(normalize_level(optimize) or "all")
        return load_variant_prepared(ctx.path, at, fix_dims or None, opset, seed=ctx.seed,
                                     resolution=ctx.resolution(), decompose=decompose), None
    except ModelError as exc:
        return None, str(exc)


def _run_lifted(ctx, lifted):
    """``(summary, model)`` of the first provider's lifted table.  Above level ``disable`` the graph
    ORT partitions depends on what the providers take (nodes left to the CPU get its layout
    rewrites, NCHWc), so the model is prepared again for the lifted tables; on the model prepared
    for the real tables a lifted ``dynamic_shape`` would find its nodes already rewritten for the
    CPU and move almost nothing."""
    if ctx.optimize == "disable":
        return ctx.run(lifted)[0], ctx.model
    from ..api import prepare_graph

    prepared = prepare_graph(ctx.path, ctx.optimize, seed=ctx.seed, dims=ctx.dims or None, resolution=lifted)
    return ctx.run(lifted, model=prepared)[0], prepared.model


def _higher_levels(current):
    """The next optimization level above ``current`` (ORT's order: disable, basic, extended, all),
    as a list: empty at ``all``."""
    from ..api import LEVELS
    from ..sim.pipeline import normalize_level

    current = normalize_level(current)
    if current not in LEVELS:
        return []
    return list(LEVELS[LEVELS.index(current) + 1:LEVELS.index(current) + 2])


def blame(ctx, link=None, dim_value=1, dims=None, analyse_dims=True, analyse_levels=True, analyse_opsets=True):
    """Lift every cause that keeps nodes off the first provider, one at a time; re-simulate each.

    Parameters
    ----------
    ctx : Context
        From :func:`prepare` (the model is loaded once and reused for every re-simulation).
    link : Link, optional
        Adds ``copyTimeUs`` to every count.
    dim_value : int
        Size a symbolic input dimension is fixed to when its effect is measured (the dimensions
        :func:`prepare` fixed, ``ctx.dims``, are part of the baseline and not measured).
    dims : dict, optional
        Per-name sizes overriding ``dim_value``.
    analyse_dims : bool
        Measure symbolic input dimensions (each one loads a variant of the model), one at a
        time and all together.
    analyse_levels : bool
        Measure ORT's higher optimization levels (its own constant folding; a variant each).
    analyse_opsets : bool
        Measure the opsets at which ``opset_version``-rejected nodes would find a kernel.

    Returns
    -------
    dict
        ``baseline`` counts, ``causes`` ranked by accelerator coverage gained (share of nodes on
        the first provider), then accelerator partitions saved, then the ones the user can act
        on (``actionable``, ``actionBy``, ``remedy``), transfers, Memcpy, bytes;
        ``notLiftable`` categories, ``notMeasured`` variants that could not be built.
    """
    res = ctx.resolution()
    if not res.tables or res.tables[0].provider == CPU:
        raise UsageError("blame needs an accelerator first in --providers (or --support): with the CPU "
                         "first nothing is kept off it")
    base = _baseline(ctx, res, link)
    rows, not_liftable = _lift_rows(base)
    opts = {"dim_value": dim_value, "dims": dims, "dims_on": analyse_dims, "levels_on": analyse_levels,
            "opsets_on": analyse_opsets}
    variant_rows, not_measured = _variant_rows(base, opts)
    rows.extend(variant_rows)
    rows.sort(key=_rank_key)
    for k, r in enumerate(rows, 1):
        r["rank"] = k
        del r["_gain"]
    model = base.model
    return {
        "schemaVersion": SCHEMA_VERSION,
        "command": "blame",
        "model": _head(ctx),
        "optimize": ctx.optimize,
        "requestedProviders": list(res.requested),
        "effectiveProviders": list(res.effective),
        "firstProvider": base.first.provider,
        "policy": ctx.policy,
        "baseline": base.metrics,
        "coverage": _cov_json(_coverage(base.summary)),
        "undelegatedNodes": len(base.off),
        "reasons": {c: len(v) for c, v in sorted(base.by_reason.items())},
        "memcpyCauses": {r["cause"]: len(r["memcpyAtNodes"]) for r in sorted(rows, key=lambda r: r["cause"])
                         if r["kind"] == "reason"},
        "causes": rows,
        "notLiftable": not_liftable,
        "notMeasured": not_measured,
        "actionBy": dict(WHO),
        "symbolicDims": {k: [f"{i}[{a}]" for i, a in v] for k, v in dim_params(model).items()},
        "fixedDims": dict(sorted((ctx.dims or {}).items())),
        "link": link.to_json() if link else None,
    }


@dataclass
class _Base:
    """The baseline every cause is measured against."""

    ctx: object
    res: object
    link: object
    model: object
    summary: dict
    metrics: dict
    device: set
    off: list
    by_op: dict
    by_reason: dict
    names: list

    @property
    def first(self):
        return self.res.tables[0]

    def row(self, kind, name, concerned, after_s, after_model, lifted=""):
        return _row(kind, name, concerned, self.metrics, self.summary, after_s, after_model, self.link, self.device,
                    lifted)


def _baseline(ctx, res, link):
    model = ctx.model
    before_s, _ = ctx.run(res)
    device = {t.provider for t in res.tables if not t.cpu_based}
    off = [(k, n) for k, n in enumerate(before_s["nodes"]) if n["reason"] is not None]
    by_op, by_reason = {}, {}
    for k, n in off:
        node = model.nodes[k]
        by_op.setdefault((node.domain, node.op_type), []).append(k)
        by_reason.setdefault(n["reason"], []).append(k)
    return _Base(ctx, res, link, model, before_s, metrics(before_s, model, link, device), device, off, by_op,
                 by_reason, [n.name for n in model.nodes])


def _lift_rows(base):
    """One row per op type and per reason lifted from the first provider's table; the reasons no table
    can lift (``{reason: nodes}``)."""
    first, rest, model, names = base.first, base.res.tables[1:], base.model, base.names
    rows = []
    for (domain, op), idx in sorted(base.by_op.items()):
        lifted = replace(base.res, tables=(lift_op_type(first, domain, op),) + rest)
        after_s, after_model = _run_lifted(base.ctx, lifted)
        label = f"{domain}:{op}" if domain else op
        row = base.row("opType", label, [names[i] for i in idx], after_s, after_model,
                       f"{first.provider} accepts {label} for any dtype and shape")
        cats = {}
        for i in idx:
            c = base.summary["nodes"][i]["reason"]
            cats[c] = cats.get(c, 0) + 1
        row["reasons"] = dict(sorted(cats.items()))
        row["memcpyAtNodes"] = _memcpy_at(model, base.summary, idx)
        rows.append(_mark(row, first, (domain, op)))
    not_liftable = {}
    for cat, idx in sorted(base.by_reason.items()):
        table = lift_reason(first, cat, model)
        if table is None:
            not_liftable[cat] = len(idx)
            continue
        after_s, after_model = _run_lifted(base.ctx, replace(base.res, tables=(table,) + rest))
        row = base.row("reason", cat, [names[i] for i in idx], after_s, after_model, LIFTABLE_REASONS[cat])
        if cat == "cpu_preferred":
            region = _shape_subgraphs(model, idx)
            row["groups"] = [[names[i] for i in g] for g in region]
            row["memcpyAtNodes"] = _memcpy_at(model, base.summary, [i for g in region for i in g])
        else:
            row["groups"] = [[names[i] for i in g] for g in weakly_connected_groups(model, idx)]
            row["memcpyAtNodes"] = _memcpy_at(model, base.summary, idx)
        rows.append(_mark(row, first))
    return rows, not_liftable


def _variant_rows(base, opts):
    """Rows of the changes that need a variant of the model (dims, levels, opsets, decompositions), and
    the variants that could not be built."""
    ctx, model, rows, not_measured = base.ctx, base.model, [], []

    def measure(kind, label, variant_args, lifted, **extra):
        variant, why = _variant(ctx, *variant_args)
        if variant is None:
            not_measured.append({"kind": kind, "cause": label, "why": why})
            return None
        after_s, _ = ctx.run(base.res, model=variant)
        row = base.row(kind, label, [], after_s, variant.model, lifted)
        after_names = {n["name"] for n in after_s["nodes"]}
        row["goneNodes"] = sum(1 for n in base.summary["nodes"] if n["name"] not in after_names)
        row.update(extra)
        rows.append(_mark(_dim_nodes(row), base.first))
        return row

    params = dim_params(model) if opts["dims_on"] else {}
    fixed = {k: int((opts["dims"] or {}).get(k, opts["dim_value"])) for k in params}
    all_dims = ",".join(f"{k}={v}" for k, v in fixed.items())
    all_inputs = sorted(f"{i}[{a}]" for w in params.values() for i, a in w)
    for name, where in params.items():
        measure("dim", f"{name}={fixed[name]}", (ctx.optimize, {name: fixed[name]}),
                f"symbolic dimension {name!r} of the graph inputs fixed to {fixed[name]}",
                inputs=[f"{inp}[{axis}]" for inp, axis in where])
    if len(params) > 1:
        measure("dims", all_dims, (ctx.optimize, fixed), "every symbolic dimension of the graph inputs fixed at once",
                inputs=all_inputs)
    if opts["levels_on"]:
        for level in _higher_levels(ctx.optimize):
            measure("level", f"level {level}", (level,),
                    f"ORT's own {level} rewrites (constant folding, redundant-node removal) before partitioning")
            if params:
                measure("level+dims", f"level {level} + {all_dims}", (level, fixed),
                        f"ORT's {level} rewrites with every symbolic dimension fixed", inputs=all_inputs)
    rejected = [k for k, n in base.off if n["reason"] == "opset_version"]
    if opts["opsets_on"] and rejected:
        for n in opset_candidates(model, base.first, rejected):
            measure("opset", f"opset {n}", (ctx.optimize, None, n),
                    f"the model converted to opset {n} (onnx.version_converter)")
    for op, ops, idx in _decompositions(base):  # model-side remedies: ops replaced by their definitions
        row = measure("decompose", f"decompose {','.join(ops)}", (ctx.optimize, None, None, ops),
                      f"every {' and every '.join(ops)} node replaced by the ops that define it"
                      + (f" (ORT expands {', '.join(o for o in ops if o != op)} into these {op} nodes)"
                         if ops != (op,) else ""))
        if row is not None:
            row["nodes"], row["nodeCount"] = [base.names[i] for i in idx], len(idx)
    return rows, not_measured


def _decompositions(base):
    """``(graph op, ops to decompose in the model file, node indices)`` per decomposable op off the first
    provider: the op itself where the file has it, and the function op ORT inlined into it (HardSwish
    becomes HardSigmoid and Mul: decomposing HardSigmoid in the file cannot reach those)."""
    opset = base.model.opsets.get("", 0)
    origins = getattr(base.ctx, "origins", None) or {}
    out = []
    for (domain, op), idx in sorted(base.by_op.items()):
        if domain or not all(base.model.nodes[i].parent is None for i in idx):
            continue
        ops = decompose_sources(op, [origins.get(base.names[i], "model") for i in idx], opset)
        if ops:
            out.append((op, ops, idx))
    return out
