"""The child's ``outputs`` sub-command: one model under several session configurations, outputs saved.

Runs inside :mod:`partsim.runtime.ort_child` for :func:`partsim.runtime.sessions.run_configs`,
possibly under another interpreter (another ORT build such as onnxruntime-openvino): the
standard library, numpy and onnxruntime only.  The request is an
:class:`ort_protocol.OutputsRequest`, each run an :class:`ort_protocol.OutputsRun`.

Optional per run (the lifecycle matrix of ``partsim receipt``): ``provider_options``
(a list parallel to ``providers``, one dict each) and ``invocations``
(``[{"name": str, "inputs_npz": path}]``): run the same session once per entry, in
order, writing ``<tag>~<name>.npz``; an empty list creates the session and runs
nothing.  The record then has ``invocations: [{name, ok, inputDigest, outputs, error}]``
and ``invocationCompleted`` is the state of the first invocation.

For every run it writes ``<out_dir>/<tag>.npz`` (the outputs, keyed by output name); the
:class:`ort_protocol.OutputsRecord` then holds a record per run:
the delegate stages (availabilityChecked, delegateCreated, prepareCompleted,
invocationCompleted; each ``ok``/``failed``/``skipped``), granted providers,
nodes per provider, the feeds' inputDigest and the raw error text (the parent maps
it to a finite set of reasons and never shows it as a state).
"""

import hashlib

if __package__:  # imported as partsim.runtime.child_outputs (the tests)
    from . import plugin_eps
    from .ort_protocol import OutputsRecord
else:  # run by ort_child.py, the modules beside it top-level
    import plugin_eps
    from ort_protocol import OutputsRecord


def _digest(feeds):
    # same definition as partsim.numerics.inputs.input_digest (kept in step by a test)
    h = hashlib.sha256()
    for name in sorted(feeds):
        a = feeds[name]
        a = a.astype(a.dtype.newbyteorder("<"), copy=False)
        import numpy as np

        a = np.ascontiguousarray(a)
        h.update(f"{a.dtype.name}:{','.join(str(int(d)) for d in a.shape)}\n".encode("ascii"))
        h.update(a.tobytes(order="C"))
    return h.hexdigest()


def _one(ort, np, req, run, feeds):
    rec = {"tag": run.tag, "providers": list(run.providers), "level": run.level, "threads": run.threads}
    stages = {"availabilityChecked": "skipped", "delegateCreated": "skipped", "prepareCompleted": "skipped",
              "invocationCompleted": "skipped"}
    rec["stages"] = stages
    target = run.providers[0]
    available = ort.get_available_providers()
    plugin = plugin_eps.plugin_provider(ort, list(run.providers))
    stages["availabilityChecked"] = "ok" if target in available or target == plugin else "failed"
    so = ort.SessionOptions()
    so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, run.level)
    so.intra_op_num_threads = int(run.threads)
    so.log_severity_level = 3
    for name, value in sorted((req.dims or {}).items()):  # --dim: free dimension overrides
        so.add_free_dimension_override_by_name(str(name), int(value))
    so.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
    providers = list(run.providers)
    if run.provider_options:
        providers = [(p, {str(k): str(v) for k, v in o.items()}) if o else p
                     for p, o in zip(run.providers, run.provider_options)]
    if plugin:  # a plugin EP: registered, given by device, no silent retry on the CPU
        options = dict(zip(run.providers, run.provider_options or ())).get(plugin)
        done = plugin_eps.configure(ort, so, plugin, options)
        rec.update({k: v for k, v in done.items() if k not in ("ok", "error")})
        if not done["ok"]:
            stages["availabilityChecked"] = "failed"
            rec.update({"error": done["error"], "failedAt": "create", "unavailable": True})
            return rec
    try:
        sess = plugin_eps.create_session(ort, req.model, so, providers, plugin)
    except Exception as exc:
        stages["delegateCreated"] = "failed"
        rec["error"] = " ".join(str(exc).split())[:600]
        rec["failedAt"] = "create"
        return rec
    rec["granted"] = sess.get_providers()
    stages["delegateCreated"] = "ok" if target in rec["granted"] else "failed"
    nodes, groups = {}, {}
    try:
        for g in sess.get_provider_graph_assignment_info():
            nodes[g.ep_name] = nodes.get(g.ep_name, 0) + len(g.get_nodes())
            groups[g.ep_name] = groups.get(g.ep_name, 0) + 1
    except Exception as exc:
        rec["assignmentError"] = str(exc)[:200]
    rec["nodesPerProvider"] = nodes
    rec["groupsPerProvider"] = groups
    if stages["delegateCreated"] == "ok":
        stages["prepareCompleted"] = "ok" if nodes.get(target, 0) > 0 or not nodes else "failed"
    names = [o.name for o in sess.get_outputs()]
    if run.invocations is not None:
        return _invocations(np, sess, req, run, rec, names)
    try:
        want = {i.name for i in sess.get_inputs()}
        outs = sess.run(names, {k: v for k, v in feeds.items() if k in want})
    except Exception as exc:
        stages["invocationCompleted"] = "failed"
        rec["error"] = " ".join(str(exc).split())[:600]
        rec["failedAt"] = "run"
        return rec
    stages["invocationCompleted"] = "ok"
    arrays = {n: np.asarray(v) for n, v in zip(names, outs)}
    with open(f"{req.out_dir}/{run.tag}.npz", "wb") as f:
        np.savez(f, **arrays)
    rec["outputs"] = [[n, str(arrays[n].dtype), list(map(int, arrays[n].shape))] for n in names]
    return rec


def _invocations(np, sess, req, run, rec, names):
    want = {i.name for i in sess.get_inputs()}
    rec["invocations"] = []
    for k, inv in enumerate(run.invocations):
        with np.load(inv["inputs_npz"], allow_pickle=False) as z:
            feeds = {n: z[n] for n in z.files}
        item = {"name": inv["name"], "inputDigest": _digest(feeds), "ok": False}
        rec["invocations"].append(item)
        try:
            outs = sess.run(names, {n: v for n, v in feeds.items() if n in want})
        except Exception as exc:
            item["error"] = " ".join(str(exc).split())[:600]
            if k == 0:
                rec["stages"]["invocationCompleted"] = "failed"
                rec["failedAt"] = "run"
            continue
        item["ok"] = True
        if k == 0:
            rec["stages"]["invocationCompleted"] = "ok"
        arrays = {n: np.asarray(v) for n, v in zip(names, outs)}
        with open(f"{req.out_dir}/{run.tag}~{inv['name']}.npz", "wb") as f:
            np.savez(f, **arrays)
        item["outputs"] = [[n, str(arrays[n].dtype), list(map(int, arrays[n].shape))] for n in names]
    return rec


def _package():
    """[distribution, version] of the installed onnxruntime build (onnxruntime-openvino, -gpu, …)."""
    try:
        from importlib import metadata
    except ImportError:
        return None
    found = []
    for dist in metadata.distributions():
        name = (dist.metadata["Name"] or "").lower().replace("_", "-")
        plugin = name.startswith("onnxruntime-ep-") or name == "onnxruntime-qnn"  # plugin EPs, not ORT builds
        if (name == "onnxruntime" or name.startswith("onnxruntime-")) and not plugin:
            found.append([name, dist.version])
    return min(found) if found else None


def _environment():
    """What can be observed of the machine the runtime runs on (no user content)."""
    import platform
    import sysconfig

    cpu = platform.processor() or None
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {"os": platform.system(), "osRelease": platform.release(), "machine": platform.machine(),
            "abi": sysconfig.get_platform(), "cpu": cpu,
            "python": f"{platform.python_implementation()} {platform.python_version()}"}


def run(ort, req):
    """Every run of ``req`` (:class:`ort_protocol.OutputsRequest`); yields the :class:`ort_protocol.OutputsRecord`."""
    import numpy as np

    with np.load(req.inputs_npz, allow_pickle=False) as z:
        feeds = {k: z[k] for k in z.files}
    yield OutputsRecord(f"onnxruntime {ort.__version__}", ort.get_available_providers(), _package(),
                        _environment(), _digest(feeds), [_one(ort, np, req, r, feeds) for r in req.runs])
