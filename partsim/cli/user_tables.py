"""A warning on stderr when a command uses a user's rule table (``-r``) that ``partsim lint`` finds errors in."""

import sys

__all__ = ["warn_about_user_tables"]


def warn_about_user_tables(paths, stream=None):
    """Lint the user's tables; one ``partsim: warning:`` line per table with lint errors (the command
    ran with the table as written).  Called after the command succeeded, so tables that failed to load
    were already its error."""
    from ..errors import PartsimError
    from ..rules.lint import lint_paths

    stream = stream or sys.stderr
    for path in paths:
        try:
            files, findings = lint_paths([path])
        except PartsimError:
            continue
        for f in files:
            errors = [x for x in findings if x.file == str(f) and x.level == "error"]
            if errors:
                first = errors[0]
                n = len(errors)
                print(f"partsim: warning: {f} has {n} lint error{'' if n == 1 else 's'}, first {f}:{first.line}: "
                      f"{first.message}; run partsim lint {f}", file=stream)
