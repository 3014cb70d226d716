"""Every container of a library judged on one GPU, each container shape once: the
verdict of :func:`cuwheel.rules.loading.judge_container` depends only on the entries'
loading facts, and a library holds thousands of containers of a few shapes."""

from __future__ import annotations

from cuwheel.model.arch import Arch
from cuwheel.model.inventory import Binary
from cuwheel.rules._memo import per_binary
from cuwheel.rules.loading import ContainerVerdict, judge_container, link_stub_index

__all__ = ["judge_containers"]


def judge_containers(
    binary: Binary, device: Arch, *, cuda: tuple[int, int] | None = None, os: str = "linux"
) -> tuple[ContainerVerdict, ...]:
    """:func:`judge_container` for every container of ``binary`` (the device-link stub
    found by :func:`link_stub_index`), each shape judged once."""
    shape_of, first = _shapes(binary)
    stub = link_stub_index(binary)
    judged = [judge_container(binary.containers[i], device, cuda=cuda, os=os, stub=i == stub)
              for i in first]  # fmt: skip
    out = []
    for c, s in zip(binary.containers, shape_of, strict=True):
        j = judged[s]
        out.append(ContainerVerdict(c.offset, c.size, c.section, j.codes, j.verdict, j.reason,
                                    j.chosen, j.ignored))
    return tuple(out)


@per_binary
def _shapes(binary: Binary) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(each container's shape number, the first container of each shape): containers of
    one shape get the same verdict from :func:`judge_container`."""
    stub = link_stub_index(binary)
    numbers: dict[tuple[object, ...], int] = {}
    shape_of: list[int] = []
    first: list[int] = []
    for i, c in enumerate(binary.containers):
        key = (i == stub, c.shape)
        n = numbers.get(key)
        if n is None:
            n = numbers[key] = len(first)
            first.append(i)
        shape_of.append(n)
    return tuple(shape_of), tuple(first)
