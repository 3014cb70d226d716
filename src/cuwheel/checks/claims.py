"""What a wheel claims to run on: the GPUs (compute capabilities) and the PTX for GPUs to
come, from a row, from ``--archs`` in any consumer's spelling, from ``--gpus``, or — when
nothing is said — from the SASS the wheel itself ships (docs/checks.md#claims)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from cuwheel.errors import ArchSpellingError, ConfigError
from cuwheel.knowledge import catalog
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
from cuwheel.rules.rollup import specialised_only
from cuwheel.rules.loading import counted_containers

__all__ = [
    "IMPLICIT",
    "Claim",
    "claim_from_archs",
    "claim_from_gpus",
    "claim_from_specs",
    "implicit_claim",
]

IMPLICIT = "the SASS the wheel ships"


@dataclass(frozen=True)
class Claim:
    """The GPUs a wheel must run on, and the PTX it must carry for newer ones."""

    gpus: tuple[Arch, ...]  # compute capabilities, no variant
    ptx: tuple[Arch, ...]
    source: str  # where the claim came from, for reports

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
        known = {g.arch for g in catalog.load_catalog().gpus}
        gpus = sorted({a.base for a in release.sass if a.base in known})
        return Claim(tuple(gpus), (), f"every GPU CUDA {release.name} builds for")
    out: set[Arch] = set()
    for name in names:
        hits = catalog.find_gpus(name)
        exact = [m for m in hits if m.exact] or list(hits)
        if not exact:
            raise ConfigError(f"--gpus: no GPU in the catalog matches {name!r} ('cuwheel gpus')")
        out.update(m.gpu.arch for m in exact)
    return Claim(tuple(sorted(out)), (), f"--gpus {text.strip()}")


def implicit_claim(binaries: Sequence[Binary], platform: str | None = None) -> Claim:
    """The GPUs a wheel shows it means to support: the compute capabilities it ships SASS
    for in its general libraries (a module of arch-specific code only says nothing about the
    wheel), those the catalog knows, less those no machine of the wheel's ``platform``
    carries (an x86_64 wheel's sm_110 cubins claim no Jetson Thor)."""
    known = {
        g.arch
        for g in catalog.load_catalog().gpus
        if platform is None or (fh := g.fixed_hosts()) is None or platform in fh
    }
    gpus: set[Arch] = set()
    for b in binaries:
        if specialised_only(b):
            continue
        for _, c in counted_containers(b):
            gpus.update(e.arch.base for e in c.entries if e.kind is CodeKind.SASS)
    return Claim(tuple(sorted(gpus & known)), (), IMPLICIT)
