"""The library entry points behind the commands (no printing, no argument parsing)."""

from pathlib import Path

from .errors import UsageError
from .io.load import load_model
from .rules.table import adhoc_table
from .rules.load import builtin_tables, load_table
from .rules.resolve import resolve_providers
from .sim import simulate, summarize

__all__ = ["load_tables", "predict", "load_for_prediction", "DEFAULT_PROVIDERS", "OPTIMIZE_LEVELS", "build_request"]

DEFAULT_PROVIDERS = ("CPUExecutionProvider",)


def load_tables(rule_paths=()):
    """Shipped tables, overridden/extended by ``rule_paths`` (files or folders).

    Returns a :class:`partsim.rules.load.TableSet`: provider -> variants, user tables
    first.  User tables are parsed and validated now; shipped ones when used.
    """
    tables = builtin_tables()
    for p in rule_paths:
        path = Path(p)
        files = sorted(path.glob("*.yaml")) if path.is_dir() else [path]
        for f in files:
            tables.add_table(load_table(f))
    return tables


OPTIMIZE_LEVELS = ("none", "basic")


def load_for_prediction(path, optimize="none", seed=0, dims=None):
    """Load ``path`` as ORT would see it when partitioning at ``optimize``.

    ``dims`` (``{"batch": 1}``) fixes symbolic input dimensions first, as ``--dim`` does;
    a name no graph input has is a :class:`UsageError`.

    ``none`` is the graph as written (an ORT_DISABLE_ALL session).  ``basic`` runs
    ORT's own ORT_ENABLE_BASIC rewrites (constant folding, redundant-node removal,
    simple fusions), which happen before partitioning, on a copy with weights
    materialized when absent; the summary still names the user's file.
    """
    if optimize not in OPTIMIZE_LEVELS:
        raise UsageError(f"--optimize must be one of {', '.join(OPTIMIZE_LEVELS)}, not {optimize!r}")
    from .io.variants import check_dims, load_optimized, load_variant

    if dims:
        check_dims(load_model(path, infer_shapes=False), dims)
        return load_variant(path, optimize, fix_dims=dims, seed=seed, label="symbolic dimensions fixed with --dim")
    if optimize == "none":
        return load_model(path)
    return load_optimized(path, seed)


def build_request(providers=None, support=None, support_name="EP", support_kind="kernel"):
    """The requested provider list and the ad-hoc tables behind ``--support``.

    Returns ``(requested names, extra RuleTables)``: the ``--support`` provider goes first
    unless the list names it; ``providers=None`` means CPU only.  A single string is one
    name; an empty list, an empty name or a name neither ORT nor a table knows raises
    :class:`UsageError` ("did you mean nnapi?"), where ORT would drop it silently.
    """
    from .rules.providers import check_provider_request

    extra = []
    names = (support_name,) if support else ()
    requested = list(check_provider_request(providers, names) or [])
    if support:
        if support_kind not in ("kernel", "compiling"):
            raise UsageError(f"--support-kind must be kernel or compiling, not {support_kind!r}")
        extra.append(adhoc_table(support, support_name, support_kind))
        if support_name not in requested:
            requested.insert(0, support_name)
    if not requested:
        requested = list(DEFAULT_PROVIDERS)
    return requested, extra


def predict(model_or_path, providers=None, rule_paths=(), support=None, support_name="EP",
            support_kind="kernel", policy="per-node", model=None, optimize="none", dims=None):
    """Load (if needed), resolve providers, simulate and summarize.

    Parameters
    ----------
    model_or_path : str or Path or Model
    providers : list of str or str, optional
        Requested providers in priority order (names, aliases, ``NAME:variant``); a
        single string is one name.  ``None``: CPU only.  Unknown names and an empty
        list raise :class:`~partsim.errors.UsageError`.
    rule_paths : list, optional
        Extra rule-table files or folders.
    support : list of str, optional
        Op types of an ad-hoc provider (``--support``).
    optimize : {"none", "basic"}
        The graph predicted on: as written, or after ORT's ORT_ENABLE_BASIC rewrites.
    dims : dict, optional
        Symbolic input dimensions fixed before predicting (``{"batch": 1}``, as ``--dim``).

    Returns
    -------
    (dict, Assignment)
        The partitionSummary and the assignment it was computed from.
    """
    from .sim.assign import POLICIES

    if policy not in POLICIES:
        raise UsageError(f"unknown policy {policy!r} (choose from {', '.join(POLICIES)})")
    with _gc_paused():
        return _predict(model_or_path, providers, rule_paths, support, support_name, support_kind, policy,
                        optimize, dims)


class _gc_paused:
    """Pause the cyclic GC for a block: building a large IR makes millions of objects that
    hold no cycles, and each GC generation pass would rescan all of them (~25 % of the time)."""

    def __enter__(self):
        import gc

        self.was = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc):
        import gc

        if self.was:
            gc.enable()
        return False


def _predict(model_or_path, providers, rule_paths, support, support_name, support_kind, policy, optimize, dims=None):
    from .ir.model import Model
    from .progress import stage

    if isinstance(model_or_path, Model):
        if dims:
            raise UsageError("dims need a model file, not a loaded Model (fix them with load_for_prediction)")
        m = model_or_path
    else:
        box = []
        with stage(f"loading {model_or_path}", lambda: f"loaded {len(box[0].nodes):,} nodes"):
            box.append(load_for_prediction(model_or_path, optimize, dims=dims))
        m = box[0]
    tables = load_tables(rule_paths)
    requested, extra = build_request(providers, support, support_name, support_kind)
    resolution = resolve_providers(requested, tables, extra)
    with stage(f"assigning nodes to {', '.join(resolution.effective)}", "assigned every node"):
        assignment = simulate(m, resolution, policy)
    with stage("counting fragments, partitions, transfers and copies", "summarized"):
        summary = summarize(assignment)
    return summary, assignment
