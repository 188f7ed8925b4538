"""The library entry points behind the commands (no printing, no argument parsing)."""

from pathlib import Path

from .errors import UsageError
from .io.load import load_model
from .rules.table import adhoc_table
from .rules.load import TableSet, builtin_tables, load_table
from .rules.resolve import refuse_tableless, resolve_providers
from .sim import simulate, summarize
from .sim.pipeline import FINAL_LEVELS, partitioning_level
from .sim.pipeline import LEVELS as PREDICTED_LEVELS

__all__ = ["load_tables", "predict", "load_for_prediction", "prepare_graph", "DEFAULT_PROVIDERS", "OPTIMIZE_LEVELS", "LEVELS",
           "build_request", "resolve_level"]

CPU = "CPUExecutionProvider"
DEFAULT_PROVIDERS = (CPU,)


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
LEVELS = PREDICTED_LEVELS  # ORT's GraphOptimizationLevel names; "all" is ORT's default


def resolve_level(level="all", optimize=None):
    """The level to predict: ``level``, or the older ``optimize`` (``none`` = ``disable``)
    when given; both given and different is a usage error."""
    from .sim.pipeline import normalize_level

    want = normalize_level(level) if level is not None else "all"
    if want is None:
        raise UsageError(f"--level must be one of {', '.join(LEVELS)}, not {level!r}")
    if optimize is not None:
        old = normalize_level(optimize)
        if old not in ("disable", "basic"):
            raise UsageError(f"--optimize must be one of {', '.join(OPTIMIZE_LEVELS)}, not {optimize!r}")
        if level is not None and old != want:
            raise UsageError(f"--optimize {optimize} and --level {level} name different levels; give one")
        want = old
    return want


def load_for_prediction(path, optimize="all", seed=0, dims=None, resolution=None, child=None):
    """Load ``path`` as ORT partitions it at level ``optimize`` for ``resolution``'s providers: at
    ``extended``/``all`` the Level-1 graph (:func:`partitioning_level`), the one every provider is asked
    about; what Level 2/3 make of it afterwards is :func:`predict`'s final view.

    ``optimize`` is a level (``disable``, ``basic``, ``extended``, ``all``; ``none`` is
    ``disable``); ``resolution`` defaults to CPU only.  ``dims`` (``{"batch": 1}``) fixes
    symbolic input dimensions first, as ``--dim`` does; a name no graph input has is a
    :class:`UsageError`.  The IR keeps the user's path and digest.  See
    :func:`partsim.runtime.pipeline.prepare`.
    """
    prepared = prepare_graph(path, optimize, seed, dims, resolution, child)
    if prepared.failure:
        prepared.model.warnings.append(prepared.failure)
    return prepared.model


def prepare_graph(path, optimize="all", seed=0, dims=None, resolution=None, child=None):
    """The prepare stage: :func:`load_for_prediction`'s graph as a
    :class:`~partsim.runtime.pipeline.PreparedGraph` — the IR with what ORT's pipeline knew about it
    (origins, ORT's failure, :class:`~partsim.sim.facts.SessionFacts`), for
    ``simulate(prepared.model, resolution, facts=prepared.facts)``."""
    from .sim.pipeline import normalize_level

    level = normalize_level(optimize)
    return _load(path, partitioning_level(level) if level else optimize, seed, dims, resolution, child)


def _begin_early(path, level, requested, tables, extra, child, like=None):
    """ORT's optimizer session started before the tables are parsed: the provider list guessed from
    the tables' header lines (:meth:`partsim.rules.load.TableSet.headers`); the pipeline checks the
    guess against the real list and starts again when it was wrong.  ``None`` when no guess."""
    from .runtime.ort_pipeline import begin_early

    heads = tables.headers() if hasattr(tables, "headers") else None
    if heads is None:
        return None
    try:
        guess = resolve_providers(requested, heads, extra)
    except UsageError:
        return None  # the real resolution says what is wrong
    return begin_early(path, level, [(t.provider, t.is_compiling) for t in guess.tables], child, like)


def _load(path, optimize, seed=0, dims=None, resolution=None, child=None, early=None, source=None):
    from .runtime.pipeline import prepare
    from .sim.pipeline import normalize_level

    level = normalize_level(optimize)
    if level is None:
        raise UsageError(f"--level must be one of {', '.join(LEVELS)}, not {optimize!r}")
    if resolution is None:
        resolution = resolve_providers(list(DEFAULT_PROVIDERS), load_tables())
    if not dims:
        return prepare(path, level, resolution, seed=seed, child=child, early=early, source=source)
    from .io.variants import check_dims, load_variant_prepared

    for c in (child, early):
        if c is not None:
            c.close()
    check_dims(load_model(path, infer_shapes=False), dims)
    return load_variant_prepared(path, level, fix_dims=dims, seed=seed, resolution=resolution,
                                 label="symbolic dimensions fixed with --dim")


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
            support_kind="kernel", policy="per-node", model=None, optimize=None, dims=None, level="all",
            ep_options=None, children=None, tables=None):
    """Load (if needed), run ORT's pipeline for ``level``, resolve providers, simulate and summarize.

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
    level : {"disable", "basic", "extended", "all"}
        ORT's graph optimization level of the session predicted (default ``all``, ORT's
        default).  ``optimize`` (``none``/``basic``) is the older spelling.  A
        :class:`~partsim.ir.model.Model` passed in is taken as the graph ORT partitions.
    dims : dict, optional
        Symbolic input dimensions fixed before predicting (``{"batch": 1}``, as ``--dim``).
    ep_options : dict, optional
        Provider options of the session predicted (WebGPU's ``enableInt64``, ``preferredLayout``,
        ``forceCpuNodeNames``; see :mod:`partsim.rules.ep_options`), as ``--ep-option``.
    children : list, optional
        ORT optimizer children the caller started before it imported the rest of partsim
        (:func:`partsim.runtime.process.optimizer_children`; the command line does, for ``simulate``):
        used when there is one per session this prediction begins at once, else closed.  Either way
        they are closed when ``predict`` returns; the caller's own ``close`` then does nothing.
    tables : TableSet, optional
        The tables to predict with (:func:`load_tables`, or a set calibration changed), instead of the
        shipped ones and ``rule_paths``.

    Returns
    -------
    (dict, Assignment)
        The partitionSummary and the assignment it was computed from.
    """
    from .sim.assign import POLICIES

    try:
        if policy not in POLICIES:
            raise UsageError(f"unknown policy {policy!r} (choose from {', '.join(POLICIES)})")
        level = resolve_level(level if optimize is None or level != "all" else None, optimize)
        if tables is not None and rule_paths:
            raise UsageError("give rule_paths or tables, not both")
        with _gc_paused():
            return _predict(model_or_path, providers, tables if tables is not None else rule_paths, support,
                            support_name, support_kind, policy, level, dims, ep_options, children)
    finally:
        for child in children or ():  # taken or not, none outlives the call
            child.close()


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


def _from_file(model_or_path, level, dims):
    """A loaded :class:`~partsim.ir.model.Model` stands for its file at an ORT level: predicted from the
    file (the same answer as its path), or refused when there is no such file."""
    from .ir.model import Model

    if not isinstance(model_or_path, Model):
        return model_or_path
    if dims:
        raise UsageError("dims need a model file, not a loaded Model (fix them with load_for_prediction)")
    if level == "disable":
        return model_or_path
    import hashlib

    path = Path(model_or_path.path or "")
    try:
        same = path.is_file() and hashlib.sha256(path.read_bytes()).hexdigest() == model_or_path.sha256
    except OSError:
        same = False
    if not same:
        raise UsageError(f"a loaded Model is the graph as written: predict it with level='disable', or pass the "
                         f"model's path to predict ORT's level {level!r}")
    return str(path)


def _predict(model_or_path, providers, rule_paths, support, support_name, support_kind, policy, level, dims=None,
             ep_options=None, children=None):
    """prepare -> partition -> account -> report, top to bottom: the graph ORT partitions at ``level`` (and, at
    ``extended``/``all``, the graph it runs after Level 2/3), each node assigned, counted, summarized."""
    from .ir.model import Model
    from .progress import stage

    model_or_path = _from_file(model_or_path, level, dims)
    final_early = []  # the final view's ORT session, begun beside the partitioning one (closed here)
    try:
        resolution, prepared = _prepare_stage(model_or_path, providers, rule_paths, support, support_name,
                                              support_kind, level, dims, ep_options, final_early, children)
        with stage(f"assigning nodes to {', '.join(resolution.effective)}", "assigned every node"):
            assignment = simulate(prepared.model, resolution, policy, facts=prepared.facts)  # partition
        with stage("counting fragments, partitions, transfers and copies", "summarized"):
            summary = summarize(assignment)  # account
        path = None if isinstance(model_or_path, Model) else model_or_path
        return _report_stage(summary, assignment, prepared, path, level, dims, resolution, policy,
                             final_early[0] if final_early else None), assignment
    finally:
        for run in final_early:  # no process outlives the call, whatever happened
            run.close()


def _prepare_stage(model_or_path, providers, rule_paths, support, support_name, support_kind, level, dims,
                   ep_options=None, final_early=None, children=None):
    """The request resolved and the graph ORT partitions: ``(Resolution, PreparedGraph)``.  ORT's optimizer
    (a child process: ``children`` when the caller started them) starts first and imports onnxruntime while
    the tables load; at ``extended``/``all`` the final view's session begins at the same time in a second one
    (appended to ``final_early``), so the two sessions overlap instead of running one after the other."""
    from .ir.model import Model
    from .progress import stage
    from .runtime.pipeline import PreparedGraph

    at = partitioning_level(level)
    child = early = second = None
    if not isinstance(model_or_path, Model) and at != "disable":
        from .runtime.ort_pipeline import start_children

        both = level in FINAL_LEVELS and final_early is not None and not ep_options and not dims
        given = list(children or ())
        if len(given) != (2 if both else 1):  # not the sessions begun here
            for c in given:
                c.close()
            from .io.cache import cache_enabled

            # with the cache on, each child starts with its request, after the cache was asked: a warm
            # run starts none (simulate's prestarted children come before it could look)
            given = start_children(2 if both else 1, lazy=cache_enabled())
        child, second = given if both else given + [None]
    try:
        # rule_paths: files and folders of tables, or a TableSet made already (predict's ``tables``)
        tables = rule_paths if isinstance(rule_paths, TableSet) else load_tables(rule_paths)
        requested, extra = build_request(providers, support, support_name, support_kind)
        if child is not None and not dims:
            early = _begin_early(model_or_path, at, requested, tables, extra, child)
            if early is not None:
                child = None  # the early session holds it now
        if second is not None:
            run = _begin_early(model_or_path, level, requested, tables, extra, second, like=early)
            if run is None:
                second.close()
            else:
                final_early.append(run)  # the final view's session holds the child now
            second = None
        resolution = resolve_providers(requested, tables, extra)
        refuse_tableless(resolution, tables)
        if ep_options:  # --ep-option: the tables the provider options select or change (rules/ep_options.py)
            from .rules.ep_options import apply_ep_options

            resolution = apply_ep_options(resolution, ep_options, tables)
    except BaseException:
        for c in (child, early, second):
            if c is not None:
                c.close()
        raise
    if isinstance(model_or_path, Model):  # a graph as written (level disable): nothing ORT did to know about
        return resolution, PreparedGraph(model_or_path, level="disable")
    box = []
    with stage(f"loading {model_or_path} (the graph ORT partitions at level {level})",
               lambda: f"loaded {len(box[0].model.nodes):,} nodes"):
        box.append(_load(model_or_path, at, dims=dims, resolution=resolution, child=child, early=early))
    return resolution, box[0]


def _report_stage(summary, assignment, prepared, path, level, dims, resolution, policy, final_early=None):
    """The partitionSummary as reported: level, origins, ORT's failure, the final view (``path``: the model
    file; ``None`` for a graph given as is), the ORT predicted."""
    from .progress import stage
    from .sim.pipeline import annotate_summary
    from .versions import annotate

    annotate_summary(summary, level, prepared.origins if path else None, prepared.failure, prepared.notes)
    summary["view"] = "partitioning"
    if level in FINAL_LEVELS and path and not prepared.failure:
        with stage(f"ORT's graph after partitioning (Level 2/3 at level {level})", "related the final graph"):
            _add_final_view(summary, assignment, path, level, dims, resolution, policy, final_early,
                            prepared.source)
    annotate(summary, resolution.tables)  # the ORT predicted (issue #30)
    if path and prepared.stand_in:  # absent external data: ORT's optimizer ran on seeded stand-ins
        summary["standInWeights"] = prepared.stand_in
    return summary


def _add_final_view(summary, assignment, path, level, dims, resolution, policy, early=None, source=None):
    """The second view: ORT's graph after Level 2/3, InsertCast and Memcpy, each node pointing back at the
    partitioned nodes it replaced (:mod:`partsim.sim.final_view`).  Memcpy is counted on it (ORT inserts
    copies last); a session ORT cannot finish building at this level is a failure of the prediction."""
    from .runtime.ort_pipeline import session_settings
    from .sim.final_view import relate_views
    from .sim.gather_split import gather_split
    from .sim.layout_before_level2 import after_partition_layout
    from .sim.summary import memcpy_record
    from .sim.webgpu_conv_fusion import conv_activation_folds

    final = _load(path, level, dims=dims, resolution=resolution, early=early, source=source)
    if final.failure:
        summary["status"] = "session_would_fail"
        summary["failure"] = final.failure
        return
    # partitioning assigned every node once; Level 2/3 after it keep a node's provider (ORT-PIPELINE §3), so
    # a node of the final graph that partitioning left on the CPU (same name and op) stays there: ORT does
    # not partition again, where partsim's second simulation could give it to the device when its
    # neighbours changed (q_tiny_resnet.ts.qop: NhwcTransformer's Transpose before /Flatten).  Device
    # nodes are claimed again, which gives them their rule (host-memory ports, for the Memcpy count).
    part = assignment.model.nodes
    on_cpu = {part[i].name: part[i].op_type for i, ep in enumerate(assignment.provider) if ep == CPU}
    pinned = {n.name: CPU for n in final.model.nodes if on_cpu.get(n.name) == n.op_type}
    pinned.update(final.facts.pinned if final.facts is not None else {})
    fa = simulate(final.model, resolution, policy, pinned=pinned, facts=final.facts)
    folded = conv_activation_folds(final.model, fa.provider, fa.layout)
    view = after_partition_layout(relate_views(assignment.model, final.model, fa.provider, final.origins or {},
                                               folded), assignment)
    if "GatherSliceToSplitFusion" in session_settings(level, [(t.provider, t.is_compiling)
                                                              for t in resolution.tables])[1]:
        # the CPU-only session had it off; Level 2 sees the partitioned graph as laid out
        view = gather_split(view, assignment.model, assignment.provider, assignment.layout)
    summary["finalNodes"] = view.to_record()
    summary["model"]["finalNodeCount"] = len(view.nodes)
    for n in summary["nodes"]:
        n["endsAs"] = list(view.ends_as.get(n["name"], ()))
    summary["memcpy"] = memcpy_record(fa)
    new = [w for w in final.notes if w not in summary.get("warnings", ())]
    if new:
        summary.setdefault("warnings", []).extend(new)
