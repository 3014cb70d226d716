"""Safe extraction of redist archives (``.tar.xz``, ``.zip``) and wheels into a CUDA tree.

Nothing is extracted by the archive libraries themselves: each member is checked, then
written by toolkit/tree.py's writer.  Refused, with a one-line error naming the archive and
member: absolute paths and drive letters, ``..`` components, links whose target is absolute
or leaves the tree, hard links to anything but an earlier regular file, device files, FIFOs
and other special members, and a redist member outside the archive's top directory.
Executable bits are kept, every other mode bit (setuid, group / world write) is dropped.
Every archive of a toolkit is written into one tree; a path two components both carry must
have the same content in both.  Zip members (Windows archives, wheels) are inflated with
isal through :class:`cuwheel.read.sources.source.WheelFile`, which checks sizes and CRCs.

Wheels are read as NVIDIA lays them out (``nvidia/cu13/bin/nvcc``, ``nvidia/cuda_nvcc/...``
for CUDA 12): the two leading directories are dropped, ``*.dist-info`` and Python package
markers are left out, and every file is checked against the wheel's ``RECORD``.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import lzma
import stat
import tarfile
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

from cuwheel.errors import InputError, ToolkitError
from cuwheel.read.sources.wheelfile import WheelFile
from cuwheel.read.sources.zipdir import Member as Member_
from cuwheel.toolkit.tree import CHUNK, Member, Tree, Writer

__all__ = ["Member", "Tree", "clean_name", "extract_redist", "extract_wheel"]

# Ceilings from the archive's declared (and verified) size: what it may expand to, and how
# many members it may hold.  NVIDIA's archives expand 2-10 times; xz of zeros, ~7000 times.
RATIO = 64
FLOOR = 64 << 20
MAX_MEMBERS = 200_000
MAX_LINK = 4096


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


def _writer(tree: Tree, where: str, owner: str, path: Path) -> Writer:
    return Writer(
        tree, where, owner, path.stat().st_size,
        ratio=RATIO, floor=FLOOR, max_members=MAX_MEMBERS,
    )  # fmt: skip


def _open_zip(path: Path, where: str) -> WheelFile:
    try:
        return WheelFile(str(path))
    except InputError as exc:
        raise ToolkitError(f"{where}: unreadable archive: {exc.problem}") from None


def extract_redist(path: Path, kind: str, top: str, tree: Tree, where: str, owner: str) -> int:
    """Extract a redist archive whose members all live in ``top/``; returns the file count."""
    writer = _writer(tree, where, owner, path)

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


def _declared_room(wf: WheelFile, writer: Writer, where: str) -> None:
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
    writer: Writer,
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
    writer = _writer(tree, where, owner, path)
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
