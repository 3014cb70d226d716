"""The roll-up's shortcuts at index scale (rules/shapes.py, rules/_memo.py): judging each
container shape once must give every container the verdict it gets when judged alone,
and the remembered verdicts and facts stay bounded."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

import cuwheel
from cuwheel.knowledge.catalog import load_catalog
from cuwheel.model.arch import Arch
from cuwheel.model.inventory import Binary
from cuwheel.rules import loading
from cuwheel.rules._memo import per_binary
from cuwheel.rules.judge import Rules
from cuwheel.rules.loading import judge_container, link_stub_index
from cuwheel.rules.shapes import judge_containers

REAL = Path(__file__).parent / "data" / "real"
GPUS = ["sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]


def _binaries() -> list[Binary]:
    inv = cuwheel.inspect(sorted(REAL.glob("*.whl")), workers=1)
    out = [b for s in inv.sources for b in s.binaries if b.containers]
    assert len(out) >= 10  # faiss, bitsandbytes and vLLM libraries with device code
    return out


@pytest.mark.parametrize("gpu", GPUS)
def test_each_shape_once_equals_each_container_alone(gpu: str) -> None:
    device = Arch.parse(gpu)
    for b in _binaries():
        stub = link_stub_index(b)
        with Rules(load_catalog()).active():  # fresh rules: nothing remembered
            alone = tuple(judge_container(c, device, stub=i == stub)
                          for i, c in enumerate(b.containers))  # fmt: skip
        with Rules(load_catalog()).active():
            assert judge_containers(b, device) == alone, b.path


def test_remembered_verdicts_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loading, "JUDGED_MAX", 3)
    rules = Rules(load_catalog())
    for b in _binaries()[:4]:
        for gpu in GPUS:
            rules.judge_containers(b, Arch.parse(gpu))
            assert 0 < len(rules.memo("containers")) <= 3


def test_per_binary_remembers_by_identity_and_forgets_the_oldest() -> None:
    calls: list[int] = []

    @per_binary
    def count(b: Binary) -> int:
        calls.append(id(b))
        return len(b.containers)

    first = _binaries()[0]
    assert count(first) == count(first) == len(first.containers)
    assert len(calls) == 1  # the second call was remembered
    others = [replace(first, path=f"{first.path}.{i}") for i in range(31)]
    for b in others:  # 32 binaries remembered: the first is still among them
        count(b)
    count(first)
    assert len(calls) == 32
    count(replace(first, path="one more"))  # the 33rd pushes the oldest out
    count(first)
    assert len(calls) == 34
