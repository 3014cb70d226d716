"""The one output-escaping function, and the writers' thin wrappers around it.

Names cuwheel prints come from the files it reads (member names, section names, RPATH and
NEEDED strings, METADATA) and from configuration (row names): hostile ones carry terminal
escape sequences, C1 controls, bidi overrides, line breaks or undecodable bytes (read with
``surrogateescape``, so lone surrogates U+DC80..U+DCFF).  :func:`escape` makes any such
text one printable line that shows what was there:

* a line feed, carriage return or tab -> ``\\n``, ``\\r``, ``\\t``;
* an undecodable byte ``0xNN`` (a lone surrogate U+DCNN) -> ``\\xNN``;
* any other character that is not printable (``str.isprintable``: controls, format
  characters such as bidi overrides and zero-width marks, line and paragraph separators,
  unassigned code points and noncharacters, other surrogates) -> ``\\xNN`` / ``\\uNNNN`` /
  ``\\UNNNNNNNN``.

Every text, GitHub, JUnit, SVG, env and SARIF writer passes what it did not write itself
through :func:`escape` (or a wrapper here: :func:`xml_text`, :func:`xml_attr`,
:func:`gh_data`, :func:`gh_prop`); JSON writers use :func:`dumps`, which keeps controls
(JSON escapes them) but turns lone surrogates into the same visible ``\\xNN``, so a
document holds only valid Unicode.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = [
    "dumps",
    "escape",
    "escape_lines",
    "gh_data",
    "gh_prop",
    "json_clean",
    "normalized_name",
    "xml_attr",
    "xml_text",
]


_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape_char(ch: str) -> str:
    short = _SHORT.get(ch)
    if short is not None:
        return short
    n = ord(ch)
    if 0xDC80 <= n <= 0xDCFF:  # an undecodable byte, as surrogateescape keeps it
        return f"\\x{n - 0xDC00:02x}"
    if n < 0x100:
        return f"\\x{n:02x}"
    if n < 0x10000:
        return f"\\u{n:04x}"
    return f"\\U{n:08x}"


def escape(text: str) -> str:
    """``text`` as one printable line: every character that is not printable escaped."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else _escape_char(ch) for ch in text)


def escape_lines(lines: Iterable[str]) -> str:
    """Lines (each one intended line) escaped and joined, with a final newline."""
    return "".join(escape(line) + "\n" for line in lines)


def xml_text(text: str) -> str:
    """Character data valid in XML 1.0: escaped, then ``& < >`` as entities."""
    return escape(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def xml_attr(text: str) -> str:
    """A double-quoted XML 1.0 attribute value (quotes included)."""
    return '"' + xml_text(text).replace('"', "&quot;") + '"'


def gh_data(text: str) -> str:
    """The message of a GitHub Actions workflow command (one line, ``%`` encoded)."""
    return escape(text).replace("%", "%25")


def gh_prop(text: str) -> str:
    """A property value of a GitHub Actions workflow command."""
    return gh_data(text).replace(":", "%3A").replace(",", "%2C")


def _clean_str(s: str) -> str:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return "".join(_escape_char(ch) if 0xD800 <= ord(ch) <= 0xDFFF else ch for ch in s)
    return s


def json_clean(obj: Any) -> Any:
    """``obj`` with every string (keys too) free of lone surrogates."""
    if isinstance(obj, str):
        return _clean_str(obj)
    if isinstance(obj, dict):
        return {_clean_str(k) if isinstance(k, str) else k: json_clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_clean(v) for v in obj]
    return obj


def dumps(obj: Any, **kwargs: Any) -> str:
    """``json.dumps`` of ``obj`` holding only valid Unicode (ASCII output, as json's
    default); lone surrogates are rewritten as visible ``\\xNN`` text."""
    import json  # here: the CLI imports this module to start, most commands print no JSON

    text = json.dumps(obj, **kwargs)
    if "\\ud" not in text:  # the fast path: no surrogate escape in the document at all
        return text
    return json.dumps(json_clean(obj), **kwargs)


def normalized_name(name: str) -> str:
    """A project name as PEP 503 compares it: runs of ``-_.`` as one ``-``, lower case."""
    import re

    return re.sub(r"[-_.]+", "-", name).lower()
