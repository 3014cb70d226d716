"""Consumers of emitted architecture lists (``data/consumers.toml``): what each PyTorch
version's ``TORCH_CUDA_ARCH_LIST`` accepts, and CMake's ``CMAKE_CUDA_ARCHITECTURES``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cuwheel._validate import Checker, TableList
from cuwheel.knowledge._load import DataSource, read_meta, source_mark, tables
from cuwheel.model.arch import Arch

__all__ = ["CMakeConsumer", "TorchConsumer", "load_consumers"]


@dataclass(frozen=True)
class TorchConsumer:
    """What ``TORCH_CUDA_ARCH_LIST`` of one PyTorch version accepts."""

    version: str
    accepted: tuple[Arch, ...]
    names: tuple[tuple[str, str], ...]  # "Ampere" -> "8.0;8.6+PTX"
    source: str


@dataclass(frozen=True)
class CMakeConsumer:
    """What ``CMAKE_CUDA_ARCHITECTURES`` accepts, by CMake version."""

    min_version: str
    groups_since: str
    native_since: str
    f_rejected: str  # newest version known to reject ``100f``
    f_accepted: str  # oldest version known to accept it
    env_var: str  # environment variable that initialises CMAKE_CUDA_ARCHITECTURES
    source: str


def load_consumers(
    data: Mapping[str, Any],
    chk: Checker,
) -> tuple[tuple[TorchConsumer, ...], CMakeConsumer, DataSource | None]:
    meta = read_meta(data, chk)
    torch: list[TorchConsumer] = []
    for i, raw in enumerate(tables(data, "torch", chk)):
        f = chk.fields(
            raw,
            f"torch[{i}]",
            {"version": str, "accepted": list, "names": TableList},
            {"source": str},
        )
        if len(f) < 3:
            continue
        where = f"torch {f['version']}"
        accepted = [
            a for a in (chk.convert(where, Arch.parse, t) for t in f["accepted"]) if a is not None
        ]
        names: list[tuple[str, str]] = []
        for pair in raw.get("names", []):
            if not (
                isinstance(pair, list) and len(pair) == 2 and all(isinstance(x, str) for x in pair)
            ):
                chk.problem(where, f"names: expected [name, value] pairs, got {pair!r}")
                continue
            names.append((pair[0], pair[1]))
        torch.append(
            TorchConsumer(
                f["version"],
                tuple(sorted(set(accepted))),
                tuple(names),
                source_mark(chk, where, f.get("source")),
            )
        )
    c = chk.fields(
        data.get("cmake"),
        "[cmake]",
        {
            "min_version": str,
            "groups_since": str,
            "native_since": str,
            "f_rejected": str,
            "f_accepted": str,
            "env_var": str,
        },
        {"source": str},
    )
    cmake = CMakeConsumer(
        c.get("min_version", "0"),
        c.get("groups_since", "0"),
        c.get("native_since", "0"),
        c.get("f_rejected", "0"),
        c.get("f_accepted", "0"),
        c.get("env_var", ""),
        source_mark(chk, "[cmake]", c.get("source")),
    )
    return tuple(torch), cmake, meta
