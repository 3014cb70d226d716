"""The zip structure of a wheel (the binary distribution format, PEP 427, is a zip):
end records, zip64 records, the central directory, and the rules for member names.

Parsed here rather than by ``zipfile``: wheels are untrusted input, and every field of
the end record, the zip64 records and the central directory is bounded and validated
before it is used (APPNOTE.TXT 6.3.10, sections 4.3 and 4.4).  Local headers are checked
when a member is read (wheelfile.py).
"""

from __future__ import annotations

import os
import struct
import unicodedata
from dataclasses import dataclass

from cuwheel.errors import InputError

__all__ = [
    "DEFAULT_LIMITS",
    "EXTRA_GUESS",
    "LOCAL",
    "MAX_MEMBER_SIZE",
    "Limits",
    "Member",
    "install_clashes",
    "installed_path",
    "read_central_directory",
    "unsafe_member_name",
]


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

_EOCD = struct.Struct("<4sHHHHIIH")  # end of central directory record, 22 bytes
_EOCD64_LOCATOR = struct.Struct("<4sIQI")  # 20 bytes
_EOCD64 = struct.Struct("<4sQHHIIQQQQ")  # 56 bytes (without extensible data)
_CENTRAL = struct.Struct("<4sHHHHHHIIIHHHHHII")  # 46 bytes
LOCAL = struct.Struct("<4sHHHHHIIIHH")  # 30 bytes
_MAX_COMMENT = 0xFFFF
# Bytes read past a local header's name in the same read: extra fields are usually short.
EXTRA_GUESS = 64


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


def install_clashes(members: list[Member]) -> dict[int, str]:
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


def read_central_directory(fd: int, path: str, limits: Limits) -> list[Member]:
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
        least_end = m.header_offset + LOCAL.size + len(m.raw_name) + m.compress_size
        if least_end > cd_start:
            raise _corrupt(path, f"member {m.name!r} (local header at {m.header_offset}, "
                           f"{m.compress_size} bytes) lies outside the archive's data")
        nxt = order[k + 1] if k + 1 < len(order) else None
        if nxt is not None and least_end > nxt.header_offset:
            raise _corrupt(path, f"members {m.name!r} and {nxt.name!r} overlap")
        m.end_bound = nxt.header_offset if nxt is not None else cd_start
    return members
