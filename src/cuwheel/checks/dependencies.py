"""Dependency checks (DEP): every linked CUDA library is provided by a declared requirement
of the row's CUDA major (or bundled), nothing CUDA is declared in vain (Linux rows); a carrier
requirement (torch) admits only releases whose PyPI wheels carry the linked CUDA major, and a
library of another Python package (``libtorch_cuda.so``, ``c10.dll``) comes with a requirement
on that package (every platform)."""

from __future__ import annotations

from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import InvalidVersion, Version

from cuwheel.checks.codes import Severity
from cuwheel.checks.context import CheckContext, Declared, Lib
from cuwheel.checks.findings import Finding
from cuwheel.knowledge.active import active_catalog
from cuwheel.knowledge.linkage import cuda_links
from cuwheel.model.inventory import BuildRecord

__all__ = [
    "carrier_linked", "check_carried_majors", "check_dependencies",
    "check_package_libraries", "check_recorded_builds", "provider",
]  # fmt: skip


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


def _hint(ctx: CheckContext, name: str, major: int | None, lib: Lib | None = None) -> str:
    comps = [c for c in active_catalog().find_library(name, major, ctx.os)]
    if not comps:
        return ""
    carrier = carrier_linked(ctx, lib) if lib is not None else None
    if carrier is not None:
        return (f"; the library links {carrier}'s libraries: require {carrier}, whose CUDA "
                f"builds carry {name} (a requirement on {comps[0].requirement} would load a "
                "second copy beside it)")
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
    """Every DEP judgment that needs no package index (DEP007 does: checks/index.py)."""
    from cuwheel.checks.torch_abi import check_torch_abi

    return (_declared_cuda(ctx) + check_carried_majors(ctx) + check_package_libraries(ctx)
            + check_recorded_builds(ctx) + check_torch_abi(ctx))


def _declared_cuda(ctx: CheckContext) -> list[Finding]:
    """DEP001-DEP006 (Linux rows)."""
    if ctx.is_cpu or ctx.os != "linux" or ctx.major is None:
        return []
    out: list[Finding] = []
    used: set[tuple[str, str]] = set()  # (requirement text, component name)
    for lib in ctx.loadable_libs():
        major = ctx.train_of(lib).major
        if major is None:
            continue
        for name, comps in cuda_links(lib.binary.needed, ctx.os):
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
                    + why + _hint(ctx, name, major, lib),
                    lib.name,
                    Severity.INFO if ctx.optional(lib) else None,
                ))  # fmt: skip
                continue
        for name, _ in cuda_links(lib.binary.needed, ctx.os):
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


def carrier_linked(ctx: CheckContext, lib: Lib) -> str | None:
    """A carrier package (torch) whose own libraries ``lib`` links, by name."""
    cat = active_catalog()
    for name in lib.binary.needed:
        pkg = cat.package_of(name, ctx.os)
        if pkg is not None and (c := cat.carrier(pkg.name)) is not None and ctx.os in c.os:
            return pkg.name
    return None


def check_package_libraries(ctx: CheckContext) -> list[Finding]:
    """DEP009: a library of another Python package (not NVIDIA's) is linked, neither
    shipped nor required: it loads only where that package happens to be installed and
    imported first."""
    cat = active_catalog()
    out: list[Finding] = []
    for lib in ctx.loadable_libs():
        missing: dict[str, list[str]] = {}
        for name in lib.binary.needed:
            pkg = cat.package_of(name, ctx.os)
            if pkg is None or ctx.ships(name) is not None:
                continue
            if any(d.name == pkg.name and d.applies for d in ctx.declared):
                continue
            missing.setdefault(pkg.name, []).append(name)
        for pkg_name, names in missing.items():
            under = next((d for d in ctx.declared if d.name == pkg_name), None)
            why = (
                f"; {under.label} is declared only under a marker or extra that is false here"
                if under is not None
                else ""
            )
            out.append(ctx.finding(
                "DEP009",
                f"links {', '.join(names)} ({pkg_name}'s), but the wheel does not require "
                f"{pkg_name}{why}: it loads only where {pkg_name} is installed and imported "
                f"first; require {_which_torch(lib) if pkg_name == 'torch' else pkg_name}",
                lib.name,
            ))  # fmt: skip
    return out


def _which_torch(lib: Lib) -> str:
    """``torch``, or the requirement admitting the releases whose libraries define every
    torch symbol the library imports (rules/torch_abi.py, as DEP011 names it)."""
    from cuwheel.rules.torch_abi import requirement_for, resolve_torch_abi

    ans = resolve_torch_abi(lib.binary)
    if ans is None or not ans.imported or not ans.releases:
        return "torch"
    req = requirement_for(ans.versions, [r.version for r in ans.considered])
    return (f"{req} (the releases whose libraries define the {ans.imported} torch symbols "
            "it imports)") if req else "torch"


def _key(v: str) -> Version:
    return Version(v)


def check_carried_majors(ctx: CheckContext) -> list[Finding]:
    """DEP008: CUDA libraries that only a carrier requirement puts in place (torch's own
    requirements install them), where the requirement's version range admits carrier
    releases whose default PyPI wheel on this platform carries a CUDA major that none of
    them links, or none (packages.toml ``[[carrier_build]]``, read from the wheels).

    A wheel whose libraries link several majors (bitsandbytes' one library per CUDA
    version) works with any admitted release whose major one of them links; a CPU-only
    release then counts against it only where one major is linked."""
    if ctx.is_cpu or ctx.platform is None or ctx.plan.row.dependencies == "none":
        return []
    plat = ctx.platform.name
    # requirement -> CUDA major -> (library, linked name)
    needs: dict[Declared, dict[int, list[tuple[str, str]]]] = {}
    for lib in ctx.loadable_libs():
        major = ctx.train_of(lib).major
        if major is None:
            continue
        for name, comps in cuda_links(lib.binary.needed, ctx.os):
            if not any(c.major == major for c in comps) or ctx.ships(name) is not None:
                continue
            if any(
                d.applies and any(c.major == major and c.ships(name, ctx.os) for c in d.components)
                for d in ctx.declared
            ):
                continue  # an NVIDIA requirement of this major installs it
            d = next((d for d in ctx.declared
                      if d.applies and any(c.ships(name, ctx.os) for c in d.carried)), None)
            if d is not None:
                needs.setdefault(d, {}).setdefault(major, []).append((lib.name, name))
    out: list[Finding] = []
    cat = active_catalog()
    wheel = ctx.source.wheel
    for d, by_major in needs.items():
        carrier = cat.carrier(d.name)
        builds = carrier.build_majors(plat) if carrier is not None else {}
        try:
            spec = Requirement(d.text).specifier
        except InvalidRequirement:
            continue
        admitted: dict[str, int] = {}
        for r, m in builds.items():
            try:
                if spec.contains(r, prereleases=True):
                    admitted[r] = m
            except InvalidVersion:
                continue
        if not admitted:
            continue  # no release the data knows: nothing to say
        order = sorted(admitted, key=_key)
        newest = order[-1]
        linked = set(by_major)
        what = "; ".join(
            f"{', '.join(sorted({n for _, n in links}))} (CUDA {m}, "
            f"{len({lib for lib, _ in links})} librar"
            f"{'y' if len({lib for lib, _ in links}) == 1 else 'ies'})"
            for m, links in sorted(by_major.items())
        )
        if all(admitted[r] == 0 for r in order):
            cuda = "/".join(str(m) for m in sorted(linked))
            out.append(ctx.finding(
                "DEP008",
                f"{d.label} is what puts {what} in place, but every {d.name} release it "
                f"admits ({_span(order)}) is CPU-only on PyPI for {plat}: those come only "
                f"with a CUDA {cuda} build of {d.name} from its own index (a +cuXYZ local "
                "version); say so in the install instructions",
                None,
                Severity.WARNING,
            ))  # fmt: skip
            continue
        missed = [r for r in order
                  if admitted[r] not in linked and (admitted[r] != 0 or len(linked) == 1)]
        if not missed:
            continue
        spread = "; ".join(
            f"{'CPU-only' if m == 0 else f'CUDA {m}'} in {_span(rs)}"
            for m, rs in _groups(order, admitted)
        )
        fix = _range_for(order, admitted, builds, linked, d.name)
        record = next((r for r in (wheel.build_records if wheel else ())
                       if r.package == d.name), None)
        if record is not None:
            fix += f" (the wheel says it was built against {record.version}: {record.member})"
        pip = (
            f"pip installs the newest, {newest} "
            f"({'CPU-only' if admitted[newest] == 0 else f'CUDA {admitted[newest]}'}), "
            "where these libraries do not load"
            if newest in missed
            else f"with the older {_span(missed)} these libraries do not load"
        )
        out.append(ctx.finding(
            "DEP008",
            f"{d.label} is what puts {what} in place, but the {d.name} releases it admits "
            f"ship on PyPI for {plat}: {spread}; {pip}; {fix}",
            None,
            None if newest in missed else Severity.WARNING,
        ))  # fmt: skip
    return out


def _span(releases: list[str]) -> str:
    return releases[0] if len(releases) == 1 else f"{releases[0]}-{releases[-1]}"


def _groups(order: list[str], majors: dict[str, int]) -> list[tuple[int, list[str]]]:
    """Consecutive runs of releases with one CUDA major."""
    out: list[tuple[int, list[str]]] = []
    for r in order:
        if out and out[-1][0] == majors[r]:
            out[-1][1].append(r)
        else:
            out.append((majors[r], [r]))
    return out


def _range_for(order: list[str], admitted: dict[str, int], builds: dict[str, int],
               majors: set[int], name: str) -> str:
    """The requirement that admits only releases carrying one of ``majors`` (of those the
    data knows)."""
    cuda = "/".join(str(m) for m in sorted(majors))
    good = [r for r in order if admitted[r] in majors]
    if not good:
        return (f"no {name} release it admits carries CUDA {cuda}: build against the CUDA "
                f"major of the {name} releases you support")
    everything = sorted(builds, key=_key)
    after = [r for r in everything if _key(r) > _key(good[-1]) and builds[r] not in majors]
    spec = f">={good[0]}" + (f",<{after[0]}" if after else "")
    return f"require {name}{spec} (its releases that carry CUDA {cuda})"


def check_recorded_builds(ctx: CheckContext) -> list[Finding]:
    """DEP010: a requirement on a package whose libraries the wheel links, judged against
    the build its binaries need: the release the wheel records it was built against
    (xformers' cpp_lib.json) must be admitted (error), and binaries that import the
    package's release-bound symbols (torch's C++ API) need the range to admit one minor
    release only (warning; ELF only: PE imports by name are not read)."""
    from cuwheel.checks.torch_abi import torch_answers

    wheel = ctx.source.wheel
    if wheel is None:
        return []
    cat = active_catalog()
    out: list[Finding] = []
    for d in ctx.declared:
        pkg = next((p for p in cat.package_libraries if p.name == d.name), None)
        if pkg is None or not d.applies:
            continue
        try:
            spec = Requirement(d.text).specifier
        except InvalidRequirement:
            continue
        records: list[tuple[BuildRecord, Version]] = []
        for r in wheel.build_records:
            try:
                if r.package == d.name:
                    records.append((r, Version(r.version)))
            except InvalidVersion:
                continue
        for r, built in records:
            if not spec.contains(built.public, prereleases=True):
                out.append(ctx.finding(
                    "DEP010",
                    f"built against {d.name} {r.version} ({r.member}), but requires "
                    f"{d.label}, which excludes it: pip never installs the {d.name} these "
                    "binaries were built for",
                    None,
                    Severity.ERROR,
                ))  # fmt: skip
        bound: list[tuple[str, str]] = []  # (library, first release-bound symbol)
        resolved = {lib.member for lib, _ in torch_answers(ctx)} if d.name == "torch" else set()
        for lib in ctx.loadable_libs():
            if not any(pkg.ships(n, ctx.os) for n in lib.binary.needed):
                continue
            if lib.member in resolved:
                continue  # judged by the releases that define its symbols (DEP011)
            sym = next((u.name for u in lib.binary.undefined if pkg.release_bound(u.name)), None)
            if sym is not None:
                bound.append((lib.name, sym))
        carrier = cat.carrier(d.name)
        known = sorted({r for b in (carrier.builds if carrier else ()) for r in b.releases},
                       key=_key)
        admitted = [r for r in known if spec.contains(r, prereleases=True)]
        minors = sorted({_key(r).release[:2] for r in admitted})
        if not bound or len(minors) < 2:
            continue
        if records:
            r, b = records[0]
            fix = (f"built against {r.version} ({r.member}): require "
                   f"{d.name}=={b.major}.{b.minor}.*")
        else:
            fix = f"require the {d.name} minor release they were built against (==X.Y.*)"
        lib0, sym0 = bound[0]
        out.append(ctx.finding(
            "DEP010",
            f"{len(bound)} librar{'y uses' if len(bound) == 1 else 'ies use'} {d.name}'s C++ "
            f"API ({sym0} in {lib0}), whose ABI is one {d.name} release's, but {d.label} "
            f"admits {len(minors)} minor releases ({_span(admitted)}): with another, the "
            f"import fails with 'undefined symbol'; {fix}",
        ))  # fmt: skip
    return out
