"""The CUDA tree every archive of a toolkit is written into (docs/toolkit.md), and the
writer that puts one archive's checked members there: contained (no path written through
a link that leaves the tree, no link that can point out of it), bounded (bytes and members
per archive) and consistent (a path two components both carry has the same content in
both).  Reading the archives is toolkit/extract.py's."""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from cuwheel._paths import resolve_inside
from cuwheel.errors import ToolkitError
from cuwheel.read.sources.files import open_regular

__all__ = ["CHUNK", "Member", "Tree", "Writer"]

CHUNK = 1 << 20


@dataclass
class Member:
    name: str
    kind: str  # "file", "dir", "symlink", "hardlink", "special"
    mode: int
    linkname: str = ""
    chunks: Callable[[], Iterator[bytes]] | None = None


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


class Writer:
    """Writes one archive's checked members into the shared tree.

    Containment (docs/toolkit.md): every path is resolved through the whole chain of links
    already in the tree before anything of it is created (:func:`cuwheel._paths.resolve_inside`),
    and a link may only be ``../``* then plain names, with no more ``..`` than its real
    directory is deep: so every link, whatever links are added later, resolves inside the
    tree.  Size: the bytes written for one archive stop at ``ratio`` times its size plus
    ``floor``, and at most ``max_members`` members are taken (toolkit/extract.py's ceilings)."""

    def __init__(
        self,
        tree: Tree,
        where: str,
        owner: str,
        archive_size: int,
        *,
        ratio: int,
        floor: int,
        max_members: int,
    ) -> None:
        self.tree = tree
        self.root = tree.root
        self.where = where
        self.owner = owner
        self.files = 0
        self.members = 0
        self.ratio, self.floor, self.max_members = ratio, floor, max_members
        self.room = ratio * archive_size + floor
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
                    f"{self.where}: expands to more than {self.ratio} times its size plus "
                    f"{self.floor >> 20} MiB (a decompression bomb?); nothing installed"
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
        if self.members > self.max_members:
            raise ToolkitError(
                f"{self.where}: more than {self.max_members} members; nothing installed"
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
