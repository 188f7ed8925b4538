"""The graph ORT partitions, at a level, for a provider list: ORT's own optimizer as the oracle.

:func:`pipeline_graph` turns a model file into the ``onnx.ModelProto`` that ONNX Runtime
hands to (or leaves after) partitioning, following ``InferenceSession::TransformGraph``
(``onnxruntime/core/session/inference_session.cc``, see ``../shared/ORT-PIPELINE.md``):

``disable``
    pure partsim: EP-aware function inlining (:mod:`partsim.sim.inline`) and
    EnsureUniqueDQForNodeUnit (:mod:`partsim.sim.unique_dq`), with ORT's names.
``basic`` / ``extended`` / ``all``
    a CPU-only ORT session at that level (in a child process, as every ORT run of partsim) on
    a copy with the weights (sparse zero files when absent) saves its optimized graph
    (``optimized_model_filepath``); it runs the same inlining, DQ duplication and
    transformers.  What makes it the session *for the requested providers*:

    - function nodes a requested provider claims (HardSwish on CUDA/OpenVINO), in the main
      graph or an If/Loop/Scan body, would be inlined by a CPU-only session; they go in as an
      op no ORT transformer touches (``Softsign``) and come back whole afterwards
      (single-input, single-output float functions only);
    - Level 2/3 transformers whose provider set lacks one of the requested kernel
      providers are switched off (``disabled_optimizers``,
      :func:`partsim.sim.pipeline.transformers_to_disable`).  Compiling providers' partitions
      are never touched by Level 2/3 (``graph_partitioner.cc`` fuses them first), so with a
      compiling provider in the list the whole graph gets Level 1 only;
    - after partsim partitions that graph, the nodes left on the CPU get the transformers
      the first session could not apply to them (:func:`partsim.runtime.cpu_pass.cpu_pass`).

A session ORT itself cannot build (its optimizer throws) is reported, not raised: the
caller predicts ``status: session_would_fail`` with ORT's message.  A session that times out or
crashes (in a fresh child too) raises :class:`partsim.errors.SessionError`: it is not a fact
about the model.
"""

import tempfile
from pathlib import Path

from ..io.subgraphs import all_nodes as _all_nodes
from ..sim.pipeline import ORT_LEVEL, transformers_to_disable
from .cpu_pass import cpu_pass
from .fp16_casts import has_float16, undo_insert_cast

__all__ = ["pipeline_graph", "PipelineResult", "PLACEHOLDER_OP", "begin_early", "OptimizerRun", "start_children"]

# the stand-in for a claimed function node while ORT optimizes a CPU-only session: an ONNX op
# with a float CPU kernel that no rewrite rule or fusion of core/optimizer/ matches
PLACEHOLDER_OP = "Softsign"
CPU = "CPUExecutionProvider"


class PipelineResult:
    """What :func:`pipeline_graph` found: ``proto`` (or ``None`` when ORT failed), ``failure``
    (ORT's message), ``level`` run by ORT, ``disabled`` transformers, ``kept`` function nodes."""

    def __init__(self, proto, failure="", ort_level="", disabled=(), kept=()):
        self.missing_kernel = False
        self.pinned = ()
        self.cpu_pass_nodes = ()  # every node of the region the CPU pass rewrote (CPU at partitioning)
        self.proto = proto
        self.failure = failure
        self.ort_level = ort_level
        self.disabled = tuple(disabled)
        self.kept = tuple(kept)


def pipeline_graph(model_path, level, providers, kept_nodes=(), proto=None, data=None, cpu_nodes_of=None,
                   child=None, meanwhile=None, early=None, sizes=None):
    """Run ORT's optimizer for ``level`` as a session over ``providers`` would.

    Parameters
    ----------
    model_path : str or Path
    level : {"basic", "extended", "all"}
    providers : list of (provider name, is_compiling)
        The effective providers, in order.
    kept_nodes : iterable of str, or callable
        Names of function nodes a requested provider claims (keep them whole); a callable
        returning them is called while ORT's session already runs on the model as written, which
        is restarted on a copy with placeholders only when it returns a node that needs one.
    proto, data : onnx.ModelProto and bytes, optional
        The model already read (:func:`partsim.io.read.read_model_proto`); read if absent.
    cpu_nodes_of : callable, optional
        ``cpu_nodes_of(optimized proto) -> (node names, types, region)``: the nodes partitioning leaves on the
        CPU, partsim's tensor types and those the layout transformation rewired or added
        (:func:`partsim.runtime.layout_region.layout_region`);
        when given and transformers were switched off, the CPU-only ones then run on those
        nodes (:func:`partsim.runtime.cpu_pass.cpu_pass`).
    child : partsim.runtime.process.OrtProcess, optional
        The first session's child process, started early (:func:`start_child`).
    meanwhile : callable, optional
        Called (no arguments) while ORT's session runs in the child: the caller's own checks of
        the model overlap the session instead of delaying it.  What it raises propagates.
    early : OptimizerRun, optional
        The session :func:`begin_early` started from the file's bytes before ``onnx`` was
        imported; used when it is the one this call would start (same bytes, external-data
        sizes, level and transformers), else ended and started again.
    sizes : dict, optional
        The external-data sizes of ``proto`` (:func:`_external_sizes`) when the caller has them.
    """
    from ..io.read import read_model_proto

    if proto is None:
        proto, data = read_model_proto(model_path)
    ort_level, disabled = session_settings(level, providers)
    decide = kept_nodes if callable(kept_nodes) else None
    placeholders = _placeholders(proto, () if decide else kept_nodes)
    if sizes is None:
        sizes = _external_sizes(proto, model_path)
    if early is not None and not (early.fits(model_path, ort_level, disabled, data, sizes) and not placeholders[0]):
        early.close()
        early = None
    run = early or begin_optimize(model_path, ort_level, disabled, sizes,
                                  lambda copy: _write_copy(copy, proto, data, placeholders), child)
    try:
        copy, target, started = run.copy, run.target, run.started
        kept, originals = placeholders
        try:
            if meanwhile is not None:
                meanwhile()
            if decide is not None:
                # the session was started on the model as written; a function node a requested provider
                # claims needs a copy with placeholders instead: ORT starts again on that one
                kept, originals = _placeholders(proto, decide())
                if kept:
                    _abandon(started)
                    _write_copy(copy, proto, data, (kept, originals))
                    started = run.started = _start_optimize(copy, target, ort_level, disabled)
        except BaseException:
            _abandon(started)  # ends the session before its temp folder goes
            raise
        return _after_optimize(run, model_path, proto, providers, level, kept, originals, cpu_nodes_of)
    finally:
        run.cleanup()


def _after_optimize(run, model_path, proto, providers, level, kept, originals, cpu_nodes_of):
    """The second half of :func:`pipeline_graph`: ORT's answer read back, placeholders restored,
    the CPU pass."""
    import onnx

    tmp, copy, target, started = run.tmp, run.copy, run.target, run.started
    ort_level, disabled = run.ort_level, run.disabled
    compiling = any(c for _, c in providers)
    kernel_eps = [p for p, c in providers if not c]
    failure = _finish_optimize(started, model_path)
    if failure is not None:
        # ORT names the copy it was given: name the user's file (same input, same output)
        failure = failure.replace(str(copy.resolve()), str(model_path)).replace(str(copy), str(model_path))
        failure = failure.replace(str(tmp.resolve()), "<temp>").replace(str(tmp), "<temp>")
        result = PipelineResult(None, failure, ort_level, disabled, kept)
        result.missing_kernel = "Could not find an implementation" in failure or "NOT_IMPLEMENTED" in failure
        return result
    out = onnx.load(str(target), load_external_data=False)
    float16 = any(p != CPU for p, _ in providers) and has_float16(proto)
    if float16:  # the CPU-only session's float16 casts: not made where an accelerator takes the nodes
        undo_insert_cast(out, proto)
    for n in _all_nodes(out.graph):
        orig = originals.get(n.name)
        if orig is not None and n.op_type == PLACEHOLDER_OP:
            n.op_type, n.domain = orig.op_type, orig.domain
            del n.attribute[:]
            n.attribute.extend(orig.attribute)
    pinned, pass_nodes = (), ()
    # Level 2/3 on the nodes partitioning leaves on the CPU: next to CUDA nodes the CPU-only
    # transformers; next to a compiling provider's partitions (which Level 2/3 never touch)
    # every transformer of the requested level
    cpu_level = ORT_LEVEL[level] if compiling and level in ("extended", "all") else None
    if cpu_nodes_of is not None and (float16 or cpu_level or (set(kernel_eps) - {CPU}
                                                              and ort_level != ORT_LEVEL["basic"])):
        names, types, region = cpu_nodes_of(out)
        run_level = cpu_level or ort_level
        passed, pinned = cpu_pass(out, names, tmp, lambda sub, target: _optimize(sub, target, run_level), types,
                                  lambda: {n.name: k for k, n in enumerate(proto.graph.node) if n.name},
                                  any_op=bool(cpu_level), float16=float16, region=region)
        if passed is not out:
            # the nodes the pass made or rewired: the EPs validated other forms of them at partitioning
            before = {_signature(n) for n in out.graph.node}
            pass_nodes = tuple(sorted(n.name for n in passed.graph.node if _signature(n) not in before))
            out = passed
    result = PipelineResult(out, "", ort_level, disabled, kept)
    result.pinned = pinned
    result.cpu_pass_nodes = pass_nodes
    return result


def _placeholders(proto, kept_nodes):
    """``(names, {name: original NodeProto})`` of the ``kept_nodes`` that go in as a placeholder
    (single-input, single-output nodes of the main graph or of an If/Loop/Scan body in it)."""
    want = set(kept_nodes or ())
    kept, originals = [], {}
    if not want:
        return kept, originals
    import onnx

    for n in _all_nodes(proto.graph):
        if n.name in want and n.name not in originals and len(n.input) == 1 and len(n.output) == 1:
            saved = onnx.NodeProto()
            saved.CopyFrom(n)
            originals[n.name] = saved
            kept.append(n.name)
    return kept, originals


def _write_copy(copy, proto, data, placeholders):
    """Write the model ORT optimizes to ``copy``: ``data`` as read, or with the nodes of
    ``placeholders`` (what :func:`_placeholders` gave) replaced by :data:`PLACEHOLDER_OP`.
    Returns ``placeholders``."""
    kept, originals = placeholders
    if not kept:
        copy.write_bytes(data)
        return kept, originals
    import onnx

    changed = onnx.ModelProto()
    changed.CopyFrom(proto)
    for n in _all_nodes(changed.graph):
        orig = originals.get(n.name)
        if orig is not None and (n.op_type, n.domain) == (orig.op_type, orig.domain):
            n.op_type, n.domain = PLACEHOLDER_OP, ""
            del n.attribute[:]
    _ensure_opset(changed, 1)
    copy.write_bytes(changed.SerializeToString())
    return kept, originals


def session_settings(level, providers):
    """``(ORT level name, transformers switched off)`` of the CPU-only session that stands for a
    session over ``providers`` (``[(name, is_compiling)]``) at ``level``: with a compiling provider
    the whole graph gets Level 1 only (its partitions are fused before Level 2/3 run)."""
    ort_level = ORT_LEVEL[level]
    if any(c for _, c in providers) and level in ("extended", "all"):
        ort_level = ORT_LEVEL["basic"]
    kernel_eps = [p for p, c in providers if not c]
    disabled = transformers_to_disable(kernel_eps) if ort_level != ORT_LEVEL["basic"] else ()
    return ort_level, tuple(disabled)


class OptimizerRun:
    """ORT's optimizer session begun on a structural copy in a temporary folder: ``tmp``,
    ``copy`` (the file ORT opens), ``target`` (where it saves the optimized graph), ``started``
    (for :func:`_finish_optimize`), and what it was begun for."""

    def __init__(self, model_path, ort_level, disabled, sizes, data):
        self._folder = tempfile.TemporaryDirectory(prefix="partsim-pipeline-")
        self.tmp = Path(self._folder.name)
        self.model_path = Path(model_path).resolve()
        self.ort_level, self.disabled, self.sizes, self.data = ort_level, tuple(disabled), dict(sizes), data
        self.copy = self.target = self.started = None

    def fits(self, model_path, ort_level, disabled, data, sizes):
        """Whether this is the session :func:`pipeline_graph` would begin for these."""
        return (Path(model_path).resolve() == self.model_path and ort_level == self.ort_level
                and tuple(disabled) == self.disabled and dict(sizes) == self.sizes and data == self.data)

    def close(self):
        """End the session (if it still runs) and remove the folder."""
        if self.started is not None:
            _abandon(self.started)
        self.cleanup()

    def cleanup(self):
        self._folder.cleanup()


def begin_optimize(model_path, ort_level, disabled, sizes, write, child=None, data=None):
    """Make the structural copy (``sizes``: :func:`_external_sizes`), write the model there
    (``write(path)``) and hand ORT's session its request (or find its answer in the cache).
    Returns the :class:`OptimizerRun`; ``data`` is kept for :meth:`OptimizerRun.fits`."""
    run = OptimizerRun(model_path, ort_level, disabled, sizes, data)
    try:
        run.copy = _structural_copy(model_path, sizes, run.tmp / "model")
        run.target = run.tmp / "optimized.onnx"
        write(run.copy)
        run.started = _start_optimize(run.copy, run.target, ort_level, disabled, child)
    except BaseException:
        if child is not None:
            child.close()
        run.close()
        raise
    return run


def begin_early(model_path, level, providers, child=None, like=None):
    """ORT's session for :func:`pipeline_graph`, begun from the model file's bytes alone, before
    partsim imports ``onnx`` (0.1-0.15 s of a cold process): the external-data sizes come from
    :func:`partsim.io.wire.external_data_sizes`.  ``None`` (``child`` left to the caller) when
    the file cannot be read or its bytes are not followed that way: the long way then reports
    what is wrong with it.  ``like``: a run begun on the same file already (the final view's session
    begins beside the partitioning one), whose bytes and sizes are taken instead of read again."""
    if like is not None and like.data is not None and like.model_path == Path(model_path).resolve():
        ort_level, disabled = session_settings(level, providers)
        data = like.data
        return begin_optimize(model_path, ort_level, disabled, like.sizes, lambda copy: copy.write_bytes(data),
                              child, data)
    from ..errors import ModelError
    from ..io.external import check_location
    from ..io.files import read_bytes
    from ..io.read import MAX_MODEL_BYTES
    from ..io.wire import external_data_sizes

    try:
        data = read_bytes(model_path, MAX_MODEL_BYTES, ModelError, "the model")
    except ModelError:
        return None
    from ..io.materialize import MAX_EXTERNAL_END

    found = external_data_sizes(data) if data else None
    if found is None or any(size > MAX_EXTERNAL_END for size in found.values()):
        return None  # the long way names the tensor
    base, sizes, resolved = Path(model_path).resolve().parent, {}, {}
    try:
        for loc, size in found.items():
            rel = check_location(loc, "", base, model_path, resolved).relative_to(base)
            sizes[rel] = max(sizes.get(rel, 0), size)
    except ModelError:
        return None
    ort_level, disabled = session_settings(level, providers)
    return begin_optimize(model_path, ort_level, disabled, sizes, lambda copy: copy.write_bytes(data), child, data)


def start_child(lazy=False):
    """The optimizer's child process (:class:`partsim.runtime.process.OrtProcess`), started now so
    that it imports onnxruntime while the caller works; hand it to :func:`pipeline_graph`, which
    closes it.  Under another ORT's interpreter (``--ort``, ``--python``) when one is selected.
    ``lazy``: started by its request instead (:class:`partsim.runtime.process.SharedOptimizer`)."""
    return start_children(1, lazy)[0]


def start_children(count, lazy=False):
    """``count`` handles on one optimizer child for sessions the caller begins now, made side by side,
    each one a stand-in for :func:`start_child`'s (:func:`partsim.runtime.process.optimizer_children`;
    ``lazy``: the child is started by the first request)."""
    from ..versions import target_python
    from .process import optimizer_children

    return optimizer_children(count, target_python(), lazy)


def _optimize(model, target, ort_level, disabled=(), child=None):
    """One CPU-only ORT session, in a child process (:mod:`partsim.runtime.child_optimize`; ``child``
    when one was started early), that saves its optimized graph to ``target``; ORT's message
    when it fails, else ``None``."""
    return _finish_optimize(_start_optimize(model, target, ort_level, disabled, child))


def _start_optimize(model, target, ort_level, disabled=(), child=None):
    """The first half of :func:`_optimize`: the answer from the cache, or the request handed to
    ``child`` (which then works while the caller goes on).  Returns what :func:`_finish_optimize`
    (or :func:`_abandon`) takes."""
    from .optimizer_cache import lookup, request_key
    from .ort_protocol import OptimizeRequest

    request = OptimizeRequest(str(model), str(target), ort_level, target.stem + ".weights.pb", tuple(disabled),
                              lean=True, sink_weights=True)
    key = request_key(model, request)
    record = lookup(key, target, request.external, model)
    if record is None and child is not None:
        child.submit(request)
    elif child is not None:
        child.close()  # answered from the cache: the early child is not needed
        child = None
    return {"request": request, "key": key, "record": record, "child": child, "model": model, "target": target}


def _abandon(started):
    if started["child"] is not None:
        started["child"].close()
        started["child"] = None


def _finish_optimize(started, shown_as=None):
    from .optimizer import run_optimizer
    from .optimizer_cache import remember

    from ..versions import target_python

    request, record, child, target = started["request"], started["record"], started["child"], started["target"]
    if record is None:
        started["child"] = None  # run_optimizer closes it
        record = run_optimizer(request, child=child, shown_as=shown_as, python=target_python())  # SessionError: raised
        _sparse_weights(target, request.external)
        remember(started["key"], record, target, request.external, started["model"])
    if record.state != "ok":
        msg = " ".join(record.error.split())[:600]
        # a kernel only the CPU lacks is the partitioner's business (another provider may take the
        # node): the graph ORT saved before it looked for kernels is still the one it partitions
        if not ("Could not find an implementation" in msg and target.is_file()):
            return msg or "ONNX Runtime failed"
    if not target.is_file():
        return "ONNX Runtime wrote no optimized model"
    return None


def _signature(node):
    return (node.name, node.domain or "", node.op_type, tuple(node.input), tuple(node.output))


def _sparse_weights(target, name):
    """The weights file ORT wrote to the null device (``sink_weights``) made a sparse file of the
    size its graph's external-data offsets imply, so that a later session (the CPU pass) can
    open the graph: values never shape it (:func:`_structural_copy`).  ORT itself removes the
    link: the null device's file position stays 0, and ORT deletes an external-data file it
    finds empty after writing (seen with strace on 1.31.1; its offsets come from its own count)."""
    import os

    weights = target.parent / name
    if weights.is_symlink():
        weights.unlink()
    elif weights.exists():
        return  # a real file: the child could not link (no symlinks on this system)
    sizes = {}
    if target.is_file():
        from ..io.wire import external_data_sizes

        sizes = external_data_sizes(target.read_bytes())  # no second parse of the graph
        if sizes is None:  # bytes the wire reader does not follow: the long way
            import onnx

            sizes = _external_sizes(onnx.load(str(target), load_external_data=False), target)
    with open(weights, "wb") as f:
        os.truncate(f.fileno(), max(sizes.values(), default=0))


def _external_sizes(proto, model_path):
    """``{file relative to the model's folder: bytes read from it}`` over the external-data tensors
    of ``proto`` (checked: :func:`partsim.io.materialize.external_tensors`)."""
    from ..io.materialize import external_data_ends, external_tensors

    return external_data_ends(external_tensors(proto, model_path))


def _structural_copy(model_path, sizes, out_dir):
    """A folder ORT can open the model from: its external-data files (``sizes``, as
    :func:`_external_sizes`) copied when present, else created as sparse files (zeros, nothing
    written).  Values do not change the graph ORT's optimizer makes from float weights (value
    checks in ``optimizer_utils.cc`` look at scalars only, and external tensors have >= 256
    elements here); they would change outputs, which the pipeline never computes.  Returns the
    path the model file goes to (not yet written)."""
    import os
    import shutil

    out_dir.mkdir(parents=True)
    base = Path(model_path).resolve().parent
    for rel, size in sorted(sizes.items(), key=lambda kv: str(kv[0])):
        src, dst = base / rel, out_dir / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_file() and src.stat().st_size >= size:
            shutil.copyfile(src, dst)
        else:
            try:
                with open(dst, "wb") as f:
                    os.truncate(f.fileno(), size)
            except OSError as exc:  # a file system that cannot hold it (EFBIG), a full disk
                from ..errors import ModelError

                raise ModelError(f"cannot make a {size}-byte stand-in for external data {str(rel)!r}: "
                                 f"{exc.strerror}", model_path) from None
    return out_dir / Path(model_path).name


def _ensure_opset(proto, _version):
    """Softsign exists since opset 1 of ai.onnx: any model with an ai.onnx opset can hold it."""
    if not any((o.domain or "") == "" for o in proto.opset_import):
        proto.opset_import.add(domain="", version=_version)
