"""Safe extraction of redist archives (``.tar.xz``, ``.zip``) and wheels into a CUDA tree.

Nothing is extracted by the archive libraries themselves: each member is checked, then
written by this module.  Refused, with a one-line error naming the archive and member:
absolute paths and drive letters, ``..`` components, links whose target is absolute or
leaves the tree, hard links to anything but an earlier regular file, device files, FIFOs
and other special members, and a redist member outside the archive's top directory.
Executable bits are kept, every other mode bit (setuid, group / world write) is dropped.

Wheels are read as NVIDIA lays them out (``nvidia/cu13/bin/nvcc``, ``nvidia/cuda_nvcc/...``
for CUDA 12): the two leading directories are dropped, ``*.dist-info`` and Python package
markers are left out, and every file is checked against the wheel's ``RECORD``.
"""

from __future__ import annotations

import base64
import csv
import filecmp
import hashlib
import io
import os
import stat
import tarfile
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from cuwheel.errors import ToolkitError

__all__ = ["Member", "clean_name", "extract_redist", "extract_wheel", "merge_tree"]

CHUNK = 1 << 20


@dataclass
class Member:
    name: str
    kind: str  # "file", "dir", "symlink", "hardlink", "special"
    mode: int
    linkname: str = ""
    opener: Callable[[], IO[bytes]] | None = None


def clean_name(name: str, where: str) -> tuple[str, ...]:
    """A member name as path components; ToolkitError for absolute or traversing names."""
    text = name.replace("\\", "/")
    if text.startswith("/") or (len(text) > 1 and text[1] == ":"):
        raise ToolkitError(f"{where}: member {name!r} has an absolute path; nothing installed")
    parts = tuple(p for p in text.split("/") if p not in ("", "."))
    if ".." in parts:
        raise ToolkitError(f"{where}: member {name!r} leaves the prefix (..); nothing installed")
    return parts


def _tar_members(path: Path) -> Iterator[Member]:
    with tarfile.open(path, "r|xz") as tar:
        for info in tar:
            if info.isdir():
                kind = "dir"
            elif info.isreg():
                kind = "file"
            elif info.issym():
                kind = "symlink"
            elif info.islnk():
                kind = "hardlink"
            else:
                kind = "special"

            def opener(info: tarfile.TarInfo = info) -> IO[bytes]:
                fh = tar.extractfile(info)
                assert fh is not None
                return fh

            yield Member(info.name, kind, info.mode, info.linkname, opener)


def _zip_members(zf: zipfile.ZipFile) -> Iterator[Member]:
    for info in zf.infolist():
        mode = info.external_attr >> 16
        if info.is_dir():
            kind = "dir"
        elif stat.S_ISLNK(mode):
            kind = "symlink"
        elif stat.S_IFMT(mode) not in (0, stat.S_IFREG):
            kind = "special"
        else:
            kind = "file"
        linkname = zf.read(info).decode("utf-8", "replace") if kind == "symlink" else ""

        def opener(info: zipfile.ZipInfo = info) -> IO[bytes]:
            return zf.open(info)

        yield Member(info.filename, kind, mode, linkname, opener)


class _Writer:
    """Writes checked members under ``root``."""

    def __init__(self, root: Path, where: str) -> None:
        self.root = root
        self.real_root = os.path.realpath(root)
        self.where = where
        self.files = 0
        self.strip_link: Callable[[Member], tuple[str, ...] | None] | None = None

    def _inside(self, path: Path) -> bool:
        real = os.path.realpath(path)
        return real == self.real_root or real.startswith(self.real_root + os.sep)

    def _target(self, rel: tuple[str, ...], name: str) -> Path:
        target = self.root.joinpath(*rel)
        target.parent.mkdir(parents=True, exist_ok=True)
        if not self._inside(target.parent):
            raise ToolkitError(
                f"{self.where}: member {name!r} is written through a link that leaves the "
                "prefix; nothing installed"
            )
        if target.is_symlink() or target.is_file():
            target.unlink()
        return target

    def write(self, member: Member, rel: tuple[str, ...], digest: hashlib._Hash | None) -> None:
        name = member.name
        if member.kind == "dir":
            target = self.root.joinpath(*rel)
            target.mkdir(parents=True, exist_ok=True)
            if not self._inside(target):
                raise ToolkitError(
                    f"{self.where}: directory {name!r} lies behind a link that leaves the "
                    "prefix; nothing installed"
                )
            return
        if member.kind == "special":
            raise ToolkitError(
                f"{self.where}: member {name!r} is a device file, FIFO or other special file; "
                "nothing installed"
            )
        if member.kind == "symlink":
            link = member.linkname.replace("\\", "/")
            if not link or link.startswith("/") or (len(link) > 1 and link[1] == ":"):
                raise ToolkitError(
                    f"{self.where}: link {name!r} -> {member.linkname!r} points outside the "
                    "prefix (absolute); nothing installed"
                )
            depth = len(rel) - 1
            for part in link.split("/"):
                if part == "..":
                    depth -= 1
                elif part not in ("", "."):
                    depth += 1
                if depth < 0:
                    raise ToolkitError(
                        f"{self.where}: link {name!r} -> {member.linkname!r} points outside "
                        "the prefix; nothing installed"
                    )
            os.symlink(link, self._target(rel, name))
            return
        if member.kind == "hardlink":
            src_rel = self._strip_link(member)
            src = self.root.joinpath(*src_rel) if src_rel else None
            if src is None or src.is_symlink() or not src.is_file() or not self._inside(src):
                raise ToolkitError(
                    f"{self.where}: hard link {name!r} -> {member.linkname!r} does not name an "
                    "earlier file of the archive; nothing installed"
                )
            target = self._target(rel, name)
            try:
                os.link(src, target)
            except OSError:
                target.write_bytes(src.read_bytes())
            return
        assert member.opener is not None
        target = self._target(rel, name)
        executable = bool(member.mode & 0o111)
        with member.opener() as stream, open(target, "wb") as out:
            while block := stream.read(CHUNK):
                if digest is not None:
                    digest.update(block)
                out.write(block)
        os.chmod(target, 0o755 if executable else 0o644)
        self.files += 1

    def _strip_link(self, member: Member) -> tuple[str, ...] | None:
        if self.strip_link is None:
            return None
        try:
            return self.strip_link(member)
        except ToolkitError:
            return None  # reported as a hard link to no earlier file of the archive


def extract_redist(path: Path, kind: str, top: str, dest: Path, where: str) -> int:
    """Extract a redist archive whose members all live in ``top/``; returns the file count."""
    writer = _Writer(dest, where)

    def strip(name: str) -> tuple[str, ...] | None:
        parts = clean_name(name, where)
        if not parts:
            return ()
        if parts[0] != top:
            raise ToolkitError(
                f"{where}: member {name!r} is outside the archive's directory {top}/; "
                "nothing installed"
            )
        return parts[1:]

    writer.strip_link = lambda m: strip(m.linkname)
    try:
        if kind == "zip":
            with zipfile.ZipFile(path) as zf:
                _write_all(_zip_members(zf), strip, writer)
        else:
            _write_all(_tar_members(path), strip, writer)
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError, ValueError) as exc:
        if isinstance(exc, ToolkitError):
            raise
        raise ToolkitError(f"{where}: unreadable archive: {exc}") from None
    return writer.files


def _write_all(
    members: Iterator[Member],
    strip: Callable[[str], tuple[str, ...] | None],
    writer: _Writer,
) -> None:
    for member in members:
        rel = strip(member.name)
        if rel:
            writer.write(member, rel, None)


def _record(zf: zipfile.ZipFile, where: str) -> tuple[str, dict[str, tuple[str, int | None]]]:
    names = [n for n in zf.namelist() if n.count("/") == 1 and n.endswith(".dist-info/RECORD")]
    if len(names) != 1:
        raise ToolkitError(f"{where}: not a wheel (no single *.dist-info/RECORD)")
    entries: dict[str, tuple[str, int | None]] = {}
    text = zf.read(names[0]).decode("utf-8", "replace")
    for row in csv.reader(io.StringIO(text)):
        if not row or not row[0]:
            continue
        path, hash_, size = [*row, "", ""][:3]
        entries[path] = (hash_, int(size) if size.isdigit() else None)
    return names[0], entries


def extract_wheel(path: Path, dest: Path, where: str) -> int:
    """Extract an NVIDIA component wheel's ``nvidia/<dir>/...`` files into ``dest``,
    checking each against RECORD; returns the file count."""
    writer = _Writer(dest, where)
    try:
        with zipfile.ZipFile(path) as zf:
            record_name, record = _record(zf, where)
            dist_info = record_name.split("/")[0]
            for member in _zip_members(zf):
                parts = clean_name(member.name, where)
                if member.kind == "dir" or not parts or member.name == record_name:
                    continue
                if member.name not in record:
                    if parts[0] == dist_info and parts[-1].startswith("RECORD."):
                        continue  # RECORD.jws / RECORD.p7s sign RECORD itself
                    raise ToolkitError(f"{where}: {member.name} is not listed in RECORD")
                expected, _size = record[member.name]
                algo, _, value = expected.partition("=")
                if algo != "sha256" or not value:
                    raise ToolkitError(f"{where}: RECORD has no sha256 for {member.name}")
                digest = hashlib.sha256()
                keep = (
                    len(parts) >= 3
                    and parts[0] == "nvidia"
                    and parts[2] != ".metadata"  # NVIDIA's build scan logs (nvidia-cuda-cccl)
                    and parts[-1] != "__init__.py"
                    and "__pycache__" not in parts
                )
                if keep:
                    writer.write(member, parts[2:], digest)
                elif member.kind == "file":
                    assert member.opener is not None
                    with member.opener() as fh:
                        while block := fh.read(CHUNK):
                            digest.update(block)
                else:
                    continue
                got = base64.urlsafe_b64encode(digest.digest()).rstrip(b"=").decode()
                if got != value.rstrip("="):
                    raise ToolkitError(
                        f"{where}: {member.name} does not match its RECORD hash; nothing installed"
                    )
    except (zipfile.BadZipFile, EOFError, OSError, ValueError) as exc:
        if isinstance(exc, ToolkitError):
            raise
        raise ToolkitError(f"{where}: unreadable wheel: {exc}") from None
    return writer.files


def merge_tree(part: Path, tree: Path, owner: str, owners: dict[str, str]) -> None:
    """Move the files of one component's extraction into the shared tree; the same path
    from two components must have the same content."""
    for dirpath, dirnames, filenames in os.walk(part):
        rel_dir = os.path.relpath(dirpath, part)
        out_dir = tree if rel_dir == "." else tree / rel_dir
        out_dir.mkdir(parents=True, exist_ok=True)
        names = list(filenames) + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]
        for name in names:
            src = Path(dirpath) / name
            dst = out_dir / name
            rel = os.path.normpath(os.path.join(rel_dir, name))
            if dst.is_symlink() or dst.exists():
                same = (
                    src.is_symlink() and dst.is_symlink() and os.readlink(src) == os.readlink(dst)
                ) or (
                    not src.is_symlink()
                    and not dst.is_symlink()
                    and dst.is_file()
                    and filecmp.cmp(src, dst, shallow=False)
                )
                if not same:
                    raise ToolkitError(
                        f"{owner}: {rel} is also in {owners.get(rel, 'another component')} with "
                        "other content; nothing installed"
                    )
                continue
            os.replace(src, dst)
            owners[rel] = owner
        dirnames[:] = [d for d in dirnames if not os.path.islink(os.path.join(dirpath, d))]
