"""What the WebGPU plugin EP needs of the machine, set up inside a session child process.

The plugin (``onnxruntime-ep-webgpu``) runs on Dawn, which needs a Vulkan adapter; on a machine
without a GPU that is Mesa's lavapipe (software Vulkan).  Debian bookworm's own lavapipe (Mesa 22.3)
lacks the ``shader*ArrayDynamicIndexing`` features Dawn requires ("No supported adapters"); Mesa 25
from bookworm-backports has them.  ``make webgpu`` unpacks those packages (``dpkg -x``, nothing is
installed system-wide) into the WebGPU home (:func:`home`): ``root/`` (the unpacked tree),
``icd.json`` (the lavapipe driver, named by absolute path) and ``preload.txt`` (the libraries of
``root/`` lavapipe needs, in an order that loads).

ORT's Linux device discovery offers a GPU device only for a DRM card
(``onnxruntime/core/platform/linux/device_discovery.cc``: ``/sys/class/drm/cardN/device/{vendor,device}``).
Where there is none, :func:`prepare` gives this process a private mount namespace (``unshare``; needs
root) whose ``/sys/class/drm`` lists one virtual PCI GPU (virtio-gpu's ids, 0x1af4:0x1050): the plugin
then offers its device and Dawn picks lavapipe.  Nothing outside this process sees the change; the
folder the real ``/sys/class`` is bound to lies in the child's own ``TMPDIR``, which the parent removes
(:mod:`partsim.runtime.process`).

Imports only the standard library: it runs in the session children under any interpreter.
"""

import ctypes
import os
import tempfile

#: libc mount flags and unshare's CLONE_NEWNS (linux/mount.h, linux/sched.h)
_MS_BIND, _MS_REC, _MS_PRIVATE, _CLONE_NEWNS = 4096, 16384, 1 << 18, 0x00020000
#: virtio-gpu's PCI vendor and device ids: a virtual GPU, which is what lavapipe is
_VIRTUAL_GPU = ("0x1af4", "0x1050")

__all__ = ["home", "missing", "prepare", "setup_command"]


def _checkout():
    """The partsim checkout this module runs from (its Makefile beside the package), or ``None`` for an
    installed partsim."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return root if os.path.isfile(os.path.join(root, "Makefile")) and os.path.isdir(os.path.join(root, "rules")) \
        else None


def home():
    """The folder ``make webgpu`` / ``partsim doctor --setup webgpu`` fills: ``$PARTSIM_WEBGPU_HOME``, else
    ``.webgpu`` in a checkout, else ``$XDG_DATA_HOME/partsim/webgpu`` (``~/.local/share/partsim/webgpu``)."""
    env = os.environ.get("PARTSIM_WEBGPU_HOME")
    if env:
        return os.path.abspath(env)
    root = _checkout()
    if root:
        return os.path.join(root, ".webgpu")
    data = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(data, "partsim", "webgpu")


def setup_command():
    """The one command that makes the WebGPU environment (:func:`home`)."""
    return "make webgpu" if _checkout() and not os.environ.get("PARTSIM_WEBGPU_HOME") else \
        "partsim doctor --setup webgpu"


def missing():
    """Why this machine cannot run WebGPU sessions (``None`` when it can, as far as files go)."""
    base = home()
    for name in ("icd.json", "preload.txt"):
        if not os.path.isfile(os.path.join(base, name)):
            return (f"the WebGPU environment (Mesa's lavapipe Vulkan driver) is not set up "
                    f"({os.path.join(base, name)} missing: run `{setup_command()}`)")
    if not _has_drm_card() and os.geteuid() != 0:
        return "ORT lists no GPU here (/sys/class/drm has no card) and only root can give a session a virtual one"
    return None


def _has_drm_card():
    try:
        return any(n.startswith("card") and n[4:].isdigit() for n in os.listdir("/sys/class/drm"))
    except OSError:
        return False


def _preload(base):
    """Load lavapipe's libraries from ``root/`` by path, so that the Vulkan loader and lavapipe use them
    (the dynamic linker reuses a loaded library of the same soname); ``None`` or why not.  A library
    whose dependencies are not loaded yet fails and is tried again after the others."""
    with open(os.path.join(base, "preload.txt"), encoding="utf-8") as f:
        todo = [line.strip() for line in f if line.strip()]
    errors = {}
    while todo:
        left = []
        for rel in todo:
            try:
                ctypes.CDLL(os.path.join(base, rel), mode=ctypes.RTLD_GLOBAL)
            except OSError as exc:
                errors[rel] = exc
                left.append(rel)
        if len(left) == len(todo):
            return f"cannot load {left[0]} of the WebGPU environment: {errors[left[0]]}"
        todo = left
    return None


def _fake_drm_card():
    """A private mount namespace whose /sys/class/drm lists one virtual GPU; ``None`` or why not."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_void_p]

    def mount(src, dst, fstype, flags):
        if libc.mount(src and src.encode(), dst.encode(), fstype and fstype.encode(), flags, None) != 0:
            raise OSError(ctypes.get_errno(), f"mount {dst}: {os.strerror(ctypes.get_errno())}")

    if libc.unshare(_CLONE_NEWNS) != 0:
        return f"cannot make a private mount namespace: {os.strerror(ctypes.get_errno())} (needs root)"
    try:
        mount(None, "/", None, _MS_REC | _MS_PRIVATE)  # nothing below propagates out of this process
        orig = tempfile.mkdtemp(prefix="partsim-sysclass-")
        mount("/sys/class", orig, None, _MS_BIND)
        mount("tmpfs", "/sys/class", "tmpfs", 0)
        for name in os.listdir(orig):
            os.symlink(os.path.join(orig, name), os.path.join("/sys/class", name))
        if os.path.lexists("/sys/class/drm"):
            os.remove("/sys/class/drm")
        # the device folder named like a PCI address, as ORT's GetPciBusId expects
        pci = "/sys/class/.virtual-gpu/0000:00:02.0"
        os.makedirs(pci)
        for name, value in zip(("vendor", "device"), _VIRTUAL_GPU):
            with open(os.path.join(pci, name), "w") as f:
                f.write(value + "\n")
        with open(os.path.join(pci, "uevent"), "w") as f:
            f.write("DRIVER=virtio-pci\nPCI_SLOT_NAME=0000:00:02.0\n")
        os.makedirs("/sys/class/drm/card0")
        os.symlink(pci, "/sys/class/drm/card0/device")
    except OSError as exc:
        return f"cannot give the session a virtual GPU: {exc}"
    return None


def prepare():
    """Make this process able to run the WebGPU plugin (before ORT discovers devices): Mesa's lavapipe
    named for the Vulkan loader, its shader cache in the WebGPU home, and a GPU for ORT to list.
    Returns ``None``, or one sentence saying why this machine cannot."""
    problem = missing()
    if problem:
        return problem
    base = home()
    os.environ["VK_DRIVER_FILES"] = os.path.join(base, "icd.json")
    os.environ.setdefault("MESA_SHADER_CACHE_DIR", os.path.join(base, "shader-cache"))
    os.environ.setdefault("MESA_SHADER_CACHE_MAX_SIZE", "2G")
    problem = _preload(base)
    if problem:
        return problem
    if not _has_drm_card():
        return _fake_drm_card()
    return None
