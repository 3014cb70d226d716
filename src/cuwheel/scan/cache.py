"""The scan cache: a wheel's sha256 -> its record (without ``input``), and a file's
(path, size, mtime, inode) -> its sha256, so that a re-run hashes no unchanged file and
reads no wheel it has read before, wherever it lies now.

Layout under the cache directory (default ``$XDG_CACHE_HOME/cuwheel/scan``)::

    records/<key>/<sha256[:2]>/<sha256>.json   one record's content part
    stat/<sha256 of the file's identity>        the file's sha256

``key`` names everything besides the wheel that a record depends on: cuwheel's version,
the record version, the record options and the catalog data files; a change of any of
them starts a new key, and old records are never served for it.  Every file is written
to a temporary name and renamed, so concurrent scans (or workers) can share a cache.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from importlib import resources

from cuwheel import __version__
from cuwheel.scan.record import RECORD_VERSION, RecordOptions, dumps

__all__ = ["Cache", "default_cache_dir"]


def default_cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "cuwheel", "scan")


def _data_digest() -> str:
    """sha256 over the catalog's data files: the checks' facts."""
    h = hashlib.sha256()
    data = resources.files("cuwheel").joinpath("data")
    for entry in sorted(data.iterdir(), key=lambda e: e.name):
        if entry.name.endswith((".toml", ".json")):
            h.update(entry.name.encode() + b"\0" + entry.read_bytes() + b"\0")
    return h.hexdigest()


class Cache:
    def __init__(self, root: str, options: RecordOptions) -> None:
        self.root = root
        salt = dumps({"cuwheel": __version__, "record": RECORD_VERSION,
                      "options": options.as_dict(), "data": _data_digest()})
        self.key = hashlib.sha256(salt.encode()).hexdigest()[:16]
        self.hits = 0
        self.stored = 0

    # -- records -------------------------------------------------------------------------
    def _record_path(self, sha256: str) -> str:
        return os.path.join(self.root, "records", self.key, sha256[:2], sha256 + ".json")

    def get(self, sha256: str) -> str | None:
        """The content part of the record of the wheel with this sha256, if cached."""
        if not _is_hex(sha256):
            return None
        try:
            with open(self._record_path(sha256), encoding="utf-8") as f:
                text = f.read()
        except OSError:
            return None
        self.hits += 1
        return text

    def put(self, sha256: str, content: str) -> None:
        if _is_hex(sha256):
            _write(self._record_path(sha256), content)
            self.stored += 1

    # -- file identities -------------------------------------------------------------------
    def _stat_path(self, path: str) -> str | None:
        try:
            st = os.stat(path)
        except OSError:
            return None
        ident = f"{os.path.realpath(path)}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ino}"
        return os.path.join(self.root, "stat", hashlib.sha256(ident.encode()).hexdigest())

    def known_sha256(self, path: str) -> str | None:
        """The sha256 of the file at ``path`` if it was hashed before and is unchanged
        (same size, modification time and inode)."""
        p = self._stat_path(path)
        if p is None:
            return None
        try:
            with open(p, encoding="ascii") as f:
                sha = f.read().strip()
        except (OSError, UnicodeDecodeError):
            return None
        return sha if _is_hex(sha) else None

    def remember_sha256(self, path: str, sha256: str) -> None:
        p = self._stat_path(path)
        if p is not None and _is_hex(sha256):
            _write(p, sha256)


def _is_hex(text: str) -> bool:
    return len(text) == 64 and all(c in "0123456789abcdef" for c in text)


def _write(path: str, text: str) -> None:
    d = os.path.dirname(path)
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
