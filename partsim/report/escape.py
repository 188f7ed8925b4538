"""Names from a model or a config shown as text: control characters made visible, never obeyed.

A node name, a domain or a check name comes from a stranger's file and may hold an escape
sequence (``\\x1b[2J`` clears a terminal, ``\\x1b]0;…`` sets its title), a line break that
forges a table row, or a character XML 1.0 forbids (JUnit files would not parse).  Every text
renderer (tables, Markdown, JUnit) shows such a character as its Python escape instead:
``\\x1b``, ``\\n``, ``\\u202e``.  The JSON outputs keep the names exactly (JSON escapes them).

>>> visible("conv\\x1b[2J\\nrow")
'conv\\\\x1b[2J\\\\nrow'
>>> visible_doc({"name": "a\\tb", "n": [1, "c\\x00"]})
{'name': 'a\\\\tb', 'n': [1, 'c\\\\x00']}
"""

import functools
import re

__all__ = ["visible", "visible_doc", "text_renderer"]

# C0 and C1 controls, DEL, line/paragraph separators, zero-width and bidirectional controls
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028\u2029\u202a-\u202e\u2060-\u2069\ufeff]")


def _escape(match):
    return ascii(match.group())[1:-1]  # '\x1b', '\n', '\u202e': what Python would print in a repr


def visible(text):
    """``text`` with every control character written as its escape (a cheap no-op for clean text)."""
    text = str(text)
    return _CONTROL.sub(_escape, text) if _CONTROL.search(text) else text


def visible_doc(value, skip=()):
    """A copy of ``value`` (dicts, lists, tuples, strings) with every string, keys included, passed
    through :func:`visible`; the top-level keys in ``skip`` are kept as they are (a renderer that
    escapes those cells itself, on big documents)."""
    if isinstance(value, str):
        return visible(value)
    if isinstance(value, dict):
        return {visible(k) if isinstance(k, str) else k: (v if k in skip else visible_doc(v))
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(visible_doc(v) for v in value)
    return value


def text_renderer(fn=None, skip=()):
    """Decorator of a text renderer: its arguments pass through :func:`visible_doc` first."""
    if fn is None:
        return functools.partial(text_renderer, skip=skip)

    @functools.wraps(fn)
    def render(*args, **kwargs):
        args = [visible_doc(a, skip) for a in args]
        kwargs = {k: visible_doc(v, skip) for k, v in kwargs.items()}
        return fn(*args, **kwargs)

    return render
