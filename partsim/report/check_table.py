"""``partsim check`` as a table for people: one row per (check, model), then each failure in
three lines (what, why, the next command) and the models accepted by an ``expect``."""

from .text import format_table

__all__ = ["render_check_table", "failure_lines"]


def failure_lines(result):
    """``(what, message)`` for every failed budget and lock rule of one result."""
    out = [(b["budget"], b["message"]) for b in result["budgets"] if not b["passed"]]
    out += [(f"lock {f['rule']}", f["message"]) for f in result["lock"]["failures"]]
    return out


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
        out.extend(r["brief"])
    expected = [r for r in doc["results"] if r["passed"] and r.get("expect")]
    if expected:
        out.append("")
    for r in expected:
        state = "accelerated" if r["expect"]["accelerated"] else "not accelerated"
        out.append(f"expected {state}: {r['check']} {r['model']}: {r['expect']['reason']}")
    s = doc["summary"]
    lock = doc["lock"]
    out.append("")
    out.append(f"check: {'PASS' if doc['passed'] else 'FAIL'}  ({s['results'] - s['failed']} of {s['results']} "
               f"passed; {s['checks']} check(s) over {s['models']} model(s); lock {lock['path']} {lock['state']})")
    return "\n".join(out) + "\n"
