"""Inputs: wheels (read member by member from the zip), directories, installed
distributions and single files; each yields the binaries it holds.

Wheels follow the binary distribution format (PEP 427 / the PyPA wheel spec): a zip
whose members are inflated here as streams, with isal, never extracted to disk.
"""

from __future__ import annotations

import os
import stat
import struct
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from cuwheel.errors import InputError
from cuwheel.model.inventory import Binary, Problem, WheelInfo
from cuwheel.read.binary import SNIFF_BYTES, read_binary, sniff
from cuwheel.read.stream import Chunk, FileBuffer

__all__ = [
    "MAX_MEMBER_SIZE",
    "Limits",
    "WheelFile",
    "file_chunks",
    "read_path",
    "unsafe_member_name",
]

# Read and inflate in pieces of this size: big enough for speed, small for memory.
READ_SIZE = 1 << 20
OUT_SIZE = 4 << 20


@dataclass(frozen=True)
class Limits:
    """Bounds that keep hostile inputs from costing unbounded memory or time."""

    max_member_size: int = 16 << 30  # declared uncompressed size of one member
    max_total_size: int = 256 << 30  # sum over a wheel's members
    max_members: int = 1_000_000
    max_central_directory: int = 256 << 20


DEFAULT_LIMITS = Limits()
MAX_MEMBER_SIZE = DEFAULT_LIMITS.max_member_size


def unsafe_member_name(name: str) -> str | None:
    """Why a zip member name is hostile, or None when it is an ordinary relative path."""
    if not name:
        return "empty member name"
    if "\0" in name or any(ord(ch) < 32 for ch in name):
        return "control character in member name"
    if name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":"):
        return "absolute member path"
    if "\\" in name:
        return "backslash in member name"
    if ".." in name.split("/"):
        return "'..' in member path"
    return None


def file_chunks(path: str) -> Callable[[], Iterator[Chunk]]:
    """Chunk source for a file on disk: the whole file as one chunk, read on demand."""

    def gen() -> Iterator[Chunk]:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size == 0:
                return
            yield FileBuffer(f.fileno(), size)

    return gen


def _check_central_directory(f: object, path: str, limits: Limits) -> None:
    """Refuse zips whose central directory alone would be huge (before zipfile reads it)."""
    fh = f  # typed loosely: a binary file object
    fh.seek(0, os.SEEK_END)  # type: ignore[attr-defined]
    end = fh.tell()  # type: ignore[attr-defined]
    tail_len = min(end, 65557)
    fh.seek(end - tail_len)  # type: ignore[attr-defined]
    tail = fh.read(tail_len)  # type: ignore[attr-defined]
    i = tail.rfind(b"PK\x05\x06")
    if i < 0 or i + 22 > len(tail):
        raise InputError(path, "not a zip file (no end-of-central-directory record)")
    count, cd_size, _cd_offset = struct.unpack_from("<HII", tail, i + 10)
    if cd_size != 0xFFFFFFFF and cd_size > limits.max_central_directory:
        raise InputError(path, f"zip central directory of {cd_size} bytes is implausibly large")
    if count != 0xFFFF and count > limits.max_members:
        raise InputError(path, f"zip lists {count} members, more than {limits.max_members}")
    fh.seek(0)  # type: ignore[attr-defined]


class WheelFile:
    """Random access to a wheel's members as inflate streams."""

    def __init__(self, path: str, limits: Limits = DEFAULT_LIMITS) -> None:
        self.path = path
        self.limits = limits
        self._f = open(path, "rb")  # noqa: SIM115 - closed by close()
        try:
            _check_central_directory(self._f, path, limits)
            self.zip = zipfile.ZipFile(self._f)
        except zipfile.BadZipFile as exc:
            self._f.close()
            raise InputError(path, f"corrupt zip: {exc}") from None
        except InputError:
            self._f.close()
            raise
        self.infos = {i.filename: i for i in self.zip.infolist()}

    def close(self) -> None:
        self.zip.close()
        self._f.close()

    def __enter__(self) -> WheelFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def display(self, name: str) -> str:
        return f"{self.path}!{name}"

    def _data_offset(self, info: zipfile.ZipInfo) -> int:
        head = os.pread(self._f.fileno(), 30, info.header_offset)
        if len(head) < 30 or head[:4] != b"PK\x03\x04":
            raise InputError(self.display(info.filename), "bad zip local header")
        nlen, elen = struct.unpack_from("<HH", head, 26)
        start: int = info.header_offset + 30 + nlen + elen
        return start

    def chunks(self, info: zipfile.ZipInfo, limit: int | None = None) -> Iterator[bytes]:
        """Inflate a member front to back; with ``limit``, stop after that many bytes.

        A full read checks the size and CRC the central directory declares: a member that
        inflates beyond its declared size is refused as soon as it does (zip bombs).
        """
        where = self.display(info.filename)
        declared = info.file_size
        want = declared if limit is None else min(limit, declared)
        fd = self._f.fileno()
        pos = self._data_offset(info)
        left = info.compress_size
        produced = 0
        crc = 0
        from isal import isal_zlib

        if info.compress_type == zipfile.ZIP_STORED:
            if left != declared:
                raise InputError(where, "stored member's sizes disagree")
            while produced < want:
                piece = os.pread(fd, min(OUT_SIZE, want - produced), pos + produced)
                if not piece:
                    raise InputError(where, "zip member is truncated")
                produced += len(piece)
                if limit is None:
                    crc = isal_zlib.crc32(piece, crc)
                yield piece
        elif info.compress_type == zipfile.ZIP_DEFLATED:
            d = isal_zlib.decompressobj(-15)
            pending = b""
            # A prefix (sniffing) needs little input and output; a full read, big pieces.
            read_size = READ_SIZE if limit is None else min(READ_SIZE, max(4096, 4 * limit))
            while produced < want:
                # Once the input is all read, keep calling with b"": isal takes input in
                # ahead of the output it owes, so an empty unconsumed_tail is not the end.
                if not pending and left > 0:
                    pending = os.pread(fd, min(read_size, left), pos)
                    if not pending:
                        raise InputError(where, "zip member is truncated")
                    pos += len(pending)
                    left -= len(pending)
                try:
                    # One byte more than declared on a full read exposes a zip bomb.
                    room = want - produced + (limit is None)
                    out = d.decompress(pending, min(OUT_SIZE, room))
                except Exception as exc:  # isal_zlib.error; its stubs do not type it
                    raise InputError(where, f"corrupt deflate data ({exc})") from None
                pending = d.unconsumed_tail
                if not out:
                    if d.eof or (not pending and left <= 0):
                        break
                    continue
                if produced + len(out) > declared:
                    raise InputError(
                        where, f"inflates beyond its declared size of {declared} bytes"
                    )
                if limit is not None and produced + len(out) > want:
                    out = out[: want - produced]
                produced += len(out)
                if limit is None:
                    crc = isal_zlib.crc32(out, crc)
                yield out
        else:
            # Rare methods (bzip2, lzma): zipfile's own stream, on a zip object of our own,
            # since a forked worker shares this one's file offset with its siblings.
            try:
                with zipfile.ZipFile(self.path) as own, own.open(info) as f:
                    while produced < want:
                        piece = f.read(min(OUT_SIZE, want - produced))
                        if not piece:
                            break
                        produced += len(piece)
                        yield piece
                    if limit is None and f.read(1):
                        raise InputError(where, "inflates beyond its declared size")
            except (zipfile.BadZipFile, NotImplementedError, EOFError, OSError,
                    RuntimeError, ValueError) as exc:
                raise InputError(where, f"cannot decompress ({exc})") from None
            crc = info.CRC  # zipfile checks the CRC itself
        if limit is None:
            if produced != declared:
                raise InputError(where, f"inflates to {produced} bytes, declared {declared}")
            if crc != info.CRC:
                raise InputError(where, "CRC mismatch: the member is corrupt")

    def prefix(self, info: zipfile.ZipInfo, n: int) -> bytes:
        """The first ``n`` bytes of a member (fewer if it is shorter)."""
        if info.compress_type in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            # One read for the local header and the start of the data: this runs once per
            # member, thousands of times for a big wheel.
            guess = 30 + len(info.orig_filename.encode()) + len(info.extra) + 64
            want = min(info.compress_size, 4 * n + 1024)
            blob = os.pread(self._f.fileno(), guess + want, info.header_offset)
            if len(blob) >= 30 and blob[:4] == b"PK\x03\x04":
                nlen, elen = struct.unpack_from("<HH", blob, 26)
                start = 30 + nlen + elen
                data = blob[start : start + want]
                if len(data) == want:
                    if info.compress_type == zipfile.ZIP_STORED:
                        return data[:n]
                    from isal import isal_zlib

                    try:
                        out: bytes = isal_zlib.decompressobj(-15).decompress(data, n)
                    except Exception:  # corrupt: the full read names the problem
                        out = b""
                    if len(out) == min(n, info.file_size):
                        return out
        return b"".join(self.chunks(info, n))

    def read_small(self, name: str, cap: int = 16 << 20) -> bytes | None:
        info = self.infos.get(name)
        if info is None or info.file_size > cap:
            return None
        return b"".join(self.chunks(info))


def wheel_info(wf: WheelFile) -> WheelInfo | None:
    """Name, version, tags and requirements from the filename and ``.dist-info``."""
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename
    from packaging.version import Version

    base = os.path.basename(wf.path)
    try:
        parsed_name, version, _build, tags = parse_wheel_filename(base)
        name: str = str(parsed_name)
        tag_list = tuple(sorted(str(t) for t in tags))
        vstr = str(version)
    except InvalidWheelFilename:
        name, vstr, tag_list = base, "", ()
    meta_name = next(
        (n for n in wf.infos if n.count("/") == 1 and n.endswith(".dist-info/METADATA")), None
    )
    requires: tuple[str, ...] = ()
    if meta_name:
        raw = wf.read_small(meta_name)
        if raw is not None:
            import email.parser

            msg = email.parser.BytesHeaderParser().parsebytes(raw)
            requires = tuple(msg.get_all("Requires-Dist") or ())
            if not vstr:
                vstr = msg.get("Version", "")
            if name == base:
                name = msg.get("Name", base)
    local = None
    if vstr:
        try:
            local = Version(vstr).local
        except Exception:
            local = None
    return WheelInfo(
        name=str(name), version=vstr, tags=tag_list, requires_dist=requires, local_version=local
    )


def read_member(
    wf: WheelFile, name: str, payload: str = "sample"
) -> tuple[list[Binary], list[Problem], bool]:
    """Read one wheel member: (binaries, problems, was it a binary)."""
    info = wf.infos[name]
    where = wf.display(name)
    try:
        if info.file_size > wf.limits.max_member_size:
            raise InputError(where, f"declared size {info.file_size} exceeds the limit")
        kind = sniff(wf.prefix(info, SNIFF_BYTES))
        if kind is None:
            return [], [], False
        return (
            read_binary(where, info.file_size, lambda: wf.chunks(info), kind, payload=payload),
            [],
            True,
        )
    except InputError as exc:
        return [], [Problem(exc.path, exc.problem)], True


def read_path(path: str, payload: str = "sample") -> tuple[list[Binary], list[Problem], bool]:
    """Read one file on disk: (binaries, problems, was it a binary)."""
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(path, "not a regular file")
        with open(path, "rb") as f:
            head = f.read(SNIFF_BYTES)
        kind = sniff(head)
        if kind is None:
            return [], [], False
        return read_binary(path, st.st_size, file_chunks(path), kind, payload=payload), [], True
    except InputError as exc:
        return [], [Problem(exc.path, exc.problem)], True
    except OSError as exc:
        return [], [Problem(path, exc.strerror or str(exc))], True
