"""CPU-row checks (CPU): no device code, no CUDA library linked, no CUDA requirement."""

from __future__ import annotations

from cuwheel.checks.context import CheckContext
from cuwheel.checks.findings import Finding
from cuwheel.knowledge.active import active_catalog

__all__ = ["check_cpu"]


def check_cpu(ctx: CheckContext) -> list[Finding]:
    if not ctx.is_cpu:
        return []
    out: list[Finding] = []
    for lib in ctx.libs:
        b = lib.binary
        if b.has_device_code:
            names = sorted({e.name for e in b.entries()})
            out.append(ctx.finding(
                "CPU001",
                f"device code ({' '.join(names)}) in {b.containers_with_code} containers",
                lib.name,
            ))  # fmt: skip
        linked = [n for n in b.needed if active_catalog().is_cuda_library(n, driver=True)]
        if linked:
            out.append(ctx.finding("CPU002", f"links {', '.join(linked)}", lib.name))
    for d in ctx.declared:
        if d.is_cuda and d.applies:
            out.append(ctx.finding("CPU003", f"declares {d.label}"))
    return out
