"""NVIDIA's redistributable manifests (``redistrib_<version>.json``).

A manifest maps each component (``cuda_nvcc``) to its name, license and version, and per
platform (``linux-x86_64``, ``linux-sbsa``, ``linux-aarch64``, ``windows-x86_64``) to the
archive's ``relative_path`` (from the manifest's directory), ``sha256``, ``md5`` and
``size`` (a decimal string).  Top-level string keys (``release_date``, ``release_label``,
``release_product``) describe the release.

A ``relative_path`` is taken literally, never decoded: it must be plain path components of
letters, digits and ``-._+`` (what NVIDIA's manifests use), so that no ``%2e%2e``,
``?``, ``#`` or ``\\`` can make the URL or file it is joined into name anything outside the
manifest's directory (docs/toolkit.md, trust boundaries).  The document is read with the
bounded JSON loader (:mod:`cuwheel._json`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cuwheel._json import load_json
from cuwheel.errors import JsonError, ToolkitError

__all__ = ["Archive", "Manifest", "ManifestComponent", "parse_manifest"]

_SHA256 = re.compile(r"[0-9a-f]{64}")
_PATH_PART = re.compile(r"[A-Za-z0-9_+-][A-Za-z0-9._+-]*")
MAX_MANIFEST = 16 << 20
_PLATFORM_FIELDS = {"relative_path", "sha256", "md5", "size"}
ARCHIVE_SUFFIXES = (".tar.xz", ".zip")


@dataclass(frozen=True)
class Archive:
    """One platform's archive of a component."""

    relative_path: str
    sha256: str
    size: int
    md5: str | None = None

    @property
    def file_name(self) -> str:
        return self.relative_path.rsplit("/", 1)[-1]

    @property
    def top_dir(self) -> str:
        """The directory every member lives in (the file name without its suffix)."""
        for suffix in ARCHIVE_SUFFIXES:
            if self.file_name.endswith(suffix):
                return self.file_name[: -len(suffix)]
        return self.file_name

    @property
    def kind(self) -> str:
        return "zip" if self.file_name.endswith(".zip") else "tar.xz"


@dataclass(frozen=True)
class ManifestComponent:
    key: str  # "cuda_nvcc"
    name: str | None
    version: str
    archives: tuple[tuple[str, Archive], ...]  # platform key -> archive

    def archive(self, platform_key: str) -> Archive | None:
        return dict(self.archives).get(platform_key)

    @property
    def platform_keys(self) -> tuple[str, ...]:
        return tuple(k for k, _ in self.archives)


@dataclass(frozen=True)
class Manifest:
    source: str  # URL or path it was read from (for messages)
    release_label: str | None
    release_date: str | None
    components: tuple[ManifestComponent, ...]

    def component(self, key: str) -> ManifestComponent | None:
        for c in self.components:
            if c.key == key:
                return c
        return None


def _archive(source: str, where: str, raw: object) -> Archive:
    if not isinstance(raw, dict):
        raise ToolkitError(f"{source}: {where}: expected an object")
    missing = {"relative_path", "sha256", "size"} - raw.keys()
    if missing:
        raise ToolkitError(f"{source}: {where}: missing {', '.join(sorted(missing))}")
    path, sha, size = raw["relative_path"], raw["sha256"], raw["size"]
    if not isinstance(path, str) or not path or path.startswith(("/", "\\")) or "\\" in path:
        raise ToolkitError(f"{source}: {where}: bad relative_path {path!r}")
    if any(part in ("", ".", "..") for part in path.split("/")) or ":" in path:
        raise ToolkitError(f"{source}: {where}: relative_path {path!r} leaves the manifest's tree")
    if not all(_PATH_PART.fullmatch(part) for part in path.split("/")):
        # %2e%2e, ?, #: a URL or file name decoded later could name another place
        raise ToolkitError(
            f"{source}: {where}: relative_path {path!r} has characters other than letters, "
            "digits and -._+ (an encoded path is never decoded)"
        )
    if not path.endswith(ARCHIVE_SUFFIXES):
        raise ToolkitError(f"{source}: {where}: {path!r} is neither .tar.xz nor .zip")
    if not isinstance(sha, str) or not _SHA256.fullmatch(sha):
        raise ToolkitError(f"{source}: {where}: sha256 must be 64 hex digits, got {sha!r}")
    if isinstance(size, str) and size.isdigit():
        size_n = int(size)
    elif isinstance(size, int) and not isinstance(size, bool) and size >= 0:
        size_n = size
    else:
        raise ToolkitError(f"{source}: {where}: size must be a number of bytes, got {size!r}")
    md5 = raw.get("md5")
    return Archive(path, sha, size_n, md5 if isinstance(md5, str) else None)


def parse_manifest(data: bytes, source: str) -> Manifest:
    """Parse a manifest's bytes; raises ToolkitError naming ``source`` and the problem."""
    try:
        doc = load_json(data, max_bytes=MAX_MANIFEST)
    except JsonError as exc:
        raise ToolkitError(f"{source}: not a JSON manifest: {exc}") from None
    if not isinstance(doc, dict):
        raise ToolkitError(f"{source}: not a redistrib manifest (expected a JSON object)")
    components: list[ManifestComponent] = []
    for key, value in doc.items():
        if not isinstance(value, dict):
            continue  # release_date, release_label, release_product
        version = value.get("version")
        if not isinstance(version, str) or not version:
            raise ToolkitError(f"{source}: {key}: missing version")
        archives = []
        for pkey, raw in value.items():
            if isinstance(raw, dict) and _PLATFORM_FIELDS & raw.keys():
                archives.append((pkey, _archive(source, f"{key} {pkey}", raw)))
        name = value.get("name")
        label = name if isinstance(name, str) else None
        components.append(ManifestComponent(key, label, version, tuple(archives)))
    if not components:
        raise ToolkitError(f"{source}: not a redistrib manifest (no components)")
    label, date = doc.get("release_label"), doc.get("release_date")
    return Manifest(
        source,
        label if isinstance(label, str) else None,
        date if isinstance(date, str) else None,
        tuple(components),
    )
