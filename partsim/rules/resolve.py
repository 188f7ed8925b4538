"""Resolve a requested provider list as ORT does: aliases, duplicates, unknown names, variants, CPU.

The result, :class:`Resolution`, holds already-loaded tables, so the simulation that
takes it (:func:`partsim.sim.simulate`) never reads a file.
"""

from dataclasses import dataclass

from ..errors import UsageError
from .providers import CPU, KNOWN_PROVIDERS, canonical_name

__all__ = ["Resolution", "resolve_providers"]


@dataclass(frozen=True)
class Resolution:
    """A requested provider list after ORT's resolution (docs/contract.md §2)."""

    requested: tuple
    tables: tuple  # RuleTable, in priority order, CPU last
    dropped: tuple  # (name, reason)

    @property
    def effective(self):
        return tuple(t.provider for t in self.tables)


def resolve_providers(requested, tables, extra=()):
    """Resolve a requested list as ORT does: aliases, duplicates, unknown names, CPU appended
    last when absent (the user's order otherwise kept).

    Parameters
    ----------
    requested : list of str
        Names, aliases, or ``NAME:variant`` (``coreml:neuralnetwork``).
    tables : dict
        Provider name -> list of RuleTable (variants).
    extra : list of RuleTable
        Ad-hoc tables (``--support``); their names count as known.

    Examples
    --------
    >>> from partsim.rules.table import adhoc_table
    >>> cpu = adhoc_table(["Relu"], name="CPUExecutionProvider")
    >>> r = resolve_providers(["cuda", "Foo", "cpu"], {"CPUExecutionProvider": [cpu]})
    >>> r.effective, r.dropped
    (('CPUExecutionProvider',), (('CUDAExecutionProvider', 'no_rules'), ('Foo', 'unknown_provider')))
    """
    extra_by_name = {t.provider: t for t in extra}
    chosen, dropped, seen = [], [], set()
    for raw in requested:
        base, _, variant = raw.partition(":")
        name = extra_by_name and base in extra_by_name and base or canonical_name(base)
        if name in seen:
            continue
        seen.add(name)
        if name in extra_by_name:
            chosen.append(extra_by_name[name])
            continue
        if name not in KNOWN_PROVIDERS:
            dropped.append((name, "unknown_provider"))
            continue
        variants = tables.get(name, [])
        if variant:
            pick = [t for t in variants if t.variant == variant.lower()]
            if not pick:
                names = ", ".join(sorted(t.variant for t in variants if t.variant)) or "none"
                raise UsageError(f"provider {name} has no variant {variant!r} (variants: {names})")
        elif name == CPU and variants:  # which CPU table: the one of the release the others run in (below)
            chosen.append(None)
            continue
        else:
            pick = [t for t in variants if t.default_variant] or [t for t in variants if not t.variant] or variants[:1]
        if not pick:
            dropped.append((name, "no_rules"))
            continue
        chosen.append(pick[0])
    if None not in chosen and all(t.provider != CPU for t in chosen):
        chosen.append(None)
    if None in chosen:
        chosen[chosen.index(None)] = _cpu_table([t for t in chosen if t is not None], tables.get(CPU, []))
    # ORT keeps the user's order (a CPU asked first takes every node it has a kernel for);
    # the CPU EP is appended last only when absent (core/session/inference_session.cc,
    # InferenceSession::Initialize registers it after the user's providers)
    return Resolution(tuple(requested), tuple(chosen), tuple(dropped))


def _cpu_table(chosen, cpu):
    """The CPU table to go with ``chosen``: the variant describing the ORT release a chosen provider's
    sessions run in (an ORT build of its own, :func:`partsim.versions.hosting_release`: onnxruntime-openvino
    1.24.1 carries the CPU kernels of ORT 1.24.1), else the default (no variant, or ``default_variant``)."""
    from ..versions import described_ort, hosting_release

    if not cpu:
        raise UsageError("no rule table for CPUExecutionProvider, which ORT always appends")
    hosts = {hosting_release(t) for t in chosen} - {None}
    same = [t for t in cpu if hosts and described_ort(t) in hosts]
    return (same or [t for t in cpu if t.default_variant] or [t for t in cpu if not t.variant] or cpu)[0]


def refuse_tableless(resolution, tables):
    """A requested provider ORT knows but no capability table describes (``-p dml``) would be
    predicted as CPU only, silently: a :class:`UsageError` (exit 2) naming the providers that have
    a table instead.  (:func:`resolve_providers` keeps the drop: it is what ORT itself does.)"""
    missing = [name for name, why in resolution.dropped if why == "no_rules"]
    if missing:
        have = sorted(tables)  # provider names: TableSet's keys (no table parsed)
        raise UsageError(f"no capability table for {', '.join(missing)}: partsim cannot predict it (tables: "
                         f"{', '.join(have)}; add your own with -r FILE)")

