"""The content-addressed download cache shared by every prefix.

``$CUWHEEL_CACHE`` or the platform's cache directory (``$XDG_CACHE_HOME/cuwheel``,
``~/.cache/cuwheel``; ``~/Library/Caches/cuwheel``; ``%LOCALAPPDATA%\\cuwheel\\cache``),
then ``toolkit/``:

- ``blobs/sha256/<2 hex>/<sha256>``: verified archives and wheels, by content;
- ``partial/<sha256>.part``: interrupted downloads, resumed by the next run;
- ``manifests/``: redistrib manifests by URL; ``resolved/``: pinned wheels resolved by pip.

A blob is only ever moved into ``blobs/`` after its size and sha256 were checked, and it is
checked again every time it is used (:meth:`Cache.verified_blob`): a blob whose bytes are
not its name's (a poisoned shared or restored CI cache, a disk error) is removed and
downloaded again, never installed, and never blamed on the archive.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from cuwheel.errors import ToolkitError

__all__ = ["Cache", "default_cache_dir"]

_HEX64 = re.compile(r"[0-9a-f]{64}")


def default_cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The cache directory of every cuwheel command (the one rule: _paths.cache_dir)."""
    from cuwheel._paths import cache_dir

    return cache_dir(environ)


@dataclass(frozen=True)
class Cache:
    root: Path  # <cache>/toolkit

    @classmethod
    def at(cls, directory: Path | str | None = None) -> Cache:
        base = Path(directory) if directory is not None else default_cache_dir()
        return cls(base / "toolkit")

    def blob(self, sha256: str) -> Path:
        """Where the blob of ``sha256`` lives; ToolkitError unless it is 64 hex digits (a
        name from a damaged cache or document can never point outside ``blobs/``)."""
        if not _HEX64.fullmatch(sha256):
            raise ToolkitError(f"not a sha256: {sha256[:80]!r}")
        return self.root / "blobs" / "sha256" / sha256[:2] / sha256

    def verified_blob(self, sha256: str, size: int | None = None) -> Path | None:
        """The blob of ``sha256`` if the cache holds it and its bytes hash to that name
        (and have ``size`` bytes, where given); a blob that fails is evicted (None)."""
        path = self.blob(sha256)
        try:
            st = os.lstat(path)
        except OSError:
            return None
        ok = stat.S_ISREG(st.st_mode) and (size is None or st.st_size == size)
        if ok:
            from cuwheel.read.sources.files import open_regular

            digest = hashlib.sha256()
            try:
                with open_regular(str(path)) as fh:
                    while block := fh.read(1 << 20):
                        digest.update(block)
            except OSError:
                ok = False
            ok = ok and digest.hexdigest() == sha256
        if not ok:
            with contextlib.suppress(OSError):
                os.unlink(path)
            return None
        return path

    def partial(self, sha256: str) -> Path:
        self.blob(sha256)  # the same check of the name
        return self.root / "partial" / f"{sha256}.part"

    def keyed(self, kind: str, key: str, suffix: str = ".json") -> Path:
        digest = hashlib.sha256(key.encode()).hexdigest()
        return self.root / kind / f"{digest}{suffix}"
