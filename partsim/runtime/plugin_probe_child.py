"""Child process: create one plugin-EP session per model of a list and print where each node went.

Run by :func:`partsim.gen.qnn.probe_models` (QNN) and :mod:`partsim.gen.webgpu` as
``python plugin_probe_child.py`` with a JSON request ``{"provider": EP, "models": [...],
"ep_options": {...}, "level": "ORT_DISABLE_ALL"}`` on stdin (``provider`` defaults to QNN).  One JSON
line per model, flushed as soon as it is known, so that the parent can restart after the model that
crashed or hung the EP.  Imports only the standard library, onnxruntime and ``plugin_eps`` (next to
this file): it runs under any interpreter.
"""

import json
import os
import sys


def main():
    req = json.loads(sys.stdin.read())
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import plugin_eps

    provider = req.get("provider", plugin_eps.QNN)
    plugin_eps.prepare_host([provider])  # before ORT is imported: the devices it discovers must be there
    import onnxruntime as ort

    ort.set_default_logger_severity(3)
    for path in req["models"]:
        so = ort.SessionOptions()
        so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, req.get("level", "ORT_DISABLE_ALL"))
        so.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
        so.log_severity_level = 3
        rec = {"model": path}
        plugin = plugin_eps.configure(ort, so, provider, req.get("ep_options"))
        if not plugin["ok"]:
            rec["create_error"] = plugin["error"]
        else:
            try:
                sess = plugin_eps.create_session(ort, path, so, [provider], provider)
                rec["assignment"] = [[g.ep_name, [[n.name, n.op_type, n.domain] for n in g.get_nodes()]]
                                     for g in sess.get_provider_graph_assignment_info()]
                del sess
            except Exception as exc:  # the session failed: an observation too
                rec["create_error"] = " ".join(str(exc).split())[:400]
        print(json.dumps(rec), flush=True)


if __name__ == "__main__":
    main()
