"""The GPU / CUDA knowledge catalog: GPUs, CUDA releases, NVIDIA packages, consumers.

The knowledge lives in TOML files under ``cuwheel/data/`` (each with a ``[meta]`` table
naming its sources and date).  :func:`load_catalog` reads and validates all of them once
and returns frozen objects; the module-level functions are the lookups that checks,
plans and reports use:

* GPUs: :func:`find_gpus` (name, alias, family, chip or CC), :func:`gpu_for_arch`;
* releases: :func:`release`, :func:`releases`, :func:`releases_supporting`,
  :func:`release_for_ptx_isa`, :func:`min_driver_for_ptx_isa`, :func:`minor_compat_floor`;
* packages: :func:`find_library`, :func:`is_driver_library`;
* platforms and consumers: :func:`platform`, :func:`platform_for_wheel_tag`,
  :func:`torch_consumer`, :func:`cmake_consumer`.

A data file that breaks an invariant raises :class:`CatalogError` listing every problem.
"""

from __future__ import annotations

import fnmatch
import functools
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any, TypeVar

from cuwheel.errors import CatalogError, UnknownName
from cuwheel.model.arch import Arch, ArchSpec, ArchSpellingError, parse_arch_specs

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]

__all__ = [
    "CMakeConsumer",
    "Catalog",
    "CatalogError",
    "Component",
    "DataSource",
    "Gpu",
    "GpuMatch",
    "MinorCompat",
    "Platform",
    "Product",
    "Release",
    "Rename",
    "TorchConsumer",
    "cmake_consumer",
    "data_sources",
    "find_gpus",
    "find_library",
    "gpu_for_arch",
    "is_driver_library",
    "load_catalog",
    "min_driver_for_ptx_isa",
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

SOURCE_MARKS = frozenset({"L", "D", "S", "P", "C", "?"})
SEGMENTS = frozenset({"datacenter", "workstation", "consumer", "embedded"})


# ---------------------------------------------------------------------------- types


@dataclass(frozen=True)
class DataSource:
    """The ``[meta]`` table of one data file: where its facts come from."""

    file: str
    title: str
    compiled: str
    sources: tuple[str, ...]
    note: str | None = None


@dataclass(frozen=True)
class Product:
    name: str
    segment: str  # "datacenter", "workstation", "consumer", "embedded"
    aliases: tuple[str, ...] = ()
    note: str | None = None
    # Row platforms (cuda.toml [[platform]] names) whose wheels can drive this product, where
    # it differs from its GPU's ``hosts``; None = the GPU's.
    hosts: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Gpu:
    """One compute capability and the products that have it."""

    arch: Arch  # without variant
    family: str
    chips: tuple[str, ...]
    products: tuple[Product, ...]
    source: str
    note: str | None = None
    tegra: bool = False  # integrated Tegra / Jetson / DRIVE GPU
    # Row platforms whose wheels can drive the GPU: the union over its products.
    # () = none known (no row platform, or not recorded).
    hosts: tuple[str, ...] = ()

    @property
    def cc(self) -> str:
        return self.arch.cc


@dataclass(frozen=True)
class GpuMatch:
    """A search hit: the GPU and the products that matched (all of them for a CC / family hit)."""

    gpu: Gpu
    products: tuple[Product, ...]
    exact: bool  # the query equals a product name, alias, CC or sm name


def parse_version(text: str) -> tuple[int, int]:
    """``"13.0"`` / ``"13.0.88"`` -> ``(13, 0)``; raises ValueError."""
    m = re.fullmatch(r"(\d+)\.(\d+)(?:\.\d+)*", text.strip())
    if m is None:
        raise ValueError(f"not a version: {text!r}")
    return int(m[1]), int(m[2])


@dataclass(frozen=True)
class Release:
    """One CUDA toolkit release: what its nvcc builds and emits, and what it needs."""

    version: tuple[int, int]
    ptx_isa: tuple[int, int]
    sass: tuple[Arch, ...]  # every real target nvcc accepts, a / f included
    default_arch: Arch | None
    driver_linux: str | None  # minimum driver of the GA release; None = unknown
    driver_windows: str | None
    families: tuple[tuple[Arch, tuple[Arch, ...]], ...]  # f target -> real targets built
    groups: tuple[tuple[str, tuple[ArchSpec, ...]], ...]  # "all-major" -> what it builds
    source: str
    note: str | None = None

    @property
    def name(self) -> str:
        return f"{self.version[0]}.{self.version[1]}"

    @property
    def major(self) -> int:
        return self.version[0]

    @property
    def minor(self) -> int:
        return self.version[1]

    @property
    def train(self) -> str:
        """The release-train tag used in local versions and indexes: ``cu130``."""
        return f"cu{self.version[0]}{self.version[1]}"

    @property
    def ptx_isa_name(self) -> str:
        return f"{self.ptx_isa[0]}.{self.ptx_isa[1]}"

    def accepts(self, arch: Arch) -> bool:
        """Whether this release's nvcc can build ``arch`` (as SASS or PTX)."""
        return arch in self.sass

    def family(self, arch: Arch) -> tuple[Arch, ...]:
        """The real targets an ``f`` target builds for; ``()`` when ``arch`` is no f target here."""
        for key, members in self.families:
            if key == arch:
                return members
        return ()

    def group(self, name: str) -> tuple[ArchSpec, ...] | None:
        """What ``nvcc -arch=<name>`` builds (``all``, ``all-major``), where recorded."""
        for key, specs in self.groups:
            if key == name.lower():
                return specs
        return None

    @property
    def group_map(self) -> dict[str, tuple[ArchSpec, ...]]:
        return dict(self.groups)

    def __str__(self) -> str:
        return f"CUDA {self.name}"


@dataclass(frozen=True)
class MinorCompat:
    """Minor-version compatibility: drivers at or above the floor run any runtime of ``major``."""

    major: int
    driver_linux: str | None
    driver_windows: str | None
    note: str | None = None


@dataclass(frozen=True)
class Rename:
    old: Arch
    new: Arch
    last_release_with_old: str
    first_release_with_new: str
    note: str | None = None


@dataclass(frozen=True)
class Platform:
    """A platform of release rows (``linux-x86_64``) and its wheel platform tags."""

    name: str
    os: str  # "linux" or "windows"
    wheel_tags: tuple[str, ...]  # fnmatch patterns


@dataclass(frozen=True)
class Component:
    """One NVIDIA runtime component of a CUDA major on PyPI and the libraries it ships."""

    major: int
    name: str
    distribution: str
    extra: str | None  # cuda-toolkit extra; None for libraries outside the toolkit
    linux: tuple[str, ...]  # sonames (fnmatch patterns)
    windows: tuple[str, ...]  # DLL names (fnmatch patterns)
    linux_dir: str  # relative to site-packages
    windows_dir: str | None
    windows_arm64_dir: str | None
    source: str
    metapackage: str | None = None  # "cuda-toolkit"
    metapackage_versions: str | None = None  # "==13.*"
    note: str | None = None

    @property
    def requirement(self) -> str:
        """What to declare: ``cuda-toolkit[cudart]==13.*``, or the distribution itself."""
        if self.extra and self.metapackage:
            return f"{self.metapackage}[{self.extra}]{self.metapackage_versions or ''}"
        return self.distribution

    def ships(self, library: str, os: str | None = None) -> bool:
        names = (
            self.linux
            if os == "linux"
            else self.windows
            if os == "windows"
            else self.linux + self.windows
        )
        return any(_match_lib(library, pattern) for pattern in names)


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


@dataclass(frozen=True)
class Catalog:
    gpus: tuple[Gpu, ...]
    releases: tuple[Release, ...]
    minor_compat: tuple[MinorCompat, ...]
    renames: tuple[Rename, ...]
    platforms: tuple[Platform, ...]
    unreleased: tuple[str, ...]
    components: tuple[Component, ...]
    driver_linux: tuple[str, ...]
    driver_windows: tuple[str, ...]
    not_driver: tuple[str, ...]
    torch: tuple[TorchConsumer, ...]
    cmake: CMakeConsumer
    meta: tuple[DataSource, ...]


# ---------------------------------------------------------------------------- loading

_T = TypeVar("_T")


class _TableList:
    """Marker for ``_Checker.fields``: an array whose items are checked by the caller."""


class _Checker:
    """Collects every problem of one data file instead of stopping at the first."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.problems: list[str] = []

    def problem(self, where: str, message: str) -> None:
        self.problems.append(f"{self.file}: {where}: {message}")

    def fields(
        self,
        raw: object,
        where: str,
        required: Mapping[str, type],
        optional: Mapping[str, type] | None = None,
    ) -> dict[str, Any]:
        """Check a table's keys and value types; return the valid values."""
        optional = optional or {}
        if not isinstance(raw, dict):
            self.problem(where, f"expected a table, got {type(raw).__name__}")
            return {}
        out: dict[str, Any] = {}
        for key, value in raw.items():
            expected = required.get(key) or optional.get(key)
            if expected is None:
                self.problem(where, f"unknown key {key!r}")
            elif expected is _TableList:
                if not isinstance(value, list):
                    self.problem(where, f"{key!r} must be an array")
                else:
                    out[key] = value
            elif expected is list and not (
                isinstance(value, list) and all(isinstance(v, str) for v in value)
            ):
                self.problem(where, f"{key!r} must be a list of strings")
            elif not isinstance(value, expected) or isinstance(value, bool) is not (
                expected is bool
            ):
                self.problem(where, f"{key!r} must be {expected.__name__}, got {value!r}")
            else:
                out[key] = value
        for key in required:
            if key not in raw:
                self.problem(where, f"missing key {key!r}")
        return dict(out)

    def convert(self, where: str, func: Callable[[str], _T], arg: str) -> _T | None:
        try:
            return func(arg)
        except ValueError as exc:
            self.problem(where, str(exc))
            return None


def _tables(data: Mapping[str, Any], key: str, chk: _Checker) -> list[Any]:
    value = data.get(key, [])
    if not isinstance(value, list):
        chk.problem(key, "expected an array of tables")
        return []
    return value


def _read(name: str) -> dict[str, Any]:
    text = resources.files("cuwheel").joinpath("data").joinpath(name).read_text(encoding="utf-8")
    try:
        data: dict[str, Any] = tomllib.loads(text)
        return data
    except tomllib.TOMLDecodeError as exc:
        raise CatalogError([f"{name}: {exc}"]) from exc


def _meta(data: Mapping[str, Any], chk: _Checker) -> DataSource | None:
    m = chk.fields(
        data.get("meta"),
        "[meta]",
        {"title": str, "compiled": str, "sources": list},
        {"note": str, "unreleased": list},
    )
    if "compiled" in m and not re.fullmatch(r"\d{4}-\d{2}-\d{2}", m["compiled"]):
        chk.problem("[meta]", f"'compiled' must be a date YYYY-MM-DD: {m['compiled']!r}")
    if m.get("sources") == []:
        chk.problem("[meta]", "'sources' must name at least one source")
    if not {"title", "compiled", "sources"} <= m.keys():
        return None
    return DataSource(chk.file, m["title"], m["compiled"], tuple(m["sources"]), m.get("note"))


def _source_mark(chk: _Checker, where: str, value: str | None) -> str:
    if value is None:
        return "?"
    if value not in SOURCE_MARKS:
        chk.problem(where, f"source mark must be one of {sorted(SOURCE_MARKS)}: {value!r}")
    return value


def _driver(chk: _Checker, where: str, value: str | None) -> str | None:
    if value is not None and not re.fullmatch(r"\d+(\.\d+)*", value):
        chk.problem(where, f"not a driver version: {value!r}")
    return value


def _sass_name(text: str) -> Arch:
    if not text.startswith("sm_"):
        raise ValueError(f"expected an sm_* name, got {text!r}")
    return Arch.parse(text)


def _load_gpus(chk: _Checker) -> tuple[tuple[Gpu, ...], DataSource | None]:
    data = _read("gpus.toml")
    meta = _meta(data, chk)
    gpus: list[Gpu] = []
    seen_names: dict[str, str] = {}
    for i, raw in enumerate(_tables(data, "gpu", chk)):
        where = f"gpu[{i}]"
        f = chk.fields(
            raw,
            where,
            {"cc": str, "family": str, "chips": list, "products": _TableList, "source": str},
            {"note": str, "tegra": bool, "hosts": list},
        )
        if "cc" not in f:
            continue
        where = f"gpu cc={f['cc']}"
        arch = chk.convert(where, Arch.parse, f["cc"])
        if arch is None or "." not in f["cc"] or arch.variant:
            chk.problem(where, "cc must be 'X.Y'")
            continue
        products: list[Product] = []
        for j, praw in enumerate(raw.get("products", [])):
            p = chk.fields(
                praw,
                f"{where} product[{j}]",
                {"name": str, "segment": str},
                {"aliases": list, "note": str, "hosts": list},
            )
            if "name" not in p:
                continue
            if p.get("segment") not in SEGMENTS:
                chk.problem(where, f"{p['name']!r}: segment must be one of {sorted(SEGMENTS)}")
            for n in (p["name"], *p.get("aliases", [])):
                key = _compact(n)
                if key in seen_names and seen_names[key] != f["cc"]:
                    chk.problem(where, f"name {n!r} also used for CC {seen_names[key]}")
                seen_names[key] = f["cc"]
            phosts = p.get("hosts")
            if phosts is not None and not set(phosts) <= set(f.get("hosts", [])):
                chk.problem(where, f"{p['name']!r}: hosts {phosts} not all in the GPU's hosts")
            products.append(
                Product(
                    p["name"],
                    p.get("segment", ""),
                    tuple(p.get("aliases", [])),
                    p.get("note"),
                    None if phosts is None else tuple(phosts),
                )
            )
        gpus.append(
            Gpu(
                arch,
                f.get("family", ""),
                tuple(f.get("chips", [])),
                tuple(products),
                _source_mark(chk, where, f.get("source")),
                f.get("note"),
                tegra=f.get("tegra", False),
                hosts=tuple(f.get("hosts", [])),
            )
        )
        if len(set(f.get("hosts", []))) != len(f.get("hosts", [])):
            chk.problem(where, "'hosts' has duplicates")
    numbers = [g.arch for g in gpus]
    if numbers != sorted(set(numbers)):
        chk.problem("gpu", "entries must be sorted by CC without duplicates")
    return tuple(gpus), meta


def _load_cuda(
    chk: _Checker,
) -> tuple[
    tuple[Release, ...],
    tuple[MinorCompat, ...],
    tuple[Rename, ...],
    tuple[Platform, ...],
    tuple[str, ...],
    DataSource | None,
]:
    data = _read("cuda.toml")
    meta = _meta(data, chk)
    unreleased = tuple(data.get("meta", {}).get("unreleased", []))
    releases: list[Release] = []
    for i, raw in enumerate(_tables(data, "release", chk)):
        f = chk.fields(
            raw,
            f"release[{i}]",
            {"version": str, "ptx_isa": str, "sass": list, "source": str},
            {
                "default_arch": str,
                "driver_linux": str,
                "driver_windows": str,
                "note": str,
                "families": dict,
                "groups": dict,
            },
        )
        if not {"version", "ptx_isa", "sass"} <= f.keys():
            continue
        where = f"release {f['version']}"
        version = chk.convert(where, parse_version, f["version"])
        isa = chk.convert(where, parse_version, f["ptx_isa"])
        sass: list[Arch] = []
        for name in f["sass"]:
            a = chk.convert(where, _sass_name, name)
            if a is not None:
                sass.append(a)
        if sass != sorted(set(sass)):
            chk.problem(where, "'sass' must be sorted without duplicates")
        default = None
        if "default_arch" in f:
            default = chk.convert(where, _sass_name, f["default_arch"])
            if default is not None and default not in sass:
                chk.problem(where, f"default_arch {default} is not in 'sass'")
        families: list[tuple[Arch, tuple[Arch, ...]]] = []
        for key, members in f.get("families", {}).items():
            fa = chk.convert(where, _sass_name, key)
            if fa is None:
                continue
            if fa.variant != "f" or fa not in sass:
                chk.problem(where, f"families: {key} is not an f target of this release")
            ms = [
                m
                for m in (
                    chk.convert(where, _sass_name, n)
                    for n in (members if isinstance(members, list) else [])
                )
                if m is not None
            ]
            if not ms or any(m.variant or m not in sass or m.number < fa.number for m in ms):
                chk.problem(where, f"families: {key} members must be plain targets >= it here")
            families.append((fa, tuple(sorted(ms))))
        for a in sass:
            if a.variant == "f" and a not in dict(families):
                chk.problem(where, f"f target {a} has no 'families' entry")
        groups: list[tuple[str, tuple[ArchSpec, ...]]] = []
        for gname, spelled in f.get("groups", {}).items():
            try:
                specs = parse_arch_specs(spelled)
            except (ArchSpellingError, TypeError, AttributeError) as exc:
                chk.problem(where, f"group {gname!r}: {exc}")
                continue
            for s in specs:
                if s.arch not in sass:
                    chk.problem(where, f"group {gname!r}: {s} is not a target of this release")
            groups.append((gname.lower(), specs))
        if version is None or isa is None:
            continue
        releases.append(
            Release(
                version,
                isa,
                tuple(sass),
                default,
                _driver(chk, where, f.get("driver_linux")),
                _driver(chk, where, f.get("driver_windows")),
                tuple(families),
                tuple(groups),
                _source_mark(chk, where, f.get("source")),
                f.get("note"),
            )
        )
    versions = [r.version for r in releases]
    if versions != sorted(set(versions)):
        chk.problem("release", "releases must be sorted by version without duplicates")
    isas = [r.ptx_isa for r in releases]
    if isas != sorted(isas):
        chk.problem("release", "PTX ISA versions must not decrease from one release to the next")
    for u in unreleased:
        if chk.convert("[meta] unreleased", parse_version, u) in set(versions):
            chk.problem("[meta]", f"unreleased {u} is listed as a release")

    compat: list[MinorCompat] = []
    for i, raw in enumerate(_tables(data, "minor_compat", chk)):
        f = chk.fields(
            raw,
            f"minor_compat[{i}]",
            {"major": int},
            {"driver_linux": str, "driver_windows": str, "note": str},
        )
        if "major" not in f:
            continue
        where = f"minor_compat {f['major']}"
        if not any(r.major == f["major"] for r in releases):
            chk.problem(where, "no release of this major")
        compat.append(
            MinorCompat(
                f["major"],
                _driver(chk, where, f.get("driver_linux")),
                _driver(chk, where, f.get("driver_windows")),
                f.get("note"),
            )
        )

    renames: list[Rename] = []
    known = {r.name for r in releases}
    for i, raw in enumerate(_tables(data, "rename", chk)):
        f = chk.fields(
            raw,
            f"rename[{i}]",
            {
                "old": str,
                "new": str,
                "last_release_with_old": str,
                "first_release_with_new": str,
            },
            {"note": str},
        )
        if len(f) < 4:
            continue
        old = chk.convert(f"rename {f['old']}", _sass_name, f["old"])
        new = chk.convert(f"rename {f['old']}", _sass_name, f["new"])
        for key in ("last_release_with_old", "first_release_with_new"):
            if f[key] not in known:
                chk.problem(f"rename {f['old']}", f"{key} {f[key]!r} is not a release")
        if old is not None and new is not None:
            renames.append(
                Rename(
                    old, new, f["last_release_with_old"], f["first_release_with_new"], f.get("note")
                )
            )

    platforms: list[Platform] = []
    for i, raw in enumerate(_tables(data, "platform", chk)):
        f = chk.fields(raw, f"platform[{i}]", {"name": str, "os": str, "wheel_tags": list})
        if len(f) == 3:
            if f["os"] not in ("linux", "windows"):
                chk.problem(f"platform {f['name']}", f"os must be linux or windows: {f['os']!r}")
            platforms.append(Platform(f["name"], f["os"], tuple(f["wheel_tags"])))
    if len({p.name for p in platforms}) != len(platforms):
        chk.problem("platform", "duplicate platform names")
    return tuple(releases), tuple(compat), tuple(renames), tuple(platforms), unreleased, meta


def _load_packages(
    chk: _Checker,
) -> tuple[
    tuple[Component, ...], tuple[str, ...], tuple[str, ...], tuple[str, ...], DataSource | None
]:
    data = _read("packages.toml")
    meta = _meta(data, chk)
    majors: dict[int, dict[str, Any]] = {}
    for i, raw in enumerate(_tables(data, "major", chk)):
        f = chk.fields(
            raw,
            f"major[{i}]",
            {"major": int, "metapackage": str, "linux_dir": str, "windows_dir": str},
            {"metapackage_versions": str, "windows_arm64_dir": str, "note": str},
        )
        if "major" in f:
            majors[f["major"]] = f
    components: list[Component] = []
    seen: set[tuple[int, str]] = set()
    for i, raw in enumerate(_tables(data, "component", chk)):
        f = chk.fields(
            raw,
            f"component[{i}]",
            {"major": int, "name": str, "distribution": str, "linux": list, "windows": list},
            {
                "extra": str,
                "dir": str,
                "linux_dir": str,
                "windows_dir": str,
                "source": str,
                "note": str,
            },
        )
        if not {"major", "name", "distribution"} <= f.keys():
            continue
        where = f"component {f['major']}/{f['name']}"
        if (f["major"], f["name"]) in seen:
            chk.problem(where, "duplicate component")
        seen.add((f["major"], f["name"]))
        m = majors.get(f["major"])
        if m is None:
            chk.problem(where, f"no [[major]] table for CUDA {f['major']}")
            continue
        dirs: dict[str, str | None] = {}
        for key in ("linux_dir", "windows_dir", "windows_arm64_dir"):
            template = f.get(key) or m.get(key)
            if template is not None and "{dir}" in template:
                if "dir" not in f:
                    chk.problem(where, f"{key} {template!r} needs the component's 'dir'")
                    template = None
                else:
                    template = template.replace("{dir}", f["dir"])
            # Separate libraries (own linux_dir) do not live in the shared toolkit dirs.
            if "linux_dir" in f and key not in f:
                template = None
            dirs[key] = template
        if not f.get("linux") and not f.get("windows"):
            chk.problem(where, "ships no library")
        components.append(
            Component(
                f["major"],
                f["name"],
                f["distribution"],
                f.get("extra"),
                tuple(f.get("linux", [])),
                tuple(f.get("windows", [])),
                dirs["linux_dir"] or "",
                dirs["windows_dir"],
                dirs["windows_arm64_dir"],
                _source_mark(chk, where, f.get("source")),
                m.get("metapackage") if f.get("extra") else None,
                m.get("metapackage_versions") if f.get("extra") else None,
                f.get("note"),
            )
        )
    d = chk.fields(
        data.get("driver"),
        "[driver]",
        {"linux": list, "windows": list},
        {"windows_unverified": list, "not_driver": list, "source": str, "note": str},
    )
    not_driver = tuple(d.get("not_driver", []))
    linux = tuple(d.get("linux", []))
    windows = tuple(d.get("windows", [])) + tuple(d.get("windows_unverified", []))
    for c in components:
        for lib in c.linux + c.windows:
            if any(_match_lib(lib, p) for p in linux + windows):
                chk.problem(f"component {c.major}/{c.name}", f"{lib} matches a driver library")
    return tuple(components), linux, windows, not_driver, meta


def _load_consumers(
    chk: _Checker,
) -> tuple[tuple[TorchConsumer, ...], CMakeConsumer, DataSource | None]:
    data = _read("consumers.toml")
    meta = _meta(data, chk)
    torch: list[TorchConsumer] = []
    for i, raw in enumerate(_tables(data, "torch", chk)):
        f = chk.fields(
            raw,
            f"torch[{i}]",
            {"version": str, "accepted": list, "names": _TableList},
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
                _source_mark(chk, where, f.get("source")),
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
        _source_mark(chk, "[cmake]", c.get("source")),
    )
    return tuple(torch), cmake, meta


@functools.cache
def load_catalog() -> Catalog:
    """Read and validate every data file once; raises CatalogError listing all problems."""
    problems: list[str] = []
    chks = {n: _Checker(n) for n in ("gpus.toml", "cuda.toml", "packages.toml", "consumers.toml")}
    gpus, gmeta = _load_gpus(chks["gpus.toml"])
    rels, compat, renames, platforms, unreleased, cmeta = _load_cuda(chks["cuda.toml"])
    comps, drv_l, drv_w, not_drv, pmeta = _load_packages(chks["packages.toml"])
    torch, cmake, tmeta = _load_consumers(chks["consumers.toml"])
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
                problems.append(f"gpus.toml: gpu cc={g.cc}: host {h!r} is no cuda.toml platform")
    if problems:
        raise CatalogError(problems)
    metas = tuple(m for m in (gmeta, cmeta, pmeta, tmeta) if m is not None)
    return Catalog(
        gpus, rels, compat, renames, platforms, unreleased, comps, drv_l, drv_w, not_drv,
        torch, cmake, metas,
    )  # fmt: skip


# ---------------------------------------------------------------------------- GPU lookups


def _compact(text: str) -> str:
    return re.sub(r"[^0-9a-z]", "", text.lower())


def _words(text: str) -> list[str]:
    return [w for w in re.split(r"[^0-9a-z]+", text.lower()) if w]


# Words that people add or leave out without changing which product they mean.
_NOISE = frozenset({"nvidia", "geforce", "tesla", "gpu"})


def _name_matches(query: str, name: str) -> tuple[bool, bool]:
    """(matches, exact).  Every query word must be a word of the name; ``rtx4090`` also
    matches the consecutive words ``rtx 4090``."""
    qc = _compact(" ".join(w for w in _words(query) if w not in _NOISE))
    nwords = [w for w in _words(name) if w not in _NOISE]
    if not qc:
        return False, False
    exact = qc == "".join(nwords)
    qwords = [w for w in _words(query) if w not in _NOISE]
    if set(qwords) <= set(nwords):
        return True, exact
    for i in range(len(nwords)):
        run = ""
        for w in nwords[i:]:
            run += w
            if run == qc:
                return True, exact
            if len(run) >= len(qc):
                break
    return False, exact


def find_gpus(query: str = "") -> tuple[GpuMatch, ...]:
    """Search GPUs by product name or alias ("4090", "A10G", "RTX PRO 6000"), family
    ("Hopper"), chip ("GH100"), compute capability ("8.9") or arch name ("sm_89").

    An empty query lists every GPU.  Exact hits come first, then by CC.
    """
    gpus = load_catalog().gpus
    q = query.strip()
    if not q:
        return tuple(GpuMatch(g, g.products, False) for g in gpus)
    try:
        arch = Arch.parse(q)
    except ArchSpellingError:
        arch = None
    hits: list[GpuMatch] = []
    for g in gpus:
        if arch is not None and arch.base == g.arch:
            hits.append(GpuMatch(g, g.products, True))
            continue
        family = _name_matches(q, g.family)
        chip = [_name_matches(q, c) for c in g.chips]
        if family[0] or any(m for m, _ in chip):
            hits.append(GpuMatch(g, g.products, family[1] or any(e for _, e in chip)))
            continue
        products: list[Product] = []
        exact = False
        for p in g.products:
            results = [_name_matches(q, n) for n in (p.name, *p.aliases)]
            if any(m for m, _ in results):
                products.append(p)
                exact = exact or any(e for _, e in results)
        if products:
            hits.append(GpuMatch(g, tuple(products), exact))
    hits.sort(key=lambda m: (not m.exact, m.gpu.arch))
    return tuple(hits)


def gpu_for_arch(arch: Arch | str) -> Gpu | None:
    """The GPU entry of a compute capability (variant ignored): ``"8.9"``, ``"sm_89"``."""
    a = Arch.parse(arch) if isinstance(arch, str) else arch
    for g in load_catalog().gpus:
        if g.arch == a.base:
            return g
    return None


# ---------------------------------------------------------------------------- releases


def releases() -> tuple[Release, ...]:
    return load_catalog().releases


def release(version: str | tuple[int, int]) -> Release:
    """The release ``"13.0"`` (``"13.0.88"`` and ``(13, 0)`` work too); raises UnknownName
    (a LookupError)."""
    v = parse_version(version) if isinstance(version, str) else version
    cat = load_catalog()
    for r in cat.releases:
        if r.version == v:
            return r
    name = f"{v[0]}.{v[1]}"
    why = " (it was never released)" if name in cat.unreleased else ""
    known = ", ".join(r.name for r in cat.releases)
    raise UnknownName(f"unknown CUDA release {name}{why}; known: {known}")


def releases_supporting(arch: Arch) -> tuple[Release, ...]:
    """Releases whose nvcc can build ``arch``."""
    return tuple(r for r in releases() if r.accepts(arch))


def release_for_ptx_isa(isa: str | tuple[int, int]) -> Release | None:
    """The oldest release that emits (and so understands) PTX ISA ``isa``, or None if newer
    than every known release.  A driver must be at least this release's to JIT such PTX."""
    v = parse_version(isa) if isinstance(isa, str) else isa
    for r in releases():
        if r.ptx_isa >= v:
            return r
    return None


def min_driver_for_ptx_isa(isa: str | tuple[int, int], os: str = "linux") -> str | None:
    """Minimum driver that can JIT PTX of ``isa`` on ``os``; None when unknown."""
    r = release_for_ptx_isa(isa)
    if r is None:
        return None
    return r.driver_linux if os == "linux" else r.driver_windows


def minor_compat_floor(major: int) -> MinorCompat | None:
    """The driver floor above which any runtime of ``major`` runs (minor-version compat)."""
    for m in load_catalog().minor_compat:
        if m.major == major:
            return m
    return None


def renames() -> tuple[Rename, ...]:
    return load_catalog().renames


# ---------------------------------------------------------------------------- packages


def _match_lib(name: str, pattern: str) -> bool:
    # Sonames are case-sensitive; DLL names are not.
    if pattern.lower().endswith(".dll") or name.lower().endswith(".dll"):
        return fnmatch.fnmatchcase(name.lower(), pattern.lower())
    return fnmatch.fnmatchcase(name, pattern)


def find_library(
    name: str, major: int | None = None, os: str | None = None
) -> tuple[Component, ...]:
    """Components that ship library ``name`` (a soname or DLL name; versioned names match
    the data's globs), optionally for one CUDA major / OS ("linux" / "windows").

    Several majors may ship the same name (``libcurand.so.10`` is in 11, 12 and 13)."""
    base = name.rsplit("/", 1)[-1].rsplit("\\", 1)[-1]
    return tuple(
        c
        for c in load_catalog().components
        if (major is None or c.major == major) and c.ships(base, os)
    )


def is_driver_library(name: str) -> bool:
    """Whether ``name`` is provided by the NVIDIA driver (never declare or bundle it)."""
    cat = load_catalog()
    base = name.rsplit("/", 1)[-1].rsplit("\\", 1)[-1]
    if any(_match_lib(base, p) for p in cat.not_driver):
        return False
    return any(_match_lib(base, p) for p in cat.driver_linux + cat.driver_windows)


# ---------------------------------------------------------------------------- platforms / consumers


def platform(name: str) -> Platform | None:
    for p in load_catalog().platforms:
        if p.name == name:
            return p
    return None


def platform_for_wheel_tag(tag: str) -> Platform | None:
    """The row platform of a wheel platform tag (``manylinux_2_28_x86_64`` -> linux-x86_64)."""
    for p in load_catalog().platforms:
        if any(fnmatch.fnmatchcase(tag, pat) for pat in p.wheel_tags):
            return p
    return None


def torch_consumer(version: str | None = None) -> TorchConsumer:
    """PyTorch's TORCH_CUDA_ARCH_LIST rules for ``version`` (``"2.14"``; default: newest
    recorded).  A version not recorded uses the newest recorded one at or below it."""
    known = load_catalog().torch
    if version is None:
        return max(known, key=lambda t: parse_version(t.version))
    v = parse_version(version if version.count(".") else version + ".0")
    older = [t for t in known if parse_version(t.version) <= v]
    if not older:
        have = ", ".join(t.version for t in known)
        raise UnknownName(f"no TORCH_CUDA_ARCH_LIST data for torch {version}; known: {have}")
    return max(older, key=lambda t: parse_version(t.version))


def cmake_consumer() -> CMakeConsumer:
    return load_catalog().cmake


def data_sources() -> tuple[DataSource, ...]:
    """Each data file's ``[meta]``: title, compile date and sources."""
    return load_catalog().meta
