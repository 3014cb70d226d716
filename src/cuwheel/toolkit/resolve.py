"""Resolve a toolkit request (train, platform, components, source) into the exact
:class:`~cuwheel.toolkit.lock.Lock` to install, failing before any download when the train,
platform or a component is unknown: each component's archive from the release's NVIDIA
manifest (redistrib_<release>.json), or its wheel from the release's ``cuda-toolkit``
meta-package on the package index (docs/toolkit.md).
"""

from __future__ import annotations

import os
import platform as _platform
import sys
import urllib.parse
from collections.abc import Sequence

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from cuwheel.errors import ToolkitError, TrainSpellingError, UnknownName
from cuwheel.knowledge import platforms
from cuwheel.knowledge.toolkits import (
    SETS,
    ToolkitCatalog,
    ToolkitComponent,
    ToolkitTrain,
    load_toolkits,
)
from cuwheel.model.train import parse_train_name
from cuwheel.toolkit.cache import Cache
from cuwheel.toolkit.fetch import as_url, read_url
from cuwheel.toolkit.lock import Lock, Part
from cuwheel.toolkit.manifest import Manifest, parse_manifest
from cuwheel.toolkit.wheels import META_DIST, resolve_meta, resolve_wheels

__all__ = [
    "DEFAULT_REDIST_URL",
    "NEWEST_MAX_AGE",
    "SOURCES",
    "host_platform",
    "meta_pins",
    "normalize_train",
    "parse_train",
    "resolve",
    "select_components",
]

DEFAULT_REDIST_URL = "https://developer.download.nvidia.com/compute/cuda/redist/"
SOURCES = ("redist", "wheels")
# how long the index's answer to "the train's newest release" is reused (--refresh: 0)
NEWEST_MAX_AGE = 3600.0


def host_platform() -> str:
    """This machine's toolkit platform (data/platforms.toml, through
    :func:`cuwheel.knowledge.platforms.host_platform`); ToolkitError for a machine NVIDIA
    builds no toolkit for."""
    here = platforms.host_platform()
    if here is None or not here.toolkit:
        what = here.name if here is not None else f"{sys.platform} {_platform.machine()}"
        known = ", ".join(p.name for p in platforms.load_platforms().toolkits)
        raise ToolkitError(f"no CUDA toolkit platform for this machine ({what}); pass "
                           f"--platform ({known})")
    return here.name


def normalize_train(text: str) -> str:
    """``cu130`` / ``13.0`` / ``13.0.2`` -> ``cu130``; ToolkitError otherwise."""
    return parse_train(text)[0]


def parse_train(text: str) -> tuple[str, str | None]:
    """The train and, when one is named, the release: ``cu132`` and ``13.2`` -> ``("cu132",
    None)`` (its newest release), ``13.2.1`` -> ``("cu132", "13.2.1")``; the spelling is
    :func:`cuwheel.model.train.parse_train_name`'s, its error a ToolkitError."""
    try:
        name = parse_train_name(text)
    except TrainSpellingError as exc:
        raise ToolkitError(str(exc)) from None
    return name.name, name.release


def _train(cat: ToolkitCatalog, name: str) -> tuple[ToolkitTrain, str | None]:
    train, release = parse_train(name)
    try:
        return cat.train(train), release
    except UnknownName as exc:
        raise ToolkitError(str(exc)) from None


def select_components(
    cat: ToolkitCatalog,
    train: ToolkitTrain,
    names: Sequence[str] = (),
    for_: str | None = None,
) -> list[ToolkitComponent]:
    """The components of a request: named ones (each must be part of the train's CUDA
    major), or the members of a set (``build`` / ``runtime``) that the major has."""
    if names and for_:
        raise ToolkitError("give --components or --for, not both")
    if not names:
        set_name = for_ or "build"
        if set_name not in SETS:
            raise ToolkitError(f"--for must be one of {', '.join(SETS)}, not {set_name!r}")
        return [c for c in cat.set_members(set_name) if train.major in c.majors]
    out: list[ToolkitComponent] = []
    for name in names:
        try:
            comp = cat.component(name.strip())
        except UnknownName as exc:
            raise ToolkitError(str(exc)) from None
        if train.major not in comp.majors:
            have = [c.name for c in cat.components if train.major in c.majors]
            hint = " (in CUDA 12 it is part of nvcc)" if comp.name in ("crt", "nvvm") else ""
            raise ToolkitError(
                f"{train.train} (CUDA {train.major}) has no component {comp.name}{hint}; "
                f"it has: {', '.join(have)}"
            )
        if comp not in out:
            out.append(comp)
    return out


def _manifest(base: str, release: str, cache: Cache) -> tuple[str, Manifest]:
    url = urllib.parse.urljoin(base, f"redistrib_{release}.json")
    cached = cache.keyed("manifests", url)
    try:
        data = cached.read_bytes()
    except OSError:
        data = b""
    try:
        manifest = parse_manifest(data, url) if data else None
    except ToolkitError:
        manifest = None
    if manifest is None:
        data = read_url(url)
        manifest = parse_manifest(data, url)
        if manifest.release_label == release:
            cached.parent.mkdir(parents=True, exist_ok=True)
            tmp = cached.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_bytes(data)
            os.replace(tmp, cached)
    if manifest.release_label != release:
        raise ToolkitError(f"{url}: release_label is {manifest.release_label!r}, not {release}")
    return url, manifest


def _redist_parts(
    train: ToolkitTrain,
    release: str,
    platform: str,
    comps: Sequence[ToolkitComponent],
    base_url: str,
    cache: Cache,
) -> list[Part]:
    key = train.redist_platform(platform)
    if key is None:
        have = ", ".join(p for p, _ in train.redist_platforms)
        raise ToolkitError(f"{train.train} has no redist archives for {platform}; it has: {have}")
    base = as_url(base_url)
    if not base.endswith("/"):
        base += "/"
    url, manifest = _manifest(base, release, cache)
    parts = []
    for comp in comps:
        entry = manifest.component(comp.redist)
        if entry is None:
            raise ToolkitError(f"{url}: no component {comp.redist} in the manifest")
        archive = entry.archive(key)
        if archive is None:
            raise ToolkitError(
                f"{url}: {comp.redist} {entry.version} has no {key} archive "
                f"(it has: {', '.join(entry.platform_keys) or 'none'})"
            )
        parts.append(
            Part(
                comp.name,
                comp.redist,
                entry.version,
                urllib.parse.urljoin(url, archive.relative_path),
                archive.sha256,
                archive.size,
                archive.kind,
                archive.top_dir,
            )
        )
    return parts


def meta_pins(requires_dist: Sequence[str], platform: str) -> dict[str, str]:
    """Distribution -> specifier of every wheel a ``cuda-toolkit`` release requires (extra
    ``all``) on ``platform``."""
    # the meta-package's requirements are conditional on the platform's PEP 508 markers
    known = platforms.load_platforms().get(platform)
    env = {**(known.marker_environment() if known else {}), "extra": "all"}
    pins: dict[str, str] = {}
    for text in requires_dist:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        if req.marker is not None and not req.marker.evaluate(env):
            continue
        pins[canonicalize_name(req.name)] = str(req.specifier)
    return pins


def _wheel_parts(
    cat: ToolkitCatalog,
    train: ToolkitTrain,
    release: str | None,
    platform: str,
    comps: Sequence[ToolkitComponent],
    cache: Cache,
    python: str | None,
    refresh_after: float,
) -> tuple[str, list[Part]]:
    if platform not in train.wheel_platforms:
        raise ToolkitError(
            f"NVIDIA publishes no wheels of {train.train} for {platform} (it does for "
            f"{', '.join(train.wheel_platforms) or 'none'}); use --source redist"
        )
    tags = cat.platform(platform).pip_platforms
    spec = f"=={release}" if release else f"=={train.major}.{train.minor}.*"
    extras = [c.extra for c in comps]
    meta = resolve_meta(
        spec, tags, cache, python, max_age=None if release else refresh_after, extras=extras
    )
    pins = meta_pins(meta.requires_dist, platform)
    wanted = []
    for comp in comps:
        dist = comp.wheel(train.major)
        if dist is None or canonicalize_name(dist) not in pins:
            raise ToolkitError(
                f"{comp.name} of CUDA {meta.release} has no wheel on the package index "
                f"({META_DIST} {meta.version} requires none for {platform}); use --source redist"
            )
        wanted.append((dist, pins[canonicalize_name(dist)]))
    wheels = resolve_wheels(wanted, tags, cache, python)
    return meta.release, [
        Part(c.name, w.dist, w.version, w.url, w.sha256, None, "wheel")
        for c, w in zip(comps, wheels, strict=True)
    ]


def resolve(
    train: str,
    platform: str | None = None,
    components: Sequence[str] = (),
    for_: str | None = None,
    source: str = "redist",
    *,
    base_url: str | None = None,
    cache: Cache | None = None,
    catalog: ToolkitCatalog | None = None,
    python: str | None = None,
    refresh_after: float = NEWEST_MAX_AGE,
) -> Lock:
    """The lock a request installs; ToolkitError before any archive is downloaded when the
    train, platform, component or source is unknown.

    ``train`` is a train (``cu132``, ``13.2``: its newest release) or a release
    (``13.2.1``).  redist: the newest release the catalog lists, whose manifest gives each
    component's version; wheels: the newest ``cuda-toolkit`` release of the train on the
    index, whose requirements pin each component wheel (the index's answer is kept for
    ``refresh_after`` seconds; 0: ask again now).  The lock's ``cuda`` is the release
    resolved."""
    cat = catalog or load_toolkits()
    if source not in SOURCES:
        raise ToolkitError(f"--source must be one of {', '.join(SOURCES)}, not {source!r}")
    t, release = _train(cat, train)
    plat = platform or host_platform()
    try:
        plat_os = cat.platform(plat).os
    except UnknownName as exc:
        raise ToolkitError(str(exc)) from None
    comps = select_components(cat, t, components, for_)
    cache = cache or Cache.at()
    if source == "redist":
        base = base_url or os.environ.get("CUWHEEL_REDIST_URL") or DEFAULT_REDIST_URL
        resolved = release or t.latest
        parts = _redist_parts(t, resolved, plat, comps, base, cache)
    else:
        resolved, parts = _wheel_parts(cat, t, release, plat, comps, cache, python, refresh_after)
    return Lock(t.train, resolved, plat, plat_os, source, tuple(parts))
