"""partsim's command line: ``partsim <command> …``.

Each command lives in its own module with ``add_parser(subparsers)`` and a
``run(args) -> int`` returning the exit code.
"""

import argparse
import importlib
import sys

from ..errors import EXIT_ERROR, PartsimError

__all__ = ["main", "COMMANDS"]

COMMANDS = ("simulate", "verify", "rules")

DESCRIPTION = """\
partsim predicts how ONNX Runtime will split a model across execution providers
(which node runs where, how many partitions, copies and conversions) before you
touch the device, and checks the prediction against real ORT sessions.

Exit codes: 0 ok, 1 a check failed, 2 bad input or usage.
"""


def build_parser():
    parser = argparse.ArgumentParser(prog="partsim", description=DESCRIPTION,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    from .. import __version__
    parser.add_argument("--version", action="version", version=f"partsim {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMANDS:
        module = importlib.import_module(f".{name.replace('-', '_')}", __name__)
        module.add_parser(sub)
    return parser


class _Parser(argparse.ArgumentParser):
    pass


def main(argv=None):
    """Run the CLI; returns the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: usage errors exit 2, --help exits 0
        return exc.code if isinstance(exc.code, int) else EXIT_ERROR
    try:
        return args.run(args)
    except PartsimError as exc:
        print(f"partsim: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("partsim: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
