"""The record of an assembled tree (``cuwheel-toolkit.files``, JSON) and its verification.

Written when a prefix is assembled, beside the lockfile: every file's path, sha256, size,
executable bit and mtime, every link's target, and the sha256 of the lockfile it was
assembled from.  :func:`verify_tree` compares a prefix with it: ``full`` re-hashes every
file; otherwise a file whose size, mtime, type or mode changed is re-hashed (what an edit,
a truncation or a deletion leaves).  Paths missing, changed or not in the record are the
damage; the caller repairs by assembling again or refuses.  docs/toolkit.md, Verification.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cuwheel._json import load_json
from cuwheel._paths import open_untrusted
from cuwheel.errors import JsonError
from cuwheel.toolkit.lock import OWNER_NAME

__all__ = ["FILES_NAME", "Damage", "record_tree", "verify_tree", "write_record"]

FILES_NAME = "cuwheel-toolkit.files"
FILES_VERSION = 1
MAX_RECORD = 256 << 20  # a record of ~1M files
_SKIP = {FILES_NAME, OWNER_NAME}  # the owner mark is written after the record
CHUNK = 1 << 20


@dataclass(frozen=True)
class Damage:
    """What differs between a prefix and its record; empty: intact."""

    missing: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    extra: tuple[str, ...] = ()
    unrecorded: str | None = None  # why the record itself cannot be used

    def __bool__(self) -> bool:
        return bool(self.missing or self.changed or self.extra or self.unrecorded)

    def summary(self, limit: int = 5) -> str:
        if self.unrecorded:
            return self.unrecorded
        parts = []
        for what, paths in (("changed", self.changed), ("missing", self.missing),
                            ("not installed by cuwheel", self.extra)):  # fmt: skip
            if paths:
                shown = ", ".join(paths[:limit]) + (", ..." if len(paths) > limit else "")
                parts.append(f"{len(paths)} {what} ({shown})")
        return "; ".join(parts)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open_untrusted(str(path)) as fh:  # a FIFO swapped in after the walk: refused
        while block := fh.read(CHUNK):
            digest.update(block)
    return digest.hexdigest()


def _walk(root: Path) -> dict[str, os.stat_result]:
    """Every file and link under root (not directories), by '/'-joined relative path."""
    out: dict[str, os.stat_result] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        links = [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]
        for name in [*filenames, *links]:
            rel = name if rel_dir == "." else f"{rel_dir}/{name}".replace(os.sep, "/")
            if rel in _SKIP:
                continue
            out[rel] = os.lstat(os.path.join(dirpath, name))
    return out


def record_tree(root: Path, lock_text: str) -> dict[str, Any]:
    files: dict[str, list[Any]] = {}
    links: dict[str, str] = {}
    for rel, st in sorted(_walk(root).items()):
        path = root / rel
        if stat.S_ISLNK(st.st_mode):
            links[rel] = os.readlink(path)
        else:
            files[rel] = [_sha256(path), st.st_size, bool(st.st_mode & 0o111), st.st_mtime_ns]
    return {
        "cuwheel_toolkit_files": FILES_VERSION,
        "lock_sha256": hashlib.sha256(lock_text.encode()).hexdigest(),
        "files": files,
        "links": links,
    }


def write_record(root: Path, lock_text: str) -> None:
    doc = record_tree(root, lock_text)
    (root / FILES_NAME).write_text(json.dumps(doc, separators=(",", ":")) + "\n")


def _load(root: Path, lock_text: str) -> tuple[dict[str, list[Any]], dict[str, str]] | str:
    path = root / FILES_NAME
    try:
        doc = load_json(path.read_bytes(), max_bytes=MAX_RECORD)
    except OSError:
        return f"{path}: no record of the assembled files"
    except (UnicodeDecodeError, ValueError, JsonError):
        return f"{path}: not a cuwheel file record"
    if not isinstance(doc, dict) or doc.get("cuwheel_toolkit_files") != FILES_VERSION:
        return f"{path}: not a cuwheel file record (version {FILES_VERSION})"
    if doc.get("lock_sha256") != hashlib.sha256(lock_text.encode()).hexdigest():
        return f"{path}: recorded for another lockfile"
    files, links = doc.get("files"), doc.get("links")
    if not isinstance(files, dict) or not isinstance(links, dict):
        return f"{path}: not a cuwheel file record"
    for entry in files.values():
        if not (isinstance(entry, list) and len(entry) == 4 and isinstance(entry[0], str)):
            return f"{path}: not a cuwheel file record"
    return files, links


def verify_tree(root: Path, lock_text: str, *, full: bool = False) -> Damage:
    loaded = _load(root, lock_text)
    if isinstance(loaded, str):
        return Damage(unrecorded=loaded)
    files, links = loaded
    found = _walk(root)
    missing, changed = [], []
    for rel, (sha, size, exe, mtime) in files.items():
        st = found.get(rel)
        if st is None:
            missing.append(rel)
            continue
        kept = stat.S_ISREG(st.st_mode) and bool(st.st_mode & 0o111) == exe
        rehash = full or st.st_mtime_ns != mtime
        if not kept or st.st_size != size or (rehash and _sha256(root / rel) != sha):
            changed.append(rel)
    for rel, target in links.items():
        st = found.get(rel)
        if st is None:
            missing.append(rel)
        elif not stat.S_ISLNK(st.st_mode) or os.readlink(root / rel) != target:
            changed.append(rel)
    extra = sorted(set(found) - files.keys() - links.keys())
    return Damage(tuple(sorted(missing)), tuple(sorted(changed)), tuple(extra))
