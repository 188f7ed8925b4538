"""The child's ``observe`` sub-command: one real ONNX Runtime session, where its nodes went.

Runs inside :mod:`partsim.runtime.ort_child` for :func:`partsim.runtime.observe.run_session`,
possibly under another interpreter (another ORT build): the standard library, numpy and
onnxruntime only.
"""

import json
import os
import re
import sys
import tempfile
import time
import warnings
from dataclasses import fields

if __package__:  # imported as partsim.runtime.child_observe (the tests)
    from .ort_protocol import ObserveRecord
else:  # run by ort_child.py, the modules beside it top-level
    from ort_protocol import ObserveRecord


def _inputs(req):
    """The feeds the parent wrote (seeded by :func:`partsim.numerics.inputs.seeded_inputs`, or the
    user's ``--inputs``): one generator of inputs for every command, and no pickles."""
    import numpy as np

    if req.feed_error:
        raise ValueError(req.feed_error)
    with np.load(req.inputs_npz, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


_PLACE_HEADER = re.compile(r"Node\(s\) placed on \[(\w+)\]\. Number of nodes: (\d+)")
_PLACE_ALL = re.compile(r"All nodes placed on \[(\w+)\]\. Number of nodes: (\d+)")
_PLACE_ROW = re.compile(r"^\s+(\S+) \((.*)\)\s*$")


def parse_placement(text):
    """ORT's VERBOSE "Node placements" block -> {EP: {"count": n, "nodes": [[op, name], ...] | "all"}}."""
    out, current = {}, None
    for line in text.splitlines():
        m = _PLACE_ALL.search(line)
        if m:
            out.setdefault(m.group(1), {"count": int(m.group(2)), "nodes": "all"})
            current = None
            continue
        m = _PLACE_HEADER.search(line)
        if m:
            current = m.group(1)
            out[current] = {"count": int(m.group(2)), "nodes": []}
            continue
        row = _PLACE_ROW.match(line.split("] ", 1)[-1] if "] " in line else line)
        if current and row and line.startswith(" "):
            out[current]["nodes"].append([row.group(1), row.group(2)])
        elif not line.startswith(" "):
            current = None
    return out


def _redirect_stderr(path):
    if path is None:
        return None
    sys.stderr.flush()
    saved = os.dup(2)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(fd, 2)
    os.close(fd)
    return saved


def _restore_stderr(saved):
    if saved is not None:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


def _read(path):
    if not path:
        return ""
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def run(ort, req):
    """The session ``req`` (:class:`ort_protocol.ObserveRequest`) asks for; yields its
    :class:`ort_protocol.ObserveRecord`."""
    if hasattr(ort, "preload_dlls") and req.preload:
        ort.preload_dlls()
    rec = {"runtime": f"onnxruntime {ort.__version__}", "available": ort.get_available_providers(),
           "requested": list(req.providers), "level": req.level}
    # the profile and the VERBOSE log are written here; the folder goes with the child's work
    with tempfile.TemporaryDirectory(prefix="partsim-ort-") as tmp:
        _observe(ort, req, rec, tmp)
    known = {f.name for f in fields(ObserveRecord)}
    plugin_keys = {k: rec.pop(k) for k in list(rec) if k not in known}  # qnn/qnnOptions, webgpu/... (plugin_eps)
    yield ObserveRecord(**rec, plugin_keys=plugin_keys or None)


def _observe(ort, req, rec, tmp):
    """Create (and run) the session, filling ``rec``; the caller prints it."""
    so = ort.SessionOptions()
    so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, rec["level"])
    so.enable_profiling = bool(req.run)
    so.profile_file_prefix = os.path.join(tmp, "prof")
    so.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
    so.intra_op_num_threads = int(req.threads)
    for name, value in sorted((req.dims or {}).items()):  # --dim: the same graph partsim predicts
        so.add_free_dimension_override_by_name(str(name), int(value))
    log_path = None
    if req.placement_log:
        # ORT's VERBOSE log names where each node went ("Node placements"); it goes to fd 2,
        # so fd 2 points at a file while the session is created
        so.log_severity_level = 0
        so.log_verbosity_level = 0
        log_path = os.path.join(tmp, "ort.log")
    import plugin_eps

    plugin = plugin_eps.plugin_provider(ort, list(req.providers))
    if plugin:  # a plugin EP: registered, then given by device
        done = plugin_eps.configure(ort, so, plugin, req.ep_options)
        rec.update({k: v for k, v in done.items() if k not in ("ok", "error")})
        if not done["ok"]:
            rec.update({"state": "create_failed", "error": done["error"], "warnings": [], "placement": {},
                        "unavailable": True})
            return
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t0 = time.time()
        saved = _redirect_stderr(log_path)
        try:
            sess = plugin_eps.create_session(ort, req.model, so, list(req.providers), plugin)
        except Exception as exc:  # the session failed: that is an observation too
            _restore_stderr(saved)
            rec["state"] = "create_failed"
            rec["error"] = " ".join(str(exc).split())[:600]
            rec["warnings"] = [str(w.message) for w in caught]
            rec["placement"] = parse_placement(_read(log_path))
            return
        _restore_stderr(saved)
        so.log_severity_level = 2
    rec["placement"] = parse_placement(_read(log_path))
    rec["create_s"] = round(time.time() - t0, 4)
    rec["warnings"] = [" ".join(str(w.message).split()) for w in caught]
    rec["granted"] = sess.get_providers()
    try:
        rec["assignment"] = [[g.ep_name, [[n.name, n.op_type, n.domain] for n in g.get_nodes()]]
                             for g in sess.get_provider_graph_assignment_info()]
    except Exception as exc:
        rec["assignment_error"] = str(exc)[:200]
    if req.run:
        try:
            outs = sess.run(None, _inputs(req))
            rec["outputs"] = {o.name: list(map(int, v.shape)) for o, v in zip(sess.get_outputs(), outs)}
        except Exception as exc:
            rec["run_error"] = " ".join(str(exc).split())[:600]
        prof = sess.end_profiling()
        nodes = []
        try:
            with open(prof) as f:
                for ev in json.load(f):
                    if ev.get("cat") == "Node" and ev.get("name", "").endswith("_kernel_time"):
                        a = ev.get("args", {})
                        nodes.append([ev["name"][: -len("_kernel_time")], a.get("op_name"), a.get("provider")])
        finally:
            try:
                os.remove(prof)
            except OSError:
                pass
        rec["profile_nodes"] = nodes
    rec["state"] = "ok"

