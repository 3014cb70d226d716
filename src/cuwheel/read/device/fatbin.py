"""Fatbin containers and entries (CUDA's ``fatBinary`` format, 0xBA55ED50).

Layout as in docs/formats.md (#fatbin-container-header, #entry-header, #entry-flags,
#payloads-and-compression), verified on real files: a 16-byte container
header followed by entries, each a variable-size header (64 fixed bytes plus an
optional tail found through pointer fields) and a payload that may be LZ4 or zstd
compressed.  Everything is little-endian.
"""

from __future__ import annotations

import struct
from enum import IntEnum, IntFlag
from typing import Any, NamedTuple

from cuwheel.errors import FatbinError
from cuwheel.model.arch import Arch, Variant
from cuwheel.model.inventory import CodeKind, Compression, FatbinEntry

__all__ = [
    "CONTAINER_HEADER_SIZE",
    "CONTAINER_MAGIC",
    "CONTAINER_SIGNATURE",
    "ENTRY_FIXED_SIZE",
    "MAX_ENTRY_HEADER",
    "ContainerHeader",
    "EntryFlag",
    "EntryHeader",
    "EntryKind",
    "decompress_prefix",
    "parse_container_header",
    "parse_entry_header",
]

CONTAINER_MAGIC = b"\x50\xed\x55\xba"
# Magic + version 1 + header size 16: the only container header ever seen (5,204/5,204);
# the signature every container search looks for.
CONTAINER_SIGNATURE = CONTAINER_MAGIC + b"\x01\x00\x10\x00"
CONTAINER_HEADER_SIZE = 16
ENTRY_FIXED_SIZE = 64
# Largest entry header seen is 128 bytes; anything far beyond that is corrupt input.
MAX_ENTRY_HEADER = 4096

_CONTAINER = struct.Struct("<IHHQ")
_ENTRY = struct.Struct("<HHIQIIHHIIIQQQ")



class EntryKind(IntEnum):
    """The kind field of an entry header (docs/formats.md#entry-header)."""

    PTX = 1
    CUBIN = 2
    LTOIR = 8


_KINDS: dict[int, CodeKind] = {EntryKind.PTX: CodeKind.PTX, EntryKind.CUBIN: CodeKind.SASS,
          EntryKind.LTOIR: CodeKind.LTOIR}


class EntryFlag(IntFlag):
    """The flags field of an entry header (docs/formats.md#entry-flags)."""

    IS_64BIT = 0x1
    DEBUG = 0x2
    HOST_LINUX = 0x10
    HOST_WINDOWS = 0x40
    LZ4 = 0x2000
    ZSTD = 0x8000
    OPAQUE_LTO = 0x10000
    ARCH_SPECIFIC = 0x100000  # "a" targets
    FAMILY_SPECIFIC = 0x200000  # "f" targets
    COMPAT_BLOB = 0x1000000


# The flags tested per entry, as plain ints: an IntFlag operand makes ``&`` a Python-level
# call (40 times slower), and a library has tens of thousands of entries.
_DEBUG = EntryFlag.DEBUG.value
_HOST_LINUX = EntryFlag.HOST_LINUX.value
_HOST_WINDOWS = EntryFlag.HOST_WINDOWS.value
_LZ4 = EntryFlag.LZ4.value
_ZSTD = EntryFlag.ZSTD.value
_ARCH_SPECIFIC = EntryFlag.ARCH_SPECIFIC.value
_FAMILY_SPECIFIC = EntryFlag.FAMILY_SPECIFIC.value


class ContainerHeader(NamedTuple):  # a tuple: one is built per container, fast
    version: int
    header_size: int
    payload_size: int

    @property
    def size(self) -> int:
        return self.header_size + self.payload_size


def parse_container_header(data: bytes) -> ContainerHeader:
    """Decode the 16-byte container header; raises FatbinError when it is not one."""
    if len(data) < CONTAINER_HEADER_SIZE:
        raise FatbinError("truncated fatbin container header")
    magic, version, hsize, psize = _CONTAINER.unpack_from(data, 0)
    if magic != 0xBA55ED50:
        raise FatbinError(f"bad fatbin container magic 0x{magic:08x}")
    if version != 1 or hsize != CONTAINER_HEADER_SIZE:
        raise FatbinError(f"unsupported fatbin container version {version} / header size {hsize}")
    return ContainerHeader(version, hsize, psize)


class EntryHeader(NamedTuple):
    """The decoded header of one fatbin entry (offsets are relative to the entry); a
    tuple, as one is built per entry."""

    kind_code: int  # an EntryKind value
    header_size: int
    payload_size: int
    compressed_size: int
    code_version: tuple[int, int]
    arch_number: int
    identifier_offset: int
    identifier_length: int
    flags: int  # EntryFlag bits, as stored
    uncompressed_size: int

    @property
    def kind(self) -> CodeKind:
        return _KINDS[self.kind_code]

    @property
    def compression(self) -> Compression:
        if self.flags & _ZSTD:
            return Compression.ZSTD
        if self.flags & _LZ4:
            return Compression.LZ4
        return Compression.NONE

    @property
    def variant(self) -> Variant:
        if self.flags & _ARCH_SPECIFIC:
            return "a"
        if self.flags & _FAMILY_SPECIFIC:
            return "f"
        return ""

    @property
    def size(self) -> int:
        return self.header_size + self.payload_size


def parse_entry_header(data: bytes, room: int) -> EntryHeader:
    """Decode the fixed 64-byte part of an entry header.

    ``room`` is the number of bytes left in the container from the entry start; the
    header and payload must fit in it.
    """
    if len(data) < ENTRY_FIXED_SIZE or room < ENTRY_FIXED_SIZE:
        raise FatbinError("truncated fatbin entry header")
    (
        kind,
        _unknown,
        hsize,
        psize,
        csize,
        _opt_off,
        vminor,
        vmajor,
        arch,
        id_off,
        id_len,
        flags,
        _reserved,
        usize,
    ) = _ENTRY.unpack_from(data, 0)
    if kind not in _KINDS:
        raise FatbinError(f"unknown fatbin entry kind {kind}")
    if hsize < ENTRY_FIXED_SIZE or hsize > MAX_ENTRY_HEADER:
        raise FatbinError(f"fatbin entry header size {hsize} out of range")
    if hsize + psize > room:
        raise FatbinError(
            f"fatbin entry claims {hsize + psize} bytes but its container has {room} left"
        )
    if not 10 <= arch <= 999:
        raise FatbinError(f"fatbin entry arch {arch} out of range")
    compressed = flags & (_LZ4 | _ZSTD)
    if compressed and csize > psize:
        raise FatbinError(
            f"fatbin entry compressed size {csize} exceeds its stored size {psize}"
        )
    if id_len and (id_off < ENTRY_FIXED_SIZE or id_off + id_len > hsize):
        # Identifiers were always inside the header; one pointing elsewhere is ignored.
        id_off = id_len = 0
    return EntryHeader(
        kind_code=kind,
        header_size=hsize,
        payload_size=psize,
        compressed_size=csize if compressed else 0,
        code_version=(vmajor, vminor),
        arch_number=arch,
        identifier_offset=id_off,
        identifier_length=id_len,
        flags=flags,
        uncompressed_size=usize if compressed else psize,
    )


# Entries share their Arch and version objects (a few dozen distinct in a library of
# 27,000 entries): fewer objects to build and validate, and a result sent from a worker
# to the parent (schedule.py) pickles each once.  Bounded: hostile versions take 32 bits.
_SHARED: dict[tuple[int, ...] | tuple[int, str], Any] = {}
_MAX_SHARED = 4096


def _arch(number: int, variant: Variant) -> Arch:
    arch: Arch | None = _SHARED.get((number, variant))
    if arch is None:
        arch = Arch(number, variant)
        if len(_SHARED) < _MAX_SHARED:
            _SHARED[number, variant] = arch
    return arch


def _version(version: tuple[int, int]) -> tuple[int, int]:
    shared: tuple[int, int] | None = _SHARED.get(version)
    if shared is None:
        if len(_SHARED) < _MAX_SHARED:
            _SHARED[version] = version
        return version
    return shared


def make_entry(header: EntryHeader, offset: int, header_bytes: bytes) -> FatbinEntry:
    """Turn a decoded header into the inventory's FatbinEntry (payload facts left empty)."""
    ident: str | None = None
    if header.identifier_length and len(header_bytes) >= header.identifier_offset:
        raw = header_bytes[
            header.identifier_offset : header.identifier_offset + header.identifier_length
        ]
        ident = raw.decode("utf-8", "replace")
    flags = header.flags
    if flags & _HOST_WINDOWS:
        host = "windows"
    elif flags & _HOST_LINUX:
        host = "linux"
    else:
        host = "unknown"
    return FatbinEntry(
        offset=offset,
        kind=header.kind,
        arch=_arch(header.arch_number, header.variant),
        code_version=_version(header.code_version),
        flags=flags,
        header_size=header.header_size,
        stored_size=header.payload_size,
        compression=header.compression,
        compressed_size=header.compressed_size,
        uncompressed_size=header.uncompressed_size,
        host=host,
        debug=bool(flags & _DEBUG),
        identifier=ident,
    )


def decompress_prefix(
    compression: Compression,
    payload: bytes,
    compressed_size: int,
    uncompressed_size: int,
    limit: int,
) -> bytes:
    """Decompress at most ``limit`` bytes from the start of an entry payload.

    ``payload`` may be only a prefix of the stored bytes.  Never produces more than
    ``limit`` bytes nor more than the header's declared uncompressed size, so a payload
    that lies about its size cannot make us allocate without bound.  Raises FatbinError
    when the stream is corrupt.
    """
    want = min(limit, uncompressed_size)
    if compression is Compression.NONE:
        return bytes(payload[:want])
    if compression is Compression.ZSTD:
        import io

        import zstandard

        stream = payload[:compressed_size] if compressed_size else payload
        try:
            # The frame header records the content size (0: not recorded); a frame that
            # holds more or less than the entry header declares is a lie, caught cheaply.
            recorded = zstandard.get_frame_parameters(stream).content_size
            if recorded not in (0, zstandard.CONTENTSIZE_UNKNOWN) and \
                    recorded != uncompressed_size:
                raise FatbinError(
                    f"zstd payload holds {recorded} bytes, header declares {uncompressed_size}"
                )
            reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(stream))
            out = reader.read(want)
            if len(out) == want == uncompressed_size and reader.read(1):
                raise FatbinError(
                    f"zstd payload inflates beyond its declared {uncompressed_size} bytes"
                )
        except zstandard.ZstdError as exc:
            raise FatbinError(f"corrupt zstd payload: {exc}") from exc
        return bytes(out)
    # LZ4 raw block: no partial decoding; only the whole stream, and only within limit.
    import lz4.block

    if uncompressed_size > limit or len(payload) < compressed_size:
        return b""
    try:
        out = lz4.block.decompress(payload[:compressed_size], uncompressed_size=uncompressed_size)
    except lz4.block.LZ4BlockError as exc:
        raise FatbinError(f"corrupt LZ4 payload: {exc}") from exc
    if len(out) != uncompressed_size:
        raise FatbinError(
            f"LZ4 payload gives {len(out)} bytes, header declares {uncompressed_size}"
        )
    return bytes(out)
