"""What-if: the wheel's size when architectures are dropped, PTX is kept only from some
architecture up, or fatbin compression is switched, and which GPUs each choice gives up
(docs/size.md#what-if).

A scenario (:mod:`.scenario`) is policy: which entries stay and how they are compressed.
The estimate replaces each member's real compressed size by its simulated one (measure);
without a simulation it takes every dropped entry's apportioned zip bytes off and adds
the difference of every recompressed entry.  The GPUs come from the compat roll-up
through :func:`cuwheel.size.verdicts.judge`, the one place this package asks it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from cuwheel.errors import CuwheelError
from cuwheel.model.inventory import Inventory
from cuwheel.size.measure import SourceBytes
from cuwheel.size.scenario import Scenario, parse_drop

__all__ = [
    "Estimate",
    "GpuChange",
    "Scenario",
    "estimate",
    "gpu_changes",
    "parse_drop",
]


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
    # "simulated": members deflated again as the scenario leaves them; "apportioned":
    # dropped entries' apportioned bytes taken off (big binaries); or both
    method: str = "apportioned"


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
    exact_delta = 0.0
    methods: set[str] = set()
    for path, m in src.binaries.items():
        b = binaries.get(path)
        if b is None:
            continue
        rows = m.recompressed.get(scenario.compression) if scenario.compression else None
        sim = m.simulated.get(scenario)
        exact = sim is not None and m.whole and m.zipped is not None
        methods.add("simulated" if exact else "apportioned")
        if exact:  # the member deflated again as the scenario leaves it
            assert sim is not None and m.whole and m.zipped is not None
            exact_delta += m.zipped * sim / m.whole - m.zipped
        for i, e in enumerate(b.entries()):
            old = e.header_size + e.stored_size
            oldz = m.entry_zipped(i) if m.deflated else 0.0
            if not scenario.keeps(e):
                dropped_stored += old
                dropped_zipped += oldz if m.zipped is not None else old
                continue
            if not exact and rows is not None and rows[i][1] >= 0:
                new_stored, new_deflated = rows[i]
                if m.zipped is not None:
                    delta += new_deflated * m.scale - oldz
                else:
                    delta += new_stored - e.stored_size
    if "simulated" in methods:  # the apportioned parts of simulated members do not count
        dropped_zipped, delta = _apportioned_only(src, inventory, scenario)
    est = round(src.size - dropped_zipped + delta + exact_delta)
    method = "+".join(sorted(methods)) or "apportioned"
    return SourceEstimate(
        src.path, src.size, est, dropped_stored, round(dropped_zipped), round(delta), method
    )


def _apportioned_only(
    src: SourceBytes, inventory: Inventory, scenario: Scenario
) -> tuple[float, float]:
    """Dropped and recompressed zip bytes of the members that were not simulated."""
    rest = replace(
        src, binaries={p: m for p, m in src.binaries.items() if scenario not in m.simulated}
    )
    e = _source_estimate(rest, inventory, scenario)
    return float(e.dropped_zipped), float(e.recompressed_delta)


def estimate(
    inventory: Inventory,
    measured: Sequence[SourceBytes],
    scenario: Scenario,
    *,
    gpus: bool = True,
) -> Estimate:
    """The scenario's estimated sizes and, with ``gpus``, the GPUs whose verdict changes."""
    if scenario.compression and any(
        scenario.compression not in m.recompressed and scenario not in m.simulated
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
