"""Generate a kernel-EP rule table from the installed ORT's kernel registry.

Source: ``onnxruntime.capi._pybind_state.get_all_opkernel_def()`` — one entry per
registered kernel: op, domain, version range and type constraints.  A CPU-only
wheel lists the CPU EP; a GPU wheel also lists CUDA.  Output is deterministic.

Regenerate the shipped CPU table with::

    partsim rules import ort-kernels --provider CPUExecutionProvider -o rules/cpu.yaml

and the CPU table of an older release that a provider's own ORT build runs in (onnxruntime-openvino
1.24.1 carries ORT 1.24.1's CPU EP; ``partsim.versions.hosting_release``), from a venv with plain
``onnxruntime==1.24.1`` (the same CPU kernels; that build's own registry read segfaults)::

    partsim rules import ort-kernels --python VENV/bin/python --variant 1.24 -o rules/cpu-1.24.yaml
"""

__all__ = ["kernel_table", "registry_rows"]

INT_MAX = 2**31 - 1


# What CPU kernel constructors enforce (the registry does not say): a node that fails one makes
# ORT refuse the session.  onnxruntime 1.31.1, checked with real sessions (tests/gen/test_cpu_table.py):
# "Batchwise recurrent operations (layout == 1) are not supported".
CPU_KERNEL_REQUIRES = {
    ("", "RNN"): [{"name": "layout", "in": [0], "why": "batchwise layout unsupported (cpu/rnn/rnn.h)"}],
    ("", "GRU"): [{"name": "layout", "in": [0], "why": "batchwise layout unsupported (cpu/rnn/deep_cpu_gru.h)"}],
    ("", "LSTM"): [{"name": "layout", "in": [0], "why": "batchwise layout unsupported (cpu/rnn/lstm_base.h)"}],
}


def registry_rows(provider="CPUExecutionProvider"):
    """``(onnxruntime version, rows)`` of the installed ORT's kernel registry for ``provider``: each row
    ``[domain, op, since, end or None, {constraint: [types]}]`` (one per version range, the type lists
    of several kernels for one range joined).  Imports only onnxruntime (also run by
    :mod:`partsim.versions` as a child of another interpreter)."""
    import onnxruntime
    from onnxruntime.capi import _pybind_state as C

    rows = {}
    for k in C.get_all_opkernel_def():
        if k.provider != provider:
            continue
        lo, hi = k.version_range
        key = (k.domain or "", k.op_name, int(lo), None if hi >= INT_MAX else int(hi))
        types = {name: sorted(set(v)) for name, v in k.type_constraints.items()}
        prev = rows.get(key)
        if prev is None:
            rows[key] = types
        else:  # several kernels for one range (e.g. per type): union their type lists
            for name, v in types.items():
                prev[name] = sorted(set(prev.get(name, [])) | set(v))
    return onnxruntime.__version__, [[*key, types] for key, types in rows.items()]


def kernel_table(provider="CPUExecutionProvider", aliases=("cpu",), cpu_based=True, registry=None, variant=""):
    """Return the YAML text of ``provider``'s table from the installed ORT (or from ``registry``, what
    :func:`registry_rows` returned, possibly in another interpreter).  ``variant``: the table of another
    ORT release shipped beside the default one (``rules/cpu-1.24.yaml``, variant ``1.24``: the CPU
    kernels of onnxruntime 1.24.1, read with ``--python`` from a venv that has it)."""
    from .yamlout import dump_table

    version, rows = registry if registry is not None else registry_rows(provider)
    ops = []
    for domain, op, lo, hi, types in sorted(rows, key=lambda r: (r[0], r[1], r[2])):
        rule = {"op": op}
        if domain:
            rule["domain"] = domain
        rule["versions"] = [lo, hi]
        if types:
            rule["types"] = {name: [t[7:-1] if t.startswith("tensor(") else t for t in v]
                             for name, v in sorted(types.items())}
        if provider == "CPUExecutionProvider" and (domain, op) in CPU_KERNEL_REQUIRES and lo >= 14:
            rule["kernel_requires"] = [dict(c) for c in CPU_KERNEL_REQUIRES[(domain, op)]]  # layout: opset 14+
        ops.append(rule)
    how = f"partsim rules import ort-kernels --provider {provider}"
    if variant:  # read in another interpreter: the command names it
        how += f" --python VENV/bin/python --variant {variant} (VENV: a venv with pip install onnxruntime=={version})"
    table = {
        "provider": provider,
        "aliases": list(aliases),
        **({"variant": variant} if variant else {}),
        "kind": "kernel",
        "cpu_based": cpu_based,
        "layout": "NCHW",
        "precisions": ["fp32", "fp64", "fp16", "int8", "int32", "int64"],
        "compute_precision": "fp32",
        "source": {
            "description": (f"kernel registry of onnxruntime {version} (get_all_opkernel_def)" if variant else
                            "kernel registry of the installed onnxruntime (get_all_opkernel_def)"),
            "version": f"onnxruntime {version}",
            "generated_by": how,
            "describes": {"onnxruntime": version},
        },
        "ops": ops,
    }
    return dump_table(table)
