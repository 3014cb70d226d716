"""The size ledger: bytes per architecture (SASS per arch, PTX / LTO-IR per ISA), per
library and per wheel, in the file and in the zip (docs/size.md).

Built from the inventory's facts and :mod:`.measure`'s measurements; judges nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from cuwheel.model.arch import Arch
from cuwheel.model.inventory import Binary, CodeKind, FatbinContainer, Inventory
from cuwheel.size.measure import BinaryBytes, SourceBytes

__all__ = ["ArchBytes", "LibraryLedger", "SourceLedger", "container_mode", "ledger"]


@dataclass(frozen=True)
class ArchBytes:
    """What one code kind + architecture costs (one row of the ledger)."""

    kind: CodeKind
    arch: Arch
    entries: int
    stored: int  # entry headers + payloads in the file(s)
    uncompressed: int  # the code itself once decompressed
    zipped: int  # apportioned share of the zip members' compressed sizes
    ptx_isa: tuple[str, ...] = ()  # PTX ISA versions of PTX / LTO-IR entries

    @property
    def name(self) -> str:
        if self.kind is CodeKind.SASS:
            return self.arch.sass
        if self.kind is CodeKind.LTOIR:
            return f"lto_{self.arch.number}{self.arch.variant}"
        return self.arch.ptx


@dataclass(frozen=True)
class LibraryLedger:
    path: str
    size: int
    zipped: int | None  # the member's compressed size (None outside a wheel)
    archs: tuple[ArchBytes, ...]
    other_stored: int  # every byte that is not a fatbin entry (host code, headers, ...)
    other_zipped: int
    # container compression modes: "none", "zstd", "lz4", or "mixed" (count of each)
    modes: tuple[tuple[str, int], ...]
    sampled: bool


@dataclass(frozen=True)
class SourceLedger:
    path: str
    kind: str
    size: int  # the wheel file's size (or the file's / the binaries' total)
    libraries: tuple[LibraryLedger, ...]
    archs: tuple[ArchBytes, ...]  # summed over libraries
    rest_zipped: int  # wheel bytes outside the device code and host code of binaries


def container_mode(c: FatbinContainer) -> str:
    """``none``, ``zstd`` or ``lz4`` when every entry agrees, else ``mixed:...``."""
    modes = sorted({e.compression.value for e in c.entries})
    if not modes:
        return "empty"
    return modes[0] if len(modes) == 1 else "mixed:" + "+".join(modes)


def _sum(rows: Iterable[ArchBytes]) -> tuple[ArchBytes, ...]:
    acc: dict[tuple[CodeKind, Arch], list[int]] = {}
    isas: dict[tuple[CodeKind, Arch], set[str]] = {}
    for r in rows:
        a = acc.setdefault((r.kind, r.arch), [0, 0, 0, 0])
        a[0] += r.entries
        a[1] += r.stored
        a[2] += r.uncompressed
        a[3] += r.zipped
        isas.setdefault((r.kind, r.arch), set()).update(r.ptx_isa)
    order = {CodeKind.SASS: 0, CodeKind.PTX: 1, CodeKind.LTOIR: 2}
    return tuple(
        ArchBytes(k, a, v[0], v[1], v[2], v[3], tuple(sorted(isas[(k, a)])))
        for (k, a), v in sorted(acc.items(), key=lambda kv: (order[kv[0][0]], kv[0][1]))
    )


def library_ledger(b: Binary, m: BinaryBytes) -> LibraryLedger:
    entries = list(b.entries())
    rows: list[ArchBytes] = []
    for i, e in enumerate(entries):
        # ar members are not deflated apart: their entries count at their stored size
        z = round(m.entry_zipped(i)) if m.deflated else e.header_size + e.stored_size
        isa = (f"{e.code_version[0]}.{e.code_version[1]}",) if e.kind is not CodeKind.SASS else ()
        rows.append(
            ArchBytes(e.kind, e.arch, 1, e.header_size + e.stored_size, e.uncompressed_size, z, isa)
        )
    archs = _sum(rows)
    stored = sum(r.stored for r in archs)
    code_zipped = sum(r.zipped for r in archs)
    modes: dict[str, int] = {}
    for c in b.containers:
        if c.entries:
            k = container_mode(c)
            modes[k] = modes.get(k, 0) + 1
    other_zipped = (m.zipped - code_zipped) if m.zipped is not None else 0
    return LibraryLedger(
        b.path, b.size, m.zipped, archs, b.size - stored, other_zipped,
        tuple(sorted(modes.items())), m.sampled,
    )  # fmt: skip


def ledger(inventory: Inventory, measured: Iterable[SourceBytes]) -> tuple[SourceLedger, ...]:
    """One ledger per source: libraries with device code, biggest first."""
    by_path = {s.path: s for s in measured}
    out: list[SourceLedger] = []
    for s in inventory.sources:
        sb = by_path.get(s.path)
        if sb is None:
            continue
        libs = [
            library_ledger(b, sb.binaries[b.path])
            for b in s.binaries
            if b.has_device_code and b.path in sb.binaries
        ]
        libs.sort(key=lambda lib: -(lib.zipped if lib.zipped is not None else lib.size))
        in_libs = sum((lib.zipped if lib.zipped is not None else lib.size) for lib in libs)
        archs = _sum(r for lib in libs for r in lib.archs)
        out.append(SourceLedger(s.path, s.kind, sb.size, tuple(libs), archs, sb.size - in_libs))
    return tuple(out)
