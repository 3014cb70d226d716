"""Which CUDA major a binary is tied to by what it links, a lookup in the catalog's
library table (docs/compat.md#driver-gates).  Readers ask it for an artifact's train
evidence and the driver rules for the runtime floor; it sits here, below both, so that
neither imports the other."""

from __future__ import annotations

from cuwheel.knowledge.catalog import active_catalog
from cuwheel.knowledge.platforms import load_platforms
from cuwheel.model.inventory import Binary

__all__ = ["binary_os", "runtime_majors"]


def binary_os(binary: Binary) -> str:
    """The OS whose driver would load ``binary``: the OS of the platforms whose native
    format it has (``"windows"`` for PE files, data/platforms.toml), else ``"linux"``."""
    return load_platforms().os_of_format(binary.format) or "linux"


def runtime_majors(binary: Binary) -> tuple[tuple[int, str], ...]:
    """CUDA majors the binary is tied to, with the library that says so: its own soname or
    a DT_NEEDED / imported DLL shipped by a toolkit component of exactly one CUDA major
    (``libcudart.so.13`` -> 13; ``libcurand.so.10``, in 11, 12 and 13, says nothing)."""
    os = binary_os(binary)
    out: list[tuple[int, str]] = []
    names = ([binary.soname] if binary.soname else []) + list(binary.needed)
    cat = active_catalog()  # the judging Rules' (rules/judge.py), else the shipped one
    for name in names:
        comps = [c for c in cat.find_library(name, os=os) if c.extra is not None]
        majors = {c.major for c in comps}
        if len(majors) == 1:
            out.append((majors.pop(), name))
    return tuple(dict.fromkeys(out))
