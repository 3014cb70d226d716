"""CUDA releases (``data/cuda.toml``): what each release's nvcc builds and emits, its
minimum drivers, the minor-version-compatibility floors and renamed architectures (the
platforms are data/platforms.toml's, :mod:`cuwheel.knowledge.platforms`)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cuwheel._validate import Checker
from cuwheel.knowledge._load import (
    DataSource,
    driver_version,
    each_table,
    read_meta,
    sass_name,
    source_mark,
)
from cuwheel.knowledge.platforms import OSES
from cuwheel.model.arch import Arch, ArchSpec, ArchSpellingError, parse_arch_specs

__all__ = [
    "ForwardCompat",
    "MinorCompat",
    "Release",
    "Rename",
    "load_codec_gates",
    "load_cuda",
    "load_forward_compat",
    "parse_version",
]


def parse_version(text: str) -> tuple[int, int]:
    """``"13.0"`` / ``"13.0.88"`` -> ``(13, 0)``; raises ValueError.  ASCII digits only,
    at most 6 per number and 4 numbers (a Unicode digit or a 5,000-digit number is no
    version, not a crash in ``int``)."""
    m = re.fullmatch(r"([0-9]{1,6})\.([0-9]{1,6})(?:\.[0-9]{1,6}){0,2}", text.strip())
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

    def min_driver(self, os: str) -> str | None:
        """The minimum driver of this release on ``os`` ("windows", else Linux), as
        tabulated; None where the release notes give none."""
        return self.driver_windows if os == "windows" else self.driver_linux

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

    def __str__(self) -> str:
        return f"CUDA {self.name}"


@dataclass(frozen=True)
class MinorCompat:
    """Minor-version compatibility: drivers at or above the floor run any runtime of ``major``."""

    major: int
    driver_linux: str | None
    driver_windows: str | None
    note: str | None = None

    def floor(self, os: str) -> str | None:
        """The floor on ``os`` ("windows", else Linux); None where none is tabulated."""
        return self.driver_windows if os == "windows" else self.driver_linux


@dataclass(frozen=True)
class ForwardCompat:
    """NVIDIA's forward-compatibility package: a newer-major runtime on an older driver, on
    the OSes and GPU segments listed only (docs/cuda.md#forward-compatibility)."""

    os: tuple[str, ...]
    segments: tuple[str, ...]  # gpus.toml product segments
    applies_to: str  # NVIDIA's own wording of where it applies
    package: str
    note: str | None = None


@dataclass(frozen=True)
class Rename:
    old: Arch
    new: Arch
    last_release_with_old: str
    first_release_with_new: str
    note: str | None = None


def load_cuda(
    data: Mapping[str, Any],
    chk: Checker,
) -> tuple[
    tuple[Release, ...],
    tuple[MinorCompat, ...],
    tuple[Rename, ...],
    tuple[str, ...],
    DataSource | None,
]:
    meta = read_meta(data, chk)
    unreleased = tuple(data.get("meta", {}).get("unreleased", []))
    releases: list[Release] = []
    for f in each_table(
        data, "release", chk,
        {"version": str, "ptx_isa": str, "sass": list, "source": str},
        {"default_arch": str, "driver_linux": str, "driver_windows": str, "note": str,
         "families": dict, "groups": dict},
    ):  # fmt: skip
        if not {"version", "ptx_isa", "sass"} <= f.keys():
            continue
        where = f"release {f['version']}"
        version = chk.convert(where, parse_version, f["version"])
        isa = chk.convert(where, parse_version, f["ptx_isa"])
        sass: list[Arch] = []
        for name in f["sass"]:
            a = chk.convert(where, sass_name, name)
            if a is not None:
                sass.append(a)
        if sass != sorted(set(sass)):
            chk.problem(where, "'sass' must be sorted without duplicates")
        default = None
        if "default_arch" in f:
            default = chk.convert(where, sass_name, f["default_arch"])
            if default is not None and default not in sass:
                chk.problem(where, f"default_arch {default} is not in 'sass'")
        families: list[tuple[Arch, tuple[Arch, ...]]] = []
        for key, members in f.get("families", {}).items():
            fa = chk.convert(where, sass_name, key)
            if fa is None:
                continue
            if fa.variant != "f" or fa not in sass:
                chk.problem(where, f"families: {key} is not an f target of this release")
            ms = [
                m
                for m in (
                    chk.convert(where, sass_name, n)
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
                driver_version(chk, where, f.get("driver_linux")),
                driver_version(chk, where, f.get("driver_windows")),
                tuple(families),
                tuple(groups),
                source_mark(chk, where, f.get("source")),
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
    for f in each_table(
        data, "minor_compat", chk,
        {"major": int},
        {"driver_linux": str, "driver_windows": str, "note": str},
    ):
        if "major" not in f:
            continue
        where = f"minor_compat {f['major']}"
        if not any(r.major == f["major"] for r in releases):
            chk.problem(where, "no release of this major")
        compat.append(
            MinorCompat(
                f["major"],
                driver_version(chk, where, f.get("driver_linux")),
                driver_version(chk, where, f.get("driver_windows")),
                f.get("note"),
            )
        )

    renames: list[Rename] = []
    known = {r.name for r in releases}
    for f in each_table(
        data, "rename", chk,
        {
            "old": str,
            "new": str,
            "last_release_with_old": str,
            "first_release_with_new": str,
        },
        {"note": str},
    ):
        if len(f) < 4:
            continue
        old = chk.convert(f"rename {f['old']}", sass_name, f["old"])
        new = chk.convert(f"rename {f['old']}", sass_name, f["new"])
        for key in ("last_release_with_old", "first_release_with_new"):
            if f[key] not in known:
                chk.problem(f"rename {f['old']}", f"{key} {f[key]!r} is not a release")
        if old is not None and new is not None:
            renames.append(
                Rename(
                    old, new, f["last_release_with_old"], f["first_release_with_new"], f.get("note")
                )
            )

    return tuple(releases), tuple(compat), tuple(renames), unreleased, meta


def load_forward_compat(
    data: Mapping[str, Any], chk: Checker, segments: frozenset[str]
) -> ForwardCompat | None:
    """cuda.toml ``[forward_compat]``; ``segments``: the product segments gpus.toml knows."""
    if "forward_compat" not in data:
        return None
    f = chk.fields(
        data.get("forward_compat"),
        "[forward_compat]",
        {"os": list, "segments": list, "applies_to": str, "package": str, "source": str},
        {"note": str},
    )
    if len(f) < 5:
        return None
    for o in f["os"]:
        if o not in OSES:
            chk.problem("[forward_compat]", f"os must be linux or windows: {o!r}")
    for seg in f["segments"]:
        if seg not in segments:
            chk.problem("[forward_compat]", f"unknown segment {seg!r}")
    source_mark(chk, "[forward_compat]", f["source"])
    return ForwardCompat(
        tuple(f["os"]), tuple(f["segments"]), f["applies_to"], f["package"], f.get("note")
    )


CODECS = ("lz4", "zstd")


def load_codec_gates(
    data: Mapping[str, Any], chk: Checker, releases: tuple[Release, ...]
) -> tuple[tuple[str, tuple[int, int]], ...]:
    """cuda.toml ``[fatbin_codecs]``: codec -> the first release whose drivers decode it."""
    if "fatbin_codecs" not in data:
        return ()
    f = chk.fields(
        data.get("fatbin_codecs"),
        "[fatbin_codecs]",
        {"source": str},
        {"note": str, **{c: str for c in CODECS}},
    )
    if "source" in f:
        source_mark(chk, "[fatbin_codecs]", f["source"])
    known = {r.version for r in releases}
    out: list[tuple[str, tuple[int, int]]] = []
    for codec in CODECS:
        if codec not in f:
            continue
        version = chk.convert("[fatbin_codecs]", parse_version, f[codec])
        if version is not None and version not in known:
            chk.problem("[fatbin_codecs]", f"{codec}: {f[codec]} is not a release")
        elif version is not None:
            out.append((codec, version))
    return tuple(out)
