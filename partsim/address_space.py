"""The address-space ceiling (``RLIMIT_AS``), lowered one way wherever partsim bounds memory: an ORT
child's (:func:`partsim.runtime.process.memory_ceiling`) and this process's around ONNX shape
inference (:mod:`partsim.io.shape_inference`), so that a runaway allocation fails (``MemoryError``,
``std::bad_alloc``) instead of paging the machine.  Only lowers: a tighter limit already set (``ulimit
-v``) stays.  Where the OS has no such limit (no ``resource`` module), nothing happens."""

__all__ = ["lower_address_space", "restore_address_space", "address_space_in_use", "can_lower_another"]


def lower_address_space(cap, pid=0):
    """Lower this process's soft ``RLIMIT_AS`` (or that of process ``pid``: Linux's ``prlimit``, see
    :func:`can_lower_another`) to ``cap`` bytes (no higher than the hard limit).  Returns what
    :func:`restore_address_space` takes, or ``None`` when nothing changed (already as tight, or not on
    this platform)."""
    try:
        import resource

        soft, hard = resource.prlimit(pid, resource.RLIMIT_AS) if pid else resource.getrlimit(resource.RLIMIT_AS)
    except (ImportError, OSError, ValueError, AttributeError):
        return None
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    if soft != resource.RLIM_INFINITY and soft <= cap:
        return None  # already as tight
    try:
        if pid:
            resource.prlimit(pid, resource.RLIMIT_AS, (cap, hard))
        else:
            resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    except (ValueError, OSError):
        return None
    return soft, hard


def can_lower_another():
    """Whether :func:`lower_address_space` can lower another process's limit here (``resource.prlimit``)."""
    try:
        import resource
    except ImportError:
        return False
    return hasattr(resource, "prlimit")


def restore_address_space(saved):
    """Put back the limit :func:`lower_address_space` replaced (``saved``; ``None``: nothing to do)."""
    if saved is not None:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, saved)


def address_space_in_use():
    """Bytes of address space this process uses now (Linux ``/proc/self/statm``), or ``None``."""
    import os

    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, AttributeError):
        return None
