"""Shared lookups of the linkage checks: which linked names are CUDA libraries."""

from __future__ import annotations

from cuwheel.checks.context import CheckContext, Lib
from cuwheel.knowledge.catalog import Component, active_catalog

__all__ = ["cuda_links"]


def cuda_links(ctx: CheckContext, lib: Lib) -> list[tuple[str, tuple[Component, ...]]]:
    """(linked name, catalog components that ship it on this OS) for CUDA runtime libraries."""
    out = []
    for name in lib.binary.needed:
        comps = active_catalog().find_library(name, os=ctx.os)
        if comps:
            out.append((name, comps))
    return out

