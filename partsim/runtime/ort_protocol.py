"""The messages between partsim and its ORT child process: typed, versioned, one JSON line each.

The parent (:mod:`partsim.runtime.process`) writes one request to the child's stdin; the child
(:mod:`partsim.runtime.ort_child`, run as ``python ort_child.py COMMAND``) answers with one record
per line on stdout.  Every message carries ``version`` (:data:`PROTOCOL_VERSION`) and ``type``;
both sides refuse a message of another version, a field they do not know, or a missing one
(:class:`ProtocolError`).  This module imports only the standard library: the child imports it
as a top-level module under any interpreter (``--python``).

>>> req = OptimizeRequest(model="m.onnx", target="o.onnx", level="ORT_ENABLE_ALL", external="w.pb")
>>> decode(encode(req), OptimizeRequest) == req
True
>>> decode('{"version": 0, "type": "optimize_request"}', OptimizeRequest)
Traceback (most recent call last):
...
partsim.runtime.ort_protocol.ProtocolError: protocol version 0, expected 1
"""

import json
from dataclasses import MISSING, asdict, dataclass, fields
from typing import ClassVar

__all__ = ["PROTOCOL_VERSION", "COMMANDS", "ProtocolError", "OptimizeRequest", "OptimizeRecord",
           "ObserveRequest", "ObserveRecord", "OutputsRun", "OutputsRequest", "OutputsRecord",
           "ProbeRequest", "ProbeRecord", "FactsRequest", "FactsRecord", "ErrorRecord", "REQUESTS", "encode", "decode"]

PROTOCOL_VERSION = 1


class ProtocolError(ValueError):
    """A message that is not one this side of the protocol reads."""


@dataclass(frozen=True)
class OptimizeRequest:
    """A CPU-only session at ``level`` that saves its optimized graph to ``target`` (weights in
    ``external`` beside it).  ``disabled``: transformers switched off; ``lean``: a session never
    run (one thread, no prepacking, no arena: none of which changes the saved graph);
    ``sink_weights``: the saved weights go to the null device (their offsets stay right)."""

    TYPE: ClassVar[str] = "optimize_request"
    model: str
    target: str
    level: str
    external: str
    disabled: tuple = ()
    lean: bool = False
    sink_weights: bool = False


@dataclass(frozen=True)
class OptimizeRecord:
    """ORT's answer: ``state`` ``ok`` or ``failed`` (ORT refused the session: ``error``, its message);
    ``target``: the request's (one child makes several sessions side by side)."""

    TYPE: ClassVar[str] = "optimize_record"
    state: str
    error: str = ""
    runtime: str = ""
    target: str = ""


@dataclass(frozen=True)
class ObserveRequest:
    """One real session over ``providers`` at ``level`` (an ``ORT_*`` name), run once on the feeds
    in ``inputs_npz`` when ``run``; ``feed_error`` says why there are none."""

    TYPE: ClassVar[str] = "observe_request"
    model: str
    providers: tuple
    level: str = "ORT_DISABLE_ALL"
    inputs_npz: str = None
    feed_error: str = None
    run: bool = True
    threads: int = 1
    ep_options: dict = None
    placement_log: bool = True
    preload: bool = False
    dims: dict = None  # --dim: free dimension overrides, so the session fixes what the prediction fixed


@dataclass(frozen=True)
class ObserveRecord:
    """What one session showed.  ``state``: ``ok`` or ``create_failed`` (ORT refused it, ``error``);
    the rest as :mod:`partsim.runtime.observation` reads them (absent: ``None``)."""

    TYPE: ClassVar[str] = "observe_record"
    runtime: str
    available: list
    requested: list
    level: str
    state: str
    error: str = None
    warnings: list = None
    placement: dict = None
    create_s: float = None
    granted: list = None
    assignment: list = None
    assignment_error: str = None
    outputs: dict = None
    run_error: str = None
    profile_nodes: list = None
    plugin: dict = None
    unavailable: bool = None
    plugin_keys: dict = None  # the plugin EP's version and options under its short name (qnn, qnnOptions, ...)

    def to_dict(self):
        """The record as :func:`partsim.runtime.observation.observation_from_records` reads it
        (``plugin_keys`` spread out)."""
        out = {k: v for k, v in asdict(self).items() if v is not None and k != "plugin_keys"}
        out.update(self.plugin_keys or {})
        return out


@dataclass(frozen=True)
class OutputsRun:
    """One session configuration of an :class:`OutputsRequest` (see :mod:`partsim.runtime.child_outputs`)."""

    TYPE: ClassVar[str] = "outputs_run"
    tag: str
    providers: tuple
    level: str
    threads: int = 1
    provider_options: tuple = None
    invocations: tuple = None


@dataclass(frozen=True)
class OutputsRequest:
    """Run ``model`` under each of ``runs`` on the feeds in ``inputs_npz``, outputs to ``out_dir``."""

    TYPE: ClassVar[str] = "outputs_request"
    model: str
    inputs_npz: str
    out_dir: str
    runs: tuple
    dims: dict = None  # --dim: free dimension overrides in every run


@dataclass(frozen=True)
class OutputsRecord:
    """The build, the machine, the feeds' digest and one record per run (their keys:
    :mod:`partsim.runtime.child_outputs`)."""

    TYPE: ClassVar[str] = "outputs_record"
    runtime: str
    available: list
    package: list
    environment: dict
    inputDigest: str  # noqa: N815 - the name receipts carry
    runs: list


@dataclass(frozen=True)
class ProbeRequest:
    """One session of plugin EP ``provider`` per model of ``models``; a record per model as soon as it is known."""

    TYPE: ClassVar[str] = "probe_request"
    models: tuple
    ep_options: dict = None
    level: str = "ORT_DISABLE_ALL"
    provider: str = "QNNExecutionProvider"


@dataclass(frozen=True)
class ProbeRecord:
    """Where the nodes of ``model`` went (``assignment``), or why there was no session."""

    TYPE: ClassVar[str] = "probe_record"
    model: str
    assignment: list = None
    create_error: str = None


@dataclass(frozen=True)
class FactsRequest:
    """What this interpreter's ORT is; ``refresh``: its operator schemas and package folder too."""

    TYPE: ClassVar[str] = "facts_request"
    refresh: bool = False


@dataclass(frozen=True)
class FactsRecord:
    """``facts``: version, distribution, plugins, build, CPU registry rows, load limits (see
    :mod:`partsim.runtime.child_facts`)."""

    TYPE: ClassVar[str] = "facts_record"
    facts: dict


@dataclass(frozen=True)
class ErrorRecord:
    """The child could not read its request (another protocol version, a malformed message)."""

    TYPE: ClassVar[str] = "error_record"
    error: str


# the child's sub-commands and the request each reads
REQUESTS = {"optimize": OptimizeRequest, "observe": ObserveRequest, "outputs": OutputsRequest,
            "probe": ProbeRequest, "facts": FactsRequest}
COMMANDS = tuple(REQUESTS)
_NESTED = {(OutputsRequest, "runs"): OutputsRun}
_MAX_DEPTH = 64


def encode(message):
    """One JSON line (no newline) carrying ``message``, its type and the protocol version."""
    return json.dumps({"version": PROTOCOL_VERSION, "type": message.TYPE, **asdict(message)},
                      separators=(",", ":"))


def decode(text, cls, *others):
    """The message of type ``cls`` (or one of ``others``) in ``text``; :class:`ProtocolError` otherwise."""
    try:
        raw = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ProtocolError(f"not a JSON message: {exc}") from None
    if not isinstance(raw, dict):
        raise ProtocolError("a message is a JSON object")
    if raw.get("version") != PROTOCOL_VERSION:
        raise ProtocolError(f"protocol version {raw.get('version')!r}, expected {PROTOCOL_VERSION}")
    by_type = {c.TYPE: c for c in (cls, *others)}
    kind = by_type.get(raw.get("type"))
    if kind is None:
        raise ProtocolError(f"a {raw.get('type')!r} message where {' or '.join(by_type)} was expected")
    return _build(kind, {k: v for k, v in raw.items() if k not in ("version", "type")})


def _build(cls, raw):
    names = {f.name: f for f in fields(cls)}
    unknown = sorted(set(raw) - set(names))
    if unknown:
        raise ProtocolError(f"{cls.TYPE}: unknown field {unknown[0]!r}")
    missing = [n for n, f in names.items() if f.default is MISSING and n not in raw]
    if missing:
        raise ProtocolError(f"{cls.TYPE}: missing field {missing[0]!r}")
    values = {}
    for name, value in raw.items():
        nested = _NESTED.get((cls, name))
        if nested is not None:
            if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
                raise ProtocolError(f"{cls.TYPE}: {name} is a list of objects")
            value = tuple(_build(nested, v) for v in value)
        elif names[name].type is tuple and isinstance(value, list):
            value = tuple(value)
        values[name] = value
    return cls(**values)
