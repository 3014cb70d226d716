"""The judgments about an artifact's own facts that inspect, check and compat share
(docs/artifacts.md): the GPUs its device code runs on, by the loading rules, and the host
CPU instruction sets it needs beyond what its machine's baseline promises."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from cuwheel.knowledge.active import active_catalog
from cuwheel.knowledge.hostisa import host_isa
from cuwheel.model.arch import Arch
from cuwheel.model.inventory import CodeKind, Source
from cuwheel.rules.loading import ptx_fits, sass_fits

__all__ = ["IsaNeed", "code_archs", "covers", "isa_needs", "runs_on"]


def code_archs(source: Source) -> tuple[tuple[CodeKind, Arch], ...]:
    """Every (kind, arch) of device code in the artifact, once each, in order."""
    seen: dict[tuple[CodeKind, Arch], None] = {}
    for b in source.binaries:
        for e in b.entries():
            if e.kind in (CodeKind.SASS, CodeKind.PTX):
                seen[(e.kind, e.arch)] = None
    return tuple(seen)


def covers(code: Iterable[tuple[CodeKind, Arch]], device: Arch) -> str | None:
    """Why some of ``code`` runs on ``device`` (SASS first, then PTX the driver JIT-compiles;
    the PTX ISA's driver gate is compat's business), or None when none does."""
    code = list(code)
    for kind, arch in code:
        if kind is CodeKind.SASS:
            fit, why = sass_fits(arch, device)
            if fit:
                return why
    for kind, arch in code:
        if kind is CodeKind.PTX:
            ok, why = ptx_fits(arch, device)
            if ok:
                return why
    return None


def runs_on(source: Source) -> tuple[Arch, ...]:
    """The catalog's GPU architectures the artifact's device code runs on."""
    code = code_archs(source)
    archs = sorted({m.gpu.arch for m in active_catalog().find_gpus("")}, key=lambda a: a.number)
    return tuple(a for a in archs if covers(code, a) is not None)


@dataclass(frozen=True)
class IsaNeed:
    """One instruction set the host code needs, and the level of its machine it is in."""

    name: str
    level: str  # data/host_isa.toml's level; "unknown" when the name is not there
    machine: str | None

    @property
    def severe(self) -> bool:
        """In no level short of x86-64-v4 (or in none): AVX-512, AMX and their kin."""
        return self.level in ("x86-64-v4", "none", "unknown")


def isa_needs(names: Iterable[str], machine: str | None) -> tuple[IsaNeed, ...]:
    """The recorded ISA names (AOTI_CPU_ISA) beyond the baseline of ``machine``."""
    out = []
    for n in names:
        known = host_isa(n)
        if known is None:
            out.append(IsaNeed(n.upper(), "unknown", machine))
        elif known.level != "baseline":
            out.append(IsaNeed(known.name, known.level, known.machine))
    return tuple(out)
