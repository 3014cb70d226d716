"""What each byte of device code costs in the file and in the wheel's zip (docs/size.md).

A zip member is one deflate stream, so its compressed size has no exact split among the
fatbin entries inside it.  It is apportioned: the binary is deflated again as one stream
(raw deflate, level 6, as ``wheel`` and ``zipfile`` write members), flushed at every entry
boundary, each entry getting the bytes its input produced, and the member's real
compressed size is shared in proportion.  Binaries over the budget are sampled: one
64 KiB block in ``stride``, each deflated alone and scaled by the bytes it stands for.

For a what-if scenario the binary is streamed as the rebuild would leave it (dropped
entries cut out, payloads compressed again the way nvcc's fatbinary does for each
``--compress-mode``) and deflated as one stream; the ratio to the deflate of the binary
as it is calibrates it against the member's real size.  Nothing here judges: the ledger
and the what-if do.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from cuwheel.errors import CuwheelError, FatbinError, InputError
from cuwheel.model.inventory import Binary, CodeKind, Compression, FatbinEntry, Inventory, Source
from cuwheel.read.fatbin import decompress_prefix
from cuwheel.read.sources import Member, WheelFile
from cuwheel.size.modes import MODES
from cuwheel.size.scenario import Scenario

__all__ = [
    "MODES",
    "BinaryBytes",
    "SourceBytes",
    "measure",
    "recompress",
]

BLOCK = 64 << 10
# Bytes deflated per binary before sampling starts (one block in ``stride``).
DEFLATE_BUDGET = 192 << 20
# Payload bytes recompressed per binary for the compression what-if before entries are
# sampled.
RECOMPRESS_BUDGET = 96 << 20
# The biggest entry payload decompressed to be recompressed (a bigger one is estimated
# from its neighbours).
MAX_PAYLOAD = 256 << 20
ZIP_LEVEL = 6

@dataclass(frozen=True)
class BinaryBytes:
    """Measured costs of one binary; entries in ``Binary.entries()`` order."""

    path: str
    size: int  # bytes of the file (or archive member)
    zipped: int | None  # the zip member's compressed size; None outside a wheel
    zip_method: str | None  # "deflate", "stored", ... (None outside a wheel)
    deflated: tuple[int, ...]  # estimated raw-deflate size of each entry (header + payload)
    deflated_rest: int  # the same for every other byte of the binary
    sampled: bool  # some blocks were estimated from a sample
    # mode -> per entry (stored bytes, estimated deflate size) after recompression
    recompressed: dict[str, tuple[tuple[int, int], ...]] = field(default_factory=dict)
    # Small enough to simulate: the raw-deflate size of the whole binary as it is, and
    # of the bytes each scenario leaves (dropped entries cut out, payloads recompressed).
    whole: int | None = None
    simulated: dict[Scenario, int] = field(default_factory=dict)

    @property
    def scale(self) -> float:
        """Real compressed bytes per estimated deflate byte (1.0 outside a wheel)."""
        total = sum(self.deflated) + self.deflated_rest
        if self.zipped is None or total <= 0:
            return 1.0
        return self.zipped / total

    def entry_zipped(self, i: int) -> float:
        return self.deflated[i] * self.scale


@dataclass(frozen=True)
class SourceBytes:
    """A source's file size and its binaries' measurements."""

    path: str
    kind: str
    size: int  # the wheel file (or file, or sum of a directory's binaries)
    binaries: dict[str, BinaryBytes]
    members_zipped: int = 0  # all members' compressed sizes (wheels)


_METHODS = {0: "stored", 8: "deflate", 12: "bzip2", 14: "lzma", 93: "zstd"}


def measure(
    inventory: Inventory,
    *,
    modes: Iterable[str] = (),
    scenarios: Iterable[Scenario] = (),
    budget: int = DEFLATE_BUDGET,
    recompress_budget: int = RECOMPRESS_BUDGET,
) -> tuple[SourceBytes, ...]:
    """Read every binary with device code again and measure it.  Raises InputError."""
    plans = tuple(dict.fromkeys(scenarios))
    wanted = tuple(dict.fromkeys((*modes, *(s.compression for s in plans if s.compression))))
    for m in wanted:
        if m not in MODES:
            raise CuwheelError(f"unknown compression mode {m!r} (one of {', '.join(MODES)})")
    return tuple(
        _source(s, wanted, plans, budget, recompress_budget) for s in inventory.sources
    )


def _source(
    source: Source,
    modes: tuple[str, ...],
    plans: tuple[Scenario, ...],
    budget: int,
    rbudget: int,
) -> SourceBytes:
    out: dict[str, BinaryBytes] = {}
    if source.kind == "wheel":
        with WheelFile(source.path) as wf:
            zipped_all = sum(m.compress_size for m in wf.members)
            for b in source.binaries:
                name = source.member(b.archive or b.path)
                m = wf.infos.get(name) if name else None
                if m is None:
                    continue
                chunks = _member_chunks(wf, m)
                zipped = None if b.archive else m.compress_size
                method = _METHODS.get(m.method, str(m.method))
                out[b.path] = _binary(b, chunks, zipped, method, modes, plans, budget, rbudget)
        size = os.stat(source.path).st_size
        return SourceBytes(source.path, source.kind, size, out, zipped_all)
    for b in source.binaries:
        path = b.archive or b.path
        out[b.path] = _binary(
            b, _path_chunks(path), None, None, modes, plans, budget, rbudget
        )
    size = (
        os.stat(source.path).st_size
        if source.kind == "file"
        else sum(b.size for b in source.binaries)
    )
    return SourceBytes(source.path, source.kind, size, out)


def _member_chunks(wf: WheelFile, m: Member) -> Callable[[], Iterator[bytes]]:
    return lambda: wf.chunks(m)


def _path_chunks(path: str) -> Callable[[], Iterator[bytes]]:
    return lambda: _file_chunks(path)


def _file_chunks(path: str) -> Iterator[bytes]:
    try:
        with open(path, "rb") as f:
            while chunk := f.read(4 << 20):
                yield chunk
    except OSError as exc:
        raise InputError(path, exc.strerror or str(exc)) from None


def _binary(
    b: Binary,
    chunks: Callable[[], Iterator[bytes]],
    zipped: int | None,
    method: str | None,
    modes: tuple[str, ...],
    plans: tuple[Scenario, ...],
    budget: int,
    rbudget: int,
) -> BinaryBytes:
    entries = list(b.entries())
    if b.archive:  # an ar member: entries counted at their stored size, nothing deflated
        return BinaryBytes(b.path, b.size, None, method, (), 0, False)
    spans = [(e.offset, e.offset + e.header_size + e.stored_size) for e in entries]
    stride = max(1, -(-b.size // budget))
    deflated, rest = _deflate_spans(chunks(), spans, b.size, stride)
    recompressed: dict[str, tuple[tuple[int, int], ...]] = {}
    if modes and entries:
        recompressed = _recompress_all(chunks(), entries, modes, rbudget)
    whole: int | None = None
    simulated: dict[Scenario, int] = {}
    if plans and entries and not b.archive:
        # level 1 past the budget: ~5x faster; the ratio to the member's real size
        # calibrates it (docs/size.md#accuracy)
        level = ZIP_LEVEL if b.size <= budget else 1
        whole = _simulate(chunks(), entries, Scenario(), level)
        simulated = {p: _simulate(chunks(), entries, p, level) for p in plans}
    return BinaryBytes(
        b.path, b.size, zipped, method, tuple(deflated), rest, stride > 1, recompressed,
        whole, simulated,
    )  # fmt: skip


def _simulate(
    chunks: Iterator[bytes], entries: list[FatbinEntry], plan: Scenario, level: int = ZIP_LEVEL
) -> int:
    """Raw-deflate size (one stream, level 6, as the zip member is written) of the binary
    as ``plan`` would leave it: dropped entries cut out, kept payloads recompressed in its
    mode (headers kept as they are: their size does not change)."""
    spans = sorted(
        (e.offset, e.offset + e.header_size, e.offset + e.header_size + e.stored_size, i)
        for i, e in enumerate(entries)
    )  # fmt: skip
    z = zlib.compressobj(level, zlib.DEFLATED, -15)
    total = 0
    pos = 0
    k = 0
    payload = bytearray()
    for chunk in chunks:
        view = memoryview(chunk)
        while len(view):
            while k < len(spans) and spans[k][2] <= pos:
                k += 1
            if k < len(spans) and spans[k][0] <= pos:  # inside entry k
                _, start, end, i = spans[k]
                e = entries[i]
                n = min(len(view), end - pos)
                if not plan.keeps(e):
                    pass  # cut out: header and payload
                elif pos < start:  # its header
                    n = min(n, start - pos)
                    total += len(z.compress(view[:n]))
                elif plan.compression is None:
                    total += len(z.compress(view[:n]))
                else:
                    payload += view[:n]
                    if pos + n == end:
                        total += len(z.compress(_redo(e, bytes(payload), plan.compression)))
                        payload.clear()
            else:
                nxt = spans[k][0] if k < len(spans) else pos + len(view)
                n = min(len(view), nxt - pos)
                total += len(z.compress(view[:n]))
            view = view[n:]
            pos += n
    return total + len(z.flush())


def _redo(e: FatbinEntry, payload: bytes, mode: str) -> bytes:
    """The payload recompressed in ``mode``; as it is when it cannot be decoded."""
    if e.flags & 0x10000 or e.uncompressed_size > MAX_PAYLOAD:
        return payload
    try:
        raw = decompress_prefix(
            e.compression, payload, e.compressed_size, e.uncompressed_size, MAX_PAYLOAD
        )
    except FatbinError:
        return payload
    if len(raw) != e.uncompressed_size:
        return payload
    return recompress(e, raw, mode)


class _Span:
    """Raw-deflate size of one byte range, block by block, sampled one block in stride."""

    __slots__ = ("block_index", "buf", "sampled_in", "sampled_out", "seen", "stride")

    def __init__(self, stride: int) -> None:
        self.seen = self.sampled_in = self.sampled_out = self.block_index = 0
        self.stride = stride
        self.buf = bytearray()

    def feed(self, data: bytes | memoryview) -> None:
        self.seen += len(data)
        self.buf += data
        while len(self.buf) >= BLOCK:
            self._block(bytes(self.buf[:BLOCK]))
            del self.buf[:BLOCK]

    def _block(self, block: bytes) -> None:
        if self.block_index % self.stride == 0:
            c = zlib.compressobj(ZIP_LEVEL, zlib.DEFLATED, -15)
            self.sampled_out += len(c.compress(block)) + len(c.flush())
            self.sampled_in += len(block)
        self.block_index += 1

    def size(self) -> int:
        if self.buf:
            if self.block_index % self.stride == 0 or self.sampled_in == 0:
                self._block(bytes(self.buf))
            else:
                self.block_index += 1
            self.buf.clear()
        if self.sampled_in == 0:
            return 0
        return round(self.sampled_out * self.seen / self.sampled_in)


def _deflate_spans(
    chunks: Iterator[bytes], spans: list[tuple[int, int]], size: int, stride: int
) -> tuple[list[int], int]:
    if stride == 1:
        return _stream_spans(chunks, spans)
    order = sorted(range(len(spans)), key=lambda i: spans[i][0])
    sizes = [0] * len(spans)
    rest = _Span(stride)
    pos = 0
    k = 0  # index into order
    cur: _Span | None = None
    for chunk in chunks:
        view = memoryview(chunk)
        while len(view):
            while k < len(order) and spans[order[k]][1] <= pos:  # finished / empty spans
                if cur is not None:
                    sizes[order[k]] = cur.size()
                    cur = None
                k += 1
            if k < len(order) and spans[order[k]][0] <= pos:
                end = spans[order[k]][1]
                if cur is None:
                    cur = _Span(stride)
                n = min(len(view), end - pos)
                cur.feed(view[:n])
            else:
                nxt = spans[order[k]][0] if k < len(order) else pos + len(view)
                n = min(len(view), nxt - pos)
                rest.feed(view[:n])
            view = view[n:]
            pos += n
    while k < len(order):
        if cur is not None:
            sizes[order[k]] = cur.size()
            cur = None
        k += 1
    return sizes, rest.size()


def _stream_spans(
    chunks: Iterator[bytes], spans: list[tuple[int, int]]
) -> tuple[list[int], int]:
    """One deflate stream over the whole binary, as the zip member is written, flushed
    (Z_SYNC_FLUSH: the history stays) at every span boundary: each span gets the bytes its
    input produced after everything before it, so repeated code (the same kernels' PTX for
    several architectures) costs what it costs in the member."""
    order = sorted(range(len(spans)), key=lambda i: spans[i][0])
    sizes = [0] * len(spans)
    rest = 0
    z = zlib.compressobj(ZIP_LEVEL, zlib.DEFLATED, -15)
    pos = 0
    k = 0
    current = -1  # span index being fed, -1: bytes outside every span
    got = 0  # output of the current segment so far

    def switch(to: int) -> None:
        nonlocal current, got, rest
        if to == current:
            return
        got += len(z.flush(zlib.Z_SYNC_FLUSH))
        if current < 0:
            rest += got
        else:
            sizes[current] += got
        current, got = to, 0

    for chunk in chunks:
        view = memoryview(chunk)
        while len(view):
            while k < len(order) and spans[order[k]][1] <= pos:
                k += 1
            if k < len(order) and spans[order[k]][0] <= pos:
                switch(order[k])
                n = min(len(view), spans[order[k]][1] - pos)
            else:
                switch(-1)
                nxt = spans[order[k]][0] if k < len(order) else pos + len(view)
                n = min(len(view), nxt - pos)
            got += len(z.compress(view[:n]))
            view = view[n:]
            pos += n
    got += len(z.flush())
    if current < 0:
        rest += got
    else:
        sizes[current] += got
    return sizes, rest


def recompress(entry: FatbinEntry, raw: bytes, mode: str) -> bytes:
    """The payload nvcc would store for ``raw`` (the entry's uncompressed code) in ``mode``,
    padded to 8 as fatbinary pads; LTO-IR follows PTX."""
    kind = CodeKind.SASS if entry.kind is CodeKind.SASS else CodeKind.PTX
    codec, level = MODES[mode][kind]
    if codec is Compression.ZSTD:
        import zstandard

        out = zstandard.ZstdCompressor(level=level).compress(raw)
    elif codec is Compression.LZ4:
        import lz4.block

        out = lz4.block.compress(raw, store_size=False)
    else:
        out = raw if entry.kind is not CodeKind.PTX or raw.endswith(b"\0") else raw + b"\0"
    return out + b"\0" * (-len(out) % 8)


def _recompress_all(
    chunks: Iterator[bytes],
    entries: list[FatbinEntry],
    modes: tuple[str, ...],
    budget: int,
) -> dict[str, tuple[tuple[int, int], ...]]:
    """Per mode and entry: (stored bytes, deflate size) after recompression.  Entries not
    sampled (or too big, or opaque) get their sampled neighbours' ratios (by kind)."""
    total = sum(e.uncompressed_size for e in entries)
    stride = max(1, -(-total // budget))
    want = {
        i for i, e in enumerate(entries)
        if i % stride == 0 and e.uncompressed_size <= MAX_PAYLOAD and not e.flags & 0x10000
    }  # fmt: skip
    payloads = _payloads(chunks, entries, want)
    found: dict[str, dict[int, tuple[int, int]]] = {m: {} for m in modes}
    # one deflate stream per mode over the new payloads in file order (flushed per entry,
    # history kept), as the member would hold them next to each other
    streams = {m: zlib.compressobj(ZIP_LEVEL, zlib.DEFLATED, -15) for m in modes}
    for i, payload in sorted(payloads.items(), key=lambda kv: entries[kv[0]].offset):
        e = entries[i]
        try:
            raw = decompress_prefix(
                e.compression, payload, e.compressed_size, e.uncompressed_size, MAX_PAYLOAD
            )
        except FatbinError:
            continue
        if len(raw) != e.uncompressed_size:
            continue
        for m in modes:
            new = recompress(e, raw, m)
            z = streams[m]
            found[m][i] = (len(new), len(z.compress(new)) + len(z.flush(zlib.Z_SYNC_FLUSH)))
    out: dict[str, tuple[tuple[int, int], ...]] = {}
    for m in modes:
        ratios: dict[CodeKind, list[float]] = {}
        for i, (stored, dfl) in found[m].items():
            u = max(1, entries[i].uncompressed_size)
            r = ratios.setdefault(entries[i].kind, [0.0, 0.0, 0.0])
            r[0] += stored
            r[1] += dfl
            r[2] += u
        rows: list[tuple[int, int]] = []
        for i, e in enumerate(entries):
            if i in found[m]:
                rows.append(found[m][i])
                continue
            got = ratios.get(e.kind)
            if got is None or got[2] == 0:  # nothing to go by: as it is now
                rows.append((e.stored_size, -1))
                continue
            u = e.uncompressed_size
            rows.append((round(u * got[0] / got[2]), round(u * got[1] / got[2])))
        out[m] = tuple(rows)
    return out


def _payloads(
    chunks: Iterator[bytes], entries: list[FatbinEntry], want: set[int]
) -> dict[int, bytes]:
    """The stored payload bytes of the wanted entries, read in one pass."""
    spans = sorted(
        (entries[i].offset + entries[i].header_size,
         entries[i].offset + entries[i].header_size + entries[i].stored_size, i)
        for i in want
    )  # fmt: skip
    out: dict[int, bytearray] = {}
    pos = 0
    k = 0
    for chunk in chunks:
        end_chunk = pos + len(chunk)
        j = k
        while j < len(spans) and spans[j][0] < end_chunk:
            s, e, i = spans[j]
            lo, hi = max(s, pos), min(e, end_chunk)
            if lo < hi:
                out.setdefault(i, bytearray()).extend(chunk[lo - pos : hi - pos])
            j += 1
        while k < len(spans) and spans[k][1] <= end_chunk:
            k += 1
        pos = end_chunk
        if k >= len(spans):
            break
    return {i: bytes(v) for i, v in out.items()}
