"""Findings as SARIF 2.1.0 (code-scanning UIs read it): one run, each rule used listed once, one result per
finding located at its file (and line, where it has one).  ``partsim lint`` and ``partsim check`` both write
through :func:`render_sarif`, over the one finding type :class:`partsim.rules.lint.Finding`."""

from pathlib import Path

from .output import to_json

__all__ = ["render_sarif"]


def render_sarif(tool, findings, artifacts, rule_text, rule_level=None):
    """SARIF text of ``findings`` (:class:`~partsim.rules.lint.Finding`) found by ``partsim-<tool>`` in
    ``artifacts`` (paths); ``rule_text`` describes a rule, ``rule_level`` gives its default level ("error")."""
    from .. import __version__

    rule_level = rule_level or {}
    used = sorted({f.rule for f in findings})
    rules = [{"id": r, "shortDescription": {"text": rule_text.get(r, r)},
              "defaultConfiguration": {"level": rule_level.get(r, "error")}} for r in used]
    index = {r: k for k, r in enumerate(used)}
    results = []
    for f in findings:
        location = {"artifactLocation": {"uri": Path(f.file).as_posix()}}
        if f.line is not None:
            location["region"] = {"startLine": f.line}
        results.append({"ruleId": f.rule, "ruleIndex": index[f.rule], "level": f.level,
                        "message": {"text": f.message}, "locations": [{"physicalLocation": location}]})
    return to_json({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": f"partsim-{tool}", "version": __version__,
                                "informationUri": "https://partsim.invalid/", "rules": rules}},
            "artifacts": [{"location": {"uri": Path(str(a)).as_posix()}} for a in artifacts],
            "results": results,
        }],
    })
