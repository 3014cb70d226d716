"""ExecuTorch program (``.pte``) and data (``.ptd``) files, from their flatbuffer schemas
(docs/artifacts.md#executorch): a flatbuffer whose file identifier is "ET" + two digits
(``Program``) or "FT01" (``FlatTensor``), with a header after the identifier ("eh00":
program size, segment base offset; "FH01": flatbuffer offset and size, segment base
offset) and data segments after the flatbuffer.  Read here: each execution plan's
delegates (backend id and compile specs), the named data (key -> segment) and the
segments, whose bytes are read as binaries where they are one (the CUDA backend stores
its AOTInductor wrapper library as ``<method>_so_blob``).  Every offset is bounded by the
file; a malformed file is a problem of its Source, never an exception.

Budgets are by bytes, not items (docs/trust.md#a-hostile-exported-program): a string is
decoded once per position and at most MAX_STRING bytes of it (90,000 compile specs naming
one key share one ``str``), a metadata line is kept once, a segment is read once however
many named-data entries point at it, and all segments of a file together are read up to
MAX_SEGMENTS_TOTAL bytes.
"""

from __future__ import annotations

import mmap
import os
import struct

from cuwheel._paths import open_untrusted
from cuwheel.model.inventory import Binary, Problem, Source
from cuwheel.read.binary.embedded import read_bytes
from cuwheel.read.binary.sniff import SNIFF_BYTES, sniff

__all__ = ["flatbuffer_kind", "read_executorch"]

MAX_SEGMENT_READ = 1 << 30
MAX_SEGMENTS_TOTAL = 1 << 30  # bytes of segments read from one file, all together
MAX_ITEMS = 100_000  # vector elements read in one file, all vectors together
MAX_STRING = 4096  # bytes of one flatbuffer string decoded (keys, ids: tens of bytes)


def flatbuffer_kind(head: bytes) -> str | None:
    """"executorch-program" / "executorch-data" from the file identifier at bytes 4-8."""
    if len(head) < 8:
        return None
    ident = head[4:8]
    if ident[:2] == b"ET" and ident[2:].isdigit():
        return "executorch-program"
    if ident == b"FT01":
        return "executorch-data"
    return None


class _Bad(Exception):
    pass


class _Fb:
    """Bounded reads of one flatbuffer (little-endian, offsets from the buffer start)."""

    def __init__(self, buf: bytes | mmap.mmap) -> None:
        self.buf = buf
        self.budget = MAX_ITEMS
        self.strings: dict[int, str] = {}  # position -> decoded: each string once

    def u(self, fmt: str, pos: int) -> int:
        size = struct.calcsize(fmt)
        if pos < 0 or pos + size > len(self.buf):
            raise _Bad(f"offset {pos} is past the end")
        v: int = struct.unpack_from(fmt, self.buf, pos)[0]
        return v

    def root(self) -> int:
        return self.u("<I", 0)

    def field(self, table: int, index: int) -> int | None:
        """Where field ``index`` of the table at ``table`` is stored, or None when absent."""
        vt = table - self.u("<i", table)
        vsize = self.u("<H", vt)
        slot = 4 + 2 * index
        if slot + 2 > vsize:
            return None
        off = self.u("<H", vt + slot)
        return table + off if off else None

    def ref(self, table: int, index: int) -> int | None:
        pos = self.field(table, index)
        return None if pos is None else pos + self.u("<I", pos)

    def vector(self, table: int, index: int) -> list[int]:
        """Positions of the elements of an offset vector (tables, strings)."""
        v = self.ref(table, index)
        if v is None:
            return []
        n = self.u("<I", v)
        self.budget -= n
        if self.budget < 0:
            raise _Bad(f"more than {MAX_ITEMS} table entries")
        return [v + 4 + 4 * i + self.u("<I", v + 4 + 4 * i) for i in range(n)]

    def string(self, table: int, index: int) -> str | None:
        s = self.ref(table, index)
        if s is None:
            return None
        found = self.strings.get(s)
        if found is not None:
            return found
        n = self.u("<I", s)
        if s + 4 + n > len(self.buf):
            raise _Bad("a string past the end")
        text = self.buf[s + 4 : s + 4 + min(n, MAX_STRING)].decode("utf-8", "replace")
        self.strings[s] = text
        return text

    def scalar(self, table: int, index: int, fmt: str, default: int = 0) -> int:
        pos = self.field(table, index)
        return default if pos is None else self.u(fmt, pos)


EtRead = tuple[Source, tuple[tuple[str, str], ...], tuple[str, ...]]


def _segments(fb: _Fb, table: int, index: int) -> list[tuple[int, int]]:
    out = []
    for s in fb.vector(table, index):
        out.append((fb.scalar(s, 0, "<Q"), fb.scalar(s, 1, "<Q")))
    return out


def read_executorch(path: str, kind: str) -> EtRead:
    """Read a ``.pte`` (kind "executorch-program") or ``.ptd`` ("executorch-data"): its
    Source, the metadata it records (delegates, compile-spec keys, named data) and notes."""
    problems: list[Problem] = []
    binaries: list[Binary] = []
    metadata: list[tuple[str, str]] = []
    notes: list[str] = []
    try:
        with open_untrusted(path) as f:  # regular only: a FIFO is refused, not waited on
            if os.fstat(f.fileno()).st_size == 0:
                raise _Bad("empty file")
            # mapped, not read: segments are copied out one at a time, each bounded
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
                _read_into(path, kind, data, binaries, problems, metadata, notes)
    except OSError as exc:
        problems.append(Problem(path, exc.strerror or str(exc)))
    except _Bad as exc:
        problems.append(Problem(path, str(exc)))
    src = Source(kind, path, files_seen=1, binaries=tuple(binaries), problems=tuple(problems))
    return src, tuple(metadata), tuple(notes)


def _read_into(path: str, kind: str, data: mmap.mmap, binaries: list[Binary],
               problems: list[Problem], metadata: list[tuple[str, str]],
               notes: list[str]) -> None:
    try:
        _program_into(path, kind, data, binaries, problems, metadata, notes)
    except _Bad as exc:
        problems.append(Problem(path, f"malformed ExecuTorch flatbuffer: {exc}"))


def _program_into(path: str, kind: str, data: mmap.mmap, binaries: list[Binary],
                  problems: list[Problem], metadata: list[tuple[str, str]],
                  notes: list[str]) -> None:
    seen: set[tuple[str, str]] = set()

    def meta(key: str, value: str) -> None:  # one line per distinct fact
        if (key, value) not in seen:
            seen.add((key, value))
            metadata.append((key, value))

    if kind == "executorch-program":
        fb = _Fb(data)
        base = 0
        if data[8:12] == b"eh00":
            base = struct.unpack_from("<Q", data, 24)[0] if len(data) >= 32 else 0
        prog = fb.root()
        meta("ET_PROGRAM_VERSION", str(fb.scalar(prog, 0, "<I")))
        for plan in fb.vector(prog, 1):
            method = fb.string(plan, 0) or "?"
            for d in fb.vector(plan, 7):
                backend = fb.string(d, 0) or "?"
                meta("ET_DELEGATE", f"{method}:{backend}")
                keys = dict.fromkeys(fb.string(cs, 0) or "?" for cs in fb.vector(d, 2))
                for key in keys:  # each distinct key once, formatted once
                    meta("ET_COMPILE_SPEC", f"{backend}:{key}")
        segments = _segments(fb, prog, 4)
        named = [(fb.string(n, 0) or "?", fb.scalar(n, 1, "<I")) for n in fb.vector(prog, 7)]
    else:
        if data[8:12] != b"FH01" or len(data) < 48:
            raise _Bad("no FH01 header after the file identifier")
        # The header is inserted into the flatbuffer (its root offset moved past it):
        # tables are addressed from the start of the file.
        fb_off, fb_size, base = struct.unpack_from("<QQQ", data, 16)
        if fb_off + fb_size > len(data):
            raise _Bad("the flatbuffer runs past the end")
        fb = _Fb(data)
        root = fb.root()
        meta("ET_DATA_VERSION", str(fb.scalar(root, 0, "<I")))
        segments = _segments(fb, root, 1)
        named = [(fb.string(n, 0) or "?", fb.scalar(n, 1, "<I")) for n in fb.vector(root, 2)]
    read: dict[tuple[int, int], str] = {}  # (start, length) -> the key it was read as
    total = 0
    for key, idx in named:
        meta("ET_NAMED_DATA", key)
        if idx >= len(segments):
            problems.append(Problem(path, f"named data {key!r} points at segment {idx} of "
                                          f"{len(segments)}"))
            continue
        off, length = segments[idx]
        start = base + off
        if start + length > len(data):
            problems.append(Problem(path, f"segment {idx} ({key!r}) runs past the end"))
            continue
        if (start, length) in read:
            continue  # the same bytes under another name: read once
        read[(start, length)] = key
        if sniff(data[start : start + min(length, SNIFF_BYTES)]) is None:
            continue  # weights, not a binary: never copied
        if length > MAX_SEGMENT_READ or total + length > MAX_SEGMENTS_TOTAL:
            notes.append(f"segment {key!r} not read: {length} bytes")
            continue
        total += length
        bs, ps = read_bytes(f"{path}!{key}", data[start : start + length])
        binaries += bs
        problems += ps
