"""Lint findings as text: ``file:line: level[rule] message``, then the totals."""

from .text import plural
from .escape import text_renderer

__all__ = ["render_lint_text"]


@text_renderer
def render_lint_text(files, findings):
    """One line per finding (as compilers print them), then the count of files, errors and warnings."""
    lines = [f"{f.file}:{f.line}: {f.level}[{f.rule}] {f.message}" for f in findings]
    errors = sum(f.level == "error" for f in findings)
    warnings = len(findings) - errors
    lines.append(f"{plural(len(files), 'file')} checked: {plural(errors, 'error')}, {plural(warnings, 'warning')}")
    return "\n".join(lines) + "\n"
