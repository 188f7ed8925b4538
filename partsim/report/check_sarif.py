"""``partsim check`` as SARIF 2.1.0 (code-scanning UIs): one result per exceeded budget or lock
regression, located at the model file."""

from .output import to_json

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
    from .. import __version__

    found = []
    for r in doc["results"]:
        for b in r["budgets"]:
            if not b["passed"]:
                found.append((b["budget"], r, b["message"]))
        for f in r["lock"]["failures"]:
            found.append(("lock/" + f["rule"], r, f["message"]))
    used = sorted({rule for rule, _, _ in found})
    index = {rule: k for k, rule in enumerate(used)}
    results = [{"ruleId": rule, "ruleIndex": index[rule], "level": "error",
                "message": {"text": f"[{r['check']}] {message}"},
                "locations": [{"physicalLocation": {"artifactLocation": {"uri": r["model"]}}}]}
               for rule, r, message in found]
    rules = [{"id": rule, "shortDescription": {"text": _RULES.get(rule, rule)},
              "defaultConfiguration": {"level": "error"}} for rule in used]
    sarif = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "partsim-check", "version": __version__,
                                "informationUri": "https://partsim.invalid/", "rules": rules}},
            "artifacts": [{"location": {"uri": m}} for m in sorted({r["model"] for r in doc["results"]})],
            "results": results,
        }],
    }
    return to_json(sarif)
