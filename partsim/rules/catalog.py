"""The shipped tables as a catalog: what ``partsim rules list`` lists and ``rules show`` prints.
"""

import difflib

from ..errors import UsageError
from .load import builtin_rules_dir, load_table, read_table_text
from .providers import ALIASES, KNOWN_PROVIDERS

__all__ = ["shipped_tables", "find_shipped"]


def shipped_tables(directory=None):
    """One record per shipped table file, in file-name order: ``{provider, variant, defaultVariant,
    aliases, kind, cpuBased, rules, ops, source, file}`` (``rules``: op rules; ``ops``: distinct op types)."""
    d = directory or builtin_rules_dir()
    out = []
    for f in sorted(d.glob("*.yaml")):
        t = load_table(f)
        out.append({"provider": t.provider, "variant": t.variant, "defaultVariant": t.default_variant,
                    "aliases": list(t.aliases), "kind": t.kind, "cpuBased": t.cpu_based,
                    "rules": sum(len(v) for v in t.rules.values()), "ops": len(t.rules),
                    "source": t.source.get("version", ""), "file": f.name})
    return out


def _canonical(name):
    key = name.strip().lower()
    if key in ALIASES:
        return ALIASES[key]
    return next((p for p in KNOWN_PROVIDERS if p.lower() == key), name.strip())


def find_shipped(name, directory=None):
    """``(record, text)`` of the shipped table ``name`` (a provider name or alias, ``NAME:variant`` for one
    variant; without a variant, the provider's default one); ``text`` is the file as shipped, its
    "generated file" first line replaced by one saying where the copy came from.

    A name with no shipped table is a one-line :class:`UsageError` that lists the shipped ones.
    """
    provider, _, variant = name.partition(":")
    provider = _canonical(provider)
    records = shipped_tables(directory)
    mine = [r for r in records if r["provider"] == provider]
    if variant:
        mine = [r for r in mine if r["variant"] == variant.strip().lower()]
    elif len(mine) > 1:
        mine = [r for r in mine if r["defaultVariant"]] or [r for r in mine if not r["variant"]] or mine[:1]
    if not mine:
        names = sorted({a for r in records for a in r["aliases"]} | {f"{r['aliases'][0]}:{r['variant']}"
                                                                    for r in records if r["variant"]})
        close = difflib.get_close_matches(name.lower(), names, n=1)
        hint = f"did you mean {close[0]}? " if close else ""
        raise UsageError(f"no shipped table for {name!r}; {hint}shipped: {', '.join(names)}")
    record = mine[0]
    text = read_table_text((directory or builtin_rules_dir()) / record["file"])
    first, sep, rest = text.partition("\n")
    if first.startswith("# Generated file"):  # true of the shipped file, not of the user's copy
        text = (f"# A copy of partsim's shipped {record['file']} (partsim rules show {name}): edit it, check it with "
                f"partsim lint FILE, use it with -r FILE.\n" + rest)
    return record, text
