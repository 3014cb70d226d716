"""What a binary's links say, looked up in the catalog's library table
(docs/compat.md#driver-gates): which linked names are CUDA libraries, and which CUDA major
they tie the binary to.  The readers hand on the names; the rules (the runtime floor, an
artifact's train evidence), the checks and doctor ask here."""

from __future__ import annotations

from collections.abc import Iterable

from cuwheel.knowledge.active import active_catalog
from cuwheel.knowledge.catalog import Component
from cuwheel.knowledge.platforms import load_platforms
from cuwheel.model.inventory import Binary

__all__ = ["binary_os", "cuda_links", "runtime_majors"]


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


def cuda_links(
    names: Iterable[str], os: str | None
) -> list[tuple[str, tuple[Component, ...]]]:
    """(linked name, catalog components that ship it on ``os``) for the names that are CUDA
    libraries."""
    out = []
    cat = active_catalog()
    for name in names:
        comps = cat.find_library(name, os=os)
        if comps:
            out.append((name, comps))
    return out
