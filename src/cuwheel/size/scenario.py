"""A what-if scenario: which fatbin entries a rebuild keeps and how it compresses them
(policy, docs/size.md#what-if)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from cuwheel.errors import CuwheelError
from cuwheel.model.arch import Arch, ArchSpellingError
from cuwheel.model.inventory import CodeKind, FatbinEntry
from cuwheel.size.modes import MODES

__all__ = ["Scenario", "parse_drop"]


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
