"""The graph ORT partitions, at a level, for a provider list: ORT's own optimizer as the oracle.

:func:`pipeline_graph` turns a model file into the ``onnx.ModelProto`` that ONNX Runtime
hands to (or leaves after) partitioning, following ``InferenceSession::TransformGraph``
(``onnxruntime/core/session/inference_session.cc``, see ``../shared/ORT-PIPELINE.md``):

``disable``
    pure partsim: EP-aware function inlining (:mod:`partsim.sim.inline`) and
    EnsureUniqueDQForNodeUnit (:mod:`partsim.sim.unique_dq`), with ORT's names.
``basic`` / ``extended`` / ``all``
    a CPU-only ORT session at that level on a copy with the weights (zeros when absent)
    (``optimized_model_filepath``), which runs the same inlining, DQ duplication and
    transformers.  Two things make it the session *for the requested providers*:

    - function nodes a requested provider claims (HardSwish on CUDA/OpenVINO) would be
      inlined by a CPU-only session; they go in as an op no ORT transformer touches
      (``Softsign``) and come back whole afterwards (single-input, single-output float
      functions only);
    - Level 2/3 transformers whose provider set lacks one of the requested kernel
      providers are switched off (``disabled_optimizers``,
      :func:`partsim.sim.pipeline.transformers_to_disable`).  Compiling providers' partitions
      are never touched by Level 2/3 (``graph_partitioner.cc`` fuses them first), so with a
      compiling provider in the list the prediction is made on the Level 1 graph (``basic``).

A session ORT itself cannot build (its optimizer throws) is reported, not raised: the
caller predicts ``status: session_would_fail`` with ORT's message.
"""

import tempfile
from pathlib import Path

from .errors import ModelError
from .sim.pipeline import ORT_LEVEL, transformers_to_disable

__all__ = ["pipeline_graph", "PipelineResult", "PLACEHOLDER_OP"]

# the stand-in for a claimed function node while ORT optimizes a CPU-only session: an ONNX op
# with a float CPU kernel that no rewrite rule or fusion of core/optimizer/ matches
PLACEHOLDER_OP = "Softsign"
CPU = "CPUExecutionProvider"


class PipelineResult:
    """What :func:`pipeline_graph` found: ``proto`` (or ``None`` when ORT failed), ``failure``
    (ORT's message), ``level`` run by ORT, ``disabled`` transformers, ``kept`` function nodes."""

    def __init__(self, proto, failure="", ort_level="", disabled=(), kept=()):
        self.missing_kernel = False
        self.proto = proto
        self.failure = failure
        self.ort_level = ort_level
        self.disabled = tuple(disabled)
        self.kept = tuple(kept)


def _first_line(exc):
    text = " ".join(str(exc).split())
    return text[:600] if text else type(exc).__name__


def pipeline_graph(model_path, level, providers, kept_nodes=(), proto=None, data=None):
    """Run ORT's optimizer for ``level`` as a session over ``providers`` would.

    Parameters
    ----------
    model_path : str or Path
    level : {"basic", "extended", "all"}
    providers : list of (provider name, is_compiling)
        The effective providers, in order.
    kept_nodes : iterable of str
        Names of function nodes a requested provider claims (keep them whole).
    proto, data : onnx.ModelProto and bytes, optional
        The model already read (:func:`partsim.loader.read_model_proto`); read if absent.
    """
    import onnx
    import onnxruntime as ort

    from .loader import read_model_proto

    if proto is None:
        proto, data = read_model_proto(model_path)
    compiling = any(c for _, c in providers)
    ort_level = ORT_LEVEL[level]
    if compiling and level in ("extended", "all"):
        ort_level = ORT_LEVEL["basic"]
    kernel_eps = [p for p, c in providers if not c]
    disabled = transformers_to_disable(kernel_eps) if ort_level != ORT_LEVEL["basic"] else ()
    with tempfile.TemporaryDirectory(prefix="partsim-pipeline-") as tmp:
        tmp = Path(tmp)
        copy = _structural_copy(model_path, proto, tmp / "model")
        kept = []
        originals = {}
        if kept_nodes:
            want = set(kept_nodes)
            changed = onnx.ModelProto()
            changed.CopyFrom(proto)
            for n in changed.graph.node:
                if n.name in want and len(n.input) == 1 and len(n.output) == 1:
                    saved = onnx.NodeProto()
                    saved.CopyFrom(n)
                    originals[n.name] = saved
                    n.op_type, n.domain = PLACEHOLDER_OP, ""
                    del n.attribute[:]
                    kept.append(n.name)
            if kept:
                _ensure_opset(changed, 1)
                copy.write_bytes(changed.SerializeToString())
        if not kept:
            copy.write_bytes(data)
        target = tmp / "optimized.onnx"
        so = ort.SessionOptions()
        so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, ort_level)
        so.optimized_model_filepath = str(target)
        so.log_severity_level = 3
        so.add_session_config_entry("session.optimized_model_external_initializers_file_name", "weights.pb")
        # the session is never run: no thread pools, no weight prepacking, no arena (none of these
        # changes what the transformers do to the graph, which is saved before kernels are made)
        so.intra_op_num_threads = 1
        so.inter_op_num_threads = 1
        so.add_session_config_entry("session.disable_prepacking", "1")
        so.enable_cpu_mem_arena = False
        so.enable_mem_pattern = False
        try:
            ort.InferenceSession(str(copy), so, providers=[CPU], disabled_optimizers=list(disabled))
        except Exception as exc:  # onnxruntime's own exception types (Fail, InvalidGraph, RuntimeException ...)
            msg = _first_line(exc)
            # a kernel only the CPU lacks is the partitioner's business (another provider may take the
            # node): the graph ORT saved before it looked for kernels is still the one it partitions
            if not ("Could not find an implementation" in msg and target.is_file()):
                result = PipelineResult(None, msg, ort_level, disabled, kept)
                result.missing_kernel = "Could not find an implementation" in msg or "NOT_IMPLEMENTED" in msg
                return result
        if not target.is_file():
            raise ModelError("ONNX Runtime wrote no optimized model", model_path)
        out = onnx.load(str(target), load_external_data=False)
    for n in _all_nodes(out.graph):
        orig = originals.get(n.name)
        if orig is not None and n.op_type == PLACEHOLDER_OP:
            n.op_type, n.domain = orig.op_type, orig.domain
            del n.attribute[:]
            n.attribute.extend(orig.attribute)
    return PipelineResult(out, "", ort_level, disabled, kept)


def _structural_copy(model_path, proto, out_dir):
    """A folder ORT can open the model from: its external-data files copied when present, else
    created as sparse files (zeros, nothing written).  Values do not change the graph ORT's
    optimizer makes from float weights (value checks in ``optimizer_utils.cc`` look at scalars
    only, and external tensors have >= 256 elements here); they would change outputs, which the
    pipeline never computes.  Returns the path the model file goes to (not yet written)."""
    import os
    import shutil

    from .materialize import external_tensors

    out_dir.mkdir(parents=True)
    base = Path(model_path).resolve().parent
    need = {}
    for e in external_tensors(proto, model_path):
        need[e["rel"]] = max(need.get(e["rel"], 0), e["offset"] + e["nbytes"])
    for rel, size in sorted(need.items(), key=lambda kv: str(kv[0])):
        src, dst = base / rel, out_dir / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_file() and src.stat().st_size >= size:
            shutil.copyfile(src, dst)
        else:
            with open(dst, "wb") as f:
                os.truncate(f.fileno(), size)
    return out_dir / Path(model_path).name


def _ensure_opset(proto, _version):
    """Softsign exists since opset 1 of ai.onnx: any model with an ai.onnx opset can hold it."""
    if not any((o.domain or "") == "" for o in proto.opset_import):
        proto.opset_import.add(domain="", version=_version)


def _all_nodes(graph):
    for n in graph.node:
        yield n
        for a in n.attribute:
            if a.HasField("g"):
                yield from _all_nodes(a.g)
            for g in a.graphs:
                yield from _all_nodes(g)
