"""Whole-library facts remembered per binary: the roll-up asks them once per GPU, and a
library can hold 48k containers (cuFFT 12.0; docs/compat.md#from-containers-to-a-wheel)."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import TypeVar

from cuwheel.model.inventory import Binary

__all__ = ["library_shape", "per_binary"]

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


_SHAPES: dict[Binary, int] = {}  # a binary's facts, its path aside -> its shape number
_IDS: dict[int, tuple[Binary, int]] = {}  # id(binary) -> (binary, shape number)
MAX_SHAPES = 65_536


def library_shape(binary: Binary) -> int:
    """A number equal for binaries whose facts are equal but for their display path (the
    same library copied 3,000 times into one wheel): a verdict that does not depend on the
    path is judged once per shape and GPU (compat.evaluate).  Remembered by identity, up
    to MAX_SHAPES binaries (then forgotten together, so a number is never reused for
    another shape while remembered)."""
    hit = _IDS.get(id(binary))
    if hit is not None and hit[0] is binary:
        return hit[1]
    if len(_IDS) >= MAX_SHAPES or len(_SHAPES) >= MAX_SHAPES:
        _IDS.clear()
        _SHAPES.clear()
        _generation[0] += 1
    key = dataclasses.replace(binary, path="")
    n = _SHAPES.setdefault(key, len(_SHAPES) + (_generation[0] << 20))
    _IDS[id(binary)] = (binary, n)
    return n


_generation = [0]
