"""The lockfile: exactly what a prefix holds (``cuwheel-toolkit.lock``, JSON).

Per component the package (redist key or wheel distribution), version, URL, sha256 and
size; ``cuwheel toolkit --locked`` installs exactly these files again, resolving nothing.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from cuwheel.errors import ToolkitError

__all__ = ["LOCK_NAME", "LOCK_VERSION", "Lock", "Part", "read_lock"]

LOCK_NAME = "cuwheel-toolkit.lock"
LOCK_VERSION = 1
KINDS = ("tar.xz", "zip", "wheel")
SOURCES = ("redist", "wheels")


@dataclass(frozen=True)
class Part:
    """One archive or wheel of the toolkit."""

    component: str  # "nvcc"
    package: str  # "cuda_nvcc" (redist) or "nvidia-cuda-nvcc" (wheel)
    version: str
    url: str
    sha256: str
    size: int | None  # known beforehand for redist archives
    kind: str  # "tar.xz", "zip" or "wheel"
    top: str | None = None  # a redist archive's top directory

    @property
    def label(self) -> str:
        return f"{self.component} {self.version}"


@dataclass(frozen=True)
class Lock:
    train: str
    cuda: str  # the redist release, "13.0.2"
    platform: str
    os: str  # "linux" / "windows"
    source: str
    parts: tuple[Part, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "cuwheel_toolkit_lock": LOCK_VERSION,
            "train": self.train,
            "cuda": self.cuda,
            "platform": self.platform,
            "os": self.os,
            "source": self.source,
            "components": [asdict(p) for p in self.parts],
        }

    def text(self) -> str:
        return json.dumps(self.to_json(), indent=2) + "\n"

    def same_content(self, other: Lock) -> bool:
        """Whether two locks install the same files for the same target."""

        def key(lk: Lock) -> tuple[str, str, list[tuple[str, str, str]]]:
            return lk.platform, lk.os, sorted((p.component, p.version, p.sha256) for p in lk.parts)

        return key(self) == key(other)


def read_lock(path: Path) -> Lock:
    """Parse a lockfile; ToolkitError naming the file and the problem."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ToolkitError(f"{path}: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise ToolkitError(f"{path}: not a JSON lockfile: {exc}") from None
    return parse_lock(doc, str(path))


def _str(doc: dict[str, Any], key: str, where: str) -> str:
    value = doc.get(key)
    if not isinstance(value, str) or not value:
        raise ToolkitError(f"{where}: {key!r} must be a non-empty string")
    return value


def parse_lock(doc: object, where: str) -> Lock:
    if not isinstance(doc, dict) or doc.get("cuwheel_toolkit_lock") != LOCK_VERSION:
        raise ToolkitError(f"{where}: not a cuwheel toolkit lockfile (version {LOCK_VERSION})")
    source = _str(doc, "source", where)
    if source not in SOURCES:
        raise ToolkitError(f"{where}: source must be one of {', '.join(SOURCES)}")
    os_ = _str(doc, "os", where)
    if os_ not in ("linux", "windows"):
        raise ToolkitError(f"{where}: os must be linux or windows")
    raw_parts = doc.get("components")
    if not isinstance(raw_parts, list) or not raw_parts:
        raise ToolkitError(f"{where}: 'components' must be a non-empty list")
    parts = []
    for i, raw in enumerate(raw_parts):
        at = f"{where}: components[{i}]"
        if not isinstance(raw, dict):
            raise ToolkitError(f"{at}: expected an object")
        sha = _str(raw, "sha256", at)
        if not re.fullmatch(r"[0-9a-f]{64}", sha):
            raise ToolkitError(f"{at}: sha256 must be 64 hex digits")
        kind = _str(raw, "kind", at)
        if kind not in KINDS:
            raise ToolkitError(f"{at}: kind must be one of {', '.join(KINDS)}")
        size = raw.get("size")
        if size is not None and (not isinstance(size, int) or isinstance(size, bool) or size < 0):
            raise ToolkitError(f"{at}: size must be a number of bytes")
        top = raw.get("top")
        if kind != "wheel" and not isinstance(top, str):
            raise ToolkitError(f"{at}: a redist archive needs its 'top' directory")
        parts.append(
            Part(
                _str(raw, "component", at),
                _str(raw, "package", at),
                _str(raw, "version", at),
                _str(raw, "url", at),
                sha,
                size,
                kind,
                top if isinstance(top, str) else None,
            )
        )
    return Lock(
        _str(doc, "train", where),
        _str(doc, "cuda", where),
        _str(doc, "platform", where),
        os_,
        source,
        tuple(parts),
    )
