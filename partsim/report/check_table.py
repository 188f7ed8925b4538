"""``partsim check`` as a table for people: one row per (check, model), then each failure in
three lines (what, why, the next command) and the models accepted by an ``expect``."""

from ..analysis.verify import GROWING_COUNTS
from .text import format_table
from .escape import text_renderer

__all__ = ["render_check_table", "failure_lines", "failure_brief", "expectation", "MAX_LINE"]

MAX_LINE = 200  # characters per line, "…" when cut

_LOCK_WORDS = dict(GROWING_COUNTS, firstProviderNodes="nodes on the accelerator", accelerated="accelerated",
                   status="status")


def _cut(text):
    return text if len(text) <= MAX_LINE else text[:MAX_LINE - 1] + "…"


def _what_budget(b, first):
    name, lim, v = b["budget"], b["limit"], b["actual"]
    if name == "max_partitions":
        return f"{v} partitions on {first}, budget {lim}"
    if name == "min_delegated_share":
        return f"share on {first} {v:.3f}, budget >= {lim}"
    if name == "max_transfers":
        return f"{v} transfers, budget {lim}"
    if name == "max_memcpy":
        return f"{v} Memcpy nodes, budget {lim}"
    if name == "accelerated":
        return "NOT accelerated, budget accelerated = true" if lim else "accelerated, budget accelerated = false"
    if name == "forbid_reasons":
        return f"{v} node(s) off {first} for a forbidden reason ({', '.join(lim)})"
    if name == "status":
        return f"status {v}, expected {lim}"
    if name == "expect":
        return "NOT accelerated, expected accelerated" if lim else "accelerated now, expected not"
    return b["message"]


def _failures(result):
    """``[(what, nodes, is_lock)]`` in the order the outputs list them."""
    first = result["providers"][0]
    out = [(_what_budget(b, first), b, False) for b in result["budgets"] if not b["passed"]]
    for r in result["lock"]["rules"]:
        if not r["passed"]:
            words = _LOCK_WORDS.get(r["rule"], r["rule"])
            out.append((f"{words} {r['baseline']} -> {r['now']} since the lock", r, True))
    # the gravest first: off the accelerator altogether, or a session that would fail
    grave = ("accelerated", "expect", "status")
    return sorted(out, key=lambda f: (f[1].get("budget", f[1].get("rule")) not in grave))


def _why(item, result, unfixed):
    """``(line, top reason)``: the reasons behind a failed budget or lock rule (most frequent first;
    for a lock rule, the nodes that left the first provider since the lock), with one example node
    and its detail; ``(None, None)`` when no node explains the failure.  With symbolic dimensions
    left unfixed, ``dynamic_shape`` comes first: at higher levels the nodes it keeps on the CPU
    are rewritten for the CPU (NCHWc) and then counted under other reasons."""
    if item is None or not item["nodes"]:
        return (f"why: the session would fail ({result['status']})", None) if result["status"] != "ok" \
            else (None, None)
    ranked = sorted(item["reasons"].items(), key=lambda kv: not (unfixed and kv[0] == "dynamic_shape"))
    top = ranked[0][0]
    example = next((n for n in item["nodes"] if (n["reason"] or "none") == top), item["nodes"][0])
    detail = f": {example['reasonDetail']}" if example.get("reasonDetail") else ""
    reasons = ", ".join(f"{r} ({c} node{'s' if c > 1 else ''})" for r, c in ranked[:3])
    return f"why: {reasons}; e.g. {example['node']} ({example['opType']}{detail})", top


def _next(result, top, lock_failed):
    rel, hints = result["model"], result["hints"]
    if top == "dynamic_shape" and hints["unfixedDims"]:  # nodes refused for a shape the dims would fix
        sizes = ", ".join(f"{d} = <size>" for d in hints["unfixedDims"])
        step = f"fix the dims: dims = {{{sizes}}} in the check (config line {hints['dimsLine']})"
    else:
        opts = "".join(f" --dim {k}={v}" for k, v in sorted(result["dims"].items()))
        level = f" --level {result['level']}" if result["level"] != "all" else ""
        step = f"partsim blame {rel} -p {','.join(hints['requested'])}{level}{opts} (what to change)"
    if lock_failed:
        return f"next: {step}; or partsim check --update if the change is intended"
    if result.get("expect") is not None:
        return f"next: {step}; or change expect for {rel} (config line {hints['modelLine']})"
    if not result["accelerated"]:
        return (f"next: {step}; or accept it: [check.model.\"{rel}\"] expect = "
                f"{{accelerated = false, reason = \"…\"}}")
    return f"next: {step}; or raise the budget (config line {hints.get('budgetLine', hints['checkLine'])})"


def failure_brief(result):
    """At most three lines for a failed result: what, why (the reason that grew), the next command."""
    failures = _failures(result)
    what, nodes, _ = failures[0]
    more = f" (+{len(failures) - 1} more)" if len(failures) > 1 else ""
    expect = result.get("expect")
    said = f"; expected: {expect['reason']}" if expect is not None else ""
    lines = [f"FAIL {result['check']} {result['model']}: {what}{more}{said}"]
    # the reason that grew: the nodes that left the first provider since the lock, else the budget's
    moved = [i for _, i, lock in failures if lock and i["rule"] == "firstProviderNodes" and i["nodes"]]
    item = (moved or [i for _, i, _ in failures if i["nodes"]] or [None])[0]
    why, top = _why(item, result, result["hints"]["unfixedDims"])
    if why:
        lines.append(why)
    lines.append(_next(result, top, any(lock for _, _, lock in failures)))
    return [_cut(line) for line in lines]


def failure_lines(result):
    """``(what, message)`` for every failed budget and lock rule of one result."""
    out = [(b["budget"], b["message"]) for b in result["budgets"] if not b["passed"]]
    out += [(f"lock {f['rule']}", f["message"]) for f in result["lock"]["failures"]]
    return out


def expectation(result):
    """``"expected not accelerated: <reason>"`` for a model with an ``expect``, else ``""``."""
    e = result.get("expect")
    if not e:
        return ""
    return f"expected {'accelerated' if e['accelerated'] else 'not accelerated'}: {e['reason']}"


@text_renderer
def render_check_table(doc):
    rows = []
    for r in doc["results"]:
        c = r["counts"]
        rows.append([r["check"], r["model"], "pass" if r["passed"] else "FAIL", c["firstProviderNodes"],
                     c["nodeCount"], f"{c['delegatedShare']:.3f}", c["firstProviderPartitions"], c["transfers"],
                     c["memcpyFromHost"] + c["memcpyToHost"], r["lock"]["status"]])
    out = [format_table(["check", "model", "result", "on first", "nodes", "share", "partitions", "transfers",
                         "Memcpy", "lock"], rows, ["<", "<", "<", ">", ">", ">", ">", ">", ">", "<"])]
    failed = [r for r in doc["results"] if not r["passed"]]
    if failed:
        out.append("")
    for r in failed:  # three lines each; every budget and node is in -f json / junit / sarif / markdown
        out.extend(failure_brief(r))
    expected = [r for r in doc["results"] if r["passed"] and r.get("expect")]
    if expected:
        out.append("")
    for r in expected:
        out.append(f"{expectation(r).split(':', 1)[0]}: {r['check']} {r['model']}: {r['expect']['reason']}")
    s = doc["summary"]
    lock = doc["lock"]
    out.append("")
    out.append(f"check: {'PASS' if doc['passed'] else 'FAIL'}  ({s['results'] - s['failed']} of {s['results']} "
               f"passed; {s['checks']} check(s) over {s['models']} model(s); lock {lock['path']} {lock['state']})")
    return "\n".join(out) + "\n"
