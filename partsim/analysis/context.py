"""One loaded model with its tables and request, simulated once and re-simulated by blame and whatif.
"""

from dataclasses import dataclass

from ..rules.resolve import refuse_tableless, resolve_providers
from ..sim import simulate, summarize
from ..sim.facts import NO_FACTS
from .cost import metrics

__all__ = ["Context", "prepare"]


SCHEMA_VERSION = "1.0"


@dataclass
class Context:
    """A model loaded once, the tables, and the requested providers: everything a re-simulation needs."""

    model: object
    path: str
    optimize: str
    tables: dict
    extra: tuple
    requested: tuple
    policy: str
    seed: int = 0
    facts: object = NO_FACTS  # what ORT's pipeline knew about ``model`` (partsim.sim.facts.SessionFacts)
    origins: object = None  # node name -> where ORT's pipeline made it ("model", "inlined:HardSwish", …)
    dims: object = None  # symbolic dimensions fixed in ``model`` (``--dim``): every variant keeps them

    def resolution(self, requested=None):
        return resolve_providers(list(self.requested if requested is None else requested), self.tables,
                                 self.extra)

    def run(self, resolution, model=None):
        """Simulate and summarize ``model`` (the context's own graph when ``None``; a
        :class:`~partsim.runtime.pipeline.PreparedGraph` brings its facts, a bare IR none)."""
        if model is None:
            a = simulate(self.model, resolution, self.policy, facts=self.facts)
        else:
            a = simulate(getattr(model, "model", model), resolution, self.policy,
                         facts=getattr(model, "facts", None))
        return summarize(a), a

    def metrics(self, summary, resolution, model=None, link=None):
        device = {t.provider for t in resolution.tables if not t.cpu_based}
        return metrics(summary, getattr(model, "model", model) if model is not None else self.model, link, device)


def prepare(path, providers=None, rule_paths=(), support=None, support_name="EP", support_kind="kernel",
            policy="per-node", optimize="none", seed=0, model=None, dims=None):
    """Load ``path`` once (or take ``model``) and the tables, resolve the request as
    :func:`partsim.api.predict` does; ``dims`` fixes symbolic input dimensions (``--dim``)."""
    from ..api import build_request, load_tables, prepare_graph

    requested, extra = build_request(providers, support, support_name, support_kind)  # bad names: before loading
    tables = load_tables(rule_paths)
    # the graph ORT partitions depends on the providers (function inlining, Level 2/3 sets)
    resolution = resolve_providers(requested, tables, extra)
    refuse_tableless(resolution, tables)
    if model is not None:
        return Context(model, str(path), optimize, tables, tuple(extra), tuple(requested), policy, seed)
    p = prepare_graph(path, optimize, seed=seed, dims=dims or None, resolution=resolution)
    if p.failure:
        p.model.warnings.append(p.failure)
    return Context(p.model, str(path), optimize, tables, tuple(extra), tuple(requested), policy, seed, p.facts,
                   getattr(p, "origins", None), dict(dims) if dims else None)
