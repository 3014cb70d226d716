"""DEP013: a binary uses symbols of an NVIDIA library that only newer releases of its wheel
export (``__nvJitLinkAddData_12_4`` of ``libnvJitLink.so.12``: nvidia-nvjitlink-cu12
12.4.99 and newer), and the requirement that installs the library admits older ones.

The releases come from data/nvidia_symbols.toml (knowledge/nvidia_symbols.py); the
references from the binary's undefined dynamic symbols: a versioned one names its library
(``.gnu.version_r``), an unversioned one binds to whichever NEEDED library defines it.
Judged where the requirement names the distribution itself (``nvidia-nvjitlink-cu12``),
or names a carrier (torch) or the cuda-toolkit metapackage, whose releases pin the
component's release (the pins of each torch and cuda-toolkit release, same data file).
A DLL's imports by name name their DLL (``nvJitLink_120_0.dll``)."""

from __future__ import annotations

from collections.abc import Iterator

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from cuwheel.checks.context import CheckContext, Declared, Lib
from cuwheel.checks.findings import Finding
from cuwheel.knowledge.nvidia_symbols import SymbolHistory, SymbolRelease, load_symbol_histories

__all__ = ["check_symbol_releases", "symbol_needs"]

_SHOWN = 3


def symbol_needs(needed: tuple[str, ...], undefined: Iterator[tuple[str, str | None]],
                 os: str | None) -> dict[tuple[str, str], list[SymbolRelease]]:
    """Per (library, distribution): the symbols a binary takes from it that some release
    read does not export.  ``undefined`` gives (name, library its version names or None)."""
    data = load_symbol_histories()
    hist: dict[str, tuple[SymbolHistory, ...]] = {n: data.of(n, os) for n in needed}
    out: dict[tuple[str, str], list[SymbolRelease]] = {}
    for name, library in undefined:
        where = [library] if library is not None else [n for n in needed if hist.get(n)]
        hits = [(h, r) for n in where for h in hist.get(n, ()) if (r := h.lookup(name))]
        for h, r in hits:
            if r.at_first_read and r.removed is None:
                continue  # every release read exports it
            out.setdefault((h.library, h.distribution), []).append(r)
    return out


def _requirement(ctx: CheckContext, library: str, distribution: str) -> Declared | None:
    want = canonicalize_name(distribution)
    for d in ctx.declared:
        if d.applies and d.name == want and d.provides(library, None, ctx.os) is not None:
            return d
    return None


def _carrier(ctx: CheckContext, library: str) -> Declared | None:
    """An applying requirement whose releases pin the release of ``library`` they install:
    a carrier (torch), or the cuda-toolkit metapackage with the library's extra."""
    for d in ctx.declared:
        if d.applies and any(c.ships(library, ctx.os) for c in d.carried):
            return d
    for d in ctx.declared:
        if d.applies and d.name == "cuda-toolkit" and d.provides(library, None, ctx.os):
            return d
    return None


def _span(releases: list[str]) -> str:
    return releases[0] if len(releases) == 1 else f"{releases[0]} ... {releases[-1]}"


def check_symbol_releases(ctx: CheckContext) -> list[Finding]:
    out: list[Finding] = []
    for lib in ctx.loadable_libs():
        out += _check_lib(ctx, lib)
    return out


def _shown(names: set[str]) -> str:
    ordered = sorted(names)
    more = f", +{len(ordered) - _SHOWN} more" if len(ordered) > _SHOWN else ""
    return ", ".join(ordered[:_SHOWN]) + more


def _bounds(distribution: str, refs: list[SymbolRelease]) -> tuple[str, str]:
    """Why (the symbol setting the floor, the one setting the ceiling) and the specifier."""
    floor = max((s for s in refs if not s.at_first_read), key=lambda s: Version(s.first),
                default=None)
    ceiling = min((s for s in refs if s.removed is not None),
                  key=lambda s: Version(s.removed or "0"), default=None)
    why = []
    if floor is not None:
        why.append(f"{floor.symbol} is first exported by {distribution} {floor.first}")
    if ceiling is not None:
        why.append(f"{ceiling.symbol} is no longer exported from {ceiling.removed}")
    spec = ",".join(p for p in (f">={floor.first}" if floor else "",
                                f"<{ceiling.removed}" if ceiling else "") if p)
    return "; ".join(why), spec


def _check_lib(ctx: CheckContext, lib: Lib) -> list[Finding]:
    b = lib.binary
    if b.format not in ("elf", "pe") or not b.undefined:
        return []
    # an ELF reference's library is its version's; a DLL's import names its DLL
    needs = symbol_needs(b.needed, ((u.name, u.library) for u in b.undefined), ctx.os)
    data = load_symbol_histories()
    out: list[Finding] = []
    for (library, distribution), refs in sorted(needs.items()):
        hist = next(h for h in data.of(library, ctx.os) if h.distribution == distribution)
        d = _requirement(ctx, library, distribution)
        carrier = _carrier(ctx, library) if d is None else None
        req = d or carrier
        if req is None:
            continue
        try:
            spec = Requirement(req.text).specifier
        except InvalidRequirement:
            continue
        why, bounds = _bounds(distribution, refs)
        if d is not None:
            # the releases read that it admits, and a release it pins that was not read
            admitted = [r for r in hist.releases if spec.contains(r, prereleases=True)]
            admitted += [p.version for p in spec if p.operator == "==" and "*" not in
                         p.version and p.version not in admitted]
            admitted.sort(key=Version)
            lacking = [r for r in admitted if any(hist.exports_at(s.symbol, r) is False
                                                  for s in refs)]
            if not lacking:
                continue
            missing = {s.symbol for s in refs if hist.exports_at(s.symbol, lacking[0]) is False}
            out.append(ctx.finding(
                "DEP013",
                f"uses {_shown(missing)} of {library}; {why}, but {d.label} admits "
                f"{_span(lacking)}, which lack{'s' if len(lacking) == 1 else ''} "
                f"{'it' if len(missing) == 1 else 'them'}: "
                f"require {distribution}{bounds}",
                lib.name,
            ))  # fmt: skip
            continue
        assert carrier is not None
        plat = ctx.platform.name if ctx.platform else None
        pins = sorted((p for p in data.pins_of(carrier.name, plat)
                       if spec.contains(p.release, prereleases=True)
                       and distribution in p.pins), key=lambda p: Version(p.release))
        bad = [p for p in pins
               if any(hist.exports_at(s.symbol, p.pins[distribution]) is False for s in refs)]
        if not bad:
            continue
        missing = {s.symbol for s in refs
                   if hist.exports_at(s.symbol, bad[0].pins[distribution]) is False}
        later = [p.release for p in pins if Version(p.release) > Version(bad[-1].release)]
        extras = sorted(Requirement(carrier.text).extras)
        named = carrier.name + (f"[{','.join(extras)}]" if extras else "")
        fix = (f"require {named}>={later[0]} (its pins have "
               f"{'it' if len(missing) == 1 else 'them'})" if later
               else f"require {distribution}{bounds} beside {carrier.name}")
        out.append(ctx.finding(
            "DEP013",
            f"uses {_shown(missing)} of {library}, which {carrier.name} installs; {why}, but "
            f"{carrier.label} admits {carrier.name} {_span([p.release for p in bad])}, which "
            f"pin{'s' if len(bad) == 1 else ''} {distribution} "
            f"{_span(sorted({p.pins[distribution] for p in bad}, key=Version))}: {fix}",
            lib.name,
        ))  # fmt: skip
    return out
