"""The content-addressed download cache shared by every prefix.

``$CUWHEEL_CACHE`` or the platform's cache directory (``$XDG_CACHE_HOME/cuwheel``,
``~/.cache/cuwheel``; ``~/Library/Caches/cuwheel``; ``%LOCALAPPDATA%\\cuwheel\\cache``),
then ``toolkit/``:

- ``blobs/sha256/<2 hex>/<sha256>``: verified archives and wheels, by content;
- ``partial/<sha256>.part``: interrupted downloads, resumed by the next run;
- ``manifests/``: redistrib manifests by URL; ``resolved/``: pinned wheels resolved by pip.

A blob is only ever moved into ``blobs/`` after its size and sha256 were checked.
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Cache", "default_cache_dir"]


def default_cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    if env.get("CUWHEEL_CACHE"):
        return Path(env["CUWHEEL_CACHE"])
    if sys.platform == "win32":
        base = env.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        return Path(base) / "cuwheel" / "cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "cuwheel"
    return Path(env.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "cuwheel"


@dataclass(frozen=True)
class Cache:
    root: Path  # <cache>/toolkit

    @classmethod
    def at(cls, directory: Path | str | None = None) -> Cache:
        base = Path(directory) if directory is not None else default_cache_dir()
        return cls(base / "toolkit")

    def blob(self, sha256: str) -> Path:
        return self.root / "blobs" / "sha256" / sha256[:2] / sha256

    def partial(self, sha256: str) -> Path:
        return self.root / "partial" / f"{sha256}.part"

    def keyed(self, kind: str, key: str, suffix: str = ".json") -> Path:
        digest = hashlib.sha256(key.encode()).hexdigest()
        return self.root / kind / f"{digest}{suffix}"
