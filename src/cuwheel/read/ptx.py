"""PTX text: the ``.version`` (PTX ISA) and ``.target`` directives (PTX ISA manual)."""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["PtxHeader", "looks_like_ptx", "parse_ptx_header"]

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
