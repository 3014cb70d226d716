"""What-if: the wheel's size when architectures are dropped, PTX is kept only from some
architecture up, or fatbin compression is switched, and which GPUs each choice gives up
(docs/size.md#what-if).

A scenario is policy: which entries stay and how they are compressed.  The estimate
takes every dropped entry's apportioned zip bytes off the real wheel size and adds the
difference of every recompressed entry; the GPUs come from the compat roll-up through
:func:`gpu_changes`, the one place this package asks it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from cuwheel.errors import CuwheelError
from cuwheel.model.arch import Arch, ArchSpellingError
from cuwheel.model.inventory import CodeKind, FatbinEntry, Inventory
from cuwheel.size.measure import MODES, SourceBytes

__all__ = [
    "Estimate",
    "GpuChange",
    "Scenario",
    "estimate",
    "gpu_changes",
    "parse_drop",
]


@dataclass(frozen=True)
class Scenario:
    """Entries to drop (by kind and architecture), PTX kept only from ``ptx_from`` up,
    and the fatbin compression mode to switch to (None: as built)."""

    drop_sass: frozenset[Arch] = frozenset()
    drop_ptx: frozenset[Arch] = frozenset()
    ptx_from: Arch | None = None
    compression: str | None = None

    def __post_init__(self) -> None:
        if self.compression is not None and self.compression not in MODES:
            raise CuwheelError(
                f"unknown compression mode {self.compression!r} (one of {', '.join(MODES)})"
            )

    @property
    def label(self) -> str:
        parts = [a.sass for a in sorted(self.drop_sass)]
        parts += [a.ptx for a in sorted(self.drop_ptx)]
        out = []
        if parts:
            out.append("drop " + ",".join(parts))
        if self.ptx_from is not None:
            out.append(f"PTX only from {self.ptx_from.ptx}")
        if self.compression is not None:
            out.append(f"--compress-mode={self.compression}")
        return "; ".join(out) or "as built"

    def keeps(self, e: FatbinEntry) -> bool:
        if e.kind is CodeKind.SASS:
            return e.arch not in self.drop_sass
        if e.arch in self.drop_ptx:
            return False
        return self.ptx_from is None or e.arch.number >= self.ptx_from.number


def parse_drop(items: Iterable[str]) -> tuple[frozenset[Arch], frozenset[Arch]]:
    """``sm_75`` drops SASS, ``compute_75`` PTX and LTO-IR, ``75`` / ``7.5`` both."""
    sass: set[Arch] = set()
    ptx: set[Arch] = set()
    for raw in items:
        for text in raw.split(","):
            t = text.strip().lower()
            if not t:
                continue
            try:
                arch = Arch.parse(t)
            except ArchSpellingError as exc:
                raise CuwheelError(f"--drop {text!r}: {exc}") from None
            if t.startswith("sm_"):
                sass.add(arch)
            elif t.startswith(("compute_", "lto_")):
                ptx.add(arch)
            else:
                sass.add(arch)
                ptx.add(arch)
    return frozenset(sass), frozenset(ptx)


@dataclass(frozen=True)
class GpuChange:
    """One GPU whose verdict the scenario changes (compat's words for both)."""

    label: str
    cc: str
    before: str | None
    after: str | None
    lost: bool  # ran before, does not now


@dataclass(frozen=True)
class SourceEstimate:
    path: str
    size: int  # real size now
    estimate: int  # estimated size after the scenario
    dropped_stored: int
    dropped_zipped: int
    recompressed_delta: int  # change of the zip (or file) bytes by recompression


@dataclass(frozen=True)
class Estimate:
    scenario: Scenario
    sources: tuple[SourceEstimate, ...]
    gpus: tuple[GpuChange, ...]

    @property
    def size(self) -> int:
        return sum(s.size for s in self.sources)

    @property
    def estimate(self) -> int:
        return sum(s.estimate for s in self.sources)


def apply(inventory: Inventory, scenario: Scenario) -> Inventory:
    """The inventory as the scenario would build it (entries dropped; a container left
    without entries is gone)."""
    sources = []
    for s in inventory.sources:
        binaries = []
        for b in s.binaries:
            containers = []
            for c in b.containers:
                kept = tuple(e for e in c.entries if scenario.keeps(e))
                if kept or not c.entries:
                    same = len(kept) == len(c.entries)
                    containers.append(c if same else replace(c, entries=kept))
            binaries.append(replace(b, containers=tuple(containers)))
        sources.append(replace(s, binaries=tuple(binaries)))
    return Inventory(tuple(sources))


def _source_estimate(src: SourceBytes, inventory: Inventory, scenario: Scenario) -> SourceEstimate:
    binaries = {b.path: b for s in inventory.sources if s.path == src.path for b in s.binaries}
    dropped_stored = 0
    dropped_zipped = 0.0
    delta = 0.0
    for path, m in src.binaries.items():
        b = binaries.get(path)
        if b is None:
            continue
        rows = m.recompressed.get(scenario.compression) if scenario.compression else None
        for i, e in enumerate(b.entries()):
            old = e.header_size + e.stored_size
            oldz = m.entry_zipped(i) if m.deflated else 0.0
            if not scenario.keeps(e):
                dropped_stored += old
                dropped_zipped += oldz if m.zipped is not None else old
                continue
            if rows is not None and rows[i][1] >= 0:
                new_stored, new_deflated = rows[i]
                if m.zipped is not None:
                    delta += new_deflated * m.scale - oldz
                else:
                    delta += new_stored - e.stored_size
    est = round(src.size - dropped_zipped + delta)
    return SourceEstimate(
        src.path, src.size, est, dropped_stored, round(dropped_zipped), round(delta)
    )


def estimate(
    inventory: Inventory,
    measured: Sequence[SourceBytes],
    scenario: Scenario,
    *,
    gpus: bool = True,
) -> Estimate:
    """The scenario's estimated sizes and, with ``gpus``, the GPUs whose verdict changes."""
    if scenario.compression and any(
        scenario.compression not in m.recompressed
        for s in measured
        for m in s.binaries.values()
        if m.deflated
    ):
        raise CuwheelError(f"measure() was not asked for mode {scenario.compression!r}")
    sources = tuple(_source_estimate(s, inventory, scenario) for s in measured)
    changes = gpu_changes(inventory, apply(inventory, scenario)) if gpus else ()
    return Estimate(scenario, sources, changes)


def gpu_changes(before: Inventory, after: Inventory) -> tuple[GpuChange, ...]:
    """Every catalog GPU whose verdict differs between two builds of the same code (through
    :func:`cuwheel.size.verdicts.judge`, the one call into compat's roll-up).  No driver
    is assumed: driver gates count as met."""
    from cuwheel.compat import catalog_targets
    from cuwheel.size.verdicts import judge

    targets = catalog_targets()
    j0 = judge(before, targets)
    j1 = judge(after, targets)
    out: list[GpuChange] = []
    for i, t in enumerate(targets):
        v0, v1 = j0.overall[i], j1.overall[i]
        if v0 == v1:
            continue
        out.append(GpuChange(t.label, t.arch.cc, v0, v1, j0.runs[i] and not j1.runs[i]))
    return tuple(out)
