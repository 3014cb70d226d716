"""Inputs: wheels (read member by member from the zip), directories, installed
distributions and single files; each yields the binaries it holds.

Wheels follow the binary distribution format (PEP 427 / the PyPA wheel spec): a zip
whose members are inflated here as streams, never extracted to disk.  The zip structure
is parsed here rather than by ``zipfile``: wheels are untrusted input, and every field of
the end record, the zip64 records, the central directory and the local headers is
bounded and validated before it is used (APPNOTE.TXT 6.3.10, sections 4.3 and 4.4).

Over 400 lines: the zip structure (end records, zip64, central directory, local headers)
and the one bounded decompression loop for every method are one format, read here
together so that every field is checked where it is used.
"""

from __future__ import annotations

import bz2
import errno
import lzma
import os
import stat
import struct
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

from cuwheel._json import JsonError, load_json
from cuwheel.errors import InputError
from cuwheel.model.inventory import Binary, BuildRecord, Problem, WheelInfo
from cuwheel.read.binary import SNIFF_BYTES, read_binary, sniff
from cuwheel.read.stream import Chunk, FileBuffer

__all__ = [
    "MAX_MEMBER_SIZE",
    "Limits",
    "Member",
    "WheelFile",
    "file_chunks",
    "read_path",
    "unsafe_member_name",
]

# Read and inflate in pieces of this size: big enough for speed, small for memory.
READ_SIZE = 1 << 20
OUT_SIZE = 4 << 20


def _codec_errors() -> tuple[type[BaseException], ...]:
    """What the decompressors raise on corrupt data: isal's IsalError (isal_zlib.error),
    lzma.LZMAError, and OSError / ValueError (bz2 reports corrupt data as those)."""
    import lzma

    from isal import isal_zlib

    isal_error: type[BaseException] = isal_zlib.error  # type: ignore[assignment]  # stubs: an instance
    return (isal_error, lzma.LZMAError, OSError, ValueError, EOFError)


_CODEC_ERRORS = _codec_errors()


@dataclass(frozen=True)
class Limits:
    """Bounds that keep hostile inputs from costing unbounded memory or time."""

    max_member_size: int = 16 << 30  # declared uncompressed size of one member
    max_total_size: int = 256 << 30  # sum over a wheel's members
    max_members: int = 1_000_000
    max_central_directory: int = 256 << 20
    # Declared size over compressed size, for members over 1 MiB.  Deflate cannot pass
    # 1032:1; bzip2 and lzma can (a few KB of bzip2 may declare gigabytes of zeros).
    max_ratio: int = 2000
    max_lzma_dictionary: int = 64 << 20  # xz -9 uses 64 MiB


DEFAULT_LIMITS = Limits()
MAX_MEMBER_SIZE = DEFAULT_LIMITS.max_member_size

# Compression methods (APPNOTE 4.4.5) read here, as pip's zipfile reads them.
STORED, DEFLATED, BZIP2, LZMA = 0, 8, 12, 14
_METHODS = {STORED: "stored", DEFLATED: "deflate", BZIP2: "bzip2", LZMA: "lzma"}
# zipfile refuses members that need a later version to extract (APPNOTE 6.3).
MAX_VERSION_NEEDED = 63

_EOCD = struct.Struct("<4sHHHHIIH")  # end of central directory record, 22 bytes
_EOCD64_LOCATOR = struct.Struct("<4sIQI")  # 20 bytes
_EOCD64 = struct.Struct("<4sQHHIIQQQQ")  # 56 bytes (without extensible data)
_CENTRAL = struct.Struct("<4sHHHHHHIIIHHHHHII")  # 46 bytes
_LOCAL = struct.Struct("<4sHHHHHIIIHH")  # 30 bytes
_MAX_COMMENT = 0xFFFF
# Bytes read past a local header's name in the same read: extra fields are usually short.
_EXTRA_GUESS = 64


def unsafe_member_name(name: str) -> str | None:
    """Why a zip member name is hostile, or None when it is an ordinary relative path."""
    if not name:
        return "empty member name"
    for ch in "" if name.isascii() and name.isprintable() else name:
        cat = unicodedata.category(ch)
        if cat == "Cc":
            return "control character in member name"
        if cat in ("Zl", "Zp"):
            return "line separator in member name"
        if cat == "Cf":
            return "invisible formatting character in member name"
    if name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":"):
        return "absolute member path"
    if "\\" in name:
        return "backslash in member name"
    if ".." in name.split("/"):
        return "'..' in member path"
    return None


def installed_path(name: str) -> str:
    """Where an installer writes member ``name``, relative to its target: the path as
    ``os.path.join`` resolves it (empty and ``.`` components vanish: ``z/./lib.so`` and
    ``z//lib.so`` are both ``z/lib.so``).  The one rule for "same installed file"."""
    return "/".join(p for p in name.split("/") if p not in ("", "."))


def _install_clashes(members: list[Member]) -> dict[int, str]:
    """Members an installer could not install as they are, by index -> why: one whose
    installed path a later member writes again (pip keeps the last one's bytes, the
    ``installer`` package refuses the wheel), and a file whose path another member needs
    as a directory."""
    out: dict[int, str] = {}
    last: dict[str, Member] = {}
    for m in members:
        if m.is_dir() or unsafe_member_name(m.name):
            continue
        path = installed_path(m.name)
        earlier = last.get(path)
        if earlier is not None:
            out[earlier.index] = (f"installs to {path!r} as member {m.name!r} does, which "
                                  "overwrites it (or makes an installer refuse the wheel)")
        last[path] = m
    dirs: set[str] = set()
    for path in last:
        parts = path.split("/")
        dirs.update("/".join(parts[:i]) for i in range(1, len(parts)))
    for path, m in last.items():
        if path in dirs:
            out[m.index] = (f"installs to {path!r}, which other members need as a "
                            "directory (an installer cannot install both)")
    return out


def _open_regular(path: str) -> int:
    """A descriptor for a regular file; never blocks (a FIFO is refused, not waited on)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise InputError(path, "not a regular file")
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_regular(path: str) -> BinaryIO:
    """A regular file opened for reading, without following a FIFO or device into a read
    that never ends (the one rule for files named by a mirror, a lock, a cache or an
    installed distribution); OSError when it cannot be opened or is not a regular file."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file (a FIFO, device or directory)")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str, limit: int) -> bytes | None:
    """The bytes of a regular file of at most ``limit`` bytes, None when it is larger;
    OSError as :func:`open_regular`."""
    with open_regular(path) as fh:
        data = fh.read(limit + 1)
    return None if len(data) > limit else data


def file_chunks(path: str) -> Callable[[], Iterator[Chunk]]:
    """Chunk source for a file on disk: the whole file as one chunk, read on demand."""

    def gen() -> Iterator[Chunk]:
        try:
            fd = _open_regular(path)
        except OSError as exc:
            raise InputError(path, exc.strerror or str(exc)) from None
        try:
            size = os.fstat(fd).st_size
            if size == 0:
                return
            yield FileBuffer(fd, size)
        finally:
            os.close(fd)

    return gen


# -- the zip structure ------------------------------------------------------------------
@dataclass(slots=True)
class Member:
    """One central-directory entry, its fields validated (zip64 values applied); not to
    be changed once the WheelFile holds it."""

    name: str  # UTF-8 when flag bit 11 says so, else cp437 (as zipfile decodes)
    raw_name: bytes
    index: int  # position in the central directory
    method: int
    flags: int
    version_needed: int
    crc: int
    compress_size: int
    file_size: int
    header_offset: int  # of the local header, from the start of the file
    end_bound: int  # where the next entry (or the central directory) starts
    bad_name: str | None = None  # a name flagged UTF-8 that is not
    external_attr: int = 0  # high 16 bits: the Unix mode, where the archiver wrote one

    def is_dir(self) -> bool:
        return self.name.endswith("/")


def _corrupt(path: str, what: str) -> InputError:
    return InputError(path, f"corrupt zip: {what}")


def _find_end_record(tail: bytes) -> int:
    """Offset in ``tail`` of the end-of-central-directory record, or -1: the one zipfile
    (so pip) takes, the last signature in the file, so that both read the same archive."""
    i = tail.rfind(b"PK\x05\x06")
    return i if 0 <= i <= len(tail) - _EOCD.size else -1


def _read_central_directory(fd: int, path: str, limits: Limits) -> list[Member]:
    """Parse and validate the end records and the central directory of the zip at
    ``fd``: raises InputError for anything that is no zip, or a hostile or broken one."""
    size = os.fstat(fd).st_size
    tail_len = min(size, _EOCD.size + _MAX_COMMENT)
    tail = os.pread(fd, tail_len, size - tail_len)
    i = _find_end_record(tail)
    if i < 0:
        raise InputError(path, "not a zip file (no end-of-central-directory record)")
    eocd_pos = size - tail_len + i
    _, disk, cd_disk, _n_disk, count, cd_size, cd_offset, _ = _EOCD.unpack_from(tail, i)
    cd_end = eocd_pos  # the central directory ends where the end record (or zip64's) starts
    zip64 = False
    if eocd_pos >= _EOCD64_LOCATOR.size:
        loc = os.pread(fd, _EOCD64_LOCATOR.size, eocd_pos - _EOCD64_LOCATOR.size)
        sig, z64_disk, z64_offset, disks = _EOCD64_LOCATOR.unpack(loc)
        if sig == b"PK\x06\x07":
            zip64 = True
            if z64_disk != 0 or disks > 1:
                raise InputError(path, "zip archives that span disks are not supported")
            loc_pos = eocd_pos - _EOCD64_LOCATOR.size
            # Right before the locator, where zipfile looks for it (z64_offset is not
            # used: bytes prepended to the archive shift it).
            rec_pos = loc_pos - _EOCD64.size
            rec = os.pread(fd, _EOCD64.size, rec_pos) if rec_pos >= 0 else b""
            if rec[:4] != b"PK\x06\x06":
                raise _corrupt(path, "zip64 end-of-central-directory record is missing")
            del z64_offset
            (_, _, _, _, disk, cd_disk, _n_disk, count, cd_size, cd_offset) = _EOCD64.unpack(rec)
            cd_end = rec_pos
    if disk != 0 or cd_disk != 0:
        raise InputError(path, "zip archives that span disks are not supported")
    if cd_size > limits.max_central_directory:
        raise InputError(path, f"zip central directory of {cd_size} bytes is implausibly large")
    if count > limits.max_members:
        raise InputError(path, f"zip lists {count} members, more than {limits.max_members}")
    cd_start = cd_end - cd_size
    # Bytes before the archive (a self-extractor's stub) shift every offset: zipfile
    # allows that.  A negative shift means the end record lies.
    concat = cd_start - cd_offset
    if cd_start < 0 or concat < 0:
        raise _corrupt(path, f"central directory of {cd_size} bytes at offset {cd_offset} "
                       f"does not end where its end record starts ({cd_end})")
    cd = os.pread(fd, cd_size, cd_start)
    if len(cd) != cd_size:
        raise _corrupt(path, "central directory is truncated")
    members: list[Member] = []
    seen: set[str] = set()
    pos = 0
    while pos < cd_size:
        n = len(members)
        if n >= limits.max_members:
            raise InputError(path, f"zip holds more than {limits.max_members} members")
        if pos + _CENTRAL.size > cd_size or cd[pos : pos + 4] != b"PK\x01\x02":
            raise _corrupt(path, f"central directory entry {n} is not one (bad signature)")
        (_, _made, needed, flags, method, _t, _d, crc, csize, usize, nlen, elen, clen,
         disk_start, _ia, ext_attr, offset) = _CENTRAL.unpack_from(cd, pos)
        name_at = pos + _CENTRAL.size
        pos = name_at + nlen + elen + clen
        if pos > cd_size:
            raise _corrupt(path, f"central directory entry {n} runs past its end")
        raw = cd[name_at : name_at + nlen]
        extra = cd[name_at + nlen : name_at + nlen + elen]
        del disk_start  # as zipfile: multi-disk archives are refused from the end records
        usize, csize, offset = _extra_fields(path, n, extra, usize, csize, offset)
        bad_name = None
        if flags & 0x800:
            try:
                name = raw.decode("utf-8")
            except UnicodeDecodeError:
                name = raw.decode("utf-8", "backslashreplace")
                bad_name = "member name is flagged UTF-8 but is not valid UTF-8"
        else:
            name = raw.decode("cp437")
        if name in seen:
            raise _corrupt(path, f"duplicate member name {name!r}")
        seen.add(name)
        members.append(Member(
            name=name, raw_name=raw, index=n, method=method, flags=flags,
            version_needed=needed, crc=crc, compress_size=csize, file_size=usize,
            header_offset=offset + concat, end_bound=cd_start, bad_name=bad_name,
            external_attr=ext_attr,
        ))
    if count != len(members) and (zip64 or count != len(members) & 0xFFFF):
        raise _corrupt(path, f"the end record counts {count} members, "
                       f"the central directory holds {len(members)}")
    return _bound_ranges(path, members, cd_start)


def _extra_fields(
    path: str, n: int, extra: bytes, usize: int, csize: int, offset: int
) -> tuple[int, int, int]:
    """Walk a central entry's extra fields (APPNOTE 4.5), as zipfile does: a field that
    runs past the end is corrupt, fewer than 4 bytes left are padding.  Sizes and offset
    come from the zip64 field (4.5.3) where the 32-bit fields say so (0xFFFFFFFF)."""
    need = [usize == 0xFFFFFFFF, csize == 0xFFFFFFFF, offset == 0xFFFFFFFF]
    at = 0
    while at + 4 <= len(extra):
        hid, hlen = struct.unpack_from("<HH", extra, at)
        body = extra[at + 4 : at + 4 + hlen]
        at += 4 + hlen
        if len(body) < hlen:
            raise _corrupt(path, f"central directory entry {n}: extra field {hid:#06x} "
                           "runs past its end")
        if hid != 1 or not any(need):
            continue
        if len(body) < 8 * sum(need):
            raise _corrupt(path, f"central directory entry {n}: zip64 extra field is short")
        vals = list(struct.unpack_from(f"<{sum(need)}Q", body))
        if need[0]:
            usize = vals.pop(0)
        if need[1]:
            csize = vals.pop(0)
        if need[2]:
            offset = vals.pop(0)
        need = [False, False, False]
    return usize, csize, offset


def _bound_ranges(path: str, members: list[Member], cd_start: int) -> list[Member]:
    """Refuse entries that lie outside the archive's data or overlap (two central entries
    on one stream would inflate it twice); give each the offset its data must end by."""
    order = sorted(members, key=lambda m: m.header_offset)
    for k, m in enumerate(order):
        # The least room it takes: its local header, its name (the same as the central
        # one, checked when read) and its compressed data.
        least_end = m.header_offset + _LOCAL.size + len(m.raw_name) + m.compress_size
        if least_end > cd_start:
            raise _corrupt(path, f"member {m.name!r} (local header at {m.header_offset}, "
                           f"{m.compress_size} bytes) lies outside the archive's data")
        nxt = order[k + 1] if k + 1 < len(order) else None
        if nxt is not None and least_end > nxt.header_offset:
            raise _corrupt(path, f"members {m.name!r} and {nxt.name!r} overlap")
        m.end_bound = nxt.header_offset if nxt is not None else cd_start
    return members


# -- decompression, bounded ---------------------------------------------------------------
class _Decoder:
    """One member's decompressor: ``step(data, room)`` takes compressed bytes and returns
    (at most ``room`` bytes of output, the input it did not take)."""

    eof = False

    def wants_input(self) -> bool:
        return True

    def step(self, data: bytes, room: int) -> tuple[bytes, bytes]:
        return data[:room], data[room:]  # stored


def _isal() -> Any:
    global _ISAL
    if _ISAL is None:
        from isal import isal_zlib  # only when a wheel is read: it costs start-up time

        _ISAL = isal_zlib
    return _ISAL


_ISAL: Any = None


class _Inflate(_Decoder):
    def __init__(self) -> None:
        self._d = _isal().decompressobj(-15)

    def step(self, data: bytes, room: int) -> tuple[bytes, bytes]:
        out: bytes = self._d.decompress(data, room)
        self.eof = bool(self._d.eof)
        tail: bytes = self._d.unconsumed_tail
        return out, tail


class _Bz2OrLzma(_Decoder):
    """bz2 and lzma decompressors keep the input they have not used yet; with
    ``max_length`` they never produce more than asked."""

    def __init__(self, d: bz2.BZ2Decompressor | lzma.LZMADecompressor) -> None:
        self._d = d

    def wants_input(self) -> bool:
        return bool(self._d.needs_input)

    def step(self, data: bytes, room: int) -> tuple[bytes, bytes]:
        out = self._d.decompress(data, room)
        self.eof = self._d.eof
        return out, b""


class _ZipLzma(_Decoder):
    """LZMA as zip stores it (APPNOTE 5.8.8): a version (2 bytes), the size of the
    properties (2 bytes, 5 for LZMA1) and the properties (lc/lp/pb byte, dictionary size),
    then a raw LZMA1 stream."""

    def __init__(self, declared: int, max_dict: int) -> None:
        self._head = b""
        self._declared = declared
        self._max_dict = max_dict
        self._d: _Bz2OrLzma | None = None

    def wants_input(self) -> bool:
        return self._d is None or self._d.wants_input()

    def step(self, data: bytes, room: int) -> tuple[bytes, bytes]:
        if self._d is None:
            need = 9 - len(self._head)
            self._head += data[:need]
            data = data[need:]
            if len(self._head) < 9:
                return b"", b""
            self._d = _Bz2OrLzma(self._lzma(self._head))
        out, rest = self._d.step(data, room)
        self.eof = self._d.eof
        return out, rest

    def _lzma(self, head: bytes) -> lzma.LZMADecompressor:
        psize, props, dict_size = struct.unpack_from("<HBI", head, 2)
        if psize != 5 or props >= 9 * 5 * 5:
            raise ValueError(f"bad LZMA properties (size {psize}, byte {props})")
        lc, lp, pb = props % 9, props // 9 % 5, props // 45
        # No distance can reach before the start of the output, so a dictionary the size
        # of the declared output suffices: a hostile 4 GiB one is not allocated.
        dict_size = max(4096, min(dict_size, self._declared))
        if dict_size > self._max_dict:
            raise ValueError(f"LZMA dictionary of {dict_size} bytes is over the limit")
        filt = {"id": lzma.FILTER_LZMA1, "dict_size": dict_size, "lc": lc, "lp": lp,
                "pb": pb}
        return lzma.LZMADecompressor(format=lzma.FORMAT_RAW, filters=[filt])


class WheelFile:
    """Random access to a wheel's members as decompressed streams (one descriptor, read
    with ``pread``: forked workers share it safely)."""

    def __init__(self, path: str, limits: Limits = DEFAULT_LIMITS) -> None:
        self.path = path
        self.limits = limits
        try:
            self._fd = _open_regular(path)
        except OSError as exc:
            raise InputError(path, exc.strerror or str(exc)) from None
        try:
            self.members = _read_central_directory(self._fd, path, limits)
        except OSError as exc:
            os.close(self._fd)
            raise InputError(path, exc.strerror or str(exc)) from None
        except BaseException:
            os.close(self._fd)
            raise
        self.infos = {m.name: m for m in self.members}
        self._starts: dict[int, int] = {}
        clashes = _install_clashes(self.members)
        self._refusals = [clashes.get(m.index) or self._refusal(m) for m in self.members]

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> WheelFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def display(self, name: str) -> str:
        return f"{self.path}!{name}"

    def refusal(self, m: Member) -> str | None:
        """Why member ``m`` is not read (a problem to report), or None."""
        return self._refusals[m.index]

    def _refusal(self, m: Member) -> str | None:
        why = m.bad_name or unsafe_member_name(m.name)
        if why or m.is_dir():
            return why
        if m.flags & 0x2041:  # bit 0: encrypted; 6: strong encryption; 13: masked headers
            return "encrypted member"
        if m.flags & 0x20:
            return "compressed patched data is not supported"
        if m.method not in _METHODS:
            return f"compression method {m.method} is not supported"
        if m.version_needed > MAX_VERSION_NEEDED:
            v = m.version_needed
            return f"needs zip version {v // 10}.{v % 10} to extract, which is not supported"
        if m.file_size > self.limits.max_member_size:
            return f"declared size {m.file_size} exceeds the limit"
        if m.method == STORED and m.compress_size != m.file_size:
            return "stored member's sizes disagree"
        if m.file_size > (1 << 20) and m.file_size > self.limits.max_ratio * m.compress_size:
            return (f"declares {m.file_size} bytes from {m.compress_size} compressed "
                    f"(more than {self.limits.max_ratio}:1)")
        return None

    def _local(self, m: Member, first: int) -> tuple[int, bytes]:
        """Check ``m``'s local header against its central entry; return where its data
        starts and the first ``first`` bytes of it (one read for both)."""
        where = self.display(m.name)
        start = self._starts.get(m.index)
        if start is not None:
            return start, os.pread(self._fd, first, start) if first else b""
        nlen = len(m.raw_name)
        blob = os.pread(self._fd, _LOCAL.size + nlen + _EXTRA_GUESS + first, m.header_offset)
        if len(blob) < _LOCAL.size or blob[:4] != b"PK\x03\x04":
            raise InputError(where, "bad zip local header")
        lnlen, lelen = struct.unpack_from("<HH", blob, 26)
        local_name = blob[_LOCAL.size : _LOCAL.size + lnlen]
        if lnlen != nlen or local_name != m.raw_name:
            shown = local_name[:200].decode("utf-8", "backslashreplace")
            raise InputError(where, f"local header names the member {shown!r}: "
                             "it differs from the central directory's name")
        start = m.header_offset + _LOCAL.size + lnlen + lelen
        if start + m.compress_size > m.end_bound:
            raise InputError(where, "member data runs into the next zip entry "
                             "(overlapping entries)")
        self._starts[m.index] = start
        data = blob[_LOCAL.size + lnlen + lelen :]
        if len(data) < first:
            data += os.pread(self._fd, first - len(data), start + len(data))
        return start, data[:first]

    def _decoder(self, m: Member) -> _Decoder:
        if m.method == DEFLATED:
            return _Inflate()
        if m.method == BZIP2:
            return _Bz2OrLzma(bz2.BZ2Decompressor())
        if m.method == LZMA:
            return _ZipLzma(m.file_size, self.limits.max_lzma_dictionary)
        return _Decoder()

    def chunks(self, m: Member, limit: int | None = None) -> Iterator[bytes]:
        """Decompress a member front to back; with ``limit``, stop after that many bytes.

        Every method goes through one bounded loop: no call may produce more than the
        declared size allows (plus one byte on a full read, which exposes a zip bomb as
        soon as it happens).  A full read checks the size and CRC the central directory
        declares.
        """
        where = self.display(m.name)
        why = self._refusals[m.index]
        if why:
            raise InputError(where, why)
        crc32 = _isal().crc32
        declared = m.file_size
        full = limit is None
        want = declared if limit is None else min(limit, declared)
        if m.method == STORED:
            read_size = OUT_SIZE if full else max(want, 1)
        else:
            # A prefix (sniffing) needs little input and output; a full read, big pieces.
            read_size = READ_SIZE if full else min(READ_SIZE, max(4096, 4 * want))
        _, pending = self._local(m, min(read_size, m.compress_size))
        pos = self._starts[m.index] + len(pending)
        left = m.compress_size - len(pending)
        dec = self._decoder(m)
        produced = 0
        crc = 0
        method = _METHODS[m.method]
        while not dec.eof:
            room = want - produced + full
            if room <= 0:
                break
            if not pending and left > 0 and dec.wants_input():
                pending = os.pread(self._fd, min(read_size, left), pos)
                if not pending:
                    raise InputError(where, "zip member is truncated")
                pos += len(pending)
                left -= len(pending)
            fed = len(pending)
            try:
                out, pending = dec.step(pending, min(OUT_SIZE, room))
            except _CODEC_ERRORS as exc:
                raise InputError(where, f"corrupt {method} data ({exc})") from None
            if not out:
                # Each turn takes input or gives output, so the loop ends: isal takes
                # input ahead of the output it owes, so input all read is not the end.
                if len(pending) < fed or (not pending and left > 0 and dec.wants_input()):
                    continue
                break
            if produced + len(out) > declared:
                raise InputError(where, f"inflates beyond its declared size of {declared} bytes")
            produced += len(out)
            if full:
                crc = crc32(out, crc)
            yield out
        if produced < want or (full and produced != declared):
            # the stream ended early (a prefix too: a bzip2 block cut short gives nothing)
            raise InputError(where, f"inflates to {produced} bytes, declared {declared}")
        if full and crc != m.crc:
            raise InputError(where, "CRC mismatch: the member is corrupt")

    def prefix(self, m: Member, n: int) -> bytes:
        """The first ``n`` bytes of a member (fewer if it is shorter)."""
        return b"".join(self.chunks(m, n))

    def read_small(self, name: str, cap: int = 16 << 20) -> bytes | None:
        m = self.infos.get(name)
        if m is None or m.file_size > cap or self.refusal(m):
            return None
        return b"".join(self.chunks(m))


def wheel_info(wf: WheelFile) -> tuple[WheelInfo | None, list[Problem]]:
    """Name, version, tags and requirements from the filename and ``.dist-info``, and
    the problem with METADATA if it cannot be read."""
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename
    from packaging.version import InvalidVersion, Version

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
    requires_python: str | None = None
    problems: list[Problem] = []
    if meta_name:
        try:
            raw = wf.read_small(meta_name)
        except InputError as exc:
            raw = None
            problems.append(Problem(exc.path, exc.problem))
        if raw is not None:
            import email.parser

            msg = email.parser.BytesHeaderParser().parsebytes(raw)
            # Header values with bytes that are not ASCII come back as Header objects.
            requires = tuple(str(r) for r in msg.get_all("Requires-Dist") or ())
            rp = msg.get("Requires-Python")
            requires_python = str(rp)[:4096] if rp is not None else None
            if not vstr:
                vstr = str(msg.get("Version", ""))
            if name == base:
                name = str(msg.get("Name", base))
    wheel_tags = _wheel_file_tags(wf, meta_name, problems)
    records = _build_records(wf, problems)
    local = None
    if vstr:
        try:
            local = Version(vstr).local
        except InvalidVersion:
            local = None
    info = WheelInfo(
        name=str(name), version=vstr, tags=tag_list, requires_dist=requires, local_version=local,
        wheel_file_tags=wheel_tags, requires_python=requires_python, build_records=records,
    )
    return info, problems


# Files recording the build (xformers' cpp_lib.json is under 1 KiB); bigger ones are not read.
MAX_RECORD_FILE = 64 << 10
MAX_RECORDS = 16


def _build_records(wf: WheelFile, problems: list[Problem]) -> tuple[BuildRecord, ...]:
    """What the wheel records it was built against: xformers' ``<pkg>/cpp_lib.json``
    (``{"version": {"torch": "2.10.0+cu128", "cuda": 1208, ...}, ...}``, written by its
    setup.py into every wheel since 0.0.2x).  A file that is not that JSON is no record."""
    from cuwheel.read.tables import MAX_NAME

    out: list[BuildRecord] = []
    for name in wf.infos:
        if name.count("/") != 1 or not name.endswith("/cpp_lib.json"):
            continue
        try:
            raw = wf.read_small(name, MAX_RECORD_FILE)
        except InputError as exc:
            problems.append(Problem(exc.path, exc.problem))
            continue
        try:  # the one bounded JSON loader (cuwheel/_json.py)
            data = load_json(raw, max_bytes=MAX_RECORD_FILE) if raw is not None else None
        except JsonError:
            continue
        version = data.get("version") if isinstance(data, dict) else None
        torch = version.get("torch") if isinstance(version, dict) else None
        if isinstance(torch, str) and torch.strip():
            out.append(BuildRecord(name, "torch", torch.strip()[:MAX_NAME]))
            if len(out) >= MAX_RECORDS:
                break
    return tuple(out)


# A WHEEL file is a few hundred bytes; one bigger than this is not read.
MAX_WHEEL_FILE = 1 << 20
MAX_WHEEL_TAGS = 10_000


def _wheel_file_tags(wf: WheelFile, meta_name: str | None,
                     problems: list[Problem]) -> tuple[str, ...] | None:
    """The ``Tag:`` lines of ``<name>.dist-info/WHEEL`` (the dist-info of METADATA when
    there is one), each cut to MAX_NAME characters; None when there is no readable WHEEL."""

    if meta_name is not None:
        name: str | None = meta_name.rsplit("/", 1)[0] + "/WHEEL"
    else:
        name = next((n for n in wf.infos
                     if n.count("/") == 1 and n.endswith(".dist-info/WHEEL")), None)
    if name is None or name not in wf.infos:
        return None
    try:
        raw = wf.read_small(name, MAX_WHEEL_FILE)
    except InputError as exc:
        problems.append(Problem(exc.path, exc.problem))
        return None
    if raw is None:
        return None
    return wheel_file_tags(raw)


def wheel_file_tags(raw: bytes) -> tuple[str, ...]:
    """The ``Tag:`` lines of a WHEEL file's bytes (at most MAX_WHEEL_FILE of them are
    read), at most MAX_WHEEL_TAGS, each cut to MAX_NAME characters."""
    from cuwheel.read.tables import MAX_NAME

    tags: list[str] = []
    for line in raw[:MAX_WHEEL_FILE].decode("utf-8", "replace").splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip().lower() == "tag" and len(tags) < MAX_WHEEL_TAGS:
            tags.append(value.strip()[:MAX_NAME])
    return tuple(tags)


def read_member(
    wf: WheelFile, name: str, payload: str = "sample"
) -> tuple[list[Binary], list[Problem], bool]:
    """Read one wheel member: (binaries, problems, was it a binary)."""
    m = wf.infos[name]
    where = wf.display(name)
    try:
        kind = sniff(wf.prefix(m, SNIFF_BYTES))
        if kind is None:
            return [], [], False
        return (
            read_binary(where, m.file_size, lambda: wf.chunks(m), kind, payload=payload),
            [],
            True,
        )
    except InputError as exc:
        return [], [Problem(exc.path, exc.problem)], True
    except OSError as exc:
        return [], [Problem(where, exc.strerror or str(exc))], True


def read_path(path: str, payload: str = "sample") -> tuple[list[Binary], list[Problem], bool]:
    """Read one file on disk: (binaries, problems, was it a binary)."""
    try:
        fd = _open_regular(path)
        try:
            size = os.fstat(fd).st_size
            head = os.pread(fd, SNIFF_BYTES, 0)
        finally:
            os.close(fd)
        kind = sniff(head)
        if kind is None:
            return [], [], False
        return read_binary(path, size, file_chunks(path), kind, payload=payload), [], True
    except InputError as exc:
        return [], [Problem(exc.path, exc.problem)], True
    except OSError as exc:
        return [], [Problem(path, exc.strerror or str(exc))], True
