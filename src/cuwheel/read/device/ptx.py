"""PTX text: the ``.version`` (PTX ISA) and ``.target`` directives, and the names of the
``.entry`` kernels (PTX ISA manual, "Kernel and Function Directives")."""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["PtxHeader", "looks_like_ptx", "parse_ptx_header", "ptx_entries", "ptx_names",
           "ptx_variables"]

_VERSION = re.compile(rb"\.version[ \t]+(\d+)\.(\d+)")
# Whitespace runs, and the operands of .target: each a single character class, matched
# at a fixed position (never searched), so nothing can backtrack.
_SPACE = re.compile(rb"[ \t\n\r\f\v]*")
_OPERANDS = re.compile(rb"[^\n;/]*")


@dataclass(frozen=True)
class PtxHeader:
    version: tuple[int, int]
    target: str  # the first target, e.g. "sm_100f"
    options: tuple[str, ...]  # other .target items, e.g. ("debug",)


def _skip_banner(text: bytes) -> int:
    """Offset after leading whitespace and ``//`` comment lines (as `nvcc -ptx` writes).

    A plain loop, not a regular expression: nested repetition over whitespace
    backtracks exponentially on text that is not PTX.
    """
    i, n = 0, len(text)
    while i < n:
        if text[i] in b" \t\r\n":
            i += 1
        elif text.startswith(b"//", i):
            j = text.find(b"\n", i)
            if j < 0:
                return n
            i = j + 1
        else:
            break
    return i


def _version(text: bytes) -> re.Match[bytes] | None:
    return _VERSION.match(text, _skip_banner(text))


def looks_like_ptx(prefix: bytes) -> bool:
    return _version(prefix) is not None


def _space_end(text: bytes, pos: int) -> int:
    m = _SPACE.match(text, pos)
    return m.end() if m else pos


def _target(text: bytes, start: int) -> bytes | None:
    """The operands of the first ``.target`` directive that opens a line (after blank
    space) past ``start``: one forward pass over the lines, each byte looked at a bounded
    number of times.  (A regular expression ``^\\s*\\.target`` with MULTILINE retried
    its whitespace run from every line start: 84 s on 4 KB of newlines.)"""
    n = len(text)
    nl = text.find(b"\n", start)
    while 0 <= nl < n:
        j = _space_end(text, nl + 1)
        if text.startswith(b".target", j):
            k = j + len(b".target")
            if k < n and text[k] in b" \t\n\r\f\v":
                k = _space_end(text, k)
                m = _OPERANDS.match(text, k)
                operands = m.group(0) if m else b""
                if operands.strip():
                    return operands
                j = k  # ".target ;": no operands, look further (as the expression did)
        nl = text.find(b"\n", j)
    return None


def parse_ptx_header(text: bytes) -> PtxHeader | None:
    m = _version(text)
    if not m:
        return None
    operands = _target(text, m.end())
    if operands is None:
        return None
    items = [s.strip() for s in operands.decode("ascii", "replace").split(",") if s.strip()]
    if not items:
        return None
    return PtxHeader((int(m.group(1)), int(m.group(2))), items[0], tuple(items[1:]))


# A PTX identifier (PTX ISA "Identifiers"): a letter or one of ``_$%`` followed by
# letters, digits and ``_$``; matched at a fixed position, never searched.
_IDENT = re.compile(rb"[A-Za-z_$%][A-Za-z0-9_$]*")
_MAX_ENTRIES = 1 << 16
_MAX_ENTRY_NAME = 4096


def ptx_entries(text: bytes) -> tuple[str, ...]:
    """The names of the ``.entry`` kernels a PTX module defines or declares, in text
    order, each once, at most 65,536, each cut to 4,096 bytes.  One forward pass: each
    ``.entry`` directive must follow a line start, blank space or another directive
    (``.visible .entry name(``) and be followed by blank space and the name."""
    found: list[str] = []
    seen: set[bytes] = set()
    at = text.find(b".entry")
    while at >= 0 and len(found) < _MAX_ENTRIES:
        k = at + len(b".entry")
        if (at == 0 or text[at - 1] in b" \t\r\n") and k < len(text) and text[k] in b" \t":
            m = _IDENT.match(text, _space_end(text, k))
            if m:
                name = m.group(0)[:_MAX_ENTRY_NAME]
                if name not in seen:
                    seen.add(name)
                    found.append(name.decode("ascii"))
                k = m.end()
        at = text.find(b".entry", k)
    return tuple(found)


# A module-scope variable definition opens its line (nvcc writes them at column 0, and
# function bodies indented): [.visible|.weak] .global|.const, then its directives
# (.align N, the type, .v2/.v4 ...) and the name (PTX ISA "Variable Declarations").
# Found with bytes.find on each opening (instructions such as ld.global never open a
# line): a multi-line regular expression tried every line start, 3.5 s over cuFFT's PTX.
_OPENINGS = tuple(p + s + b" " for p in (b"", b".visible ", b".weak ")
                  for s in (b".global", b".const"))
_DIRECTIVE = re.compile(rb"\.[A-Za-z0-9_]+")
_NUMBER = re.compile(rb"[0-9]+")
_MAX_DIRECTIVES = 16


def _openings(text: bytes) -> list[int]:
    """Where a variable definition's first directive ends, at line starts, in order (at
    most as many per opening as names are kept, 65,536 each)."""
    found = []
    for o in _OPENINGS:
        if text.startswith(o):
            found.append(len(o))
        at = text.find(b"\n" + o)
        while at >= 0 and len(found) <= _MAX_ENTRIES * len(_OPENINGS):
            found.append(at + 1 + len(o))
            at = text.find(b"\n" + o, at + 1)
    return sorted(found)


def ptx_variables(text: bytes) -> tuple[str, ...]:
    """The names of the ``.global`` and ``.const`` variables a PTX module defines at
    module scope (``.extern`` declarations are not definitions and do not match), in text
    order, each once, bounded as :func:`ptx_entries` is."""
    found: list[str] = []
    seen: set[bytes] = set()
    for k in _openings(text):
        k = _space_end(text, k)
        for _ in range(_MAX_DIRECTIVES):
            d = _DIRECTIVE.match(text, k)
            if d is None:
                break
            k = _space_end(text, d.end())
            if d.group(0) == b".align":
                n = _NUMBER.match(text, k)
                k = _space_end(text, n.end()) if n else k
            elif d.group(0) == b".attribute" and text[k : k + 1] == b"(":
                close = text.find(b")", k, k + 64)  # .attribute(.managed)
                k = _space_end(text, close + 1) if close > 0 else k
        name = _IDENT.match(text, k)
        if name is None:
            continue
        raw = name.group(0)[:_MAX_ENTRY_NAME]
        if raw not in seen:
            seen.add(raw)
            found.append(raw.decode("ascii"))
            if len(found) >= _MAX_ENTRIES:
                break
    return tuple(found)


def ptx_names(text: bytes) -> tuple[tuple[str, ...], tuple[str, ...] | None]:
    """(its ``.entry`` kernels, its variables): the variables are read only for a text
    without kernels, the one case a judgement asks for them (a kernel-less module is loaded
    only for them, rules/kernels.py); None otherwise."""
    entries = ptx_entries(text)
    return entries, (None if entries else ptx_variables(text))
