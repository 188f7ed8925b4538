"""Lint findings as SARIF 2.1.0 (code-scanning tools read it): one run, each rule used once, one result
per finding with its file and line."""

from pathlib import Path

from ..rules.lint import LEVELS, RULES
from .output import to_json

__all__ = ["render_lint_sarif"]


def render_lint_sarif(files, findings):
    from .. import __version__

    used = sorted({f.rule for f in findings})
    rules = [{"id": r, "shortDescription": {"text": RULES.get(r, r)},
              "defaultConfiguration": {"level": LEVELS.get(r, "error")}} for r in used]
    index = {r: k for k, r in enumerate(used)}
    results = [{
        "ruleId": f.rule, "ruleIndex": index[f.rule], "level": f.level,
        "message": {"text": f.message},
        "locations": [{"physicalLocation": {"artifactLocation": {"uri": Path(f.file).as_posix()},
                                            "region": {"startLine": f.line}}}],
    } for f in findings]
    return to_json({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "partsim-lint", "version": __version__,
                                "informationUri": "https://partsim.invalid/", "rules": rules}},
            "artifacts": [{"location": {"uri": Path(str(f)).as_posix()}} for f in files],
            "results": results,
        }],
    })
