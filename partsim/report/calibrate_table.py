"""A `rules calibrate` report as text: agreement before and after per observation file, then each change."""

from .escape import text_renderer

__all__ = ["render_calibrate_table"]


@text_renderer
def render_calibrate_table(r):
    """Text report of a calibrate result: agreement per observation file, the changes, contradictions."""
    lines = [f"calibrating {r['provider']} ({r['base']})", "", "agreement per observation file:"]
    for o in r["observations"]:
        b, a, n = o["agreeingBefore"], o["agreeingAfter"], o["nodes"]
        pct = (lambda k: f"{100 * k / n:.2f} %") if n else (lambda k: "-")
        lines.append(f"  {o['file']}: {o['sessions']} sessions, {n} nodes: {b} -> {a} agree "
                     f"({pct(b)} -> {pct(a)})")
    lines += ["", f"changes ({len(r['changes'])}):" + ("" if r["changes"] else " none; no overlay written")]
    for c in r["changes"]:
        op = f"{c['domain'] + ':' if c['domain'] else ''}{c['op']}-{c['since']}"
        lines.append(f"  {c['kind']:6s} {op:28s} {c['change']}  [{c['nodes']} node(s), e.g. {c['evidence'][0]}]")
    lines += ["", f"contradictions ({len(r['contradictions'])}):"]
    for c in r["contradictions"]:
        op = f"{c['domain'] + ':' if c['domain'] else ''}{c['op']}" + (f"-{c['since']}" if c["since"] else "")
        lines.append(f"  {op}: {c['why']}")
    for c in r["conflictingObservations"]:
        lines.append(f"  {c['node']} in {c['model']}: observed {' and '.join(c['observed'])}")
    if r["unexplained"]:
        lines += ["", "not explained by a table fact (ORT's algorithms decide these):"]
        for reason, v in r["unexplained"].items():
            lines.append(f"  {reason}: {v['nodes']} node(s), e.g. {v['examples'][0]}")
    return "\n".join(lines) + "\n"
