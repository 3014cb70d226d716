"""DEP011: a binary uses symbols of an NVIDIA library that only newer releases of its wheel
export (``__nvJitLinkAddData_12_4`` of ``libnvJitLink.so.12``: nvidia-nvjitlink-cu12
12.4.99 and newer), and the requirement that installs the library admits older ones.

The releases come from data/nvidia_symbols.toml (knowledge/nvidia_symbols.py); the
references from the binary's undefined dynamic symbols: a versioned one names its library
(``.gnu.version_r``), an unversioned one binds to whichever NEEDED library defines it.
Judged where the requirement names the distribution itself (``nvidia-nvjitlink-cu12``):
a ``cuda-toolkit`` version is not the component's version, so its releases are not
compared.  ELF only (a DLL's imports by name are not read)."""

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


def _span(releases: list[str]) -> str:
    return releases[0] if len(releases) == 1 else f"{releases[0]} ... {releases[-1]}"


def check_symbol_releases(ctx: CheckContext) -> list[Finding]:
    out: list[Finding] = []
    for lib in ctx.loadable_libs():
        out += _check_lib(ctx, lib)
    return out


def _check_lib(ctx: CheckContext, lib: Lib) -> list[Finding]:
    b = lib.binary
    if b.format != "elf" or not b.undefined:
        return []
    needs = symbol_needs(b.needed, ((u.name, u.library) for u in b.undefined), ctx.os)
    out: list[Finding] = []
    for (library, distribution), refs in sorted(needs.items()):
        d = _requirement(ctx, library, distribution)
        if d is None:
            continue
        try:
            spec = Requirement(d.text).specifier
        except InvalidRequirement:
            continue
        hist = next(h for h in load_symbol_histories().of(library, ctx.os)
                    if h.distribution == distribution)
        admitted = [r for r in hist.releases if spec.contains(r, prereleases=True)]
        lacking = sorted({r for r in admitted for s in refs if hist.exports(s.symbol, r) is False},
                         key=Version)
        if not lacking:
            continue
        floor = max((s for s in refs if not s.at_first_read), key=lambda s: Version(s.first),
                    default=None)
        ceiling = min((s for s in refs if s.removed is not None),
                      key=lambda s: Version(s.removed or "0"), default=None)
        shown = sorted({s.symbol for s in refs if hist.exports(s.symbol, lacking[0]) is False})
        more = f", +{len(shown) - _SHOWN} more" if len(shown) > _SHOWN else ""
        why = []
        if floor is not None:
            why.append(f"{floor.symbol} is first exported by {distribution} {floor.first}")
        if ceiling is not None:
            why.append(f"{ceiling.symbol} is no longer exported from {ceiling.removed}")
        spec_text = ",".join(
            p for p in (f">={floor.first}" if floor else "",
                        f"<{ceiling.removed}" if ceiling else "") if p
        )  # fmt: skip
        out.append(ctx.finding(
            "DEP011",
            f"uses {', '.join(shown[:_SHOWN])}{more} of {library}; {'; '.join(why)}, but "
            f"{d.label} admits {_span(lacking)}, which lack "
            f"{'it' if len(shown) == 1 else 'them'}: require {distribution}{spec_text}",
            lib.name,
        ))  # fmt: skip
    return out
