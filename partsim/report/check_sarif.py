"""``partsim check`` as SARIF 2.1.0 (code-scanning UIs): one result per exceeded budget or lock
regression, located at the model file (the writer: :mod:`partsim.report.sarif`)."""

from ..rules.lint import Finding
from .sarif import render_sarif

__all__ = ["render_check_sarif"]

_RULES = {
    "max_partitions": "the first provider has more partitions than the budget",
    "min_delegated_share": "too few nodes on the first provider",
    "max_transfers": "more boundary transfers than the budget",
    "max_memcpy": "more Memcpy nodes than the budget",
    "accelerated": "acceleration is not as required",
    "forbid_reasons": "nodes left the first provider for a forbidden reason",
    "status": "the session status is not as required",
    "lock/firstProviderNodes": "the first provider lost nodes since the lock",
    "lock/accelerated": "the model is no longer accelerated since the lock",
    "lock/status": "the session status changed since the lock",
    "lock/partitionCount": "accelerator partitions grew since the lock",
    "lock/fragments": "fragments grew since the lock",
    "lock/transfers": "transfers grew since the lock",
    "lock/memcpyFromHost": "Memcpy nodes from host grew since the lock",
    "lock/memcpyToHost": "Memcpy nodes to host grew since the lock",
    "upgrade": "the ORT upgrade (check --upgrade-to) costs first-provider nodes or breaks the session",
}


def render_check_sarif(doc):
    findings = []
    for r in doc["results"]:
        for b in r["budgets"]:
            if not b["passed"]:
                findings.append(Finding(r["model"], None, b["budget"], "error", f"[{r['check']}] {b['message']}"))
        for f in r["lock"]["failures"]:
            findings.append(Finding(r["model"], None, "lock/" + f["rule"], "error", f"[{r['check']}] {f['message']}"))
    return render_sarif("check", findings, sorted({r["model"] for r in doc["results"]}), _RULES)
