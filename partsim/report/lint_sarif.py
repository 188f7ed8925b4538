"""Lint findings as SARIF 2.1.0 (code-scanning tools read it): one result per finding with its file and line
(the writer: :mod:`partsim.report.sarif`)."""

from ..rules.lint import LEVELS, RULES
from .sarif import render_sarif

__all__ = ["render_lint_sarif"]


def render_lint_sarif(files, findings):
    return render_sarif("lint", findings, files, RULES, LEVELS)
