"""Run real ONNX Runtime sessions in an isolated child process, with a timeout.

A crashing or hanging EP must not take partsim down: each session runs in
``partsim/ort_child.py`` under ``sys.executable`` or another interpreter
(``--python``), and its fate is recorded as ``ok``, ``create_failed``, ``crashed``
or ``timeout``.
"""

import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from .observation import LEVELS, normalize_level, observation_from_records

__all__ = ["run_session", "observation_from_run", "memory_ceiling", "DEFAULT_MEMORY_LIMIT"]

CHILD = Path(__file__).with_name("ort_child.py")
_BANNER = re.compile(r"EP Error (.*?) when using")


# Address-space ceiling of a session's child process (SPEC section 8): a model or EP that
# tries to allocate without bound fails in the child (recorded as crashed) instead of
# taking the machine down.  Generous, because EPs reserve address space they never touch.
DEFAULT_MEMORY_LIMIT = 32 * 1024**3


def memory_ceiling(limit):
    def apply():
        try:
            import resource

            soft, hard = resource.getrlimit(resource.RLIMIT_AS)
            cap = limit if hard == resource.RLIM_INFINITY else min(limit, hard)
            resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
        except (ImportError, ValueError, OSError):
            pass  # not on this platform: the timeout still bounds the run
    return apply


def run_session(model, providers, level="disable", python=None, timeout=120, seed=0, dims=None,
                inputs_npz=None, run=True, hook=None, threads=1, memory_limit=DEFAULT_MEMORY_LIMIT):
    """Create (and run) one session in a child process; return its record (a dict).

    The child gets ``timeout`` seconds and an address-space ceiling of ``memory_limit``
    bytes; a crash, a hang or running out of memory is recorded, never raised.
    """
    with tempfile.TemporaryDirectory(prefix="partsim-feeds-") as tmp:
        req = {"model": str(model), "providers": list(providers), "level": LEVELS[normalize_level(level)],
               "inputs_npz": str(inputs_npz) if inputs_npz else None, "run": run, "hook": hook,
               "threads": threads}
        if run and not inputs_npz:
            # seeded feeds made here, by the same code as every numeric command, and handed over as .npz
            from ..errors import PartsimError
            from ..numerics.inputs import save_npz
            from ..numerics.sessions import prepare_feeds

            try:
                feeds = prepare_feeds(model, seed, None, dims)
            except PartsimError as exc:  # e.g. a string input: the session is still observed, not run
                req["feed_error"] = exc.message
            else:
                req["inputs_npz"] = str(Path(tmp) / "feeds.npz")
                save_npz(req["inputs_npz"], feeds)
        return _run_child(req, providers, python, timeout, memory_limit)


def _run_child(req, providers, python, timeout, memory_limit):
    try:
        proc = subprocess.run([python or sys.executable, str(CHILD)], input=json.dumps(req), capture_output=True,
                              text=True, timeout=timeout,
                              preexec_fn=memory_ceiling(memory_limit) if memory_limit else None)
    except subprocess.TimeoutExpired:
        return {"state": "timeout", "requested": list(providers), "error": f"no result within {timeout} s"}
    except OSError as exc:
        return {"state": "crashed", "requested": list(providers), "error": f"cannot start {python}: {exc}"}
    last = proc.stdout.strip().splitlines()[-1:] if proc.stdout.strip() else []
    try:
        rec = json.loads(last[0]) if last else None
    except ValueError:
        rec = None
    if proc.returncode != 0 or rec is None:
        tail = " ".join(proc.stderr.strip().splitlines()[-3:])[:400]
        return {"state": "crashed", "requested": list(providers), "returncode": proc.returncode, "error": tail}
    rec["stderr_banners"] = _BANNER.findall(proc.stdout + "\n" + proc.stderr)
    return rec


def observation_from_run(rec, level):
    """Turn a child record into a partsim observation (see :mod:`partsim.runtime.observation`).

    A session that failed gives an observation without nodes, with its ``state``.
    """
    obs = observation_from_records(rec, rec.get("runtime", ""), "this machine", level=level, strict=False)
    obs.update({"state": rec.get("state"), "warnings": rec.get("warnings", []),
                "placementLog": rec.get("placement", {})})
    return obs
