"""Test harness for the OpenVINO plugin EP on a non-Intel CPU: observation only, never used to predict.

``onnxruntime-ep-openvino`` 1.8.1 offers its CPU device only when ORT reports an Intel CPU:
``OpenVINOEpPluginFactory::MatchOvDevice`` compares the hardware device's vendor id with 0x8086
(one ``cmp $0x8086,%eax`` at file offset 0x141b06 of ``libonnxruntime_providers_openvino_plugin.so``).
On any other CPU (this project's machines and CI are AMD) no plugin session can be created, so the
tests could not check the plugin table against a real session.  ``make openvino-plugin`` runs

    .venv-ovplugin/bin/python tests/ovplugin_harness.py make

which writes ``.venv-ovplugin/harness/python``, the interpreter to give ``partsim observe`` /
``verify --observe --python``:

- on an Intel CPU: a script that runs ``.venv-ovplugin/bin/python`` unchanged (the real plugin);
- on another CPU: a script that puts ``.venv-ovplugin/harness/site`` first on ``PYTHONPATH``, where
  ``onnxruntime_ep_openvino`` is a *copy* of the installed package whose plugin library has that one
  immediate replaced by the vendor id ORT reports for this CPU (the libraries it loads beside it are
  links to the installed ones).  The copy is made only when the installed library is exactly 1.8.1's
  (sha256 below) and the five bytes at the offset are ``cmp $0x8086,%eax``; otherwise nothing is
  written and the reason is printed (the plugin tests then skip with it).

The installed package is never modified, partsim never imports this module, and nothing predicted
by partsim comes from it: it only lets real sessions be observed (the placement logic of the copy is
the plugin's own, byte for byte but for the vendor id).  ``status`` prints why the harness is
missing, or nothing.
"""

import hashlib
import os
import shutil
import stat
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENV = ROOT / ".venv-ovplugin"
HARNESS = VENV / "harness"
PYTHON = HARNESS / "python"
REASON = HARNESS / "unavailable.txt"
LIBRARY = "libonnxruntime_providers_openvino_plugin.so"
# onnxruntime-ep-openvino 1.8.1 (PyPI, manylinux_2_28_x86_64): the plugin library's sha256 and where its
# MatchOvDevice compares the CPU's vendor id with Intel's (objdump: 141b06: 3d 86 80 00 00  cmp $0x8086,%eax)
PLUGIN_VERSION = "1.8.1"
LIBRARY_SHA256 = "99644306dea90173d2fac5e2ad8d10c9574ecf6e6e71ca30e426531abd5a717f"
CMP_OFFSET = 0x141B06
CMP_INTEL = bytes.fromhex("3d86800000")
INTEL = 0x8086


def _cpu_vendor_id(ort):
    """The vendor id ORT's device discovery gives this machine's CPU (what MatchOvDevice reads)."""
    for dev in ort.get_ep_devices():
        if dev.ep_name == "CPUExecutionProvider":
            return int(dev.device.vendor_id)
    raise RuntimeError("ORT lists no CPU device")


def _script(lines):
    PYTHON.write_text("#!/bin/sh\n" + "\n".join(lines) + "\n")
    PYTHON.chmod(PYTHON.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def _patched_copy(package, vendor):
    """``harness/site/onnxruntime_ep_openvino``: the package's files linked, its plugin library copied with
    the vendor comparison changed; ``None`` or why it cannot be made."""
    lib = package / LIBRARY
    data = lib.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != LIBRARY_SHA256:
        return f"{lib} is not onnxruntime-ep-openvino {PLUGIN_VERSION}'s library (sha256 {digest[:16]}…)"
    if data[CMP_OFFSET:CMP_OFFSET + 5] != CMP_INTEL:
        return f"{lib}: the bytes at {CMP_OFFSET:#x} are not cmp $0x8086,%eax"
    if not 0 < vendor <= 0xFFFF:
        return f"the CPU's vendor id {vendor:#x} does not fit the comparison's immediate"
    site = HARNESS / "site" / package.name
    site.mkdir(parents=True)
    for item in sorted(package.iterdir()):
        if item.name == "__pycache__":
            continue
        if item.name.startswith(LIBRARY):  # the .so and its .so.1 / .so.1.8.1 names: the patched copy
            patched = data[:CMP_OFFSET + 1] + vendor.to_bytes(2, "little") + data[CMP_OFFSET + 3:]
            (site / item.name).write_bytes(patched)
            (site / item.name).chmod(0o755)
        else:
            (site / item.name).symlink_to(item)
    return None


def make():
    """Write the harness (see the module docstring); return why it cannot be made, or ``None``."""
    shutil.rmtree(HARNESS, ignore_errors=True)
    HARNESS.mkdir(parents=True)
    try:
        import onnxruntime as ort
        import onnxruntime_ep_openvino as plugin
    except ImportError as exc:
        return f"{VENV} lacks onnxruntime or onnxruntime-ep-openvino ({exc})"
    package = Path(plugin.__file__).resolve().parent
    vendor = _cpu_vendor_id(ort)
    real = VENV / "bin" / "python"
    if vendor == INTEL:
        _script([f'exec "{real}" "$@"'])
        return None
    problem = _patched_copy(package, vendor)
    if problem:
        return problem
    site = HARNESS / "site"
    _script([f"# observation harness: onnxruntime_ep_openvino with MatchOvDevice accepting vendor {vendor:#06x}",
             f'PYTHONPATH="{site}${{PYTHONPATH:+:$PYTHONPATH}}" exec "{real}" "$@"'])
    return None


def status():
    """Why the harness python is missing, or ``None`` when it is there."""
    if PYTHON.exists():
        return None
    if REASON.exists():
        return REASON.read_text().strip()
    return f"{PYTHON} is absent: `make openvino-plugin` makes it"


def main(argv):
    if argv[1:] == ["make"]:
        problem = make()
        if problem:
            PYTHON.unlink(missing_ok=True)
            REASON.write_text(problem + "\n")
            print(f"OpenVINO plugin harness not made: {problem}", file=sys.stderr)
            return 1
        print(f"OpenVINO plugin harness: {os.path.relpath(PYTHON, ROOT)}")
        return 0
    if argv[1:] == ["status"]:
        problem = status()
        print(problem or f"ready: {PYTHON}")
        return 1 if problem else 0
    print("usage: ovplugin_harness.py make|status", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
