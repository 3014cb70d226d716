"""Which torch releases a binary loads with, from its symbols (docs/compat.md#torch-abi).

The dynamic loader resolves every symbol a binary imports when it is loaded (CPython
loads extension modules with RTLD_NOW; Windows binds a DLL's imports at load): a binary
loads with a torch release only if that release's own libraries define every torch
symbol it imports.  Which symbols are torch's:

* ELF: the binary links one of torch's libraries (data/packages.toml
  ``[[package_library]]``), and the undefined symbol is strong (a weak one resolves to 0),
  unversioned (torch versions none of its symbols: a versioned one is glibc's,
  libstdc++'s or CUDA's), of torch's own ABI (``abi_namespaces``, ``abi_c_prefixes``:
  torch's releases also export copies of other libraries' symbols, ``_ZdlPvm``,
  ``ncclCommDestroy``, which those libraries provide) and exported by some torch release
  in the data, or has a release-bound name (``_ZN3c10*``...) that no release exports;
* PE: an import by name from one of torch's DLLs (a DLL's import names the DLL).

The answer is the set of the data's releases on the binary's platform that export them
all (data/torch_abi.toml): one bisection per imported symbol, bounded by the reader's
symbol budgets.  Torch's CUDA DLLs on Windows (torch_cuda.dll, c10_cuda.dll) are in no
PyPI release: PyPI's Windows torch is CPU-only.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from cuwheel.knowledge.active import active_catalog
from cuwheel.knowledge.packages import PackageLibraries
from cuwheel.knowledge.torchabi import TorchAbi, TorchRelease, load_torch_abi, symbol_key
from cuwheel.model.inventory import Binary
from cuwheel.rules.runtime import binary_platform

__all__ = [
    "TorchAbiAnswer",
    "loadable_span",
    "requirement_for",
    "resolve_torch_abi",
    "torch_symbols",
]

TORCH = "torch"


@dataclass(frozen=True)
class TorchAbiAnswer:
    """The torch releases of the data one binary loads with, on its platform."""

    path: str
    platform: str
    imported: int  # torch symbols it imports that some release exports
    releases: tuple[TorchRelease, ...]  # the platform's releases that export them all
    considered: tuple[TorchRelease, ...]  # every release of the data on that platform
    # For each release left out: one symbol it lacks (the loader's first complaint).
    lacking: dict[str, str] = field(default_factory=dict)
    unknown: tuple[str, ...] = ()  # release-bound names no release exports (a few)
    unknown_count: int = 0
    # Windows: imports from torch's CUDA DLLs, which no PyPI release ships: DLL -> count.
    cuda_dlls: tuple[tuple[str, int], ...] = ()

    @property
    def versions(self) -> tuple[str, ...]:
        return tuple(r.version for r in self.releases)


def _torch_package() -> PackageLibraries | None:
    return next((p for p in active_catalog().package_libraries if p.name == TORCH), None)


def torch_symbols(binary: Binary, abi: TorchAbi | None = None
                  ) -> tuple[list[tuple[str, frozenset[int]]], list[str], dict[str, int]] | None:
    """The torch symbols ``binary`` imports, each with the columns that export it; the
    release-bound names no column exports; Windows imports from DLLs no column read (DLL
    -> count).  None when it links none of torch's libraries."""
    pkg = _torch_package()
    if pkg is None:
        return None
    os = "windows" if binary.format == "pe" else "linux" if binary.format == "elf" else None
    if os is None or not any(pkg.ships(n, os) for n in binary.needed):
        return None
    abi = load_torch_abi() if abi is None else abi
    found: list[tuple[str, frozenset[int]]] = []
    unknown: list[str] = []
    dlls: dict[str, int] = {}
    read = {d.lower() for d in abi.dlls()}
    for u in binary.undefined:
        if os == "windows":
            if u.library is None or not pkg.ships(u.library, os):
                continue
            if u.library.lower() not in read:
                dlls[u.library] = dlls.get(u.library, 0) + 1
                continue
            cols = abi.columns(symbol_key(u.name, u.library))
        else:
            if u.weak or u.version is not None or not pkg.own_symbol(u.name):
                continue
            cols = abi.columns(symbol_key(u.name))
        if cols:
            found.append((u.name, cols))
        elif os == "windows" or pkg.release_bound(u.name):
            unknown.append(u.name)
    return found, unknown, dlls


def resolve_torch_abi(binary: Binary, platform: str | None = None,
                      abi: TorchAbi | None = None) -> TorchAbiAnswer | None:
    """The releases ``binary`` loads with on ``platform`` (default: its own, from its
    format and machine); None when it links none of torch's libraries or the data has no
    release for the platform."""
    platform = platform or binary_platform(binary)
    if platform is None:
        return None
    got = torch_symbols(binary, abi)  # None before the data is read for most binaries
    if got is None:
        return None
    abi = load_torch_abi() if abi is None else abi
    considered = abi.on(platform)
    if not considered:
        return None
    found, unknown, dlls = got
    ok = {r.column for r in considered}
    lacking: dict[str, str] = {}
    for name, cols in found:
        for r in considered:
            if r.column in ok and r.column not in cols:
                ok.discard(r.column)
                lacking[r.version] = name
    if unknown or dlls:
        first = unknown[0] if unknown else f"{next(iter(dlls))}!*"
        for r in considered:
            if r.column in ok:
                lacking[r.version] = first
        ok_releases: tuple[TorchRelease, ...] = ()
    else:
        ok_releases = tuple(r for r in considered if r.column in ok)
    return TorchAbiAnswer(binary.path, platform, len(found), ok_releases, considered,
                          lacking, tuple(unknown[:5]), len(unknown),
                          tuple(sorted(dlls.items())))


def resolve_without_cuda_dlls(answer: TorchAbiAnswer, binary: Binary,
                              abi: TorchAbi | None = None) -> tuple[TorchRelease, ...]:
    """Windows: the releases whose CPU DLLs define every import from c10.dll,
    torch_cpu.dll ... (the CUDA DLLs set aside): of PyTorch's CUDA builds, those of these
    releases are the candidates."""
    abi = load_torch_abi() if abi is None else abi
    got = torch_symbols(binary, abi)
    if got is None or got[1]:
        return ()
    ok = {r.column for r in answer.considered}
    for _name, cols in got[0]:
        ok &= cols
    return tuple(r for r in answer.considered if r.column in ok)


def _vkey(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split(".") if x.isdigit())


def loadable_span(versions: Sequence[str]) -> str:
    """``2.1.0, 2.1.1, 2.1.2`` -> ``2.1.0-2.1.2``."""
    if not versions:
        return "none"
    vs = sorted(versions, key=_vkey)
    return vs[0] if len(vs) == 1 else f"{vs[0]}-{vs[-1]}"


def requirement_for(ok: Iterable[str], known: Iterable[str]) -> str | None:
    """The requirement that admits the longest run of ``ok`` releases among ``known``
    (in version order) and nothing else of them: ``torch>=2.1,<2.2`` (a run that starts
    at X.Y.0 and ends before X.Z.0 spelled by minors), ``torch==2.1.2`` for one."""
    order = sorted(set(known), key=_vkey)
    good = set(ok)
    best: list[str] = []
    run: list[str] = []
    for v in order:
        if v in good:
            run.append(v)
            if len(run) > len(best):
                best = list(run)
        else:
            run = []
    if not best:
        return None
    after = next((v for v in order if _vkey(v) > _vkey(best[-1])), None)
    if len(best) == 1 and after is not None and _vkey(after)[:2] == _vkey(best[0])[:2]:
        return f"{TORCH}=={best[0]}"

    def short(v: str) -> str:
        k = _vkey(v)
        return f"{k[0]}.{k[1]}" if len(k) >= 3 and k[2] == 0 else v

    lo = short(best[0])
    if after is None:  # the newest release the data knows: bounded by its minor
        k = _vkey(best[-1])
        return f"{TORCH}>={lo},<{k[0]}.{k[1] + 1}"
    return f"{TORCH}>={lo},<{short(after)}"


def torch_note(name: str, binaries: Iterable[Binary]) -> str | None:
    """One line for compat: the torch releases all of ``binaries`` (one wheel's) load with,
    from the same answer as DEP011 and ENV009; None when none imports torch's symbols."""
    answers = [a for b in binaries
               if (a := resolve_torch_abi(b)) is not None
               and (a.imported or a.unknown_count or a.cuda_dlls)]
    if not answers:
        return None
    plat = answers[0].platform
    same = [a for a in answers if a.platform == plat]
    loads = set.intersection(*(set(a.versions) for a in same))
    imported = sum(a.imported for a in same)
    dlls = sorted({d for a in same for d, _ in a.cuda_dlls})
    if dlls:
        return (f"{name}: imports from {', '.join(dlls)}, which no PyPI torch for {plat} "
                "ships (CPU-only): it loads only with a CUDA build of torch from "
                "download.pytorch.org (docs/compat.md#torch-abi)")
    if not loads:
        return (f"{name}: no PyPI torch release for {plat} defines all {imported} torch "
                "symbols it imports (docs/compat.md#torch-abi)")
    known = [r.version for r in same[0].considered]
    return (f"{name}: loads with torch {loadable_span(sorted(loads))} on {plat} "
            f"({requirement_for(loads, known)}): the PyPI releases whose libraries define "
            f"the {imported} torch symbols it imports (docs/compat.md#torch-abi)")
