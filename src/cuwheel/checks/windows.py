"""Windows checks (WIN): DLLs link the CUDA runtime statically (they need only the driver),
import no CUDA library DLL that the wheel does not ship, and the wheel declares no NVIDIA
requirement that applies on Windows when its row declares none."""

from __future__ import annotations

import fnmatch

from cuwheel.checks.context import CheckContext
from cuwheel.checks.findings import Finding
from cuwheel.knowledge.active import active_catalog

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
            major = ctx.train_of(lib).major
            cat = active_catalog()
            comps = cat.find_library(name, major, os="windows") or cat.find_library(
                name, os="windows"
            )
            if not comps or ctx.ships(name) is not None:
                continue
            declared = [d for d in ctx.declared if d.provides(name, major, "windows")]
            if any(d.applies for d in declared):
                continue  # a requirement puts it on the DLL search path
            extra = next((d for d in declared if d.extras), None)
            if extra is not None:
                out.append(ctx.finding(
                    "DEP006",
                    f"imports {name}, which only {extra.label} with extra "
                    f"{', '.join(repr(e) for e in extra.extras)} provides: without it this DLL "
                    "does not load",
                    lib.name,
                ))  # fmt: skip
                continue
            from cuwheel.checks.dependencies import carrier_linked

            carrier = carrier_linked(ctx, lib)
            hint = (f"; it imports {carrier}'s DLLs: require {carrier}, whose CUDA builds "
                    f"ship {name} in {carrier}/lib" if carrier is not None else "")
            out.append(ctx.finding(
                "WIN002",
                f"imports {name} ({comps[0].distribution}), which the wheel does not ship"
                + hint,
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
