"""CUDA toolkits per train (``data/toolkits.toml``): each train's NVIDIA releases and each
component's redist key and wheel; the platforms its major has archives and wheels for are
data/platforms.toml's (:mod:`cuwheel.knowledge.platforms`).  Component versions are not
here: they are read from the release's own manifest or its ``cuda-toolkit`` meta-package
(cuwheel.toolkit.assemble).

:func:`build_toolkits` validates a parsed table (every problem at once, as
:class:`CatalogError`); :func:`load_toolkits` reads the shipped file once.  The lookups
raise :class:`UnknownName` with what is known.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from cuwheel._datafiles import TOOLKITS
from cuwheel._validate import Checker, did_you_mean
from cuwheel.errors import CatalogError, TrainSpellingError, UnknownName
from cuwheel.knowledge._load import DataSource, read_data_file, read_meta, source_mark, tables
from cuwheel.knowledge.platforms import Platform, load_platforms
from cuwheel.model.train import parse_train_name

__all__ = [
    "DATA_FILE",
    "SETS",
    "ToolkitCatalog",
    "ToolkitComponent",
    "ToolkitPlatform",
    "ToolkitTrain",
    "build_toolkits",
    "load_toolkits",
    "release_key",
]

DATA_FILE = TOOLKITS
SETS = ("build", "runtime")
_NAME = re.compile(r"[a-z][a-z0-9_]*")
_DIST = re.compile(r"[a-z0-9][a-z0-9-]*[a-z0-9]")


@dataclass(frozen=True)
class ToolkitComponent:
    """One toolkit component: its redist key and its wheel per CUDA major."""

    name: str  # cuwheel's name: "nvcc"
    redist: str  # manifest key: "cuda_nvcc"
    majors: tuple[int, ...]  # CUDA majors that ship it as a component of its own
    wheels: tuple[tuple[int, str], ...]  # (13, "nvidia-cuda-nvcc")
    sets: tuple[str, ...]
    note: str | None = None
    meta_extra: str | None = None  # cuda-toolkit's extra for it, when not its name

    @property
    def extra(self) -> str:
        """The ``cuda-toolkit`` extra that requires its wheel."""
        return self.meta_extra or self.name

    def wheel(self, major: int) -> str | None:
        return dict(self.wheels).get(major)


# A platform of `cuwheel toolkit`: a data/platforms.toml record with manifest keys.
ToolkitPlatform = Platform


def release_key(release: str) -> tuple[int, ...]:
    """``13.2.10`` sorts after ``13.2.9``."""
    return tuple(int(p) for p in release.split("."))


@dataclass(frozen=True)
class ToolkitTrain:
    """A train: its releases (oldest first) and its major's platforms."""

    train: str  # "cu130"
    releases: tuple[str, ...]  # "13.0.0", ..., "13.0.3"
    redist_platforms: tuple[tuple[str, str], ...]  # platform -> manifest platform key
    wheel_platforms: tuple[str, ...]
    source: str

    @property
    def major(self) -> int:
        return int(self.releases[0].split(".")[0])

    @property
    def minor(self) -> int:
        return int(self.releases[0].split(".")[1])

    @property
    def latest(self) -> str:
        """The newest release the catalog knows."""
        return max(self.releases, key=release_key)

    def redist_platform(self, platform: str) -> str | None:
        return dict(self.redist_platforms).get(platform)


_Named = TypeVar("_Named", ToolkitComponent, ToolkitPlatform)


def _named(items: tuple[_Named, ...], name: str, what: str) -> _Named:
    """The item called ``name``; UnknownName with the nearest name and every known one."""
    for item in items:
        if item.name == name:
            return item
    names = [item.name for item in items]
    raise UnknownName(
        f"unknown {what} {name!r}{did_you_mean(name, names)}; known: {', '.join(names)}"
    )


@dataclass(frozen=True)
class ToolkitCatalog:
    components: tuple[ToolkitComponent, ...]
    platforms: tuple[ToolkitPlatform, ...]
    trains: tuple[ToolkitTrain, ...]
    meta: DataSource | None

    def component(self, name: str) -> ToolkitComponent:
        return _named(self.components, name, "toolkit component")

    def platform(self, name: str) -> ToolkitPlatform:
        return _named(self.platforms, name, "toolkit platform")

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


def build_toolkits(
    data: Mapping[str, Any], file: str = DATA_FILE, platforms: Sequence[Platform] | None = None
) -> ToolkitCatalog:
    """Validate a parsed ``toolkits.toml``; raises CatalogError listing every problem.
    ``platforms``: the toolkit platforms (default: data/platforms.toml's)."""
    chk = Checker(file)
    meta = read_meta(data, chk)
    components: list[ToolkitComponent] = []
    for i, raw in enumerate(tables(data, "component", chk)):
        f = chk.fields(
            raw,
            f"component[{i}]",
            {"name": str, "redist": str, "majors": list, "wheels": dict},
            {"sets": list, "note": str, "extra": str},
        )
        if not {"name", "redist", "majors", "wheels"} <= f.keys():
            continue
        where = f"component {f['name']}"
        if not _NAME.fullmatch(f["name"]) or not _NAME.fullmatch(f["redist"]):
            chk.problem(where, "names must be lower-case identifiers")
        majors = tuple(int(m) for m in f["majors"] if m.isdigit())
        if len(majors) != len(f["majors"]) or not majors:
            chk.problem(where, f"majors must be CUDA major numbers: {f['majors']!r}")
        wheels: list[tuple[int, str]] = []
        for major, dist in f["wheels"].items():
            if not (isinstance(major, str) and major.isdigit()):
                chk.problem(where, f"wheels: key {major!r} is no CUDA major")
            elif int(major) not in majors:
                chk.problem(where, f"wheels: CUDA {major} is not one of its majors")
            elif not (isinstance(dist, str) and _DIST.fullmatch(dist)):
                chk.problem(where, f"wheels: {dist!r} is no distribution name")
            else:
                wheels.append((int(major), dist))
        sets = tuple(f.get("sets", []))
        for s in sets:
            if s not in SETS:
                chk.problem(where, f"set {s!r} is not one of {', '.join(SETS)}")
        components.append(
            ToolkitComponent(
                f["name"], f["redist"], majors, tuple(wheels), sets, f.get("note"), f.get("extra")
            )
        )
    for key in ("name", "redist"):
        values = [getattr(c, key) for c in components]
        if len(set(values)) != len(values):
            chk.problem("component", f"duplicate component {key}s")

    if platforms is None:
        platforms = load_platforms().toolkits
    platforms = tuple(p for p in platforms if p.toolkit)

    def major_platforms(major: int) -> tuple[tuple[tuple[str, str], ...], tuple[str, ...]]:
        redist = tuple((p.name, key) for p in platforms if (key := p.redist_key(major)))
        return redist, tuple(p.name for p in platforms if major in p.nvidia_wheels)

    trains: list[ToolkitTrain] = []
    for i, raw in enumerate(tables(data, "train", chk)):
        f = chk.fields(
            raw, f"train[{i}]", {"train": str, "releases": list}, {"source": str, "note": str}
        )
        if len(f.keys() & {"train", "releases"}) < 2:
            continue
        where = f"train {f['train']}"
        try:
            spelled = parse_train_name(f["train"])
        except TrainSpellingError:
            spelled = None
        releases = tuple(f["releases"])
        if spelled is None or spelled.name != f["train"]:
            chk.problem(where, "train must be spelled cuXYZ")
            continue
        if not releases:
            chk.problem(where, "releases is empty")
            continue
        for r in releases:
            if not (isinstance(r, str) and re.fullmatch(rf"{spelled.dotted}\.[0-9]+", r)):
                chk.problem(where, f"releases: {r!r} is no release of this train")
                releases = ()
        if not releases:
            continue
        if list(releases) != sorted(set(releases), key=release_key):
            chk.problem(where, "releases must be listed once each, oldest first")
        plats = major_platforms(spelled.major)
        if not plats[0]:
            chk.problem(where, f"no platform of platforms.toml has CUDA {spelled.major} archives")
            continue
        trains.append(
            ToolkitTrain(
                f["train"], releases, plats[0], plats[1], source_mark(chk, where, f.get("source"))
            )
        )
    names = [t.train for t in trains]
    if len(set(names)) != len(names):
        chk.problem("train", "duplicate trains")
    if chk.problems:
        raise CatalogError(chk.problems)
    return ToolkitCatalog(tuple(components), platforms, tuple(trains), meta)


@functools.cache
def load_toolkits() -> ToolkitCatalog:
    """The shipped ``toolkits.toml``, read and validated once."""
    return build_toolkits(read_data_file(DATA_FILE))
