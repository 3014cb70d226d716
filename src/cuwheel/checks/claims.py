"""What a wheel claims to run on: the GPUs (compute capabilities) and the PTX for GPUs to
come, from a row, from ``--archs`` in any consumer's spelling, from ``--gpus``, or — when
nothing is said — per library, from that library's own code (docs/checks.md#claims).

An explicit claim (a row, ``--archs``, ``--gpus``) is certain: what it misses is an error.
An implicit one is read from the evidence (a library's SASS, and the newer GPUs its plain
PTX is there for) and yields warnings."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from cuwheel.errors import ArchSpellingError, ConfigError
from cuwheel.knowledge.active import active_catalog
from cuwheel.knowledge.cuda import Release
from cuwheel.model.arch import (
    Arch,
    ArchSpec,
    parse_arch_specs,
    parse_cmake_architectures,
    parse_gencode,
    parse_torch_arch_list,
)
from cuwheel.model.inventory import Binary, CodeKind
from cuwheel.rules.evidence import specialised_only
from cuwheel.rules.loading import counted_containers

__all__ = [
    "IMPLICIT",
    "Claim",
    "claim_from_archs",
    "claim_from_gpus",
    "claim_from_specs",
    "implicit_claim",
    "library_claim",
]

IMPLICIT = "the library's own code"


@dataclass(frozen=True)
class Claim:
    """The GPUs a wheel must run on, and the PTX it must carry for newer ones."""

    gpus: tuple[Arch, ...]  # compute capabilities, no variant
    ptx: tuple[Arch, ...]
    source: str  # where the claim came from, for reports
    # the GPU names the user typed (--gpus "RTX 2080"), per compute capability
    names: tuple[tuple[Arch, str], ...] = ()

    @property
    def explicit(self) -> bool:
        return self.source != IMPLICIT

    def name_of(self, arch: Arch) -> str | None:
        return next((n for a, n in self.names if a == arch), None)

    def describe(self) -> str:
        ccs = ", ".join(a.cc for a in self.gpus) or "none"
        ptx = ", ".join(a.ptx for a in self.ptx)
        return f"CC {ccs}" + (f"; PTX {ptx}" if ptx else "") + f" ({self.source})"


def claim_from_specs(specs: Iterable[ArchSpec], source: str) -> Claim:
    specs = tuple(specs)
    gpus = sorted({s.arch.base for s in specs if s.sass})
    ptx = sorted({s.arch for s in specs if s.ptx})
    return Claim(tuple(gpus), tuple(ptx), source)


def claim_from_archs(text: str) -> Claim:
    """``--archs`` in TORCH_CUDA_ARCH_LIST (``8.0;9.0+PTX``), CMake (``80-real;90``), nvcc
    (``-gencode arch=compute_90,code=sm_90``) or generic (``sm_80,compute_90``) spelling;
    ConfigError when it is none of them."""
    t = text.strip()
    try:
        if "arch=" in t.lower():
            specs = parse_gencode(t)
        elif re.search(r"[0-9]\.[0-9]", t):
            specs = parse_torch_arch_list(t)
        elif re.fullmatch(r"[0-9;\s]+|.*-(real|virtual)\b.*", t, re.IGNORECASE | re.DOTALL):
            specs = parse_cmake_architectures(t)
        else:
            specs = parse_arch_specs(t)
    except ArchSpellingError as exc:
        raise ConfigError(f"--archs {text!r}: {exc}") from None
    return claim_from_specs(specs, f"--archs {t}")


def claim_from_gpus(text: str, release: Release | None) -> Claim:
    """``--gpus "V100,T4,A100"`` (catalog names, families, CCs) or ``all``: every GPU the
    train's nvcc builds for.  ConfigError for a name the catalog does not know."""
    names = [n.strip() for n in re.split(r"[,;]", text) if n.strip()]
    if names == ["all"]:
        if release is None:
            raise ConfigError("--gpus all needs a train: pass --train, or a wheel that names it")
        known = {g.arch for g in active_catalog().gpus}
        gpus = sorted({a.base for a in release.sass if a.base in known})
        return Claim(tuple(gpus), (), f"every GPU CUDA {release.name} builds for")
    out: set[Arch] = set()
    typed: dict[Arch, list[str]] = {}
    for name in names:
        hits = active_catalog().find_gpus(name)
        exact = [m for m in hits if m.exact] or list(hits)
        if not exact:
            raise ConfigError(f"--gpus: no GPU in the catalog matches {name!r} ('cuwheel gpus')")
        for m in exact:
            out.add(m.gpu.arch)
            typed.setdefault(m.gpu.arch, [])
            if name not in typed[m.gpu.arch]:
                typed[m.gpu.arch].append(name)
    labels = tuple((a, ", ".join(n)) for a, n in sorted(typed.items()))
    return Claim(tuple(sorted(out)), (), f"--gpus {text.strip()}", labels)


def _platform_gpus(platform: str | None) -> set[Arch]:
    return {
        g.arch
        for g in active_catalog().gpus
        if platform is None or (fh := g.fixed_hosts()) is None or platform in fh
    }


def implicit_claim(binaries: Sequence[Binary], platform: str | None = None) -> Claim:
    """The GPUs a wheel shows it means to support, for DC004 and reports: the compute
    capabilities its general libraries ship SASS for (a module of arch-specific code only
    says nothing about the wheel), less those no machine of the wheel's ``platform``
    carries.  Each library is judged by :func:`library_claim`."""
    gpus: set[Arch] = set()
    for b in binaries:
        gpus |= set(library_claim(b, platform).gpus)
    return Claim(tuple(sorted(gpus)), (), IMPLICIT)


def library_claim(
    binary: Binary, platform: str | None = None, extra: Iterable[Arch] = ()
) -> Claim:
    """What one library's own code claims: the GPUs it ships SASS for, and the GPUs newer
    than its newest plain PTX (PTX is shipped for them), among the catalog's GPUs of the
    ``platform``; ``extra``: GPUs its carrier's release supports (a torch extension: the
    torch build's arch list).  A module of arch- or family-specific code claims nothing."""
    if specialised_only(binary):
        return Claim((), (), IMPLICIT)
    known = _platform_gpus(platform)
    entries = [e for _, c in counted_containers(binary) for e in c.entries]
    gpus = {e.arch.base for e in entries if e.kind is CodeKind.SASS}
    plain_ptx = [e.arch for e in entries if e.kind is CodeKind.PTX and not e.arch.variant]
    if plain_ptx:
        newest = max(plain_ptx)
        gpus |= {g for g in known if g.number > newest.number}
    gpus |= {a.base for a in extra}
    return Claim(tuple(sorted(gpus & known)), (), IMPLICIT)
