"""The one ORT child process: ``python ort_child.py COMMAND``, one request on stdin, records on stdout.

Every real ONNX Runtime session of partsim runs here, in a process of its own, so that a crash,
a hang or a runaway allocation of ORT or an EP costs a record, never partsim (docs/contract.md §8,
docs/architecture.md "Processes").  The parent is :mod:`partsim.runtime.process`.

COMMAND is one of ``optimize`` (:mod:`child_optimize`), ``observe`` (:mod:`child_observe`),
``outputs`` (:mod:`child_outputs`), ``probe`` (:mod:`child_probe`) and ``facts`` (:mod:`child_facts`:
what this interpreter's ORT is).  ``optimize`` (CPU-only sessions) imports onnxruntime first, since the
parent may start it before its requests are ready, and then makes one session per request line, side by
side; the others read their one request first, because a plugin EP's host must be prepared before ORT is
imported (:func:`plugin_eps.prepare_host`).  Each record is printed as one line.  A request of
another protocol version or shape gets an ``ErrorRecord`` and exit status 3.

Imports only the standard library, onnxruntime (numpy for ``observe``/``outputs``) and the
modules next to this file, so that another interpreter (``--python``) can run it.
"""

import importlib
import os
import sys


def _import_onnxruntime():
    try:
        import onnxruntime
    except ImportError:
        if not sys.flags.no_site:
            raise
        import site  # started with -S (a quick start) where site-packages need site's .pth files

        site.main()
        import onnxruntime
    return onnxruntime


def _providers(command, req):
    if command == "observe":
        return list(req.providers)
    if command == "outputs":
        return [p for run in req.runs for p in run.providers]
    if command == "probe":
        return [req.provider]
    return []


def _die_with_parent():
    """Be killed when partsim is (Linux ``PR_SET_PDEATHSIG``): a parent killed outright cannot kill this
    process itself.  ``False`` when the parent is gone already.  onnxruntime imports ctypes anyway."""
    parent = os.environ.get("PARTSIM_ORT_PARENT")
    if not parent or not sys.platform.startswith("linux"):
        return True
    import ctypes
    import signal

    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # linux/prctl.h: PR_SET_PDEATHSIG = 1
    except (OSError, AttributeError):
        pass
    return str(os.getppid()) == parent  # a parent that died before the prctl: nothing kills this one


def _serve_optimize(ort_protocol, ort):
    """``optimize``: one request a line, each session in a thread of its own as its line comes, records
    printed as they come (each names its request's ``target``); ends when stdin does and every session has
    answered.  ORT releases the GIL while it builds a session, so two sessions (the partitioning graph's and
    the final view's) run side by side in one process, which imports onnxruntime once."""
    import threading

    lock, threads = threading.Lock(), []

    def emit(record):
        with lock:  # one whole line at a time: print() writes the text and its end separately
            sys.stdout.write(ort_protocol.encode(record) + "\n")
            sys.stdout.flush()

    def session(req):
        try:
            for record in importlib.import_module("child_optimize").run(ort, req):
                emit(record)
        except BaseException:  # an error of this script, not ORT's answer: the parent sees the child die
            import traceback

            traceback.print_exc()
            sys.stderr.flush()
            os._exit(1)

    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            req = ort_protocol.decode(line, ort_protocol.OptimizeRequest)
        except ort_protocol.ProtocolError as exc:
            emit(ort_protocol.ErrorRecord(str(exc)))
            return 3
        threads.append(threading.Thread(target=session, args=(req,)))
        threads[-1].start()
    for thread in threads:
        thread.join()
    return 0


def main(argv):
    import ort_protocol

    if not _die_with_parent():
        return 3

    command = argv[1] if len(argv) == 2 else None
    if command not in ort_protocol.REQUESTS:
        print(f"usage: ort_child.py {{{','.join(ort_protocol.COMMANDS)}}} < request", file=sys.stderr)
        return 3
    if command == "optimize":  # onnxruntime first, as a caller may start this child before its requests are ready
        return _serve_optimize(ort_protocol, _import_onnxruntime())
    ort = None
    try:
        req = ort_protocol.decode(sys.stdin.read(), ort_protocol.REQUESTS[command])
    except ort_protocol.ProtocolError as exc:
        print(ort_protocol.encode(ort_protocol.ErrorRecord(str(exc))), flush=True)
        return 3
    if ort is None:
        import plugin_eps

        plugin_eps.prepare_host(_providers(command, req))  # the devices ORT discovers must be there
        ort = _import_onnxruntime()
    for record in importlib.import_module(f"child_{command}").run(ort, req):
        print(ort_protocol.encode(record), flush=True)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    code = main(sys.argv)
    # the answer is out; tearing sessions and the interpreter down took ~0.03 s the caller waited for
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
