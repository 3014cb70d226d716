"""``inspect()`` and ``iter_inspect()`` read with the same number of worker processes when
none is asked for: every CPU this process may use (docs/api.md, the inspect row)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import cuwheel
import cuwheel.read.schedule as schedule
import wheelfactory
from cuwheel.read.inspect import iter_inspect

LIB = (Path(__file__).parent / "data" / "bin" / "sm80.so").read_bytes()


@pytest.fixture
def pools(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The max_workers of every pool started; three CPUs, a work item per member."""
    started: list[int] = []

    class Recording(schedule.ProcessPoolExecutor):  # type: ignore[misc, name-defined]
        def __init__(self, max_workers: int, **kw: object) -> None:
            started.append(max_workers)
            super().__init__(max_workers, **kw)

    monkeypatch.setattr(schedule, "ProcessPoolExecutor", Recording)
    monkeypatch.setattr(schedule, "_PARALLEL_THRESHOLD", 0)
    monkeypatch.setattr(schedule, "_BIG_MEMBER", 1)
    monkeypatch.setattr(schedule, "cpu_count", lambda: 3)
    return started


def test_default_workers_are_every_cpu_for_both(tmp_path: Path, pools: list[int]) -> None:
    whl = wheelfactory.make_wheel(tmp_path, {f"lib/{i}.so": LIB for i in range(5)})
    inv = cuwheel.inspect(whl)
    assert len(inv.binaries) == 5 and inv.problems == ()
    got = dict(iter_inspect([str(whl)]))
    assert len(got[0].binaries) == 5
    assert pools == [3, 3]  # not 2 for inspect() and 3 for iter_inspect()


def test_one_worker_starts_no_pool(tmp_path: Path, pools: list[int]) -> None:
    whl = wheelfactory.make_wheel(tmp_path, {f"lib/{i}.so": LIB for i in range(5)})
    assert len(cuwheel.inspect(whl, workers=1).binaries) == 5
    assert len(dict(iter_inspect([str(whl)], workers=1))[0].binaries) == 5
    assert pools == []
