"""Resolving NVIDIA's component wheels on the package index, without installing anything.

pip resolves the pinned requirements for the target platform (``pip install --dry-run
--report``, with ``--platform`` tags, so a Windows or Arm toolkit resolves on any host) and
reports each wheel's URL and the index's sha256; cuwheel downloads them itself (parallel,
resumable, into the shared cache) and unpacks them into the CUDA tree, checking RECORD.
pip's own configuration (index URL, proxy, certificates) applies to the resolution.
Results are cached: a pinned version on an index does not change.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cuwheel._json import load_json
from cuwheel.errors import ToolkitError
from cuwheel.toolkit.cache import Cache

__all__ = ["ResolvedWheel", "resolve_wheels"]

PIP_TIMEOUT = 600


@dataclass(frozen=True)
class ResolvedWheel:
    dist: str
    version: str
    url: str
    sha256: str

    @property
    def file_name(self) -> str:
        return self.url.rsplit("/", 1)[-1].split("#", 1)[0]


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _key(dist: str, version: str, platforms: Sequence[str]) -> str:
    return json.dumps([_normalize(dist), version, list(platforms)])


def resolve_wheels(
    pins: Sequence[tuple[str, str]],
    platforms: Sequence[str],
    cache: Cache,
    python: str | None = None,
) -> list[ResolvedWheel]:
    """URL and sha256 of the wheel of each ``(dist, version)`` for ``platforms``."""
    resolved: dict[tuple[str, str], ResolvedWheel] = {}
    missing = []
    for dist, version in pins:
        path = cache.keyed("resolved", _key(dist, version, platforms))
        try:
            doc = load_json(path.read_bytes(), max_bytes=1 << 20)  # trust: the one loader
            if not isinstance(doc["url"], str) or not re.fullmatch(r"[0-9a-f]{64}", doc["sha256"]):
                raise ValueError("a damaged entry")
            resolved[(dist, version)] = ResolvedWheel(dist, version, doc["url"], doc["sha256"])
        except (OSError, ValueError, KeyError, TypeError):
            missing.append((dist, version))
    if missing:
        for wheel in _pip_resolve(missing, platforms, python or sys.executable):
            resolved[(wheel.dist, wheel.version)] = wheel
            path = cache.keyed("resolved", _key(wheel.dist, wheel.version, platforms))
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps({"url": wheel.url, "sha256": wheel.sha256}))
            os.replace(tmp, path)
    return [resolved[pin] for pin in pins]


def _pip_resolve(
    pins: Sequence[tuple[str, str]], platforms: Sequence[str], python: str
) -> list[ResolvedWheel]:
    reqs = [f"{dist}=={version}" for dist, version in pins]
    with tempfile.TemporaryDirectory(prefix="cuwheel-pip-") as tmp:
        report = Path(tmp) / "report.json"
        cmd = [python, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--no-deps",
               "--only-binary=:all:", "--quiet", "--target", str(Path(tmp) / "target"),
               "--report", str(report)]  # fmt: skip
        for p in platforms:
            cmd += ["--platform", p]
        env = {**os.environ, "PIP_NO_INPUT": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
        try:
            result = subprocess.run(
                cmd + reqs, capture_output=True, text=True, env=env, timeout=PIP_TIMEOUT
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
    wanted = {(_normalize(d), v): (d, v) for d, v in pins}
    out = []
    for item in doc.get("install", []):
        meta = item.get("metadata", {})
        key = (_normalize(str(meta.get("name", ""))), str(meta.get("version", "")))
        info = item.get("download_info", {})
        hashes = info.get("archive_info", {}).get("hashes", {})
        sha = hashes.get("sha256")
        if sha is None:
            algo, _, value = str(info.get("archive_info", {}).get("hash", "")).partition("=")
            sha = value if algo == "sha256" else None
        url = info.get("url")
        if key not in wanted or not isinstance(url, str):
            continue
        if not isinstance(sha, str) or not re.fullmatch(r"[0-9a-f]{64}", sha):
            raise ToolkitError(f"{url}: the index gives no sha256 for this wheel; cannot verify it")
        dist, version = wanted.pop(key)
        out.append(ResolvedWheel(dist, version, url, sha))
    if wanted:
        names = ", ".join(f"{d}=={v}" for d, v in wanted.values())
        raise ToolkitError(f"pip resolved no wheel for {names}")
    return out
