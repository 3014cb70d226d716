"""Run-path checks (RP, Linux rows): RPATH / RUNPATH entries are ``$ORIGIN``-relative and
reach, in the installed layout, the directory where each linked CUDA library is put by the
package that provides it (resolved from the catalog's package map, nothing installed)."""

from __future__ import annotations

import posixpath

from cuwheel.checks.context import CheckContext, Lib
from cuwheel.checks.dependencies import provider
from cuwheel.checks.findings import Finding
from cuwheel.knowledge.linkage import cuda_links

__all__ = ["check_runpaths", "resolve_origin", "search_path"]

_ORIGIN = ("$ORIGIN", "${ORIGIN}")


def search_path(lib: Lib) -> tuple[str, ...]:
    """The entries ld.so uses: DT_RUNPATH when present (DT_RPATH is then ignored)."""
    return lib.binary.runpath or lib.binary.rpath


def resolve_origin(entry: str, installed: str) -> str | None:
    """``$ORIGIN/../nvidia/cu13/lib`` for a binary installed at ``pkg/_x.so`` ->
    ``nvidia/cu13/lib`` (relative to site-packages); None when not $ORIGIN-relative or
    when it leaves site-packages."""
    for token in _ORIGIN:
        if entry == token or entry.startswith(token + "/"):
            rest = entry[len(token) :].lstrip("/")
            base = posixpath.dirname(installed)
            p = posixpath.normpath(posixpath.join(base, rest)) if rest else (base or ".")
            if p == ".." or p.startswith("../"):
                return None
            return p
    return None


def check_runpaths(ctx: CheckContext) -> list[Finding]:
    if ctx.os != "linux":
        return []
    out: list[Finding] = []
    for lib in ctx.loadable_libs():
        if lib.binary.format != "elf":
            continue
        entries = search_path(lib)
        for e in lib.binary.rpath + lib.binary.runpath:
            if e.startswith("/"):
                out.append(ctx.finding(
                    "RP002", f"run path entry {e!r} is absolute (the build machine's layout)",
                    lib.name,
                ))  # fmt: skip
            elif not e:
                out.append(ctx.finding(
                    "RP003",
                    "run path entry '' (an empty entry, e.g. a trailing ':') is searched as "
                    "the working directory",
                    lib.name,
                ))  # fmt: skip
            elif not e.startswith("$"):
                out.append(ctx.finding(
                    "RP003",
                    f"run path entry {e!r} is relative to the working directory, not $ORIGIN",
                    lib.name,
                ))  # fmt: skip
        major = ctx.train_of(lib).major
        if ctx.is_cpu or major is None or lib.installed is None:
            continue
        resolved = {r for e in entries if (r := resolve_origin(e, lib.installed)) is not None}
        for name, comps in cuda_links(lib.binary.needed, ctx.os):
            if not any(c.major == major for c in comps):
                continue
            shipped = ctx.ships(name)
            if shipped is not None:
                if shipped.installed is None:
                    continue
                target = posixpath.dirname(shipped.installed) or "."
                origin = "the wheel ships it"
            else:
                d = provider(ctx, name, major)
                if d is None:
                    continue  # DEP001
                comp = d.provides(name, major, ctx.os)
                if comp is None or comp not in d.components or not comp.linux_dir:
                    continue  # a carrier (torch) loads it first: no run path needed
                target = comp.linux_dir
                origin = f"{d.label} installs it"
            if target in resolved:
                continue
            up = posixpath.relpath(target, posixpath.dirname(lib.installed) or ".")
            want = "$ORIGIN" if up == "." else f"$ORIGIN/{up}"
            have = ":".join(entries) if entries else "no RPATH/RUNPATH"
            out.append(ctx.finding(
                "RP001",
                f"links {name} but no run path reaches {target}/ ({origin}); has {have}; "
                f"add {want}",
                lib.name,
            ))  # fmt: skip
    return out
