"""The child's ``probe`` sub-command: one plugin-EP session per model of a list, where each node went.

Runs inside :mod:`partsim.runtime.ort_child` for :func:`partsim.gen.qnn.probe_models`; yields a
record per model as soon as it is known, so that the parent can start again after the model that
crashed or hung the EP.
"""

if __package__:  # imported as partsim.runtime.child_probe (the tests)
    from . import plugin_eps
    from .ort_protocol import ProbeRecord
else:  # run by ort_child.py, the modules beside it top-level
    import plugin_eps
    from ort_protocol import ProbeRecord


def run(ort, req):
    """:class:`ort_protocol.ProbeRecord` for each model of ``req`` (:class:`ort_protocol.ProbeRequest`)."""
    ort.set_default_logger_severity(3)
    for path in req.models:
        so = ort.SessionOptions()
        so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, req.level)
        so.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
        so.log_severity_level = 3
        plugin = plugin_eps.configure(ort, so, req.provider, req.ep_options)
        if not plugin["ok"]:
            yield ProbeRecord(path, create_error=plugin["error"])
            continue
        try:
            sess = plugin_eps.create_session(ort, path, so, [req.provider], req.provider)
            assignment = [[g.ep_name, [[n.name, n.op_type, n.domain] for n in g.get_nodes()]]
                          for g in sess.get_provider_graph_assignment_info()]
            del sess
        except Exception as exc:  # the session failed: an observation too
            yield ProbeRecord(path, create_error=" ".join(str(exc).split())[:400])
            continue
        yield ProbeRecord(path, assignment=assignment)
