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
    "SessionError",
]

EXIT_OK = 0
EXIT_FAIL = 1
EXIT_ERROR = 2
MAX_MESSAGE = 600  # characters of message after the file name


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
            # a file name is shown as it is, except line breaks and other control whitespace, escaped
            name = "".join(c if c == " " or (c.isprintable() and not c.isspace()) else ascii(c)[1:-1]
                           for c in self.path)
            where = name + (f":{self.line}" if self.line else "") + ": "
        message = " ".join(str(self.message).split())  # always one line
        if len(message) > MAX_MESSAGE:  # a rejected value can be huge (a whole YAML list, a long name)
            message = message[:MAX_MESSAGE] + " …"
        return where + message


class ModelError(PartsimError):
    """The ONNX model cannot be read or is not a valid graph."""


class RuleTableError(PartsimError):
    """A capability rule table is malformed."""


class UsageError(PartsimError):
    """A command-line option or combination makes no sense."""


class ObservationError(PartsimError):
    """An observation, profile or receipt file is malformed."""


class SessionError(PartsimError):
    """An ORT session partsim needed timed out or crashed, in a fresh child too: not a fact about
    the model, so no prediction is made from it."""
