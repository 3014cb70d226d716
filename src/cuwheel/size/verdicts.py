"""The one place this package (and cuwheel.variant) asks compat's roll-up: the verdict of
every source and library on a list of GPUs (docs/compat.md).  A new roll-up is wired in
here only."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from cuwheel.compat import Target, Verdict, matrix
from cuwheel.model.inventory import Inventory

__all__ = ["CARRIES", "Judged", "judge"]

# Library verdicts under which it has code for the GPU: it runs there, or it runs as long
# as its host code picks kernels by compute capability (docs/compat.md).
CARRIES = frozenset({*(v.value for v in Verdict if v.runs), Verdict.DEPENDS.value})


@dataclass(frozen=True)
class Judged:
    """Verdicts (compat's words, None: nothing CUDA) per target, in ``targets`` order."""

    targets: tuple[Target, ...]
    overall: tuple[str | None, ...]
    runs: tuple[bool, ...]
    # library display path -> per target verdict
    libraries: dict[str, tuple[str | None, ...]]


def judge(inventory: Inventory, targets: Sequence[Target]) -> Judged:
    """Every source and library of ``inventory`` on each target; no driver assumed."""
    m = matrix(inventory, targets)
    overall = tuple(r.verdict.value if r.verdict else None for r in m.reports)
    runs = tuple(r.runs for r in m.reports)
    libs: dict[str, list[str | None]] = {}
    for i, r in enumerate(m.reports):
        for s in r.sources:
            for lv in s.libraries:
                row = libs.setdefault(lv.path, [None] * len(m.reports))
                row[i] = lv.verdict.value
    return Judged(tuple(targets), overall, runs, {k: tuple(v) for k, v in libs.items()})
