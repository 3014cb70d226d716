"""data/thresholds.toml: the measured thresholds of the loading rules and the roll-up (the
dispatch threshold, the build-floor share, the device-link stub's cubin size), each with
the rule it sets and what it was measured on (docs/compat.md)."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cuwheel._datafiles import THRESHOLDS
from cuwheel._validate import Checker
from cuwheel.errors import CatalogError
from cuwheel.knowledge._load import DataSource, read_data_file, read_meta

__all__ = ["DATA_FILE", "Thresholds", "build_thresholds", "load_thresholds"]

DATA_FILE = THRESHOLDS


@dataclass(frozen=True)
class Thresholds:
    dispatch_arch_sets: int  # SASS architecture sets of a library that dispatches by arch
    floor_share: float  # share of containers whose first architecture is the build floor
    stub_max_cubin: int  # bytes of the largest cubin of nvcc's device-link stub
    meta: DataSource | None


def _value(chk: Checker, data: Mapping[str, Any], key: str, kind: type, low: float,
           high: float) -> Any:
    # "applies": where the rule is used, when only part of the roll-up uses it
    f = chk.fields(data.get(key), f"[{key}]", {"value": kind, "rule": str, "measured": str},
                   {"applies": str})
    value = f.get("value")
    if value is None:
        return None
    if not low <= value <= high:
        chk.problem(f"[{key}]", f"value must be in [{low}, {high}]: {value!r}")
    if not f.get("measured", "").strip():
        chk.problem(f"[{key}]", "'measured' must say what it was measured on")
    return value


def build_thresholds(data: Mapping[str, Any], file: str = DATA_FILE) -> Thresholds:
    """Validate a parsed ``thresholds.toml``; CatalogError listing every problem."""
    chk = Checker(file)
    meta = read_meta(data, chk)
    sets = _value(chk, data, "dispatch_arch_sets", int, 2, 1000)
    share = _value(chk, data, "floor_share", float, 0.0, 1.0)
    stub = _value(chk, data, "stub_max_cubin", int, 1, 1 << 20)
    if chk.problems:
        raise CatalogError(chk.problems)
    return Thresholds(sets, share, stub, meta)


@functools.cache
def load_thresholds() -> Thresholds:
    """The shipped ``thresholds.toml``, read and validated once."""
    return build_thresholds(read_data_file(DATA_FILE))
