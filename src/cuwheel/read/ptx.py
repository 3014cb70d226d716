"""PTX text: the ``.version`` (PTX ISA) and ``.target`` directives (PTX ISA manual)."""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["PtxHeader", "looks_like_ptx", "parse_ptx_header"]

_VERSION = re.compile(rb"\.version[ \t]+(\d+)\.(\d+)")
_TARGET = re.compile(rb"^\s*\.target\s+([^\n;/]+)", re.MULTILINE)


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


def parse_ptx_header(text: bytes) -> PtxHeader | None:
    m = _version(text)
    if not m:
        return None
    t = _TARGET.search(text, m.end())
    if not t:
        return None
    items = [s.strip() for s in t.group(1).decode("ascii", "replace").split(",") if s.strip()]
    if not items:
        return None
    return PtxHeader((int(m.group(1)), int(m.group(2))), items[0], tuple(items[1:]))
