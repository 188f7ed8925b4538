"""External-data locations: a weight file must stay inside the model's folder.
"""

import os

from ..errors import ModelError


def check_external_location(t, what, base, path, resolved=None):
    """Where tensor ``t``'s external data lives, refused unless it is a file inside ``base``.

    Returns ``(target path, external_data entries as a dict)``; never opens anything.
    Raises ModelError (naming ``path``) for absolute paths, NUL bytes, unresolvable
    names and locations that leave the model's folder (after resolving links).
    ``resolved``, a dict, remembers locations already found inside ``base`` (most
    tensors of a model share one weight file).
    """
    info = {e.key: e.value for e in t.external_data}
    if not all(isinstance(x, str) for kv in info.items() for x in kv):
        raise ModelError(f"{what}: an external-data entry is not valid UTF-8 text", path)
    return check_location(info.get("location", ""), what, base, path, resolved), info


def check_location(loc, what, base, path, resolved=None):
    """The file an external-data location ``loc`` names, refused (ModelError naming ``path``)
    unless it is a relative path to a file inside ``base``; see :func:`check_external_location`."""
    if not loc or os.path.isabs(loc) or loc.startswith(("/", "\\")):
        raise ModelError(f"{what}: external data location {loc!r} is not a relative path", path)
    if resolved is not None and loc in resolved:
        return resolved[loc]
    if "\0" in loc:
        raise ModelError(f"{what}: external data location {loc!r} contains a NUL byte", path)
    try:
        target = (base / loc).resolve()
    except (OSError, RuntimeError, ValueError) as exc:  # a link loop, a name too long
        raise ModelError(f"{what}: external data location {loc!r} cannot be resolved: {exc}", path) from None
    if target == base or base not in target.parents:
        raise ModelError(f"{what}: external data location {loc!r} escapes the model's folder", path)
    if resolved is not None:
        resolved[loc] = target
    return target
