"""Which ONNX Runtime a prediction is for, and what partsim's knowledge says about that release.

partsim depends on a *range* of ORT releases (``pyproject.toml``); the ORT it predicts is:

- the one installed beside partsim (the default),
- ``--ort VERSION``: that release from PyPI, in a venv partsim makes once with pip and keeps in its
  cache folder (``<cache>/ort-envs/onnxruntime-VERSION``), or
- ``--python PATH``: the ORT of an interpreter the user made.

Only ORT's own optimizer session runs under that ORT (:func:`target_python` is the child
interpreter of :mod:`partsim.runtime.ort_pipeline`).  The CPU table is that ORT's kernel registry:
the shipped ``rules/cpu.yaml`` when it describes the same release, else a table made from the
registry of the ORT predicted (:func:`cpu_table_for_target`, kept in the cache).  Every other table
says which releases it describes (``source.describes``); :func:`annotate` writes the ORT predicted,
the plugin versions and which tables and facts may be stale into the partitionSummary (``ort``).
"""

import hashlib
import json
import os
import re
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

from .errors import UsageError

__all__ = ["installed_ort", "load_limits", "LOAD_LIMITS", "version_key", "select", "selected", "target_python", "target_build",
           "predicted", "annotate", "ort_build", "target_facts", "cpu_table_for_target", "ensure_env", "ORT_FACTS", "stale_tables", "hosting_release",
           "described_ort"]

# distributions that install the ``onnxruntime`` package (one at a time), and EP plugins of it
ORT_DISTRIBUTIONS = ("onnxruntime", "onnxruntime-gpu", "onnxruntime-openvino", "onnxruntime-directml",
                     "onnxruntime-training")
PLUGIN_DISTRIBUTIONS = ("onnxruntime-qnn",)
_VERSION = re.compile(r"^[0-9]+(\.[0-9]+){1,3}$")
_FORMAT = "partsim-ort-facts-1"

# Facts partsim holds about ORT outside the rule tables: (what, the release they describe, where). A
# newer ORT predicted makes them "may be stale" in the summary until `partsim rules refresh` (the
# regenerable ones) or a person (the others) checks them again.
ORT_FACTS = (
    ("ORT's operator schemas (contrib ops' ports; every schema's versions and attributes)", "1.31.1",
     "partsim/data/contrib_schemas.json",
     "partsim rules refresh"),
    ("Level 2/3 transformers and the providers each touches", "1.31.1", "partsim/sim/pipeline.py", ""),
    ("CPU kernel constructor checks (RNN/GRU/LSTM layout)", "1.31.1", "partsim/gen/ort_kernels.py", ""),
)

# release -> (newest IR version, newest official ai.onnx opset) its sessions load; measured with real
# sessions by partsim/runtime/child_facts.py load_limits (a release not listed is asked the same way)
LOAD_LIMITS = {"1.31.1": (13, 26), "1.32.0": (14, 28)}

_TARGET = {}  # what select() chose: python, version, how, build, plugins, rows, limits
_ASKED = {}  # version -> limits, for an installed release LOAD_LIMITS lacks
_LIMITS = {}  # target python ("" installed) -> load_limits()
_PROBED = {}  # interpreter -> what _probe said


def version_key(text):
    """``"1.32.0"`` -> ``(1, 32, 0)``: the numeric parts, up to the first that is not a number.

    >>> version_key("1.32.0") > version_key("1.31.1")
    True
    >>> version_key("1.25.0.dev20260213")
    (1, 25, 0)
    """
    out = []
    for part in str(text).split("."):
        if not part.isdigit():
            break
        out.append(int(part))
    return tuple(out)


def _package_folder(module):
    import importlib.util

    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


@lru_cache(maxsize=1)
def installed_ort():
    """``(distribution, version)`` of the ORT importable here, or ``(None, None)``: the version the
    package's ``__init__.py`` states, the distribution the ``*.dist-info`` folder beside it names
    (nothing imported, no scan of every installed distribution: this runs on every command)."""
    folder = _package_folder("onnxruntime")
    if folder is None:
        return None, None
    try:
        head = (folder / "__init__.py").read_text(encoding="utf-8", errors="replace")[:8192]
    except OSError:
        return None, None
    m = re.search(r"^__version__\s*=\s*[\"']([^\"']+)[\"']", head, re.M)
    if not m:
        return None, None
    version = m.group(1)
    for dist in ORT_DISTRIBUTIONS:
        if (folder.parent / f"{dist.replace('-', '_')}-{version}.dist-info").is_dir():
            return dist, version
    return ORT_DISTRIBUTIONS[0], version


@lru_cache(maxsize=1)
def _installed_plugins():
    """``{distribution: version}`` of the EP plugins importable here (their ``*.dist-info`` folders)."""
    out = {}
    for dist in PLUGIN_DISTRIBUTIONS:
        folder = _package_folder(dist.replace("-", "_"))
        if folder is None:
            continue
        prefix = dist.replace("-", "_") + "-"
        try:
            found = sorted(p.name for p in folder.parent.iterdir()
                           if p.name.startswith(prefix) and p.name.endswith(".dist-info"))
        except OSError:
            continue
        if found:
            out[dist] = found[-1][len(prefix):-len(".dist-info")]
    return out


def select(ort=None, python=None):
    """Predict for ``ort`` (a release on PyPI) or for the ORT of interpreter ``python``; neither:
    the installed one.  ``ort`` equal to the installed release needs no other interpreter.
    :class:`UsageError` (one line) when the interpreter cannot run ORT or the release cannot be got."""
    _TARGET.clear()
    if ort is None and python is None:
        return
    if ort is not None and python is not None:
        raise UsageError("--ort and --python both name the ORT to predict; give one")
    how = "--python"
    if ort is not None:
        if not _VERSION.match(ort):
            raise UsageError(f"--ort wants a release number such as 1.32.0, not {ort!r}")
        if installed_ort()[1] == ort:
            return
        python, how = ensure_env(ort), "--ort"
    key = str(python)
    if key not in _PROBED:  # one question per interpreter and process (diff and check ask per model)
        _PROBED[key] = _probe(python)
    facts = _PROBED[key]
    if ort is not None and facts["version"] != ort:
        raise UsageError(f"{python} runs onnxruntime {facts['version']}, not {ort}")
    _TARGET.update(facts, python=str(python), how=how)


def target_facts(refresh=True):
    """Everything :func:`_probe` tells of the ORT predicted (this interpreter's when none was selected)."""
    return _probe(_TARGET.get("python") or sys.executable, refresh=refresh)


class selected:
    """``with selected(args.ort, args.ort_python):`` :func:`select` for a block, then the installed one."""

    def __init__(self, ort=None, python=None):
        self.ort, self.python = ort, python

    def __enter__(self):
        select(self.ort, self.python)
        return self

    def __exit__(self, *exc):
        _TARGET.clear()
        return False


def target_python():
    """The interpreter ORT's optimizer session runs in, or ``None`` (this one)."""
    return _TARGET.get("python")


def target_build():
    """What identifies the ORT build of :func:`target_python` (for cache keys), or ``None``."""
    return _TARGET.get("build")


def predicted():
    """``{"onnxruntime": version, "distribution", "from", "plugins"}``: the ORT the prediction is for."""
    if _TARGET:
        return {"onnxruntime": _TARGET["version"], "distribution": _TARGET["distribution"],
                "from": _TARGET["how"], "plugins": dict(_TARGET.get("plugins", {}))}
    dist, version = installed_ort()
    return {"onnxruntime": version or "", "distribution": dist or "", "from": "installed",
            "plugins": _installed_plugins()}


def load_limits():
    """``(release, newest IR version, newest ai.onnx opset)`` of the ORT predicted (either ``None``
    where ORT's messages did not say).  Remembered per ORT: :func:`partsim.rules.load.builtin_tables`
    asks first, so that the simulation itself reads no file."""
    key = _TARGET.get("python", "")
    if key not in _LIMITS:
        _LIMITS[key] = _load_limits()
    return _LIMITS[key]


def _load_limits():
    if _TARGET:
        return (_TARGET["version"], *(_TARGET.get("limits") or (None, None)))
    version = predicted()["onnxruntime"]
    if version in LOAD_LIMITS:
        return (version, *LOAD_LIMITS[version])
    if version and version not in _ASKED:
        try:
            _ASKED[version] = tuple(_probe(sys.executable).get("limits") or (None, None))
        except UsageError:
            _ASKED[version] = (None, None)
    return (version, *_ASKED.get(version, (None, None)))


def _probe(python, refresh=False):
    """Ask ``python`` for its ORT: version, distribution, plugins, build identity, CPU registry, load
    limits (``refresh``: also its contrib schemas and package folder)."""
    from .runtime.ort_protocol import FactsRecord, FactsRequest
    from .runtime.process import ChildFailure, run_request

    try:
        facts = run_request("facts", FactsRequest(refresh), FactsRecord, 300, python, attempts=1).facts
    except ChildFailure as exc:
        if exc.message.startswith("cannot start"):
            raise UsageError(f"cannot run {python}: {exc.message.split(': ', 1)[-1]}") from None
        raise UsageError(f"{python} could not say which onnxruntime it has: {exc.message}") from None
    if not isinstance(facts, dict) or "version" not in facts:
        raise UsageError(f"{python} could not say which onnxruntime it has: no answer")
    return facts


def ensure_env(version):
    """The python of a venv with ``onnxruntime==version`` in partsim's cache, made with pip the
    first time (into a temporary folder, renamed when complete: a half-made venv is never used)."""
    import shutil

    from .io.cache import cache_root

    root = cache_root()
    if root is None:
        raise UsageError("--ort keeps its venv in partsim's cache, which is switched off "
                         "(PARTSIM_NO_CACHE / --no-cache); make one and give --python")
    final = root / "ort-envs" / f"onnxruntime-{version}"
    python = final / "bin" / "python"
    if (final / ".complete").is_file():
        return python
    tmp = root / "ort-envs" / f".onnxruntime-{version}.{os.getpid()}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.parent.mkdir(parents=True, exist_ok=True)
    print(f"partsim: making a venv with onnxruntime=={version} in {final} (once)", file=sys.stderr)
    try:
        for argv in ([sys.executable, "-m", "venv", str(tmp)],
                     [str(tmp / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                      f"onnxruntime=={version}"]):
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=1800, stdin=subprocess.DEVNULL)
            if proc.returncode != 0:
                last = (proc.stderr.strip().splitlines() or ["no message"])[-1][:300]
                raise UsageError(f"cannot make a venv with onnxruntime=={version}: {last}")
        (tmp / ".complete").write_text(f"onnxruntime=={version}\n")
        try:
            os.replace(tmp, final)
        except OSError:  # another run made it meanwhile
            shutil.rmtree(tmp, ignore_errors=True)
    except subprocess.TimeoutExpired:
        raise UsageError(f"pip did not install onnxruntime=={version} within 30 min") from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if not (final / ".complete").is_file():
        raise UsageError(f"no venv with onnxruntime=={version} at {final}")
    return python


def _describes_in_text(path):
    """The onnxruntime release a table file's ``source.describes`` names (read off its text)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return _describes_of_file(str(path), st.st_size, st.st_mtime_ns)


@lru_cache(maxsize=8)
def _describes_of_file(path, _size, _mtime):
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError:
        return None
    m = re.search(r"^  describes:\n    onnxruntime: '?([0-9.]+)", text, re.M)
    return m.group(1) if m else None


def ort_build():
    """What identifies the ORT build this interpreter imports (without importing it): the package's
    folder and the size and mtime of its native libraries.  ``None`` when it cannot be found."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("onnxruntime")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    capi = Path(list(spec.submodule_search_locations)[0]) / "capi"
    try:
        libs = sorted(p for p in capi.iterdir() if ".so" in p.name or p.suffix in (".pyd", ".dll", ".dylib"))
        return (str(capi),) + tuple((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in libs)
    except OSError:
        return None


def cpu_table_for_target(shipped_cpu):
    """The CPU table (YAML text and a name for it) of the ORT predicted when the shipped one (file
    ``shipped_cpu``) describes another release, else ``None``.  Made from that ORT's kernel registry
    (:func:`partsim.gen.ort_kernels.kernel_table`) and kept in the cache (kind ``ort-tables``)."""
    version = predicted()["onnxruntime"]
    if not version or version == _describes_in_text(shipped_cpu):
        return None
    other = _shipped_cpu_of(Path(shipped_cpu).parent, version)
    if other is not None:  # a shipped variant describes it (rules/cpu-1.24.yaml): it is the CPU table
        return other
    if _TARGET and _TARGET.get("rows") is None:  # the build's registry could not be read: the shipped table
        return None  # stays, and annotate() says so
    from .io.cache import entry, put

    build = _TARGET.get("build") or ort_build()
    key = hashlib.sha256(json.dumps([_FORMAT, version, build]).encode()).hexdigest()[:32] if build else None
    name = f"<kernel registry of onnxruntime {version}>"
    found = entry("ort-tables", key) if key else None
    if found is not None:
        return (found / "cpu.yaml").read_text(encoding="utf-8"), name
    from .gen.ort_kernels import kernel_table, registry_rows

    registry = (_TARGET["version"], _TARGET["rows"]) if _TARGET else registry_rows()
    text = kernel_table(registry=registry)
    if key:
        put("ort-tables", key, {"cpu.yaml": text.encode()})
    return text, name


def _shipped_cpu_of(folder, version):
    """``(text, name)`` of a shipped CPU table variant describing onnxruntime ``version``, its ``variant``
    line taken out (it stands for the default CPU table then), or ``None``."""
    for path in sorted(folder.glob("cpu-*.yaml")):
        if _describes_in_text(path) == version:
            text = re.sub(r"^variant:.*\n", "", path.read_text(encoding="utf-8"), count=1, flags=re.M)
            return text, str(path)
    return None


def _describes(table):
    source = getattr(table, "source", None)  # a TableHeader (resolve's early guess) has none
    d = source.get("describes") if isinstance(source, dict) else None
    return dict(d) if isinstance(d, dict) else {}


def described_ort(table):
    """The plain ``onnxruntime`` release ``table`` describes (for a CPU table: the release whose kernels it
    lists), or ``None``."""
    return _describes(table).get("onnxruntime")


def hosting_release(table):
    """The ORT release whose sessions ``table``'s provider runs in, when the table says so: it describes
    an ORT distribution built with that provider (``onnxruntime-openvino: 1.24.1``, ``onnxruntime-gpu``;
    any of :data:`ORT_DISTRIBUTIONS` but plain ``onnxruntime``, which names the ORT predicted or the ORT
    sources a table was read from).  Such a build carries its own CPU EP: the CPU table that goes with
    the provider is the one describing that release (:func:`partsim.rules.resolve.resolve_providers`).

    >>> from dataclasses import replace
    >>> from partsim.rules.table import adhoc_table
    >>> t = adhoc_table(["Relu"], name="OpenVINOExecutionProvider")
    >>> hosting_release(replace(t, source={"describes": {"onnxruntime-openvino": "1.24.1"}})), hosting_release(t)
    ('1.24.1', None)
    """
    described = _describes(table)
    for dist in ORT_DISTRIBUTIONS[1:]:
        if dist in described:
            return described[dist]
    return None


def stale_tables(tables, ort):
    """``[(provider, package, described, predicted)]``: tables describing an older release of a
    package than the one predicted (``ort``: :func:`predicted`).  The CPU table of the release another
    table's provider runs in (:func:`hosting_release`) is that provider's, not stale."""
    have = {"onnxruntime": ort["onnxruntime"], "onnxruntime-gpu": ort["onnxruntime"], **ort["plugins"]}
    hosts = {hosting_release(t) for t in tables} - {None}
    out = []
    for t in tables:
        if t.provider == "CPUExecutionProvider" and described_ort(t) in hosts:
            continue
        for package, described in sorted(_describes(t).items()):
            now = have.get(package)
            if now and version_key(now) > version_key(described):
                out.append((t.provider, package, described, now))
    return out


def annotate(summary, tables):
    """Add ``ort`` to a partitionSummary: the ORT (and plugins) predicted, what each table in use
    describes, and what may be stale (``tables``: the effective providers' RuleTables)."""
    ort = predicted()
    record = {"predicted": ort["onnxruntime"], "distribution": ort["distribution"], "from": ort["from"]}
    _, max_ir, max_opset = load_limits()
    record["loads"] = {"maxIrVersion": max_ir, "maxOnnxOpset": max_opset}
    used = {p: v for p, v in ort["plugins"].items() if any(p in _describes(t) for t in tables)}
    if used:
        record["plugins"] = used
    record["tables"] = [{"provider": t.provider, "describes": _describes(t)} for t in tables]
    stale = [f"{p}: its table describes {pkg} {old}, the prediction is for {now}: ops, types and limits "
             f"added or changed since are not in it" for p, pkg, old, now in stale_tables(tables, ort)]
    for what, release, where, refresh in ORT_FACTS:
        if ort["onnxruntime"] and version_key(ort["onnxruntime"]) > version_key(release):
            how = f" (`{refresh} --ort {ort['onnxruntime']}`)" if refresh else ""
            stale.append(f"{what} ({where}) describe onnxruntime {release}{how}")
    if _TARGET and _TARGET.get("rowsError") and not any(
            t.provider == "CPUExecutionProvider" and described_ort(t) == ort["onnxruntime"]
            for t in tables):
        stale.append(f"the CPU table is the shipped one: {_TARGET['rowsError']}")
    if stale:
        record["mayBeStale"] = stale
    summary["ort"] = record
    return summary
