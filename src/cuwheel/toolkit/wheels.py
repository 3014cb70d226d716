"""Resolving NVIDIA's component wheels on the package index, without installing anything.

A release's component versions come from NVIDIA's ``cuda-toolkit`` meta-package of that
release (its ``Requires-Dist`` pins every component wheel: ``nvidia-cuda-nvcc==13.2.86.*``);
``cuda-toolkit==13.2.*`` is the train's newest release on the index.  Then pip resolves
the pinned requirements for the target platform (``pip install --dry-run --report``, with
``--platform`` tags, so a Windows or Arm toolkit resolves on any host) and reports each
wheel's URL and the index's sha256; cuwheel downloads them itself (parallel,
resumable, into the shared cache) and unpacks them into the CUDA tree, checking RECORD.
pip's own configuration (index URL, proxy, certificates) applies to the resolution.
Results are cached: a pinned version on an index does not change (a train's newest
release is asked again each run, the cached answer serving when the index cannot be reached).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

from cuwheel._json import load_json
from cuwheel._text import normalized_name as _normalize
from cuwheel.errors import ToolkitError
from cuwheel.toolkit.cache import Cache

__all__ = ["META_DIST", "MetaRelease", "ResolvedWheel", "resolve_meta", "resolve_wheels"]

PIP_TIMEOUT = 600
META_DIST = "cuda-toolkit"


@dataclass(frozen=True)
class MetaRelease:
    """A ``cuda-toolkit`` release on the index: its version and its requirements."""

    version: str  # as the index spells it: "13.2.2", "13.4.1.0"
    requires_dist: tuple[str, ...]

    @property
    def release(self) -> str:
        """The CUDA release: a four-part ``13.4.1.0`` is release 13.4.1."""
        parts = self.version.split(".")
        return ".".join(parts[:3]) if len(parts) == 4 and parts[3] == "0" else self.version


@dataclass(frozen=True)
class ResolvedWheel:
    dist: str
    version: str
    url: str
    sha256: str

    @property
    def file_name(self) -> str:
        return self.url.rsplit("/", 1)[-1].split("#", 1)[0]


def _key(dist: str, version: str, platforms: Sequence[str]) -> str:
    return json.dumps([_normalize(dist), version, list(platforms)])


def _store(path: Path, doc: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(doc))
    os.replace(tmp, path)


def resolve_wheels(
    pins: Sequence[tuple[str, str]],
    platforms: Sequence[str],
    cache: Cache,
    python: str | None = None,
) -> list[ResolvedWheel]:
    """Version, URL and sha256 of the wheel of each ``(dist, specifier)`` for ``platforms``
    (a specifier is PEP 440's: ``==13.2.86.*``, ``==13.0.88``)."""
    resolved: dict[tuple[str, str], ResolvedWheel] = {}
    missing = []
    for dist, spec in pins:
        path = cache.keyed("resolved", _key(dist, spec, platforms))
        try:
            doc = load_json(path.read_bytes(), max_bytes=1 << 20)  # trust: the one loader
            if not isinstance(doc["url"], str) or not re.fullmatch(r"[0-9a-f]{64}", doc["sha256"]):
                raise ValueError("a damaged entry")
            resolved[(dist, spec)] = ResolvedWheel(dist, doc["version"], doc["url"], doc["sha256"])
        except (OSError, ValueError, KeyError, TypeError):
            missing.append((dist, spec))
    if missing:
        for (dist, spec), wheel in zip(
            missing, _pip_resolve(missing, platforms, python or sys.executable), strict=True
        ):
            resolved[(dist, spec)] = wheel
            doc = {"version": wheel.version, "url": wheel.url, "sha256": wheel.sha256}
            _store(cache.keyed("resolved", _key(dist, spec, platforms)), doc)
    return [resolved[pin] for pin in pins]


def resolve_meta(
    spec: str, platforms: Sequence[str], cache: Cache, python: str | None = None,
    *, max_age: float | None = None, extras: Sequence[str] = (),
) -> MetaRelease:  # fmt: skip
    """The ``cuda-toolkit`` release that ``spec`` (``==13.2.*``, ``==13.2.1``) picks on the
    index, with its requirements.  A cached answer serves when it is younger than
    ``max_age`` seconds (None: always, for a pinned release; 0: never), and whenever pip
    cannot reach the index.  ``extras``: pip resolves the wheels these extras require in
    the same call, and they are cached as :func:`resolve_wheels` would cache their pins
    (a cold run asks the index once)."""
    path = cache.keyed("resolved", _key(META_DIST, spec, ["meta"]))
    cached: MetaRelease | None = None
    try:
        doc = load_json(path.read_bytes(), max_bytes=1 << 20)  # trust: the one loader
        cached = MetaRelease(str(doc["version"]), tuple(str(r) for r in doc["requires_dist"]))
        age = time.time() - path.stat().st_mtime
    except (OSError, ValueError, KeyError, TypeError):
        pass
    if cached is not None and (max_age is None or age < max_age):
        return cached
    extra = f"[{','.join(extras)}]" if extras else ""
    try:
        items = _pip_report(
            [f"{META_DIST}{extra}{spec}"], platforms, python or sys.executable, deps=bool(extras)
        )
    except ToolkitError:
        if cached is not None:
            return cached
        raise
    found: MetaRelease | None = None
    for item in items:
        meta = item.get("metadata", {})
        if _normalize(str(meta.get("name", ""))) == META_DIST:
            reqs = meta.get("requires_dist") or []
            found = MetaRelease(str(meta.get("version", "")), tuple(str(r) for r in reqs))
            _store(path, {"version": found.version, "requires_dist": list(found.requires_dist)})
    if found is None:
        raise ToolkitError(f"pip resolved no {META_DIST}{spec}")
    if extras:
        _cache_pinned(found, items, platforms, cache)
    return found


def _cache_pinned(
    meta: MetaRelease, items: Sequence[dict[str, Any]], platforms: Sequence[str], cache: Cache
) -> None:
    """Cache the wheels of a report that are exactly what the meta-package pins (one
    specifier for the distribution whatever the marker), keyed as resolve_wheels looks."""
    pins: dict[str, set[str]] = {}
    for text in meta.requires_dist:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        pins.setdefault(canonicalize_name(req.name), set()).add(str(req.specifier))
    for item in items:
        wheel = _wheel_of(item)
        if wheel is None:
            continue
        specs = pins.get(canonicalize_name(wheel.dist), set())
        if len(specs) == 1:
            (spec,) = specs
            if SpecifierSet(spec).contains(wheel.version, prereleases=True):
                doc = {"version": wheel.version, "url": wheel.url, "sha256": wheel.sha256}
                _store(cache.keyed("resolved", _key(wheel.dist, spec, platforms)), doc)


def _wheel_of(item: dict[str, Any]) -> ResolvedWheel | None:
    """A report item's wheel (None: no URL); ToolkitError when the index gave no sha256."""
    meta = item.get("metadata", {})
    info = item.get("download_info", {})
    hashes = info.get("archive_info", {}).get("hashes", {})
    sha = hashes.get("sha256")
    if sha is None:
        algo, _, value = str(info.get("archive_info", {}).get("hash", "")).partition("=")
        sha = value if algo == "sha256" else None
    url = info.get("url")
    if not isinstance(url, str):
        return None
    if not isinstance(sha, str) or not re.fullmatch(r"[0-9a-f]{64}", sha):
        raise ToolkitError(f"{url}: the index gives no sha256 for this wheel; cannot verify it")
    return ResolvedWheel(str(meta.get("name", "")), str(meta.get("version", "")), url, sha)


def _pip_report(
    reqs: Sequence[str], platforms: Sequence[str], python: str, deps: bool = False
) -> list[dict[str, Any]]:
    """pip's installation report's ``install`` items for ``reqs`` (``deps``: with what they
    require)."""
    with tempfile.TemporaryDirectory(prefix="cuwheel-pip-") as tmp:
        report = Path(tmp) / "report.json"
        cmd = [python, "-m", "pip", "install", "--dry-run", "--ignore-installed",
               "--only-binary=:all:", "--quiet", "--target", str(Path(tmp) / "target"),
               "--report", str(report)]  # fmt: skip
        if not deps:
            cmd.append("--no-deps")
        for p in platforms:
            cmd += ["--platform", p]
        env = {**os.environ, "PIP_NO_INPUT": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
        try:
            result = subprocess.run(
                cmd + list(reqs), capture_output=True, text=True, env=env, timeout=PIP_TIMEOUT
            )
        except FileNotFoundError:
            raise ToolkitError(f"{python}: not found (the wheels source runs pip)") from None
        except subprocess.TimeoutExpired:
            raise ToolkitError(
                f"pip did not resolve {' '.join(reqs)} within {PIP_TIMEOUT} s"
            ) from None
        if result.returncode != 0 or not report.is_file():
            lines = [
                ln.strip()
                for ln in result.stderr.splitlines()
                if ln.strip() and "is ignored: it is neither a file nor a directory" not in ln
            ]
            errors = [ln for ln in lines if ln.startswith("ERROR")] or lines or ["no output"]
            raise ToolkitError(
                f"pip could not resolve {' '.join(reqs)} for {', '.join(platforms)}: {errors[0]}"
            )
        doc = load_json(report.read_bytes())  # trust: the one bounded loader
    items = doc.get("install", []) if isinstance(doc, dict) else []
    return [i for i in items if isinstance(i, dict)]


def _pip_resolve(
    pins: Sequence[tuple[str, str]], platforms: Sequence[str], python: str
) -> list[ResolvedWheel]:
    """The wheels of ``pins`` in their order."""
    reqs = [f"{dist}{spec}" for dist, spec in pins]
    wanted = {_normalize(d): (d, spec) for d, spec in pins}
    got: dict[str, ResolvedWheel] = {}
    for item in _pip_report(reqs, platforms, python):
        name = _normalize(str(item.get("metadata", {}).get("name", "")))
        if name not in wanted:
            continue
        wheel = _wheel_of(item)
        if wheel is not None:
            got[name] = ResolvedWheel(wanted[name][0], wheel.version, wheel.url, wheel.sha256)
    lost = [f"{d}{spec}" for d, spec in pins if _normalize(d) not in got]
    if lost:
        raise ToolkitError(f"pip resolved no wheel for {', '.join(lost)}")
    return [got[_normalize(d)] for d, _ in pins]
