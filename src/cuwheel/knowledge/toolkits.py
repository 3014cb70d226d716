"""CUDA toolkits per train (``data/toolkits.toml``): each train's NVIDIA redistributable
release and its component versions as that release's manifest gives them, the platforms
it has archives and wheels for, and the NVIDIA wheel that carries each component.

:func:`build_toolkits` validates a parsed table (every problem at once, as
:class:`CatalogError`); :func:`load_toolkits` reads the shipped file once.  The lookups
raise :class:`UnknownName` with what is known.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cuwheel._validate import Checker, did_you_mean
from cuwheel.errors import CatalogError, UnknownName
from cuwheel.knowledge._load import DataSource, read_data_file, read_meta, source_mark, tables

__all__ = [
    "DATA_FILE",
    "SETS",
    "ToolkitCatalog",
    "ToolkitComponent",
    "ToolkitPlatform",
    "ToolkitTrain",
    "build_toolkits",
    "load_toolkits",
]

DATA_FILE = "toolkits.toml"
SETS = ("build", "runtime")
_NAME = re.compile(r"[a-z][a-z0-9_]*")
_VERSION = re.compile(r"\d+(\.\d+)+")
_DIST = re.compile(r"[a-z0-9][a-z0-9-]*[a-z0-9]")


@dataclass(frozen=True)
class ToolkitComponent:
    """One toolkit component: its redist key and its wheel per CUDA major."""

    name: str  # cuwheel's name: "nvcc"
    redist: str  # manifest key: "cuda_nvcc"
    wheels: tuple[tuple[int, str], ...]  # (13, "nvidia-cuda-nvcc")
    sets: tuple[str, ...]
    note: str | None = None

    def wheel(self, major: int) -> str | None:
        return dict(self.wheels).get(major)


@dataclass(frozen=True)
class ToolkitPlatform:
    name: str  # "linux-x86_64", "win-amd64"
    os: str  # "linux" / "windows"
    pip_platforms: tuple[str, ...]
    note: str | None = None


@dataclass(frozen=True)
class ToolkitTrain:
    """A train's toolkit: redistrib release, component versions, platforms."""

    train: str  # "cu130"
    redist: str  # "13.0.2"
    release_date: str
    versions: tuple[tuple[str, str], ...]  # redist key -> version
    redist_platforms: tuple[tuple[str, str], ...]  # platform -> manifest platform key
    wheel_platforms: tuple[str, ...]
    no_wheel: tuple[str, ...]
    source: str

    @property
    def major(self) -> int:
        return int(self.redist.split(".")[0])

    def version(self, redist_key: str) -> str | None:
        return dict(self.versions).get(redist_key)

    def redist_platform(self, platform: str) -> str | None:
        return dict(self.redist_platforms).get(platform)


@dataclass(frozen=True)
class ToolkitCatalog:
    components: tuple[ToolkitComponent, ...]
    platforms: tuple[ToolkitPlatform, ...]
    trains: tuple[ToolkitTrain, ...]
    meta: DataSource | None

    def component(self, name: str) -> ToolkitComponent:
        for c in self.components:
            if c.name == name:
                return c
        names = [c.name for c in self.components]
        raise UnknownName(
            f"unknown toolkit component {name!r}{did_you_mean(name, names)}; "
            f"known: {', '.join(names)}"
        )

    def platform(self, name: str) -> ToolkitPlatform:
        for p in self.platforms:
            if p.name == name:
                return p
        names = [p.name for p in self.platforms]
        raise UnknownName(
            f"unknown toolkit platform {name!r}{did_you_mean(name, names)}; "
            f"known: {', '.join(names)}"
        )

    def train(self, name: str) -> ToolkitTrain:
        for t in self.trains:
            if t.train == name:
                return t
        raise UnknownName(
            f"no CUDA toolkit release is known for train {name}; "
            f"trains with a toolkit: {', '.join(t.train for t in self.trains)}"
        )

    def set_members(self, name: str) -> tuple[ToolkitComponent, ...]:
        return tuple(c for c in self.components if name in c.sets)


def build_toolkits(data: Mapping[str, Any], file: str = DATA_FILE) -> ToolkitCatalog:
    """Validate a parsed ``toolkits.toml``; raises CatalogError listing every problem."""
    chk = Checker(file)
    meta = read_meta(data, chk)
    components: list[ToolkitComponent] = []
    for i, raw in enumerate(tables(data, "component", chk)):
        f = chk.fields(
            raw,
            f"component[{i}]",
            {"name": str, "redist": str, "wheels": dict},
            {"sets": list, "note": str},
        )
        if not {"name", "redist", "wheels"} <= f.keys():
            continue
        where = f"component {f['name']}"
        if not _NAME.fullmatch(f["name"]) or not _NAME.fullmatch(f["redist"]):
            chk.problem(where, "names must be lower-case identifiers")
        wheels: list[tuple[int, str]] = []
        for major, dist in f["wheels"].items():
            if not (isinstance(major, str) and major.isdigit()):
                chk.problem(where, f"wheels: key {major!r} is no CUDA major")
            elif not (isinstance(dist, str) and _DIST.fullmatch(dist)):
                chk.problem(where, f"wheels: {dist!r} is no distribution name")
            else:
                wheels.append((int(major), dist))
        sets = tuple(f.get("sets", []))
        for s in sets:
            if s not in SETS:
                chk.problem(where, f"set {s!r} is not one of {', '.join(SETS)}")
        components.append(
            ToolkitComponent(f["name"], f["redist"], tuple(wheels), sets, f.get("note"))
        )
    for key in ("name", "redist"):
        values = [getattr(c, key) for c in components]
        if len(set(values)) != len(values):
            chk.problem("component", f"duplicate component {key}s")

    platforms: list[ToolkitPlatform] = []
    for i, raw in enumerate(tables(data, "platform", chk)):
        f = chk.fields(
            raw, f"platform[{i}]", {"name": str, "os": str, "pip_platforms": list}, {"note": str}
        )
        if len(f.keys() & {"name", "os", "pip_platforms"}) < 3:
            continue
        if f["os"] not in ("linux", "windows"):
            chk.problem(f"platform {f['name']}", f"os must be linux or windows: {f['os']!r}")
        if not f["pip_platforms"]:
            chk.problem(f"platform {f['name']}", "pip_platforms is empty")
        platforms.append(
            ToolkitPlatform(f["name"], f["os"], tuple(f["pip_platforms"]), f.get("note"))
        )
    platform_names = {p.name for p in platforms}
    if len(platform_names) != len(platforms):
        chk.problem("platform", "duplicate platform names")

    redist_keys = {c.redist: c for c in components}
    trains: list[ToolkitTrain] = []
    for i, raw in enumerate(tables(data, "train", chk)):
        f = chk.fields(
            raw,
            f"train[{i}]",
            {
                "train": str,
                "redist": str,
                "release_date": str,
                "versions": dict,
                "redist_platforms": dict,
                "wheel_platforms": list,
            },
            {"no_wheel": list, "source": str, "note": str},
        )
        if len(f.keys() & {"train", "redist", "versions", "redist_platforms"}) < 4:
            continue
        where = f"train {f['train']}"
        m = re.fullmatch(r"cu(\d+)(\d)", f["train"])
        if m is None:
            chk.problem(where, "train must be spelled cuXYZ")
        elif not re.fullmatch(rf"{m[1]}\.{m[2]}\.\d+", f["redist"]):
            chk.problem(where, f"redist {f['redist']!r} is no release of this train")
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", f.get("release_date", "")):
            chk.problem(where, "release_date must be YYYY-MM-DD")
        versions: list[tuple[str, str]] = []
        for key, version in f["versions"].items():
            if key not in redist_keys:
                chk.problem(where, f"versions: {key!r} is no component's redist key")
            elif not (isinstance(version, str) and _VERSION.fullmatch(version)):
                chk.problem(where, f"versions: {key}: not a version: {version!r}")
            else:
                versions.append((key, version))
        if not versions:
            chk.problem(where, "versions is empty")
        rplats: list[tuple[str, str]] = []
        for plat, key in f["redist_platforms"].items():
            if plat not in platform_names:
                chk.problem(where, f"redist_platforms: {plat!r} is no platform")
            elif not isinstance(key, str):
                chk.problem(where, f"redist_platforms: {plat}: expected a string")
            else:
                rplats.append((plat, key))
        wplats = tuple(f.get("wheel_platforms", []))
        for plat in wplats:
            if plat not in platform_names:
                chk.problem(where, f"wheel_platforms: {plat!r} is no platform")
        no_wheel = tuple(f.get("no_wheel", []))
        for key in no_wheel:
            if key not in dict(versions):
                chk.problem(where, f"no_wheel: {key!r} has no version in this train")
        trains.append(
            ToolkitTrain(
                f["train"],
                f["redist"],
                f.get("release_date", ""),
                tuple(versions),
                tuple(rplats),
                wplats,
                no_wheel,
                source_mark(chk, where, f.get("source")),
            )
        )
    names = [t.train for t in trains]
    if len(set(names)) != len(names):
        chk.problem("train", "duplicate trains")
    if chk.problems:
        raise CatalogError(chk.problems)
    return ToolkitCatalog(tuple(components), tuple(platforms), tuple(trains), meta)


@functools.cache
def load_toolkits() -> ToolkitCatalog:
    """The shipped ``toolkits.toml``, read and validated once."""
    return build_toolkits(read_data_file(DATA_FILE))
