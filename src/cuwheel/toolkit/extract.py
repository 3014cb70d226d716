"""Safe extraction of redist archives (``.tar.xz``, ``.zip``) and wheels into a CUDA tree.

Nothing is extracted by the archive libraries themselves: each member is checked, then
written by this module.  Refused, with a one-line error naming the archive and member:
absolute paths and drive letters, ``..`` components, links whose target is absolute or
leaves the tree, hard links to anything but an earlier regular file, device files, FIFOs
and other special members, and a redist member outside the archive's top directory.
Executable bits are kept, every other mode bit (setuid, group / world write) is dropped.
Every archive of a toolkit is written into one tree; a path two components both carry must
have the same content in both.  Zip members (Windows archives, wheels) are inflated with
isal through :class:`cuwheel.read.sources.WheelFile`, which checks sizes and CRCs.

Wheels are read as NVIDIA lays them out (``nvidia/cu13/bin/nvcc``, ``nvidia/cuda_nvcc/...``
for CUDA 12): the two leading directories are dropped, ``*.dist-info`` and Python package
markers are left out, and every file is checked against the wheel's ``RECORD``.
"""

from __future__ import annotations

import base64
import contextlib
import csv
import hashlib
import io
import lzma
import os
import stat
import tarfile
import threading
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from cuwheel._paths import resolve_inside
from cuwheel.errors import InputError, ToolkitError
from cuwheel.read.sources import Member as Member_
from cuwheel.read.sources import WheelFile, open_regular

__all__ = ["Member", "Tree", "clean_name", "extract_redist", "extract_wheel"]

CHUNK = 1 << 20
# Ceilings from the archive's declared (and verified) size: what it may expand to, and how
# many members it may hold.  NVIDIA's archives expand 2-10 times; xz of zeros, ~7000 times.
RATIO = 64
FLOOR = 64 << 20
MAX_MEMBERS = 200_000
MAX_LINK = 4096


@dataclass
class Member:
    name: str
    kind: str  # "file", "dir", "symlink", "hardlink", "special"
    mode: int
    linkname: str = ""
    chunks: Callable[[], Iterator[bytes]] | None = None


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
    # xz through LZMAFile, whose output per call is bounded: tarfile's own "r|xz" hands a
    # whole input block to the decompressor, and 10 KiB of xz can be 70 MiB of zeros.
    with lzma.open(path, "rb") as xz, tarfile.open(
        fileobj=xz, mode="r|", bufsize=CHUNK
    ) as tar:
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

            def chunks(info: tarfile.TarInfo = info) -> Iterator[bytes]:
                fh = tar.extractfile(info)
                assert fh is not None
                while block := fh.read(CHUNK):
                    yield block

            yield Member(info.name, kind, info.mode, info.linkname, chunks)


def _zip_members(wf: WheelFile) -> Iterator[Member]:
    for info in wf.members:
        if wf.refusal(info):
            raise ToolkitError(f"{wf.path}: {info.name}: {wf.refusal(info)}")
        mode = info.external_attr >> 16
        if info.is_dir():
            kind = "dir"
        elif stat.S_ISLNK(mode):
            kind = "symlink"
        elif stat.S_IFMT(mode) not in (0, stat.S_IFREG):
            kind = "special"
        else:
            kind = "file"
        if kind == "symlink" and info.file_size > MAX_LINK:
            raise ToolkitError(f"{wf.path}: {info.name}: a link target over {MAX_LINK} bytes")
        linkname = b"".join(wf.chunks(info)).decode("utf-8", "replace") if kind == "symlink" else ""

        def chunks(info: Member_ = info) -> Iterator[bytes]:
            return wf.chunks(info)  # inflated with isal; size and CRC checked

        yield Member(info.name, kind, mode, linkname, chunks)


class Tree:
    """The toolkit tree that every component's archive is written into (from several
    threads): which component wrote each path; ``stop`` ends every writer at its next
    member (an interrupted install: the staging directory is then removed)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.real_root = os.path.realpath(root)
        self.lock = threading.Lock()
        self.owners: dict[tuple[str, ...], str] = {}
        self.stop = threading.Event()


class _Writer:
    """Writes one archive's checked members into the shared tree.

    Containment (docs/toolkit.md): every path is resolved through the whole chain of links
    already in the tree before anything of it is created (:func:`cuwheel._paths.resolve_inside`),
    and a link may only be ``../``* then plain names, with no more ``..`` than its real
    directory is deep: so every link, whatever links are added later, resolves inside the
    tree.  Size: the bytes written for one archive stop at RATIO times its size plus FLOOR,
    and at most MAX_MEMBERS members are taken."""

    def __init__(self, tree: Tree, where: str, owner: str, archive_size: int) -> None:
        self.tree = tree
        self.root = tree.root
        self.where = where
        self.owner = owner
        self.files = 0
        self.members = 0
        self.room = RATIO * archive_size + FLOOR
        self.strip_link: Callable[[Member], tuple[str, ...] | None] | None = None

    def _resolve(self, rel: tuple[str, ...], name: str) -> str:
        real = resolve_inside(self.tree.real_root, os.path.join(self.root, *rel))
        if real is None:
            raise ToolkitError(
                f"{self.where}: member {name!r} is written through a link that leaves the "
                "prefix; nothing installed"
            )
        return real

    def _mkdirs(self, rel: tuple[str, ...], name: str) -> str:
        real = self._resolve(rel, name)
        os.makedirs(real, exist_ok=True)
        return real

    def _conflict(self, rel: tuple[str, ...], same: bool) -> None:
        if not same:
            other = self.tree.owners.get(rel, "another component")
            raise ToolkitError(
                f"{self.owner}: {'/'.join(rel)} is also in {other} with other content; "
                "nothing installed"
            )

    def _claim(self, rel: tuple[str, ...]) -> None:
        with self.tree.lock:
            self.tree.owners[rel] = self.owner

    def _counted(self, chunks: Iterator[bytes]) -> Iterator[bytes]:
        for block in chunks:
            self.room -= len(block)
            if self.room < 0:
                raise ToolkitError(
                    f"{self.where}: expands to more than {RATIO} times its size plus "
                    f"{FLOOR >> 20} MiB (a decompression bomb?); nothing installed"
                )
            yield block

    def _link_target(self, member: Member, real_parent: str) -> str:
        name = member.name
        link = member.linkname.replace("\\", "/")
        if not link or link.startswith("/") or (len(link) > 1 and link[1] == ":"):
            raise ToolkitError(
                f"{self.where}: link {name!r} -> {member.linkname!r} points outside the "
                "prefix (absolute); nothing installed"
            )
        parts = [p for p in link.split("/") if p not in ("", ".")]
        ups = 0
        while ups < len(parts) and parts[ups] == "..":
            ups += 1
        if ".." in parts[ups:]:
            raise ToolkitError(
                f"{self.where}: link {name!r} -> {member.linkname!r} has '..' after a name "
                "(its meaning would depend on other links); nothing installed"
            )
        here = os.path.relpath(real_parent, self.tree.real_root)
        depth = 0 if here == "." else len(here.split(os.sep))
        if ups > depth:
            raise ToolkitError(
                f"{self.where}: link {name!r} -> {member.linkname!r} points outside "
                "the prefix; nothing installed"
            )
        return "/".join(parts) or "."

    def write(self, member: Member, rel: tuple[str, ...], digest: hashlib._Hash | None) -> None:
        if self.tree.stop.is_set():
            raise ToolkitError(f"{self.where}: interrupted; nothing installed")
        self.members += 1
        if self.members > MAX_MEMBERS:
            raise ToolkitError(
                f"{self.where}: more than {MAX_MEMBERS} members; nothing installed"
            )
        name = member.name
        if member.kind == "dir":
            self._mkdirs(rel, name)
            return
        if member.kind == "special":
            raise ToolkitError(
                f"{self.where}: member {name!r} is a device file, FIFO or other special file; "
                "nothing installed"
            )
        real_parent = self._mkdirs(rel[:-1], name)
        target = os.path.join(real_parent, rel[-1])
        if member.kind == "symlink":
            link = self._link_target(member, real_parent)
            try:
                os.symlink(link, target)
            except FileExistsError:
                self._conflict(rel, os.path.islink(target) and os.readlink(target) == link)
                return
            self._claim(rel)
            return
        if member.kind == "hardlink":
            src = self._hardlink_source(member)
            mode = 0o755 if os.access(src, os.X_OK) else 0o644
            self._write_file(rel, target, _file_chunks(src), mode, None)
            return
        assert member.chunks is not None
        mode = 0o755 if member.mode & 0o111 else 0o644
        self._write_file(rel, target, member.chunks(), mode, digest)

    def _hardlink_source(self, member: Member) -> str:
        src_rel = self._strip_link(member)
        if src_rel:
            parent = resolve_inside(
                self.tree.real_root, os.path.join(self.root, *src_rel[:-1])
            )
            if parent is not None:
                src = os.path.join(parent, src_rel[-1])
                try:
                    if stat.S_ISREG(os.lstat(src).st_mode):
                        return src
                except OSError:
                    pass
        raise ToolkitError(
            f"{self.where}: hard link {member.name!r} -> {member.linkname!r} does not name "
            "an earlier file of the archive; nothing installed"
        )

    def _write_file(
        self,
        rel: tuple[str, ...],
        target: str,
        chunks: Iterator[bytes],
        mode: int,
        digest: hashlib._Hash | None,
    ) -> None:
        chunks = self._counted(chunks)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        try:
            fd = os.open(target, flags, mode)
        except FileExistsError:
            self._conflict(rel, _same_file(target, chunks, digest))
            return
        with os.fdopen(fd, "wb") as out:
            for block in chunks:
                if digest is not None:
                    digest.update(block)
                out.write(block)
        self._claim(rel)
        self.files += 1

    def _strip_link(self, member: Member) -> tuple[str, ...] | None:
        if self.strip_link is None:
            return None
        try:
            return self.strip_link(member)
        except ToolkitError:
            return None  # reported as a hard link to no earlier file of the archive


def _file_chunks(path: str) -> Iterator[bytes]:
    with open_regular(path) as fh:
        while block := fh.read(CHUNK):
            yield block


def _same_file(path: str, chunks: Iterator[bytes], digest: hashlib._Hash | None) -> bool:
    """Whether the regular file at ``path`` holds exactly the bytes of ``chunks``, compared
    piece by piece (a duplicate member is never held in memory whole); every chunk is
    consumed, so ``digest`` sees the member's whole content."""
    same = True
    try:
        fh: BinaryIO | None = open_regular(path) if not os.path.islink(path) else None
    except OSError:
        fh = None
    if fh is None:
        same = False
    with fh if fh is not None else contextlib.nullcontext():
        for block in chunks:
            if digest is not None:
                digest.update(block)
            if same and fh is not None and fh.read(len(block)) != block:
                same = False
        if same and fh is not None and fh.read(1):
            same = False
    return same


def _open_zip(path: Path, where: str) -> WheelFile:
    try:
        return WheelFile(str(path))
    except InputError as exc:
        raise ToolkitError(f"{where}: unreadable archive: {exc.problem}") from None


def extract_redist(path: Path, kind: str, top: str, tree: Tree, where: str, owner: str) -> int:
    """Extract a redist archive whose members all live in ``top/``; returns the file count."""
    writer = _Writer(tree, where, owner, path.stat().st_size)

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
            with _open_zip(path, where) as wf:
                _declared_room(wf, writer, where)
                _write_all(_zip_members(wf), strip, writer)
        else:
            _write_all(_tar_members(path), strip, writer)
    except InputError as exc:
        raise ToolkitError(f"{where}: unreadable archive: {exc.problem}") from None
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError, ValueError) as exc:
        if isinstance(exc, ToolkitError):
            raise
        raise ToolkitError(f"{where}: unreadable archive: {exc}") from None
    return writer.files


def _declared_room(wf: WheelFile, writer: _Writer, where: str) -> None:
    """A zip declares every member's size: refuse one whose sum is past the ceiling before
    anything is written."""
    if len(wf.members) > MAX_MEMBERS:
        raise ToolkitError(f"{where}: more than {MAX_MEMBERS} members; nothing installed")
    total = sum(m.file_size for m in wf.members)
    if total > writer.room:
        raise ToolkitError(
            f"{where}: declares {total} bytes of members, more than {RATIO} times its size "
            f"plus {FLOOR >> 20} MiB; nothing installed"
        )


def _write_all(
    members: Iterator[Member],
    strip: Callable[[str], tuple[str, ...] | None],
    writer: _Writer,
) -> None:
    for member in members:
        rel = strip(member.name)
        if rel:
            writer.write(member, rel, None)


def _record(wf: WheelFile, where: str) -> tuple[str, dict[str, tuple[str, int | None]]]:
    names = [n for n in wf.infos if n.count("/") == 1 and n.endswith(".dist-info/RECORD")]
    if len(names) != 1:
        raise ToolkitError(f"{where}: not a wheel (no single *.dist-info/RECORD)")
    entries: dict[str, tuple[str, int | None]] = {}
    text = b"".join(wf.chunks(wf.infos[names[0]])).decode("utf-8", "replace")
    for row in csv.reader(io.StringIO(text)):
        if not row or not row[0]:
            continue
        path, hash_, size = [*row, "", ""][:3]
        entries[path] = (hash_, int(size) if size.isdigit() else None)
    return names[0], entries


def extract_wheel(path: Path, tree: Tree, where: str, owner: str) -> int:
    """Extract an NVIDIA component wheel's ``nvidia/<dir>/...`` files into the tree,
    checking each against RECORD; returns the file count."""
    writer = _Writer(tree, where, owner, path.stat().st_size)
    try:
        with _open_zip(path, where) as wf:
            _declared_room(wf, writer, where)
            record_name, record = _record(wf, where)
            dist_info = record_name.split("/")[0]
            for member in _zip_members(wf):
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
                    assert member.chunks is not None
                    for block in member.chunks():
                        digest.update(block)
                else:
                    continue
                got = base64.urlsafe_b64encode(digest.digest()).rstrip(b"=").decode()
                if got != value.rstrip("="):
                    raise ToolkitError(
                        f"{where}: {member.name} does not match its RECORD hash; nothing installed"
                    )
    except InputError as exc:
        raise ToolkitError(f"{where}: unreadable wheel: {exc.problem}") from None
    except (zipfile.BadZipFile, EOFError, OSError, ValueError) as exc:
        if isinstance(exc, ToolkitError):
            raise
        raise ToolkitError(f"{where}: unreadable wheel: {exc}") from None
    return writer.files
