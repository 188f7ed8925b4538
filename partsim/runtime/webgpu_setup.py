"""``partsim doctor --setup webgpu``: the Vulkan environment the WebGPU plugin needs, made in one command.

The same recipe as the checkout's ``make webgpu`` (Makefile, WEBGPU_DEBS): Mesa 25's lavapipe (software
Vulkan) and the libraries it loads, from Debian bookworm and bookworm-backports, downloaded with a private
apt configuration and unpacked with ``dpkg -x`` into the WebGPU home (:func:`partsim.runtime.webgpu_host.home`):
nothing is installed system-wide.  Then ``icd.json`` names the lavapipe driver by absolute path and
``preload.txt`` lists the libraries of ``root/`` it needs (``ldd``), which :mod:`webgpu_host` loads in a
session child.  Needs ``apt-get``, ``dpkg`` and ``ldd`` (a Debian or Ubuntu x86-64 machine) and the network.
"""

import json
import os
import shutil
import subprocess
import tempfile

from ..errors import UsageError

__all__ = ["DEBS", "setup_webgpu"]

SOURCES = ("deb http://deb.debian.org/debian bookworm main\n"
           "deb http://deb.debian.org/debian bookworm-backports main\n")
DEBS = ("mesa-vulkan-drivers/bookworm-backports libdrm2/bookworm-backports libdrm-amdgpu1/bookworm-backports "
        "libdrm-common/bookworm-backports libvulkan1 libllvm15 libz3-4 libelf1 libwayland-client0 libx11-xcb1 "
        "libx11-6 libxcb-dri3-0 libxcb-present0 libxcb-randr0 libxcb-shm0 libxcb-sync1 libxcb-xfixes0 libxcb1 "
        "libxshmfence1 libxau6 libxdmcp6 libedit2 libxml2 libicu72 libbsd0 libmd0").split()
LIB = "usr/lib/x86_64-linux-gnu"


def _run(argv, cwd=None, env=None, timeout=900):
    try:
        out = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UsageError(f"{argv[0]} failed: {exc}") from None
    if out.returncode != 0:
        last = (out.stderr.strip().splitlines() or [f"exit {out.returncode}"])[-1]
        raise UsageError(f"{' '.join(argv[:2])} failed: {last}")
    return out.stdout


def _download(apt_dir):
    """The .deb files of :data:`DEBS`, fetched with apt's private configuration under ``apt_dir``."""
    for sub in ("lists/partial", "cache/archives/partial", "debs"):
        os.makedirs(os.path.join(apt_dir, sub), exist_ok=True)
    with open(os.path.join(apt_dir, "sources.list"), "w", encoding="utf-8") as f:
        f.write(SOURCES)
    opts = ["-o", f"Dir::Etc::SourceList={apt_dir}/sources.list", "-o", "Dir::Etc::SourceParts=/dev/null",
            "-o", f"Dir::State::Lists={apt_dir}/lists", "-o", f"Dir::Cache={apt_dir}/cache",
            "-o", "APT::Sandbox::User=root"]
    _run(["apt-get", *opts, "update", "-qq"])
    _run(["apt-get", *opts, "download", "-qq", *DEBS], cwd=os.path.join(apt_dir, "debs"))
    return sorted(os.path.join(apt_dir, "debs", n) for n in os.listdir(os.path.join(apt_dir, "debs"))
                  if n.endswith(".deb"))


def _preload(root):
    """``preload.txt``'s lines: libvulkan, then the libraries of ``root`` lavapipe links to (ldd's order)."""
    lib = os.path.join(root, LIB)
    env = dict(os.environ, LD_LIBRARY_PATH=lib)
    lines = [f"root/{LIB}/libvulkan.so.1"]
    for line in _run(["ldd", os.path.join(lib, "libvulkan_lvp.so")], env=env).splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[2].startswith(lib + "/"):
            lines.append("root/" + os.path.relpath(parts[2], root))
    return lines


def setup_webgpu(home):
    """Make the WebGPU environment in ``home`` (replacing one there); returns ``home``."""
    for tool in ("apt-get", "dpkg", "ldd"):
        if shutil.which(tool) is None:
            raise UsageError(f"--setup webgpu needs {tool} (a Debian or Ubuntu x86-64 machine)")
    home = os.path.abspath(home)
    os.makedirs(home, exist_ok=True)
    work = tempfile.mkdtemp(prefix=".setup-", dir=home)
    try:
        root = os.path.join(work, "root")
        os.makedirs(root)
        for deb in _download(os.path.join(work, "apt")):
            _run(["dpkg", "-x", deb, root])
        lvp = os.path.join(root, LIB, "libvulkan_lvp.so")
        if not os.path.isfile(lvp):
            raise UsageError("the downloaded Mesa has no libvulkan_lvp.so (lavapipe)")
        lines = _preload(root)
        final = os.path.join(home, "root")
        shutil.rmtree(final, ignore_errors=True)
        os.replace(root, final)
        icd = {"file_format_version": "1.0.0",
               "ICD": {"api_version": "1.4.305", "library_path": os.path.realpath(os.path.join(final, LIB,
                                                                                              "libvulkan_lvp.so"))}}
        _write(os.path.join(home, "icd.json"), json.dumps(icd) + "\n")
        _write(os.path.join(home, "preload.txt"), "".join(f"{line}\n" for line in lines))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return home


def _write(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)
