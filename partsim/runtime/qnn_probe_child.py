"""Child process: create one QNN session per model of a list and print where each node went.

Run by :func:`partsim.gen.qnn.probe_models` as ``python qnn_probe_child.py`` with a JSON request
``{"models": [...], "ep_options": {...}, "level": "ORT_DISABLE_ALL"}`` on stdin.  One JSON line per
model, flushed as soon as it is known, so that the parent can restart after the model that
crashed or hung the emulator.  Imports only the standard library, onnxruntime and
``qnn_session`` (next to this file): it runs under any interpreter.
"""

import json
import os
import sys


def main():
    req = json.loads(sys.stdin.read())
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import onnxruntime as ort
    import qnn_session

    ort.set_default_logger_severity(3)
    for path in req["models"]:
        so = ort.SessionOptions()
        so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, req.get("level", "ORT_DISABLE_ALL"))
        so.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
        so.log_severity_level = 3
        rec = {"model": path}
        plugin = qnn_session.configure(ort, so, ["QNNExecutionProvider"], req.get("ep_options"))
        if not plugin["ok"]:
            rec["create_error"] = plugin["error"]
        else:
            try:
                sess = ort.InferenceSession(path, so)
                rec["assignment"] = [[g.ep_name, [[n.name, n.op_type, n.domain] for n in g.get_nodes()]]
                                     for g in sess.get_provider_graph_assignment_info()]
                del sess
            except Exception as exc:  # the session failed: an observation too
                rec["create_error"] = " ".join(str(exc).split())[:400]
        print(json.dumps(rec), flush=True)


if __name__ == "__main__":
    main()
