"""Assemble a CUDA toolkit for a train into a prefix: resolve, download, verify, extract,
lay out, lock, and move into place in one rename.

:func:`resolve` turns a request (train, platform, components, source) into the exact
:class:`~cuwheel.toolkit.lock.Lock` to install, failing before any download when the train,
platform or a component is unknown; :func:`install` makes a prefix hold exactly a lock.
The tree is built in a temporary directory beside the prefix and renamed over it only when
complete: a failed or interrupted run leaves the prefix as it was.
"""

from __future__ import annotations

import json
import os
import platform as _platform
import re
import shutil
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from cuwheel.errors import ToolkitError, UnknownName
from cuwheel.knowledge.toolkits import (
    SETS,
    ToolkitCatalog,
    ToolkitComponent,
    ToolkitTrain,
    load_toolkits,
)
from cuwheel.toolkit.cache import Cache
from cuwheel.toolkit.extract import Tree, extract_redist, extract_wheel
from cuwheel.toolkit.fetch import Download, Progress, as_url, fetch_all, read_url
from cuwheel.toolkit.lock import LOCK_NAME, Lock, Part, not_owned, read_lock, write_owner
from cuwheel.toolkit.manifest import Manifest, parse_manifest
from cuwheel.toolkit.wheels import resolve_wheels

__all__ = [
    "DEFAULT_REDIST_URL",
    "Installed",
    "host_platform",
    "install",
    "normalize_train",
    "resolve",
    "select_components",
]

DEFAULT_REDIST_URL = "https://developer.download.nvidia.com/compute/cuda/redist/"
SOURCES = ("redist", "wheels")


@dataclass(frozen=True)
class Installed:
    prefix: Path
    lock: Lock
    changed: bool  # False: the prefix already held exactly this lock
    downloaded: int  # bytes downloaded by this run
    from_cache: int  # archives that were already in the cache
    seconds: float


def host_platform() -> str:
    machine = _platform.machine().lower()
    if sys.platform == "win32":
        return "win-amd64"
    if machine in ("aarch64", "arm64"):
        return "linux-sbsa"
    return "linux-x86_64"


def normalize_train(text: str) -> str:
    """``cu130`` / ``13.0`` / ``13.0.2`` -> ``cu130``; ToolkitError otherwise."""
    t = text.strip().lower()
    if re.fullmatch(r"cu\d{3,}", t):
        return t
    m = re.fullmatch(r"(\d+)\.(\d)(?:\.\d+)*", t)
    if m is not None:
        return f"cu{m[1]}{m[2]}"
    raise ToolkitError(f"not a CUDA train: {text!r}; expected cuXYZ (cu130) or X.Y (13.0)")


def _train(cat: ToolkitCatalog, name: str) -> ToolkitTrain:
    try:
        return cat.train(normalize_train(name))
    except UnknownName as exc:
        raise ToolkitError(str(exc)) from None


def select_components(
    cat: ToolkitCatalog,
    train: ToolkitTrain,
    names: Sequence[str] = (),
    for_: str | None = None,
) -> list[ToolkitComponent]:
    """The components of a request: named ones (each must be part of the train), or the
    members of a set (``build`` / ``runtime``) that the train has."""
    if names and for_:
        raise ToolkitError("give --components or --for, not both")
    if not names:
        set_name = for_ or "build"
        if set_name not in SETS:
            raise ToolkitError(f"--for must be one of {', '.join(SETS)}, not {set_name!r}")
        return [c for c in cat.set_members(set_name) if train.version(c.redist)]
    out: list[ToolkitComponent] = []
    for name in names:
        try:
            comp = cat.component(name.strip())
        except UnknownName as exc:
            raise ToolkitError(str(exc)) from None
        if not train.version(comp.redist):
            have = [c.name for c in cat.components if train.version(c.redist)]
            hint = " (in CUDA 12 it is part of nvcc)" if comp.name in ("crt", "nvvm") else ""
            raise ToolkitError(
                f"{train.train} (CUDA {train.redist}) has no component {comp.name}{hint}; "
                f"it has: {', '.join(have)}"
            )
        if comp not in out:
            out.append(comp)
    return out


def _manifest(base: str, train: ToolkitTrain, cache: Cache) -> tuple[str, Manifest]:
    url = urllib.parse.urljoin(base, f"redistrib_{train.redist}.json")
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
        if manifest.release_label == train.redist:
            cached.parent.mkdir(parents=True, exist_ok=True)
            tmp = cached.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_bytes(data)
            os.replace(tmp, cached)
    if manifest.release_label != train.redist:
        raise ToolkitError(
            f"{url}: release_label is {manifest.release_label!r}, not {train.redist}"
        )
    return url, manifest


def _redist_parts(
    train: ToolkitTrain,
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
    url, manifest = _manifest(base, train, cache)
    parts = []
    for comp in comps:
        want = train.version(comp.redist)
        entry = manifest.component(comp.redist)
        if entry is None:
            raise ToolkitError(f"{url}: no component {comp.redist} in the manifest")
        if entry.version != want:
            raise ToolkitError(
                f"{url}: {comp.redist} is {entry.version}, but CUDA {train.redist} has {want} "
                "(a manifest of another release?)"
            )
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


def _wheel_parts(
    cat: ToolkitCatalog,
    train: ToolkitTrain,
    platform: str,
    comps: Sequence[ToolkitComponent],
    cache: Cache,
    python: str | None,
) -> list[Part]:
    if platform not in train.wheel_platforms:
        raise ToolkitError(
            f"NVIDIA publishes no wheels of {train.train} for {platform} (it does for "
            f"{', '.join(train.wheel_platforms) or 'none'}); use --source redist"
        )
    pins = []
    for comp in comps:
        dist = comp.wheel(train.major)
        if dist is None or comp.redist in train.no_wheel:
            raise ToolkitError(
                f"{comp.name} {train.version(comp.redist)} of {train.train} has no wheel on the "
                "package index; use --source redist"
            )
        version = train.version(comp.redist)
        assert version is not None
        pins.append((dist, version))
    wheels = resolve_wheels(pins, cat.platform(platform).pip_platforms, cache, python)
    return [
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
) -> Lock:
    """The lock a request installs; ToolkitError before any archive is downloaded when the
    train, platform, component or source is unknown (the redist manifest, or pip's
    resolution for wheels, is read)."""
    cat = catalog or load_toolkits()
    if source not in SOURCES:
        raise ToolkitError(f"--source must be one of {', '.join(SOURCES)}, not {source!r}")
    t = _train(cat, train)
    plat = platform or host_platform()
    try:
        plat_os = cat.platform(plat).os
    except UnknownName as exc:
        raise ToolkitError(str(exc)) from None
    comps = select_components(cat, t, components, for_)
    cache = cache or Cache.at()
    if source == "redist":
        base = base_url or os.environ.get("CUWHEEL_REDIST_URL") or DEFAULT_REDIST_URL
        parts = _redist_parts(t, plat, comps, base, cache)
    else:
        parts = _wheel_parts(cat, t, plat, comps, cache, python)
    return Lock(t.train, t.redist, plat, plat_os, source, tuple(parts))


# ---------------------------------------------------------------------------- install


def _prefix_lock(prefix: Path) -> Lock | None:
    path = prefix / LOCK_NAME
    if not path.is_file():
        return None
    try:
        return read_lock(path)
    except ToolkitError:
        return None


def _check_prefix(prefix: Path) -> None:
    if prefix.is_symlink() or (prefix.exists() and not prefix.is_dir()):
        raise ToolkitError(f"{prefix}: exists and is not a directory")
    # trust: a prefix is replaced only when provably ours (toolkit/lock.py: not_owned)
    why = not_owned(prefix) if prefix.is_dir() and any(prefix.iterdir()) else None
    if why is not None:
        raise ToolkitError(
            f"{prefix}: not empty and not a cuwheel toolkit ({why}); nothing is "
            "replaced: choose a new or empty directory"
        )


def _layout_linux(tree: Path) -> None:
    """What a normal CUDA tree has and the archives / wheels leave out: ``lib64`` (nvcc's
    profile and CMake look there), the unversioned ``libX.so`` a linker's ``-lX`` needs,
    and ``nvvm/lib64``."""
    lib = tree / "lib"
    if lib.is_dir() and not (tree / "lib64").exists():
        os.symlink("lib", tree / "lib64")
    if lib.is_dir():
        versioned: dict[str, list[str]] = {}
        for entry in os.listdir(lib):
            m = re.fullmatch(r"(lib.+\.so)(\.\d+)+", entry)
            if m is not None:
                versioned.setdefault(m[1], []).append(entry)
        for base, names in versioned.items():
            if not (lib / base).exists() and not (lib / base).is_symlink():
                os.symlink(min(names, key=len), lib / base)
    nvvm_libs = [n for n in os.listdir(lib) if n.startswith("libnvvm.so")] if lib.is_dir() else []
    nvvm = tree / "nvvm"
    if nvvm.is_dir() and nvvm_libs and not (nvvm / "lib64").exists():
        (nvvm / "lib64").mkdir()
        for n in nvvm_libs:
            os.symlink(f"../../lib/{n}", nvvm / "lib64" / n)


def _version_json(tree: Path, lock: Lock) -> None:
    doc: dict[str, dict[str, str]] = {"cuda": {"name": "CUDA SDK", "version": lock.cuda}}
    for p in lock.parts:
        doc[p.package if lock.source == "redist" else p.component] = {
            "name": p.component,
            "version": p.version,
        }
    (tree / "version.json").write_text(json.dumps(doc, indent=2) + "\n")


def _extract(part: Part, blob: Path, tree: Tree) -> None:
    where = f"{part.url.rsplit('/', 1)[-1]} ({part.label})"
    if part.kind == "wheel":
        extract_wheel(blob, tree, where, part.label)
    else:
        assert part.top is not None
        extract_redist(blob, part.kind, part.top, tree, where, part.label)


def install(
    prefix: Path | str,
    lock: Lock,
    *,
    cache: Cache | None = None,
    jobs: int = 4,
    progress: Progress | None = None,
    on_phase: Callable[[str], None] | None = None,
) -> Installed:
    """Make ``prefix`` hold exactly ``lock``: download what the cache lacks, check every
    file's size and sha256, extract safely, lay out the tree and rename it into place."""
    start = time.monotonic()
    prefix = Path(os.path.abspath(prefix))
    cache = cache or Cache.at()
    current = _prefix_lock(prefix)
    if current is not None and current.same_content(lock) and not_owned(prefix) is None:
        return Installed(prefix, current, False, 0, len(lock.parts), time.monotonic() - start)
    _check_prefix(prefix)
    items = [Download(p.url, p.sha256, p.size, p.label) for p in lock.parts]
    present = sum(1 for p in lock.parts if cache.blob(p.sha256).is_file())
    blobs, downloaded = fetch_all(items, cache, jobs=jobs, progress=progress)
    if on_phase is not None:
        on_phase("extracting")
    prefix.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{prefix.name}.cuwheel-", dir=prefix.parent))
    try:
        tree = staging / "tree"
        tree.mkdir()
        shared = Tree(tree)
        # the biggest archives first, so that the last one to finish is a small one
        order = sorted(lock.parts, key=lambda p: -blobs[p.sha256].stat().st_size)
        with ThreadPoolExecutor(max_workers=max(1, min(jobs, len(order)))) as pool:
            futures = [pool.submit(_extract, p, blobs[p.sha256], shared) for p in order]
            try:
                for f in futures:
                    f.result()
            except BaseException:
                shared.stop.set()  # trust: every writer ends at its next member
                raise
        if lock.os == "linux":
            _layout_linux(tree)
        _version_json(tree, lock)
        (tree / LOCK_NAME).write_text(lock.text(), encoding="utf-8")
        write_owner(tree)  # trust: last, over the finished tree
        old = staging / "old"
        moved = prefix.exists()
        if moved:
            os.rename(prefix, old)
        try:
            os.rename(tree, prefix)
        except BaseException:
            if moved:
                os.rename(old, prefix)
            raise
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    shutil.rmtree(staging, ignore_errors=True)
    return Installed(prefix, lock, True, downloaded, present, time.monotonic() - start)
