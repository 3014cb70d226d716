"""NVIDIA's runtime packages (``data/packages.toml``): per CUDA major, each component's PyPI
distribution, ``cuda-toolkit`` extra, library names and install directories; and the
libraries that only the driver provides."""

from __future__ import annotations

import fnmatch
import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cuwheel._datafiles import PACKAGES
from cuwheel._validate import Checker
from cuwheel.knowledge._load import DataSource, each_table, read_meta, source_mark, tables
from cuwheel.knowledge.platforms import OSES

__all__ = [
    "Carrier", "CarrierBuild", "Component", "DriverStandIns", "PackageLibraries",
    "load_carriers", "load_driver_stand_ins", "load_package_libraries", "load_packages",
    "match_lib",
]  # fmt: skip


def match_lib(name: str, pattern: str) -> bool:
    """Whether library ``name`` matches a data glob (DLL names case-insensitively)."""
    # Sonames are case-sensitive; DLL names are not.
    if pattern.lower().endswith(".dll") or name.lower().endswith(".dll"):
        name, pattern = name.lower(), pattern.lower()
    # The text before the first wildcard must start the name: most patterns are ruled out
    # without compiling them (a one-library inspect asks ~200 of them about ~20 names).
    if not name.startswith(_WILDCARD.split(pattern, 1)[0]):
        return False
    return fnmatch.fnmatchcase(name, pattern)


_WILDCARD = re.compile(r"[*?\[]")


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
        return any(match_lib(library, pattern) for pattern in names)


def load_packages(
    data: Mapping[str, Any],
    chk: Checker,
) -> tuple[
    tuple[Component, ...], tuple[str, ...], tuple[str, ...], DataSource | None
]:
    meta = read_meta(data, chk)
    majors: dict[int, dict[str, Any]] = {}
    for f in each_table(
        data, "major", chk,
        {"major": int, "metapackage": str, "linux_dir": str, "windows_dir": str},
        {"metapackage_versions": str, "windows_arm64_dir": str, "note": str},
    ):
        if "major" in f:
            majors[f["major"]] = f
    components: list[Component] = []
    seen: set[tuple[int, str]] = set()
    for f in each_table(
        data, "component", chk,
        {"major": int, "name": str, "distribution": str, "linux": list, "windows": list},
        {"extra": str, "dir": str, "linux_dir": str, "windows_dir": str, "source": str,
         "note": str},
    ):  # fmt: skip
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
            # Separate libraries (own linux_dir) do not live in the shared toolkit dirs.
            if "linux_dir" in f and key not in f:
                template = None
            if template is not None and "{dir}" in template:
                if "dir" not in f:
                    chk.problem(where, f"{key} {template!r} needs the component's 'dir'")
                    template = None
                else:
                    template = template.replace("{dir}", f["dir"])
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
                source_mark(chk, where, f.get("source")),
                m.get("metapackage") if f.get("extra") else None,
                m.get("metapackage_versions") if f.get("extra") else None,
                f.get("note"),
            )
        )
    d = chk.fields(
        data.get("driver"),
        "[driver]",
        {"linux": list, "windows": list},
        {"windows_unverified": list, "source": str, "note": str,
         "stand_in_packages": list, "stand_in_extras": list, "exports": dict},
    )
    linux = tuple(d.get("linux", []))
    windows = tuple(d.get("windows", [])) + tuple(d.get("windows_unverified", []))
    for c in components:
        for lib in c.linux + c.windows:
            if any(match_lib(lib, p) for p in linux + windows):
                chk.problem(f"component {c.major}/{c.name}", f"{lib} matches a driver library")
    return tuple(components), linux, windows, meta


@dataclass(frozen=True)
class Carrier:
    """A package whose requirements install CUDA components of its train, loaded before
    its dependents' extensions (packages.toml ``[[carrier]]``)."""

    name: str  # canonical distribution name
    os: tuple[str, ...]
    components: tuple[str, ...]  # Component.name values
    source: str
    builds: tuple[CarrierBuild, ...] = ()  # packages.toml [[carrier_build]]

    def build_majors(self, platform: str) -> dict[str, int]:
        """Release -> the CUDA major of its default PyPI wheel on ``platform`` (0: CPU-only);
        releases the data does not list are absent."""
        return {r: b.cuda for b in self.builds if b.platform == platform for r in b.releases}


@dataclass(frozen=True)
class CarrierBuild:
    """Releases of a carrier whose default PyPI wheel for one platform ships one CUDA major
    (``cuda`` 0: CPU-only), read from the wheels' METADATA and version file."""

    platform: str  # a row platform of data/platforms.toml ("linux-x86_64")
    cuda: int
    releases: tuple[str, ...]
    source: str


def _load_builds(data: Mapping[str, Any], chk: Checker) -> dict[str, list[CarrierBuild]]:
    from packaging.version import InvalidVersion, Version

    out: dict[str, list[CarrierBuild]] = {}
    seen: dict[tuple[str, str, str], int] = {}
    for i, raw in enumerate(tables(data, "carrier_build", chk)):
        where = f"carrier_build[{i}]"
        f = chk.fields(raw, where, {"name": str, "platform": str, "cuda": int,
                                    "releases": list, "source": str, "note": str})
        if len(f) < 6:
            continue
        if f["cuda"] < 0:
            chk.problem(where, f"cuda must be a CUDA major or 0 (CPU-only): {f['cuda']}")
        for r in f["releases"]:
            try:
                Version(str(r))
            except InvalidVersion:
                chk.problem(where, f"release {r!r} is no version")
            key = (f["name"], f["platform"], str(r))
            if key in seen:
                chk.problem(where, f"release {r} on {f['platform']} is listed twice")
            seen[key] = i
        out.setdefault(f["name"], []).append(CarrierBuild(
            f["platform"], f["cuda"], tuple(str(r) for r in f["releases"]),
            source_mark(chk, where, f["source"]),
        ))  # fmt: skip
    return out


def load_carriers(data: Mapping[str, Any], chk: Checker, components: tuple[Component, ...]
                  ) -> tuple[Carrier, ...]:
    known = {c.name for c in components}
    builds = _load_builds(data, chk)
    out = []
    for i, raw in enumerate(tables(data, "carrier", chk)):
        f = chk.fields(raw, f"carrier[{i}]", {"name": str, "os": list, "components": list,
                                              "source": str}, {"note": str})
        if len(f) < 4:
            continue
        for c in f["components"]:
            if c not in known:
                chk.problem(f"carrier {f['name']}", f"unknown component {c!r}")
        for o in f["os"]:
            if o not in OSES:
                chk.problem(f"carrier {f['name']}", f"os must be linux or windows: {o!r}")
        out.append(Carrier(f["name"], tuple(f["os"]), tuple(f["components"]), f["source"],
                           tuple(builds.pop(f["name"], ()))))
    for name in builds:
        chk.problem("carrier_build", f"{name!r} is no [[carrier]]")
    return tuple(out)


@dataclass(frozen=True)
class PackageLibraries:
    """Libraries a Python package that is not NVIDIA's ships and its dependents link
    (packages.toml ``[[package_library]]``): linking one means requiring the package."""

    name: str  # canonical distribution name
    linux: tuple[str, ...]  # file name patterns
    windows: tuple[str, ...]
    source: str
    # Patterns of the package's dynamic symbols whose ABI is one release's (torch's C++ API
    # c10:: / at:: / torch::): a binary importing them is bound to the release it was
    # built against.
    release_bound_symbols: tuple[str, ...] = ()
    # The C++ namespaces of its own ABI (torch: c10, at, torch, caffe2, c10d) and the
    # prefixes of its own C functions (THP, aoti_torch_): an imported symbol that mentions
    # one is the package's own (rules/torch_abi.py), not a copy of another library's it
    # happens to export (operator delete, ncclCommDestroy).
    abi_namespaces: tuple[str, ...] = ()
    abi_c_prefixes: tuple[str, ...] = ()

    def release_bound(self, symbol: str) -> bool:
        return any(fnmatch.fnmatchcase(symbol, p) for p in self.release_bound_symbols)

    @functools.cached_property
    def _abi_name(self) -> re.Pattern[str] | None:
        if not self.abi_namespaces:
            return None
        # Itanium mangling writes a namespace as <length><name>; a digit before it would
        # make it part of a longer length ("12at..." is no "at").
        names = "|".join(f"{len(n)}{re.escape(n)}" for n in self.abi_namespaces)
        return re.compile(rf"^_Z.*?(?<![0-9])(?:{names})")

    def own_symbol(self, symbol: str) -> bool:
        """Whether an imported name is of the package's own ABI: a mangled name that
        mentions one of its namespaces, or one of its C functions."""
        if symbol.startswith(self.abi_c_prefixes) if self.abi_c_prefixes else False:
            return True
        pat = self._abi_name
        return pat is not None and pat.match(symbol) is not None

    def ships(self, library: str, os: str | None) -> bool:
        names = self.linux if os == "linux" else self.windows if os == "windows" else ()
        return any(match_lib(library, p) for p in names)


def load_package_libraries(data: Mapping[str, Any], chk: Checker
                           ) -> tuple[PackageLibraries, ...]:
    out = []
    for i, raw in enumerate(tables(data, "package_library", chk)):
        where = f"package_library[{i}]"
        f = chk.fields(raw, where, {"name": str, "linux": list, "windows": list,
                                    "source": str, "note": str},
                       {"release_bound_symbols": list, "release_bound_note": str,
                        "abi_namespaces": list, "abi_c_prefixes": list, "abi_note": str})
        if not {"name", "linux", "windows", "source"} <= f.keys():
            continue
        out.append(PackageLibraries(
            f["name"], tuple(f["linux"]), tuple(f["windows"]),
            source_mark(chk, where, f["source"]), tuple(f.get("release_bound_symbols", ())),
            tuple(str(n) for n in f.get("abi_namespaces", ())),
            tuple(str(n) for n in f.get("abi_c_prefixes", ())),
        ))  # fmt: skip
    return tuple(out)


@dataclass(frozen=True)
class DriverStandIns:
    """packages.toml ``[driver]``: what stands in for a driver library (DRV001 / DRV002)."""

    packages: tuple[str, ...]  # distributions that install a link-time stub
    toolkit_extras: tuple[str, ...]  # cuda-toolkit extras that require one of them
    exports: tuple[tuple[str, frozenset[str]], ...]  # driver library -> its own entry points


@functools.cache
def load_driver_stand_ins() -> DriverStandIns:
    """The shipped packages.toml's ``[driver]`` stand-ins, read and validated once."""
    from cuwheel.errors import CatalogError
    from cuwheel.knowledge._load import read_data_file

    chk = Checker(PACKAGES)
    data = read_data_file(PACKAGES).get("driver")
    d: dict[str, Any] = data if isinstance(data, dict) else {}
    if not isinstance(data, dict):
        chk.problem("[driver]", "expected a table")
    pkgs = d.get("stand_in_packages", [])
    extras = d.get("stand_in_extras", [])
    raw = d.get("exports", {})
    for key, value in (("stand_in_packages", pkgs), ("stand_in_extras", extras)):
        if not (isinstance(value, list) and value and all(isinstance(v, str) for v in value)):
            chk.problem("[driver]", f"{key!r} must be a non-empty list of strings")
    exports: list[tuple[str, frozenset[str]]] = []
    for lib, symbols in (raw.items() if isinstance(raw, dict) else ()):
        if not (isinstance(symbols, list) and symbols and all(isinstance(x, str) for x in symbols)):
            chk.problem("[driver]", f"exports.{lib}: expected symbol names")
        else:
            exports.append((lib, frozenset(symbols)))
    if chk.problems:
        raise CatalogError(chk.problems)
    return DriverStandIns(tuple(pkgs), tuple(extras), tuple(exports))
