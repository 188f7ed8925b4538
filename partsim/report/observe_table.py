"""An observation (a real ORT session's placement) as text: state, requested and granted providers, what
ORT dropped and why, its warnings, nodes per provider, Memcpy."""

from .text import format_table
from .escape import text_renderer

__all__ = ["render_observe_table"]


@text_renderer
def render_observe_table(obs):
    """Text report of an observation made here (``partsim observe -f table``)."""
    counts = {}
    for ep in obs["nodes"].values():
        counts[ep] = counts.get(ep, 0) + 1
    lines = [f"state     {obs['state']}", f"requested {', '.join(obs['requested'])}",
             f"granted   {', '.join(obs['granted'])}"]
    for d in obs["dropped"]:
        why = ("ORT knows it but this build lacks it (available: " + ", ".join(obs["available"]) + ")"
               if d["reason"] == "not_available" else "no ONNX Runtime build has a provider of that name")
        lines.append(f"dropped   {d['name']}: {d['reason']}: {why}; its nodes ran on "
                     f"{', '.join(obs['granted']) or 'nothing'}")
    lines += [f"warning   {w}" for w in obs["warnings"]]
    return ("\n".join(lines) + "\n" + format_table(["provider", "nodes"], sorted(counts.items()), ["<", ">"])
            + (f"\nMemcpy {obs['memcpy']['fromHost']} from host, {obs['memcpy']['toHost']} to host\n"
               if obs["memcpy"] else f"\nMemcpy unknown: {obs.get('memcpySource')}\n"))
