"""Lint findings as JSON: the files checked, every finding, the error and warning counts."""

from .output import to_json

__all__ = ["render_lint_json"]


def render_lint_json(files, findings):
    return to_json({"files": [str(f) for f in files], "findings": [f.as_dict() for f in findings],
                    "errors": sum(f.level == "error" for f in findings),
                    "warnings": sum(f.level == "warning" for f in findings)})
