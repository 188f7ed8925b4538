"""``partsim check`` as a table for people: one row per (check, model), then every failure."""

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
    for r in failed:
        for what, message in failure_lines(r):
            out.append(f"FAIL {r['check']} {r['model']}: {what}: {message}")
    s = doc["summary"]
    lock = doc["lock"]
    out.append("")
    out.append(f"check: {'PASS' if doc['passed'] else 'FAIL'}  ({s['results'] - s['failed']} of {s['results']} "
               f"passed; {s['checks']} check(s) over {s['models']} model(s); lock {lock['path']} {lock['state']})")
    return "\n".join(out) + "\n"
