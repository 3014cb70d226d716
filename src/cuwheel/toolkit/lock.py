"""The lockfile: exactly what a prefix holds (``cuwheel-toolkit.lock``, JSON), and the
ownership marker that proves cuwheel installed the prefix (``.cuwheel-owner``).

Per component the package (redist key or wheel distribution), version, URL, sha256 and
size; ``cuwheel toolkit --locked`` installs exactly these files again, resolving nothing.

A lockfile is no proof of ownership: anyone can copy one (or create an empty one).  The
marker records a digest of the whole tree as installed (every path, its kind, a file's size
and modification time in whole seconds, a link's target); a prefix is cuwheel's to replace
only while the tree still has that digest, so a directory with a user's files in it, or a
toolkit a user has changed, is never replaced (docs/toolkit.md, trust boundaries).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from cuwheel._json import load_json
from cuwheel.errors import JsonError, ToolkitError

__all__ = [
    "LOCK_NAME",
    "LOCK_VERSION",
    "OWNER_NAME",
    "Lock",
    "Part",
    "not_owned",
    "read_lock",
    "tree_digest",
    "write_owner",
]

LOCK_NAME = "cuwheel-toolkit.lock"
OWNER_NAME = ".cuwheel-owner"
OWNER_VERSION = 1
MAX_TREE_ENTRIES = 1_000_000
LOCK_VERSION = 1
KINDS = ("tar.xz", "zip", "wheel")
SOURCES = ("redist", "wheels")
MAX_LOCK = 4 << 20


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
    from cuwheel.read.sources.files import read_regular

    try:
        data = read_regular(str(path), MAX_LOCK)
    except OSError as exc:
        raise ToolkitError(f"{path}: {exc.strerror or exc}") from None
    if data is None:
        raise ToolkitError(f"{path}: larger than {MAX_LOCK} bytes, not a lockfile")
    try:
        doc = load_json(data, max_bytes=MAX_LOCK)
    except JsonError as exc:
        raise ToolkitError(f"{path}: not a JSON lockfile: {exc}") from None
    return parse_lock(doc, str(path))


_PLAIN = re.compile(r"[A-Za-z0-9_+][A-Za-z0-9._+-]{0,199}")


def _str(doc: dict[str, Any], key: str, where: str) -> str:
    """A name field (train, component, version, top ...): letters, digits and ``._+-``,
    so that nothing from a lockfile reaches a file name, a progress bar or a terminal as
    markup, a control character or a path."""
    value = doc.get(key)
    if not isinstance(value, str) or not value:
        raise ToolkitError(f"{where}: {key!r} must be a non-empty string")
    if key != "url" and not _PLAIN.fullmatch(value):
        raise ToolkitError(f"{where}: {key!r} must be letters, digits and ._+- "
                           f"(at most 200), not {value[:40]!r}")
    if key == "url" and (len(value) > 4096 or not value.isprintable()):
        raise ToolkitError(f"{where}: 'url' must be one printable line of at most 4096 "
                           "characters")
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
        top = _str(raw, "top", at) if kind != "wheel" else raw.get("top")
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


# ---------------------------------------------------------------------------- ownership


def tree_digest(root: Path) -> str | None:
    """sha256 over every entry under ``root`` but the marker (path, kind, a file's size and
    mtime, a link's target), walked without following links; None past MAX_TREE_ENTRIES
    entries or when the tree cannot be read."""
    h = hashlib.sha256()
    stack = [""]
    n = 0
    try:
        while stack:
            rel = stack.pop()
            with os.scandir(os.path.join(root, rel) if rel else root) as it:
                entries = sorted(it, key=lambda e: e.name)
            subdirs = []
            for e in entries:
                path = f"{rel}/{e.name}" if rel else e.name
                if path == OWNER_NAME:
                    continue
                n += 1
                if n > MAX_TREE_ENTRIES:
                    return None
                st = e.stat(follow_symlinks=False)
                if e.is_symlink():
                    line = f"l {path} {os.readlink(e.path)}"
                elif e.is_dir(follow_symlinks=False):
                    line = f"d {path}"
                    subdirs.append(path)
                elif e.is_file(follow_symlinks=False):
                    # whole seconds: a CI cache restored with tar keeps those, not the ns
                    line = f"f {path} {st.st_size} {int(st.st_mtime)}"
                else:
                    line = f"o {path} {st.st_mode}"
                h.update(os.fsencode(line) + b"\0")
            stack.extend(reversed(subdirs))
    except OSError:
        return None
    return h.hexdigest()


def write_owner(root: Path) -> None:
    """Mark a finished tree as cuwheel's (the last file written into it)."""
    digest = tree_digest(root)
    if digest is None:
        raise ToolkitError(f"{root}: cannot read the tree just written")
    doc = {"cuwheel_toolkit_owner": OWNER_VERSION, "tree": digest}
    (root / OWNER_NAME).write_text(json.dumps(doc) + "\n", encoding="utf-8")


def not_owned(prefix: Path) -> str | None:
    """Why ``prefix`` is not provably a tree cuwheel installed and nobody changed since;
    None when it is."""
    from cuwheel.read.sources.files import read_regular

    marker = prefix / OWNER_NAME
    try:
        data = read_regular(str(marker), 4096)
    except OSError:
        return f"no {OWNER_NAME} marker"
    try:
        doc = load_json(data or b"", max_bytes=4096)
    except JsonError:
        doc = None
    if not isinstance(doc, dict) or doc.get("cuwheel_toolkit_owner") != OWNER_VERSION or \
            not isinstance(doc.get("tree"), str):
        return f"{OWNER_NAME} is not a cuwheel ownership marker"
    if tree_digest(prefix) != doc["tree"]:
        return "its files are not the ones cuwheel installed (added, removed or changed since)"
    return None
