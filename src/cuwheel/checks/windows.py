"""Windows checks (WIN): DLLs link the CUDA runtime statically (they need only the driver),
import no CUDA library DLL that the wheel does not ship, and the wheel declares no NVIDIA
requirement that applies on Windows when its row declares none."""

from __future__ import annotations

import fnmatch

from cuwheel.checks.context import CheckContext
from cuwheel.checks.findings import Finding
from cuwheel.knowledge import catalog

__all__ = ["check_windows"]


def check_windows(ctx: CheckContext) -> list[Finding]:
    if ctx.os != "windows" or ctx.is_cpu:
        return []
    out: list[Finding] = []
    for lib in ctx.loadable_libs():
        if lib.binary.format != "pe":
            continue
        for name in lib.binary.needed:
            if fnmatch.fnmatchcase(name.lower(), "cudart*.dll"):
                out.append(ctx.finding(
                    "WIN001",
                    f"imports {name}: link the CUDA runtime statically (-cudart=static); the "
                    "DLL then needs only the driver's nvcuda.dll",
                    lib.name,
                ))  # fmt: skip
                continue
            comps = catalog.find_library(name, os="windows")
            if comps and ctx.ships(name) is None:
                out.append(ctx.finding(
                    "WIN002",
                    f"imports {name} ({comps[0].distribution}), which the wheel does not ship",
                    lib.name,
                ))  # fmt: skip
    if ctx.plan.row.dependencies == "none":
        for d in ctx.declared:
            if d.is_cuda and d.applies:
                where = ctx.platform.name if ctx.platform else "Windows"
                out.append(ctx.finding(
                    "WIN003",
                    f"requirement {d.label} applies on {where}; add a marker such as "
                    'sys_platform == "linux"',
                ))  # fmt: skip
    return out
