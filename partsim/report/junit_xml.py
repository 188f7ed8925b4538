"""JUnit XML building blocks: one <testsuite> from test cases, and several documents joined under
one <testsuites>."""

from xml.sax.saxutils import escape, quoteattr

from .escape import text_renderer

__all__ = ["junit_document", "join_junit_documents"]

_HEAD = '<?xml version="1.0" encoding="UTF-8"?>\n'


@text_renderer
def junit_document(suite_name, cases):
    """``cases``: ``[(classname, name, failure message or None, failure body[, system-out])]`` -> one
    <testsuite>; the optional fifth item is text for the case's <system-out> (a note on a pass)."""
    lines, failures = [], 0
    for classname, name, message, body, *note in cases:
        open_tag = f"  <testcase classname={quoteattr(classname)} name={quoteattr(name)}"
        out = f"<system-out>{escape(note[0])}</system-out>" if note and note[0] else ""
        if message is None:
            lines.append(open_tag + (f">{out}</testcase>" if out else "/>"))
            continue
        failures += 1
        lines.append(f"{open_tag}><failure message={quoteattr(message)}>{escape(body or '')}</failure>{out}"
                     "</testcase>")
    head = f'<testsuite name={quoteattr(suite_name)} tests="{len(cases)}" failures="{failures}">'
    return _HEAD + head + "\n" + "".join(line + "\n" for line in lines) + "</testsuite>\n"


def join_junit_documents(a, b):
    """Two JUnit documents with one <testsuite> each -> one <testsuites> document."""
    body = [t[len(_HEAD):] if t.startswith(_HEAD) else t for t in (a, b)]
    return _HEAD + "<testsuites>\n" + "".join(body) + "</testsuites>\n"
