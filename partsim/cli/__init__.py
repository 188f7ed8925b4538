"""partsim's command line: ``partsim <command> …``.

Each command lives in its own module with ``add_parser(subparsers)`` and a
``run(args) -> int`` returning the exit code.
"""

import argparse
import gc
import importlib
import os
import shutil
import signal
import sys
import tempfile
from pathlib import Path

from ..errors import EXIT_ERROR, PartsimError, UsageError

__all__ = ["main", "run", "COMMANDS"]

COMMANDS = ("simulate", "render", "verify", "check", "observe", "rules", "lint", "synth", "blame", "whatif",
            "bundle-id", "compare", "layer-error", "determinism", "run-compare", "receipt", "gate", "diff")

DESCRIPTION = """\
partsim predicts how ONNX Runtime will split a model across execution providers
(which node runs where, how many partitions, copies and conversions) before you
touch the device, and checks the prediction against real ORT sessions.

Exit codes: 0 ok, 1 a check failed, 2 bad input or usage.

words used in the output (docs/contract.md defines them exactly):
"""


ENVIRONMENT = """\
environment:
  PARTSIM_CACHE_DIR    where parsed tables and ORT optimizer results are kept (~/.cache/partsim)
  PARTSIM_NO_CACHE=1   neither read nor write that cache (as --no-cache)
"""

# commands defined in another command's module
_HOSTED = {"providers": "observe", "doctor": "observe"}


def build_parser(command=None):
    """The argument parser; with ``command`` (a name from the command line), only that
    command's module is imported (each pulls in its own dependencies: a plain
    ``partsim simulate`` need not load the JUnit writer or the ORT runner)."""
    from ..report.glossary import glossary_text

    parser = argparse.ArgumentParser(prog="partsim", description=DESCRIPTION + glossary_text(width=80) + "\n",
                                     epilog=ENVIRONMENT, formatter_class=argparse.RawDescriptionHelpFormatter)
    from .. import __version__
    parser.add_argument("--version", action="version", version=f"partsim {__version__}")
    parser.add_argument("--progress", choices=("auto", "always", "never"), default="auto",
                        help="stage lines with timings on stderr for long runs (auto: when stderr is a terminal)")
    parser.add_argument("--no-cache", action="store_true",
                        help="neither read nor write partsim's cache (parsed tables, ORT optimizer results; "
                             "~/.cache/partsim, moved by PARTSIM_CACHE_DIR; same as PARTSIM_NO_CACHE=1)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    names = COMMANDS
    if command in COMMANDS or command in _HOSTED:
        names = (_HOSTED.get(command, command),)
    for name in names:
        module = importlib.import_module(f".{name.replace('-', '_')}", __name__)
        if name == _HOSTED.get(command):
            getattr(module, f"add_{command}_parser")(sub)
            continue
        module.add_parser(sub)
        if names is COMMANDS:
            for hosted in sorted(h for h, host in _HOSTED.items() if host == name):
                getattr(module, f"add_{hosted}_parser")(sub)
    return parser


def _command_of(argv):
    """The command named on the command line (the first word after the global options), or None."""
    k = 0
    while k < len(argv):
        a = argv[k]
        if a == "--progress":
            k += 2
            continue
        if a == "--no-cache":
            k += 1
            continue
        if a.startswith("-"):
            return None  # --help, --version, --progress=…: the full parser answers
        return a
    return None


def _innermost_parser(parser, args):
    """The (sub)parser of the command that ``args`` ran: ``partsim rules show`` -> the ``show`` parser."""
    while True:
        sub = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
        name = getattr(args, sub.dest, None) if sub is not None else None
        if name not in (sub.choices if sub is not None else {}):
            return parser
        parser = sub.choices[name]


# options whose values are files partsim reads (docs/contract.md §8: input files are never modified)
_INPUT_OPTIONS = ("model", "rules", "observation", "config", "inputs", "prediction", "receipt", "fp32_model",
                  "quant_model", "expected", "require")


def _refuse_overwriting_inputs(args):
    """``-o`` naming one of the command's input files is refused before anything runs."""
    output = getattr(args, "output", None)
    if output in (None, "-"):
        return
    out = Path(output)
    try:
        if not out.exists():
            return
        for opt in _INPUT_OPTIONS:
            value = getattr(args, opt, None)
            values = value if isinstance(value, (list, tuple)) else [value]
            for v in values:
                if not isinstance(v, (str, Path)) or not v:
                    continue
                src = Path(v)
                candidates = sorted(src.glob("*.yaml")) if src.is_dir() else [src]
                if any(c.exists() and os.path.samefile(c, out) for c in candidates):
                    what = "MODEL" if opt == "model" else "--" + opt.replace("_", "-")
                    raise UsageError(f"output file is also an input ({what}); partsim never overwrites "
                                     "its inputs", output)
    except OSError:
        return  # the command itself reports unreadable paths


# options whose values are files a command writes (besides the -o of every command)
_OUTPUT_OPTIONS = ("output", "report", "svg")


def _check_output_targets(args):
    """Every file the command will write is checked before any work: a device, a FIFO, a folder or a
    missing folder is refused (exit 2) while nothing is written yet (:func:`partsim.report.output.output_target`)."""
    from ..report.output import output_target

    for opt in _OUTPUT_OPTIONS:
        value = getattr(args, opt, None)
        if isinstance(value, (str, Path)) and value not in ("", "-"):
            output_target(value)


def _without_cache(args):
    """Run the command with ``PARTSIM_NO_CACHE=1`` (read by :mod:`partsim.io.cache`, inherited by
    child processes), restored afterwards for in-process callers."""
    saved = os.environ.get("PARTSIM_NO_CACHE")
    os.environ["PARTSIM_NO_CACHE"] = "1"
    try:
        return _run_command(args)
    finally:
        if saved is None:
            os.environ.pop("PARTSIM_NO_CACHE", None)
        else:
            os.environ["PARTSIM_NO_CACHE"] = saved


def _run_command(args):
    from ..versions import selected

    with selected(getattr(args, "ort", None), getattr(args, "ort_python", None)):  # --ort, --python: another ORT
        code = args.run(args)
    if args.command != "lint" and getattr(args, "rules", None):
        from .user_tables import warn_about_user_tables

        warn_about_user_tables(args.rules)  # after the run: a failed run prints its one error line only
    return code


class _Lifetime:
    """What one command must not leave behind, and SIGTERM handled so that it does not.

    The command's temporary files (its own, its ORT children's folders) all go in one folder of its own
    (``tempfile.tempdir`` and ``TMPDIR`` while it runs), removed at the end whatever happened.  Where
    nobody chose a SIGTERM handler (Python's default ends the process leaving its children running and
    its files in place), SIGTERM kills the command's ORT children, removes that folder and the outputs
    half written, and exits 143.  It does not unwind the command with an exception: one raised inside an
    extension module's import (``import onnx``) aborts the interpreter."""

    def __init__(self):
        self.saved = tempfile.tempdir, os.environ.get("TMPDIR")
        try:
            self.tmp = tempfile.mkdtemp(prefix="partsim-")
        except OSError:
            self.tmp = None  # no temporary folder at all: the command says so where it needs one
        else:
            tempfile.tempdir = os.environ["TMPDIR"] = self.tmp
        self.sigterm_set, self.pid = False, os.getpid()
        try:
            if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
                signal.signal(signal.SIGTERM, self._terminated)
                self.sigterm_set = True
        except (ValueError, AttributeError):  # not the main thread, or no SIGTERM on this platform
            pass

    def _terminated(self, _signum, _frame):
        if os.getpid() != self.pid:  # a forked worker (check --jobs): its ORT children die with it
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)
            return
        process = sys.modules.get("partsim.runtime.process")  # no import inside a signal handler
        if process is not None:
            process.kill_all()
        workers = sys.modules.get("multiprocessing")
        for worker in workers.active_children() if workers is not None else ():  # check --jobs
            worker.kill()  # its ORT children die with it (ort_child.py)
        output = sys.modules.get("partsim.report.output")
        for tmp in list(output.PENDING if output is not None else ()):
            try:
                os.unlink(tmp)
            except OSError:
                pass
        if self.tmp is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)
        os.write(2, b"partsim: terminated\n")
        os._exit(128 + signal.SIGTERM)

    def end(self):
        if self.sigterm_set:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
        if self.tmp is None:
            return
        tempfile.tempdir = self.saved[0]
        if self.saved[1] is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = self.saved[1]
        shutil.rmtree(self.tmp, ignore_errors=True)


# options after which ``simulate`` begins no ORT session at once, or begins it elsewhere (another
# interpreter, fixed dimensions, provider options, the checker's mode): no child is started early for them
_NO_PRESTART = ("--ort", "--python", "--dim", "--ep-option", "--compat", "--optimize", "-h", "--help")


def _prestart(argv):
    """``simulate``'s ORT optimizer children, started before the command line is parsed and the rest of
    partsim imported (~0.1 s): the sessions they make are most of a cold run on a two-core machine
    (benchmarks/README.md).  Two at ORT's default level (the partitioning and final views' sessions),
    one at ``basic``, none for ``--level disable`` or the options of :data:`_NO_PRESTART`; a guess the
    parsed command does not confirm is closed by :func:`partsim.api.predict`."""
    command = _command_of(argv)
    if command != "simulate":
        return []
    words = argv[argv.index(command) + 1:]
    level = "all"
    for k, word in enumerate(words):
        if word.startswith(_NO_PRESTART):
            return []
        if word == "--level" and k + 1 < len(words):
            level = words[k + 1]
        elif word.startswith("--level="):
            level = word.split("=", 1)[1]
    count = {"all": 2, "extended": 2, "basic": 1}.get(level, 0)
    if not count:
        return []
    from ..runtime.process import optimizer_children

    return optimizer_children(count)


def main(argv=None):
    """Run the CLI; returns the exit code."""
    argv = sys.argv[1:] if argv is None else list(argv)
    gc_was_enabled = gc.isenabled()
    lifetime = _Lifetime()
    prestarted = _prestart(argv) if lifetime.tmp is not None else []
    try:
        parser = build_parser(_command_of(argv))
        try:
            args, extra = parser.parse_known_args(argv)
            if extra:  # the command's own usage, not the program's, says what it takes
                _innermost_parser(parser, args).error(f"unrecognized arguments: {' '.join(extra)}")
        except SystemExit as exc:  # argparse: usage errors exit 2, --help exits 0
            return exc.code if isinstance(exc.code, int) else EXIT_ERROR
        args.prestarted = prestarted
        _refuse_overwriting_inputs(args)
        _check_output_targets(args)
        from ..progress import configure

        configure(args.progress)
        # A command builds large object graphs (a node, value and edge objects per tensor) and
        # frees them at exit: the cyclic GC only rescans them, ~25 % of the time on big models.
        gc.disable()
        if args.no_cache:
            return _without_cache(args)
        return _run_command(args)
    except PartsimError as exc:
        print(f"partsim: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("partsim: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    finally:
        for child in prestarted:  # used and closed by the command, or never used: none outlives it
            child.close()
        lifetime.end()
        if gc_was_enabled:  # main() in a caller's process (tests, scripts) leaves the collector as it found it
            gc.enable()


def run():
    """The ``partsim`` program: :func:`main`, then exit without tearing the interpreter down.

    A command leaves millions of objects behind on a big model (a million-node IR is
    ~2 GB); freeing them one by one at interpreter shutdown took ~12 % of the run.  Every
    output file is written and closed by then, so the process flushes its standard
    streams and ends at once (``os._exit``).  In-process callers use :func:`main`.  Every ORT
    child the command started has been killed by then (:mod:`partsim.runtime.process`).
    """
    code = main()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (BrokenPipeError, ValueError, OSError):
            pass  # a reader that went away (partsim ... | head): nothing left to say to it
    os._exit(code if isinstance(code, int) else EXIT_ERROR)
