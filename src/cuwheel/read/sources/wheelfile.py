"""Random access to a wheel's members as decompressed streams: the local header of each
member checked against its central entry (APPNOTE 4.3.7), then one bounded loop over
every compression method that checks the declared size and CRC (zipdir.py reads the
central directory, inflate.py holds the decoders)."""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator

from cuwheel.errors import InputError
from cuwheel.read.sources.files import open_fd
from cuwheel.read.sources.inflate import CODEC_ERRORS, METHODS, STORED, decoder, isal
from cuwheel.read.sources.zipdir import (
    DEFAULT_LIMITS,
    EXTRA_GUESS,
    LOCAL,
    Limits,
    Member,
    install_clashes,
    read_central_directory,
    unsafe_member_name,
)

__all__ = ["OUT_SIZE", "READ_SIZE", "WheelFile"]

# Read and inflate in pieces of this size: big enough for speed, small for memory.
READ_SIZE = 1 << 20
OUT_SIZE = 4 << 20
# zipfile refuses members that need a later version to extract (APPNOTE 6.3).
MAX_VERSION_NEEDED = 63


class WheelFile:
    """Random access to a wheel's members as decompressed streams (one descriptor, read
    with ``pread``: forked workers share it safely)."""

    def __init__(self, path: str, limits: Limits = DEFAULT_LIMITS) -> None:
        self.path = path
        self.limits = limits
        try:
            self._fd = open_fd(path)
        except OSError as exc:
            raise InputError(path, exc.strerror or str(exc)) from None
        try:
            self.members = read_central_directory(self._fd, path, limits)
        except OSError as exc:
            os.close(self._fd)
            raise InputError(path, exc.strerror or str(exc)) from None
        except BaseException:
            os.close(self._fd)
            raise
        self.infos = {m.name: m for m in self.members}
        self._starts: dict[int, int] = {}
        clashes = install_clashes(self.members)
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
        if m.method not in METHODS:
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
        blob = os.pread(self._fd, LOCAL.size + nlen + EXTRA_GUESS + first, m.header_offset)
        if len(blob) < LOCAL.size or blob[:4] != b"PK\x03\x04":
            raise InputError(where, "bad zip local header")
        lnlen, lelen = struct.unpack_from("<HH", blob, 26)
        local_name = blob[LOCAL.size : LOCAL.size + lnlen]
        if lnlen != nlen or local_name != m.raw_name:
            shown = local_name[:200].decode("utf-8", "backslashreplace")
            raise InputError(where, f"local header names the member {shown!r}: "
                             "it differs from the central directory's name")
        start = m.header_offset + LOCAL.size + lnlen + lelen
        if start + m.compress_size > m.end_bound:
            raise InputError(where, "member data runs into the next zip entry "
                             "(overlapping entries)")
        self._starts[m.index] = start
        data = blob[LOCAL.size + lnlen + lelen :]
        if len(data) < first:
            data += os.pread(self._fd, first - len(data), start + len(data))
        return start, data[:first]

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
        crc32 = isal().crc32
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
        dec = decoder(m.method, m.file_size, self.limits.max_lzma_dictionary)
        produced = 0
        crc = 0
        method = METHODS[m.method]
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
            except CODEC_ERRORS as exc:
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
