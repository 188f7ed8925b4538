"""Errors partsim reports to its users, and the exit codes they map to.

Every error a user can cause (a bad model, a bad rule table, a bad option) is a
:class:`PartsimError`; the CLI prints it as one line on stderr and exits 2.
Anything else is a bug and keeps its traceback.
"""

__all__ = [
    "EXIT_OK",
    "EXIT_FAIL",
    "EXIT_ERROR",
    "PartsimError",
    "ModelError",
    "RuleTableError",
    "UsageError",
    "ObservationError",
]

EXIT_OK = 0
EXIT_FAIL = 1
EXIT_ERROR = 2


class PartsimError(Exception):
    """A problem with the user's input: printed as one line, exit code 2.

    Parameters
    ----------
    message : str
        What is wrong, in one line.
    path : str, optional
        The file concerned; it is printed first so the user knows where to look.
    line : int, optional
        1-based line in that file, where known.
    """

    def __init__(self, message, path=None, line=None):
        super().__init__(message)
        self.message = message
        self.path = None if path is None else str(path)
        self.line = line

    def __str__(self):
        where = ""
        if self.path is not None:
            where = self.path + (f":{self.line}" if self.line else "") + ": "
        text = where + self.message
        return " ".join(text.split())  # always one line


class ModelError(PartsimError):
    """The ONNX model cannot be read or is not a valid graph."""


class RuleTableError(PartsimError):
    """A capability rule table is malformed."""


class UsageError(PartsimError):
    """A command-line option or combination makes no sense."""


class ObservationError(PartsimError):
    """An observation, profile or receipt file is malformed."""
