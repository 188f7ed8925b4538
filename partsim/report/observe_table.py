"""An observation (a real ORT session's placement) as text: state, granted providers, nodes per provider."""

from .text import format_table

__all__ = ["render_observe_table"]


def render_observe_table(obs):
    """Text report of an observation: session state, granted providers, nodes per provider, Memcpy."""
    counts = {}
    for ep in obs["nodes"].values():
        counts[ep] = counts.get(ep, 0) + 1
    return (f"state {obs['state']}  granted {', '.join(obs['granted'])}\n"
            + format_table(["provider", "nodes"], sorted(counts.items()), ["<", ">"])
            + f"\nMemcpy {obs['memcpy']['fromHost']} from host, {obs['memcpy']['toHost']} to host\n")
