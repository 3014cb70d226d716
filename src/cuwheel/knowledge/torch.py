"""The architecture lists of PyTorch's own CUDA builds (``data/torch_archs.toml``): per
release series, CUDA train and platform, the ``TORCH_CUDA_ARCH_LIST`` its release build
set, hence the GPUs an extension built against that torch can expect torch itself to run on.

:func:`build_torch_archs` validates a parsed table (every problem at once, as
:class:`CatalogError`); :func:`load_torch_archs` reads the shipped file once;
:func:`torch_arch_list` answers one query (``None`` where the file records nothing: an
absent entry is unknown, never guessed).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cuwheel._datafiles import TORCH_ARCHS
from cuwheel._validate import Checker
from cuwheel.errors import ArchSpellingError, CatalogError, TrainSpellingError
from cuwheel.knowledge import catalog
from cuwheel.knowledge._load import DataSource, read_data_file, read_meta, source_mark, tables
from cuwheel.model.arch import Arch, ArchSpec, parse_torch_arch_list
from cuwheel.model.train import parse_train_name

__all__ = [
    "DATA_FILE",
    "TorchArchCatalog",
    "TorchArchs",
    "build_torch_archs",
    "load_torch_archs",
    "torch_arch_list",
]

DATA_FILE = TORCH_ARCHS
_SERIES = re.compile(r"\d+\.\d+")
# A torch version as pip spells it: 2.7.1, 2.7.1+cu128, 2.8.0.post1, 2.10.0rc3+cu130.
# ASCII, every part bounded: the version comes from a wheel's requirements or build record
_VERSION = re.compile(
    r"v?([0-9]{1,4})\.([0-9]{1,4})(?:\.[0-9]{1,8}){0,4}(?:(?:a|b|rc|\.post|\.dev)[0-9]{1,8}){0,3}"
    r"(?:\+([A-Za-z0-9_.]{1,64}))?",
    re.ASCII,
)


@dataclass(frozen=True)
class TorchArchs:
    """What one PyTorch release build (series, train, platform) was compiled for."""

    torch: str  # release series: "2.7" (every 2.7.x)
    train: str  # "cu128"
    platform: str  # catalog platform name: "linux-x86_64"
    arch_list: str  # TORCH_CUDA_ARCH_LIST as the build set it: "7.5;8.0;12.0+PTX"
    specs: tuple[ArchSpec, ...]
    source: str  # source mark (see the data file's header)
    cite: str
    wheels: tuple[str, ...] = ()  # real wheels this entry was compared with
    note: str | None = None

    @property
    def sass(self) -> tuple[Arch, ...]:
        """The archs torch's own kernels carry SASS for."""
        return tuple(s.arch for s in self.specs if s.sass)

    @property
    def ptx(self) -> tuple[Arch, ...]:
        """The archs torch's own kernels carry PTX for (JIT-compiled on newer GPUs)."""
        return tuple(s.arch for s in self.specs if s.ptx)


@dataclass(frozen=True)
class TorchArchCatalog:
    builds: tuple[TorchArchs, ...]
    meta: DataSource | None

    def find(self, torch: str, train: str, platform: str) -> TorchArchs | None:
        for b in self.builds:
            if (b.torch, b.train, b.platform) == (torch, train, platform):
                return b
        return None

    def trains(self, torch: str, platform: str) -> tuple[str, ...]:
        """The trains recorded for one release series on one platform."""
        return tuple(b.train for b in self.builds if (b.torch, b.platform) == (torch, platform))


def _train_release(train: str) -> str | None:
    """``cu128`` -> ``12.8``; None for any other spelling (the data and pip's local labels
    spell trains cuXYZ)."""
    try:
        name = parse_train_name(train)
    except TrainSpellingError:
        return None
    return name.dotted if name.name == train else None


def build_torch_archs(data: Mapping[str, Any], file: str = DATA_FILE) -> TorchArchCatalog:
    """Validate a parsed ``torch_archs.toml``; raises CatalogError listing every problem."""
    chk = Checker(file)
    meta = read_meta(data, chk)
    builds: list[TorchArchs] = []
    seen: set[tuple[str, str, str]] = set()
    for i, raw in enumerate(tables(data, "build", chk)):
        f = chk.fields(
            raw,
            f"build[{i}]",
            {"torch": list, "train": str, "platforms": list, "arch_list": str, "cite": str},
            {"source": str, "wheels": list, "note": str},
        )
        if not {"torch", "train", "platforms", "arch_list", "cite"} <= f.keys():
            continue
        where = f"build {','.join(f['torch'])} {f['train']}"
        specs = _specs(chk, where, f["arch_list"], f["train"])
        if not f["cite"].strip():
            chk.problem(where, "'cite' is empty")
        if not f["torch"] or not f["platforms"]:
            chk.problem(where, "'torch' and 'platforms' must name at least one each")
        for series in f["torch"]:
            if not _SERIES.fullmatch(series):
                chk.problem(where, f"torch: {series!r} is no release series (X.Y)")
        for plat in f["platforms"]:
            if catalog.platform(plat) is None:
                chk.problem(where, f"platforms: {plat!r} is no platform of cuda.toml")
        mark = source_mark(chk, where, f.get("source"))
        for series in f["torch"]:
            for plat in f["platforms"]:
                key = (series, f["train"], plat)
                if key in seen:
                    chk.problem(where, f"{series} {f['train']} {plat} is recorded twice")
                seen.add(key)
                builds.append(
                    TorchArchs(
                        series,
                        f["train"],
                        plat,
                        f["arch_list"],
                        specs,
                        mark,
                        f["cite"],
                        tuple(f.get("wheels", [])),
                        f.get("note"),
                    )
                )
    if chk.problems:
        raise CatalogError(chk.problems)
    return TorchArchCatalog(tuple(builds), meta)


def _specs(chk: Checker, where: str, arch_list: str, train: str) -> tuple[ArchSpec, ...]:
    """The list parsed; every arch must be one the train's nvcc builds."""
    version = _train_release(train)
    if version is None:
        chk.problem(where, f"train must be spelled cuXYZ: {train!r}")
        return ()
    try:
        release = catalog.release(version)
    except LookupError as exc:
        chk.problem(where, str(exc))
        return ()
    try:
        specs = parse_torch_arch_list(arch_list)
    except ArchSpellingError as exc:
        chk.problem(where, str(exc))
        return ()
    for s in specs:
        if not release.accepts(s.arch):
            chk.problem(where, f"nvcc {version} cannot build {s.arch.sass}")
    return specs


@functools.cache
def load_torch_archs() -> TorchArchCatalog:
    """The shipped ``torch_archs.toml``, read and validated once."""
    return build_torch_archs(read_data_file(DATA_FILE))


def torch_arch_list(
    torch_version: str, train: str | None = None, platform: str = "linux-x86_64"
) -> TorchArchs | None:
    """The arch list of PyTorch ``torch_version``'s build for ``train`` on ``platform``.

    ``torch_version`` may carry pip's local label (``2.7.1+cu128``); it then gives the
    train when ``train`` is None, and must agree with ``train`` otherwise (ValueError).
    ``None`` when the version cannot be read or the catalog records no such build.
    """
    m = _VERSION.fullmatch(torch_version.strip())
    if m is None:
        return None
    local = m[3]
    if local is not None and _train_release(local) is not None:
        if train is not None and train != local:
            raise ValueError(f"torch {torch_version} is a {local} build, not {train}")
        train = local
    if train is None:
        return None
    return load_torch_archs().find(f"{m[1]}.{m[2]}", train, platform)
