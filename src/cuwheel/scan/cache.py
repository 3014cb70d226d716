"""The scan cache: a wheel's sha256 -> its record (without ``input``), and a file's
(path, size, mtime, inode) -> its sha256, so that a re-run hashes no unchanged file and
reads no wheel it has read before, wherever it lies now.

Layout under the cache directory (default ``scan/`` in cuwheel's cache directory,
``$CUWHEEL_CACHE`` or the platform's: :func:`cuwheel._paths.cache_dir`)::

    records/<key>/<sha256[:2]>/<sha256>.json   one record's content part
    stat/<sha256 of the file's identity>        the file's sha256

``key`` names everything besides the wheel that a record depends on: cuwheel's version,
the record version, the record options and the catalog data files; a change of any of
them starts a new key, and old records are never served for it.  Every file is written
to a temporary name and renamed, so concurrent scans (or workers) can share a cache.

A record is served only when it is one (read by the bounded JSON loader) and belongs to
its key: its ``wheel.sha256`` is the one asked for, its version and options are this
cache's.  A damaged, cut or misfiled record is removed and the wheel read again
(docs/scan.md, trust boundaries).  File names are written as valid UTF-8 whatever they
are.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from collections.abc import Mapping

from cuwheel._datafiles import folder
from cuwheel._paths import open_untrusted
from cuwheel._version import __version__
from cuwheel.scan.record import RECORD_VERSION, RecordOptions, dumps

__all__ = ["Cache", "default_cache_dir"]


def default_cache_dir(environ: Mapping[str, str] | None = None) -> str:
    """``scan/`` in cuwheel's cache directory (the one rule: _paths.cache_dir)."""
    from cuwheel._paths import cache_dir

    return str(cache_dir(environ) / "scan")


def _data_digest() -> str:
    """sha256 over the catalog's data files: the checks' facts."""
    h = hashlib.sha256()
    data = folder()
    for entry in sorted(data.iterdir(), key=lambda e: e.name):
        if entry.name.endswith((".toml", ".json")):
            h.update(entry.name.encode() + b"\0" + entry.read_bytes() + b"\0")
    return h.hexdigest()


class Cache:
    def __init__(self, root: str, options: RecordOptions) -> None:
        self.root = root
        self.options = options
        self.evicted = 0
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
        from cuwheel._json import load_json
        from cuwheel.errors import JsonError
        from cuwheel.read.sources.files import read_regular
        from cuwheel.scan.record import MAX_RECORD

        path = self._record_path(sha256)
        try:
            data = read_regular(path, MAX_RECORD)
        except OSError:
            if not os.path.lexists(path):
                return None
            data = None
        try:
            obj = load_json(data, max_bytes=MAX_RECORD) if data is not None else None
        except JsonError:
            obj = None
        wheel = obj.get("wheel") if isinstance(obj, dict) else None
        if (
            not isinstance(obj, dict)
            or not isinstance(wheel, dict)
            or wheel.get("sha256") != sha256
            or obj.get("record_version") != RECORD_VERSION
            or obj.get("options") != self.options.as_dict()
            or "input" in obj
        ):
            with contextlib.suppress(OSError):
                os.unlink(path)
            self.evicted += 1
            return None
        self.hits += 1
        return dumps(obj)

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
        key = hashlib.sha256(ident.encode("utf-8", "surrogateescape")).hexdigest()
        return os.path.join(self.root, "stat", key)

    def known_sha256(self, path: str) -> str | None:
        """The sha256 of the file at ``path`` if it was hashed before and is unchanged
        (same size, modification time and inode)."""
        p = self._stat_path(path)
        if p is None:
            return None
        try:
            with open_untrusted(p) as f:
                sha = f.read().decode("ascii").strip()
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
