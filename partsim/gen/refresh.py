"""``partsim rules refresh --ort VERSION``: take a new ORT release in with one command.

Regenerates, from that release's wheel (a venv :mod:`partsim.versions` makes, or ``--python``), every
version-specific table and fact that the wheel itself can tell:

- ``rules/cpu.yaml``: the CPU kernel registry (:mod:`partsim.gen.ort_kernels`);
- ``rules/nnapi.yaml``: the mobile usability checker's NNAPI op table the wheel ships
  (``onnxruntime/tools/mobile_helpers``, :mod:`partsim.gen.mobile_md`; the CoreML tables come from the
  CoreML op builders' source, :mod:`partsim.gen.coreml_builders`);
- ``partsim/data/contrib_schemas.json``: ORT's own operator schemas (:mod:`partsim.gen.contrib_schemas`);
- the newest IR version and ai.onnx opset its sessions load (:data:`partsim.versions.LOAD_LIMITS`,
  measured; reported, as they are code).

and reports, for every other table and fact, why it could not and what would (another wheel, the
device, ORT's sources at that release).
"""

import json
from pathlib import Path

__all__ = ["refresh", "NOT_FROM_WHEEL"]

# what a plain onnxruntime wheel cannot regenerate, and what would
NOT_FROM_WHEEL = (
    ("rules/cuda.yaml", "needs onnxruntime-gpu's docs/OperatorKernels.md at that release and its CUDA kernels "
                        "(`partsim rules import kernel-doc`, partsim/gen/kernel_doc.py)"),
    ("rules/qnn.yaml", "needs an onnxruntime-qnn built for that release and its probe sessions "
                       "(`partsim rules import qnn --python VENV`)"),
    ("rules/openvino-1.24.yaml", "describes onnxruntime-openvino, released on its own (partsim/gen/openvino.py)"),
    ("rules/openvino.yaml", "describes onnxruntime-ep-openvino, measured on its sessions "
                            "(partsim/gen/openvino_plugin.py)"),
    ("rules/coreml-mlprogram.yaml, rules/coreml-neuralnetwork.yaml",
     "read from ORT's CoreML op builders at a commit, not in the wheel (`partsim rules import coreml-builders`, "
     "partsim/gen/coreml_builders.py); the wheel's markdown lists stay what --compat usability-checker reads"),
    ("rules/tensorrt.yaml, rules/xnnpack.yaml, rules/webgpu.yaml",
     "read from ORT's sources at a commit, not in the wheel (partsim/gen/ep_tables.py)"),
    ("partsim/sim/pipeline.py", "the Level 2/3 transformers and their providers come from ORT's sources "
                                "(graph_transformer_utils.cc)"),
    ("partsim/gen/ort_kernels.py CPU_KERNEL_REQUIRES", "kernel constructor checks: tests/gen/test_cpu_table.py "
                                                        "checks them with real sessions of the installed ORT"),
)


def _write(path, text):
    from ..report.output import atomic_write

    old = path.read_text(encoding="utf-8") if path.is_file() else None
    if old == text:
        return "unchanged"
    atomic_write(path, text)
    return "written" if old is None else "updated"


def refresh(rules_dir, data_dir):
    """Regenerate into ``rules_dir`` and ``data_dir`` from the ORT selected (:func:`partsim.versions.select`).

    Returns the report: ``{"onnxruntime": version, "regenerated": [{file, state, what}],
    "measured": {...}, "notRegenerated": [{file, why}]}``.
    """
    from ..versions import LOAD_LIMITS, target_facts
    from .mobile_md import PROVIDERS, import_mobile_md
    from .ort_kernels import kernel_table

    facts = target_facts(refresh=True)
    version = facts["version"]
    if facts.get("rows") is None:
        from ..errors import UsageError

        raise UsageError(f"cannot refresh from onnxruntime {version}: {facts.get('rowsError', 'no kernel registry')}")
    rules_dir, data_dir = Path(rules_dir), Path(data_dir)
    done = []
    text = kernel_table(registry=(version, facts["rows"]))
    done.append({"file": str(rules_dir / "cpu.yaml"), "state": _write(rules_dir / "cpu.yaml", text),
                 "what": f"CPU kernel registry ({len(facts['rows'])} kernel ranges)"})
    for key in sorted(k for k in PROVIDERS if not k.startswith("coreml")):  # CoreML: from its op builders
        text = import_mobile_md([], key, wheel=(version, facts["package"]))
        path = rules_dir / f"{key}.yaml"
        done.append({"file": str(path), "state": _write(path, text), "what": f"mobile usability checker ({key})"})
    path = data_dir / "contrib_schemas.json"
    done.append({"file": str(path), "state": _write(path, facts["contribSchemas"]),
                 "what": f"ORT's own operator schemas ({len(json.loads(facts['contribSchemas'])['ops'])} ops)"})
    limits = facts.get("limits") or [None, None]
    listed = LOAD_LIMITS.get(version)
    measured = {"maxIrVersion": limits[0], "maxOnnxOpset": limits[1],
                "inLoadLimits": listed == tuple(limits),
                "note": "partsim/versions.py LOAD_LIMITS" + (" lists them" if listed == tuple(limits) else
                                                             f": add \"{version}\": ({limits[0]}, {limits[1]}) "
                                                             "(until then partsim asks ORT at run time)")}
    return {"onnxruntime": version, "regenerated": done, "measured": measured,
            "notRegenerated": [{"file": f, "why": why} for f, why in NOT_FROM_WHEEL]}
