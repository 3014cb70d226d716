"""The GPU / CUDA knowledge catalog: GPUs, CUDA releases, NVIDIA packages, consumers.

The knowledge lives in TOML files under ``cuwheel/data/`` (each with a ``[meta]`` table
naming its sources and date), one loader module each (:mod:`.gpus`, :mod:`.cuda`,
:mod:`.packages`, :mod:`.consumers`).  :func:`build_catalog` validates a set of tables and
returns a frozen :class:`Catalog` whose methods are the lookups; :func:`load_catalog`
builds the shipped one once, and the module-level functions are its lookups for callers
that use the shipped data (tests build catalogs of their own with :func:`build_catalog`).

A data file that breaks an invariant raises :class:`CatalogError` listing every problem;
a lookup that finds nothing raises :class:`UnknownName` (a ``LookupError``).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cuwheel._datafiles import CONSUMERS, GPUS, PACKAGES, PLATFORMS
from cuwheel._datafiles import CUDA as CUDA_FILE
from cuwheel._validate import Checker
from cuwheel.errors import CatalogError, UnknownName
from cuwheel.knowledge._cache import cached
from cuwheel.knowledge._load import DataSource, read_data_file
from cuwheel.knowledge.consumers import CMakeConsumer, TorchConsumer, load_consumers
from cuwheel.knowledge.cuda import (
    ForwardCompat,
    MinorCompat,
    Release,
    Rename,
    load_codec_gates,
    load_cuda,
    load_forward_compat,
    parse_version,
)
from cuwheel.knowledge.gpus import (
    SEGMENTS,
    Gpu,
    GpuMatch,
    Product,
    load_gpus,
    nearest_gpu_name,
    search_gpus,
)
from cuwheel.knowledge.packages import (
    Carrier,
    Component,
    PackageLibraries,
    load_carriers,
    load_package_libraries,
    load_packages,
    match_lib,
)
from cuwheel.knowledge.platforms import Platform, build_platforms
from cuwheel.model.arch import Arch

__all__ = [
    "DATA_FILES",
    "CMakeConsumer",
    "Catalog",
    "CatalogError",
    "Component",
    "DataSource",
    "ForwardCompat",
    "Gpu",
    "GpuMatch",
    "MinorCompat",
    "Platform",
    "Product",
    "Release",
    "Rename",
    "TorchConsumer",
    "build_catalog",
    "cmake_consumer",
    "codec_release",
    "data_sources",
    "find_gpus",
    "find_library",
    "forward_compat",
    "gpu_for_arch",
    "is_cuda_library",
    "is_driver_library",
    "load_catalog",
    "minor_compat_floor",
    "parse_version",
    "platform",
    "platform_for_wheel_tag",
    "release",
    "release_for_ptx_isa",
    "releases",
    "releases_supporting",
    "renames",
    "torch_consumer",
]

DATA_FILES = (
    GPUS, CUDA_FILE, PACKAGES, CONSUMERS,
    PLATFORMS,
)  # fmt: skip


def _base(name: str) -> str:
    return name.rsplit("/", 1)[-1].rsplit("\\", 1)[-1]


@dataclass(frozen=True)
class Catalog:
    """Every data file, validated and frozen; the methods are the lookups."""

    gpus: tuple[Gpu, ...]
    releases: tuple[Release, ...]
    minor_compat: tuple[MinorCompat, ...]
    renames: tuple[Rename, ...]
    platforms: tuple[Platform, ...]
    unreleased: tuple[str, ...]
    components: tuple[Component, ...]
    driver_linux: tuple[str, ...]
    driver_windows: tuple[str, ...]
    torch: tuple[TorchConsumer, ...]
    cmake: CMakeConsumer
    meta: tuple[DataSource, ...]
    carriers: tuple[Carrier, ...] = ()
    package_libraries: tuple[PackageLibraries, ...] = ()
    forward_compat: ForwardCompat | None = None
    codec_gates: tuple[tuple[str, tuple[int, int]], ...] = ()  # codec -> first release

    def package_of(self, library: str, os: str | None) -> PackageLibraries | None:
        """The Python package (not NVIDIA's) whose library ``library`` is, if recorded."""
        return next((p for p in self.package_libraries if p.ships(library, os)), None)

    def carrier(self, name: str) -> Carrier | None:
        """The carrier package ``name`` (canonical), if the catalog records one."""
        for c in self.carriers:
            if c.name == name:
                return c
        return None

    # -- GPUs --------------------------------------------------------------------
    def find_gpus(self, query: str = "") -> tuple[GpuMatch, ...]:
        """Search GPUs by product name or alias ("4090", "A10G", "RTX PRO 6000"), family
        ("Hopper"), chip ("GH100"), compute capability ("8.9") or arch name ("sm_89").

        An empty query lists every GPU.  Exact hits come first, then by CC.
        """
        return search_gpus(self.gpus, query)

    @functools.cached_property
    def _gpu_index(self) -> dict[int, Gpu]:
        return {g.arch.number: g for g in self.gpus}

    @functools.cached_property
    def _library_memo(self) -> dict[tuple[str, int | None, str | None], tuple[Component, ...]]:
        return {}

    def gpu_for_arch(self, arch: Arch | str) -> Gpu | None:
        """The GPU entry of a compute capability (variant ignored): ``"8.9"``, ``"sm_89"``."""
        a = Arch.parse(arch) if isinstance(arch, str) else arch
        return self._gpu_index.get(a.number)

    @functools.cached_property
    def _tegra_memo(self) -> dict[int, bool]:
        return {}

    def is_tegra(self, arch: Arch) -> bool:
        """Whether CC ``arch`` is an integrated Tegra / Jetson / DRIVE GPU (``tegra``; a
        renamed CC, Thor's 10.1, is looked up under its current name)."""
        found = self._tegra_memo.get(arch.number)
        if found is None:
            gpu = self.gpu_for_arch(arch.base)
            if gpu is None:
                for rn in self.renames:
                    if rn.old.base == arch.base:
                        gpu = self.gpu_for_arch(rn.new.base)
            found = self._tegra_memo[arch.number] = gpu is not None and gpu.tegra
        return found

    # -- releases ----------------------------------------------------------------
    def release(self, version: str | tuple[int, int]) -> Release:
        """The release ``"13.0"`` (``"13.0.88"`` and ``(13, 0)`` work too); raises
        UnknownName (a LookupError), or ValueError for a text that is no version."""
        v = parse_version(version) if isinstance(version, str) else version
        for r in self.releases:
            if r.version == v:
                return r
        name = f"{v[0]}.{v[1]}"
        why = " (it was never released)" if name in self.unreleased else ""
        never = [u for u in self.unreleased if u != name]
        gaps = f" except {', '.join(never)}" if never else ""
        known = f"{self.releases[0].name} to {self.releases[-1].name}{gaps}"
        raise UnknownName(f"unknown CUDA release {name}{why}; known: {known}")

    def releases_supporting(self, arch: Arch) -> tuple[Release, ...]:
        """Releases whose nvcc can build ``arch``."""
        return tuple(r for r in self.releases if r.accepts(arch))

    def release_for_ptx_isa(self, isa: str | tuple[int, int]) -> Release | None:
        """The oldest release that emits (and so understands) PTX ISA ``isa``, or None if
        newer than every known release.  A driver must be at least this release's to JIT
        such PTX (docs/cuda.md#ptx-driver-gate)."""
        v = parse_version(isa) if isinstance(isa, str) else isa
        for r in self.releases:
            if r.ptx_isa >= v:
                return r
        return None

    def codec_release(self, codec: str) -> Release | None:
        """The first CUDA release whose drivers decode fatbin payloads of ``codec`` ("zstd");
        None when any driver does, or when it is not known."""
        for name, version in self.codec_gates:
            if name == codec:
                return self.release(version)
        return None

    def minor_compat_floor(self, major: int) -> MinorCompat | None:
        """The driver floor above which any runtime of ``major`` runs (minor-version
        compatibility, docs/cuda.md#minor-version-compatibility)."""
        for m in self.minor_compat:
            if m.major == major:
                return m
        return None

    # -- packages ----------------------------------------------------------------
    def find_library(
        self, name: str, major: int | None = None, os: str | None = None
    ) -> tuple[Component, ...]:
        """Components that ship library ``name`` (a soname or DLL name; versioned names
        match the data's globs), optionally for one CUDA major / OS ("linux" / "windows").

        Several majors may ship the same name (``libcurand.so.10`` is in 11, 12 and 13)."""
        key = (_base(name), major, os)
        found = self._library_memo.get(key)
        if found is None:  # every binary asks again for the same few names
            found = self._library_memo[key] = tuple(
                c
                for c in self.components
                if (major is None or c.major == major) and c.ships(key[0], os)
            )
        return found

    def is_driver_library(self, name: str) -> bool:
        """Whether ``name`` is provided by the NVIDIA driver (never declare or bundle it)."""
        base = _base(name)
        return any(match_lib(base, p) for p in self.driver_linux + self.driver_windows)

    def is_cuda_library(self, name: str, os: str | None = None, *, driver: bool = False) -> bool:
        """The one answer to "is this a CUDA library": a library of NVIDIA's CUDA components
        (shipped on ``os``; any OS when None), or with ``driver`` one of the driver's own
        (``libcuda.so.1``, ``nvcuda.dll``)."""
        return bool(self.find_library(name, os=os)) or (driver and self.is_driver_library(name))

    def gpu_hint(self, query: str) -> str:
        """``; did you mean 'H100'?`` for a GPU query that matched nothing, or ``""``."""
        name = nearest_gpu_name(self.gpus, query)
        return f"; did you mean {name!r}?" if name else ""

    # -- platforms and consumers -------------------------------------------------
    def platform(self, name: str) -> Platform | None:
        for p in self.platforms:
            if p.name == name:
                return p
        return None

    def platform_for_wheel_tag(self, tag: str) -> Platform | None:
        """The row platform of a wheel platform tag (``manylinux_2_28_x86_64`` ->
        linux-x86_64)."""
        return next((p for p in self.platforms if p.matches_tag(tag)), None)

    def torch_consumer(self, version: str | None = None) -> TorchConsumer:
        """PyTorch's TORCH_CUDA_ARCH_LIST rules for ``version`` (``"2.14"``; default: newest
        recorded).  A version not recorded uses the newest recorded one at or below it;
        UnknownName when none is."""
        if version is None:
            return max(self.torch, key=lambda t: parse_version(t.version))
        v = parse_version(version if version.count(".") else version + ".0")
        older = [t for t in self.torch if parse_version(t.version) <= v]
        if not older:
            have = ", ".join(t.version for t in self.torch)
            raise UnknownName(f"no TORCH_CUDA_ARCH_LIST data for torch {version}; known: {have}")
        return max(older, key=lambda t: parse_version(t.version))


def build_catalog(tables: Mapping[str, Mapping[str, Any]]) -> Catalog:
    """Validate the parsed data files (``{"gpus.toml": {...}, ...}``, every name of
    :data:`DATA_FILES`) and freeze them; raises CatalogError listing every problem."""
    problems: list[str] = []
    chks = {n: Checker(n) for n in DATA_FILES}
    gpus, gmeta = load_gpus(tables[GPUS], chks[GPUS])
    rels, compat, renames, unreleased, cmeta = load_cuda(
        tables[CUDA_FILE], chks[CUDA_FILE]
    )
    platforms: tuple[Platform, ...] = ()
    try:
        platforms = build_platforms(tables[PLATFORMS]).rows
    except CatalogError as exc:
        problems.extend(exc.problems)
    comps, drv_l, drv_w, pmeta = load_packages(
        tables[PACKAGES], chks[PACKAGES]
    )
    fwd = load_forward_compat(tables[CUDA_FILE], chks[CUDA_FILE], SEGMENTS)
    codecs = load_codec_gates(tables[CUDA_FILE], chks[CUDA_FILE], rels)
    torch, cmake, tmeta = load_consumers(tables[CONSUMERS], chks[CONSUMERS])
    carriers = load_carriers(tables[PACKAGES], chks[PACKAGES], comps)
    pkg_libs = load_package_libraries(tables[PACKAGES], chks[PACKAGES])
    for chk in chks.values():
        problems.extend(chk.problems)
    known = {g.arch for g in gpus}
    known |= {rn.old.base for rn in renames if rn.new in known}  # sm_101 = Thor before 13.0
    for r in rels:
        for a in r.sass:
            if a.base not in known:
                problems.append(f"cuda.toml: release {r.name}: {a} has no gpus.toml entry")
    platform_names = {p.name for p in platforms}
    for g in gpus:
        for h in {*g.hosts, *(h for p in g.products for h in p.hosts or ())}:
            if h not in platform_names:
                problems.append(
                    f"gpus.toml: gpu cc={g.cc}: host {h!r} is no platforms.toml row platform"
                )
    if problems:
        raise CatalogError(problems)
    metas = tuple(m for m in (gmeta, cmeta, pmeta, tmeta) if m is not None)
    return Catalog(
        gpus, rels, compat, renames, platforms, unreleased, comps, drv_l, drv_w,
        torch, cmake, metas, carriers, pkg_libs, fwd, codecs,
    )  # fmt: skip


@functools.cache
def load_catalog() -> Catalog:
    """The shipped catalog (``cuwheel/data``), read and validated once (then kept in the
    user cache, keyed by the files and this code: knowledge/_cache.py)."""
    return cached(DATA_FILES, lambda: build_catalog({n: read_data_file(n) for n in DATA_FILES}),
                  Catalog)


# The catalog being judged with (rules/judge.py's Rules.active sets it); the rule modules
# ask this, never the lookups below.
# ---------------------------------------------------------------------------- lookups
# The shipped catalog's lookups, for the callers that use the shipped data outside the
# judgement (plan, render, cli); the rule modules ask the active Rules' catalog instead
# (rules/judge.py; tests/test_architecture.py).


def find_gpus(query: str = "") -> tuple[GpuMatch, ...]:
    return load_catalog().find_gpus(query)


def gpu_hint(query: str) -> str:
    return load_catalog().gpu_hint(query)


def gpu_for_arch(arch: Arch | str) -> Gpu | None:
    return load_catalog().gpu_for_arch(arch)


def releases() -> tuple[Release, ...]:
    return load_catalog().releases


def release(version: str | tuple[int, int]) -> Release:
    return load_catalog().release(version)


def releases_supporting(arch: Arch) -> tuple[Release, ...]:
    return load_catalog().releases_supporting(arch)


def release_for_ptx_isa(isa: str | tuple[int, int]) -> Release | None:
    return load_catalog().release_for_ptx_isa(isa)


def minor_compat_floor(major: int) -> MinorCompat | None:
    return load_catalog().minor_compat_floor(major)


def forward_compat() -> ForwardCompat | None:
    return load_catalog().forward_compat


def codec_release(codec: str) -> Release | None:
    return load_catalog().codec_release(codec)


def renames() -> tuple[Rename, ...]:
    return load_catalog().renames


def find_library(
    name: str, major: int | None = None, os: str | None = None
) -> tuple[Component, ...]:
    return load_catalog().find_library(name, major, os)


def is_driver_library(name: str) -> bool:
    return load_catalog().is_driver_library(name)


def is_cuda_library(name: str, os: str | None = None, *, driver: bool = False) -> bool:
    return load_catalog().is_cuda_library(name, os, driver=driver)


def platform(name: str) -> Platform | None:
    return load_catalog().platform(name)


def platform_for_wheel_tag(tag: str) -> Platform | None:
    return load_catalog().platform_for_wheel_tag(tag)


def torch_consumer(version: str | None = None) -> TorchConsumer:
    return load_catalog().torch_consumer(version)


def cmake_consumer() -> CMakeConsumer:
    return load_catalog().cmake


def data_sources() -> tuple[DataSource, ...]:
    """Each data file's ``[meta]``: title, compile date and sources."""
    return load_catalog().meta
