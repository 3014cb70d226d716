"""Dependency checks (DEP, Linux rows): every linked CUDA library is provided by a declared
requirement of the row's CUDA major (or bundled), and nothing CUDA is declared in vain."""

from __future__ import annotations

from cuwheel.checks._libs import cuda_links
from cuwheel.checks.codes import Severity
from cuwheel.checks.context import CheckContext, Declared
from cuwheel.checks.findings import Finding

__all__ = ["check_dependencies", "provider"]


def provider(ctx: CheckContext, name: str, major: int | None = None) -> Declared | None:
    """The applicable declared requirement that installs library ``name`` for ``major``
    (default: the row's)."""
    major = ctx.major if major is None else major
    for d in ctx.declared:
        if d.applies and d.provides(name, major, ctx.os) is not None:
            return d
    return None


def _with_extra(ctx: CheckContext, name: str, major: int) -> Declared | None:
    """A requirement that installs ``name`` only when the user asks for an extra."""
    for d in ctx.declared:
        if not d.applies and d.extras and d.provides(name, major, ctx.os) is not None:
            return d
    return None


def _hint(ctx: CheckContext, name: str, major: int | None) -> str:
    from cuwheel.knowledge import catalog

    comps = [c for c in catalog.find_library(name, major, ctx.os)]
    if not comps:
        return ""
    if ctx.plan.row.dependencies == "none":
        return "; the row declares no dependencies: bundle it or link it statically"
    near = [
        d for d in ctx.declared
        if not d.applies and any(c.ships(name, ctx.os) for c in d.components)
    ]  # fmt: skip
    if near:
        d = near[0]
        why = f"only under extra {d.extras[0]!r}" if d.extras else "under a marker that is false"
        return f"; {d.label} is declared {why} on {ctx.platform.name if ctx.platform else '?'}"
    return f"; declare {comps[0].requirement}"


def check_dependencies(ctx: CheckContext) -> list[Finding]:
    if ctx.is_cpu or ctx.os != "linux" or ctx.major is None:
        return []
    out: list[Finding] = []
    used: set[tuple[str, str]] = set()  # (requirement text, component name)
    for lib in ctx.loadable_libs():
        major = ctx.train_of(lib).major
        if major is None:
            continue
        for name, comps in cuda_links(ctx, lib):
            if not any(c.major == major for c in comps):
                continue  # another major: TAG004
            if ctx.ships(name):
                continue
            d = provider(ctx, name, major)
            extra = _with_extra(ctx, name, major) if d is None else None
            if extra is not None:
                optional = ctx.optional(lib)
                out.append(ctx.finding(
                    "DEP006",
                    f"links {name}, which only {extra.label} with extra "
                    f"{', '.join(repr(e) for e in extra.extras)} provides: without it this "
                    "library does not load" + (" (the row marks it optional)" if optional else ""),
                    lib.name,
                    Severity.INFO if optional else None,
                ))  # fmt: skip
                continue
            if d is None:
                renamed = ctx.ships_soname(name)
                why = (
                    f"; the wheel ships {renamed.member} with SONAME {name}, but the loader "
                    f"looks for a file named {name}"
                    if renamed is not None
                    else ""
                )
                out.append(ctx.finding(
                    "DEP001",
                    f"links {name}, which no requirement provides and the wheel does not ship"
                    + why + _hint(ctx, name, major),
                    lib.name,
                    Severity.INFO if ctx.optional(lib) else None,
                ))  # fmt: skip
                continue
        for name, _ in cuda_links(ctx, lib):
            for d in ctx.declared:
                for c in d.components:
                    if c.ships(name, ctx.os):
                        used.add((d.text, c.name))
    for d in ctx.declared:
        if not d.is_cuda or not d.applies:
            continue
        if ctx.plan.row.dependencies == "none":
            out.append(ctx.finding(
                "DEP005", f"declares {d.label}, but the row says dependencies = none"
            ))  # fmt: skip
            continue
        lib_majors = {m for lib in ctx.loadable_libs() if (m := ctx.train_of(lib).major)}
        wanted = lib_majors if ctx.audit and lib_majors else {ctx.major}
        if d.majors is not None and not (wanted & d.majors):
            majors = ", ".join(str(m) for m in sorted(d.majors))
            out.append(ctx.finding(
                "DEP003",
                f"requirement {d.label} is for CUDA {majors}; the wheel's train is "
                f"{ctx.plan.train} (CUDA {ctx.major})",
            ))  # fmt: skip
            continue
        if d.name == "cuda-toolkit" and d.majors is None:
            out.append(ctx.finding(
                "DEP004",
                f"requirement {d.label} does not pin a CUDA major; use =={ctx.major}.*",
            ))  # fmt: skip
        unused = sorted({c.name for c in d.components if (d.text, c.name) not in used})
        if unused and len(unused) == len({c.name for c in d.components}):
            out.append(ctx.finding(
                "DEP002", f"declares {d.label}, but no binary links its libraries"
            ))  # fmt: skip
        elif unused and d.name == "cuda-toolkit":
            out.append(ctx.finding(
                "DEP002",
                f"declares {d.label}: no binary links the libraries of extra "
                f"{', '.join(unused)}",
            ))  # fmt: skip
    return out
