"""data/host_isa.toml: the host CPU instruction sets an exported program may record, and
the level of its machine that includes each (the x86-64 psABI's micro-architecture levels;
Armv8-A's mandatory Advanced SIMD)."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from cuwheel._datafiles import HOST_ISA
from cuwheel._validate import Checker
from cuwheel.errors import CatalogError
from cuwheel.knowledge._load import DataSource, read_data_file, read_meta, tables

__all__ = ["LEVELS", "HostIsa", "host_isa", "load_host_isa"]

LEVELS = ("baseline", "x86-64-v2", "x86-64-v3", "x86-64-v4", "none")


@dataclass(frozen=True)
class HostIsa:
    name: str
    machine: str
    level: str  # one of LEVELS


@functools.lru_cache(maxsize=1)
def load_host_isa() -> tuple[DataSource | None, dict[str, HostIsa]]:
    data = read_data_file(HOST_ISA)
    chk = Checker(HOST_ISA)
    meta = read_meta(data, chk)
    out: dict[str, HostIsa] = {}
    for i, raw in enumerate(tables(data, "isa", chk)):
        f = chk.fields(raw, f"isa[{i}]", {"name": str, "machine": str, "level": str})
        if len(f) != 3:
            continue
        if f["level"] not in LEVELS:
            chk.problem(f"isa[{i}]", f"level must be one of {LEVELS}: {f['level']!r}")
            continue
        if f["name"] in out:
            chk.problem(f"isa[{i}]", f"{f['name']!r} twice")
        out[f["name"]] = HostIsa(f["name"], f["machine"], f["level"])
    if chk.problems:
        raise CatalogError(chk.problems)
    return meta, out


def host_isa(name: str) -> HostIsa | None:
    """What ``name`` (as AOTI_CPU_ISA spells it, any case) is; None when unknown."""
    return load_host_isa()[1].get(name.upper())
