"""Kernel families: an entry kernel's name without its template arguments (``ns::marlin``
for ``ns::marlin<float, 4>(float*)``), read from the Itanium C++ ABI mangling that nvcc
uses on every host (https://itanium-cxx-abi.github.io/cxx-abi/abi.html#mangling,
``<encoding>``, ``<nested-name>``, ``<unscoped-name>``; docs/formats.md#cubin-entry-kernels).

Only the name of the encoding is decoded, never its template arguments or parameter
types: a ``__global__`` function is a namespace-scope (non-member) function, so its name is
a chain of namespaces ending in the function, and its template arguments, when it has some,
come last.  A name this subset does not read (a local entity, a substitution in the
prefix, an operator) is its own family, as is a name that is not mangled (``extern "C"``):
two kernels then share a family only when their names are equal.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

__all__ = ["family_rows", "kernel_families", "kernel_family"]

_ANONYMOUS = "_GLOBAL__N"
# A namespace chain longer than this is not a kernel name any compiler wrote.
_MAX_PARTS = 64


def _source_name(name: str, i: int) -> tuple[str, int] | None:
    """``<source-name> ::= <positive length number> <identifier>`` at ``i``."""
    j = i
    while j < len(name) and name[j].isdigit() and j - i < 5:
        j += 1
    if j == i or name[i] == "0":
        return None
    end = j + int(name[i:j])
    if end > len(name):
        return None
    ident = name[j:end]
    return ("(anonymous namespace)" if ident.startswith(_ANONYMOUS) else ident), end


def _parse(name: str) -> str | None:
    """The family of a mangled name, or None when this subset does not read it."""
    i = 2
    if name.startswith("L", i):  # internal linkage (a static kernel)
        i += 1
    if name.startswith("St", i):  # ::std::
        parts, i = ["std"], i + 2
        nested = False
    else:
        parts = []
        nested = name.startswith("N", i)
        if nested:
            i += 1
            while i < len(name) and name[i] in "rVKRO":  # qualifiers: not on a kernel
                i += 1
    while len(parts) < _MAX_PARTS:
        if i >= len(name):
            return None
        c = name[i]
        if c.isdigit():
            got = _source_name(name, i)
            if got is None:
                return None
            part, i = got
            parts.append(part)
            while name.startswith("B", i):  # ABI tags: not part of the family
                tag = _source_name(name, i + 1)
                if tag is None:
                    return None
                i = tag[1]
            if not nested:
                break
        elif c == "L" and nested:  # a static kernel inside a namespace
            i += 1
        elif c in "IE" and parts:  # its template arguments, or the end of the name
            break
        else:
            return None
    else:
        return None
    return "::".join(parts) if parts else None


@functools.lru_cache(maxsize=1 << 16)
def kernel_family(name: str) -> str:
    """The family of one entry kernel's (mangled) name: its namespaces and name without
    template arguments or parameters; a name this subset does not decode is its own."""
    if not name.startswith("_Z"):
        return name
    return _parse(name) or name


def kernel_families(names: Iterable[str]) -> frozenset[str]:
    return frozenset(kernel_family(n) for n in names)


def family_rows(entries: Iterable[tuple[str, str, tuple[str, ...] | None]]
                ) -> list[tuple[str, int, list[str], list[str]]] | None:
    """Per family of the ``(kind, target, kernel names)`` of a binary's entries: (family,
    distinct kernels, SASS targets, PTX targets), by family name; None when no entry's
    names were read."""
    rows: dict[str, tuple[set[str], set[str], set[str]]] = {}
    read = False
    for kind, target, names in entries:
        if names is None:
            continue
        read = True
        for n in names:
            row = rows.setdefault(kernel_family(n), (set(), set(), set()))
            row[0].add(n)
            (row[1] if kind == "sass" else row[2]).add(target)
    if not read:
        return None
    return [(f, len(r[0]), sorted(r[1], key=_by_arch), sorted(r[2], key=_by_arch))
            for f, r in sorted(rows.items())]


def _by_arch(target: str) -> tuple[int, str]:
    """``sm_75`` before ``sm_120f``: by the architecture number, then the name."""
    digits = "".join(c for c in target if c.isdigit())
    return int(digits or 0), target
