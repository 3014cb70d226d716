"""Whole-library facts remembered per binary: the roll-up asks them once per GPU, and a
library can hold 48k containers (cuFFT 12.0; docs/compat.md#from-containers-to-a-wheel)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TypeVar

from cuwheel.model.inventory import Binary

__all__ = ["per_binary"]

_R = TypeVar("_R")


def per_binary(fn: Callable[[Binary], _R]) -> Callable[[Binary], _R]:
    """``fn`` of a binary, remembered for the last few binaries by identity: the roll-up
    asks the same whole-library facts once per GPU, and a library can hold 48k containers
    (cuFFT).  Each entry keeps its binary alive, so an id is never reused while cached."""
    cache: dict[int, tuple[Binary, _R]] = {}

    @functools.wraps(fn)
    def cached(binary: Binary) -> _R:
        hit = cache.get(id(binary))
        if hit is not None and hit[0] is binary:
            return hit[1]
        value = fn(binary)
        if len(cache) >= 32:
            del cache[next(iter(cache))]
        cache[id(binary)] = (binary, value)
        return value

    return cached
