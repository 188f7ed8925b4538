"""JSON-Schema errors of a rule table in a table author's words, each at the line it is about.

jsonschema reports an unknown key as "Additional properties are not allowed ('max_ranks' was
unexpected)" at the line of the enclosing rule; a table author wants "unknown key max_ranks (did
you mean max_rank?)" at the key's own line.  Both the loader (the first problem, raised) and
``partsim lint`` (every problem) word them here.
"""

import difflib

__all__ = ["schema_problems"]


def _allowed_keys(schema):
    return sorted(schema.get("properties", {}))


def schema_problems(error):
    """``[(path tuple, message)]`` for one ``jsonschema.ValidationError``: one per unknown key for an
    ``additionalProperties`` error (path ending at the key), else the error as jsonschema words it."""
    path = tuple(error.absolute_path)
    where = "/".join(str(p) for p in path) or "(top)"
    at = f"{where}: " if path else ""
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = _allowed_keys(error.schema)
        patterns = error.schema.get("patternProperties", {})
        unknown = [k for k in error.instance if k not in allowed and not _matches_pattern(k, patterns)]
        if unknown:
            out = []
            for key in unknown:
                close = difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
                hint = f" (did you mean {close[0]}?)" if close else f" (known: {', '.join(allowed)})"
                out.append((path + (key,), f"{at}unknown key {key}{hint}"))
            return out
    return [(path, f"{where}: {error.message}")]


def _matches_pattern(key, patterns):
    import re

    return any(re.search(p, key) for p in patterns)
