"""The compression what-if of docs/size.md: each fatbin payload stored again the way nvcc's
fatbinary does for a ``--compress-mode``, and the binary deflated as a scenario would leave
it (dropped entries cut out, kept payloads recompressed)."""

from __future__ import annotations

import zlib
from collections.abc import Iterator

from cuwheel.errors import FatbinError
from cuwheel.model.inventory import CodeKind, Compression, FatbinEntry
from cuwheel.read.device.fatbin import EntryFlag, decompress_prefix
from cuwheel.size.deflate import ZIP_LEVEL
from cuwheel.size.modes import MODES
from cuwheel.size.scenario import Scenario

__all__ = ["MAX_PAYLOAD", "recompress", "recompress_all", "simulate"]

# The biggest entry payload decompressed to be recompressed (a bigger one is estimated
# from its neighbours).
MAX_PAYLOAD = 256 << 20


def simulate(
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
                elif plan.compression is None or not _redoable(e):
                    # as it is, streamed: a payload that will not be recompressed is never
                    # gathered (a 600 MiB stored payload costs one chunk of memory)
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


def _redoable(e: FatbinEntry) -> bool:
    """Whether an entry's payload is gathered to be recompressed: decodable, and both its
    stored and its uncompressed size within MAX_PAYLOAD (bounds checked before any byte
    is gathered, not after)."""
    return (not e.flags & EntryFlag.OPAQUE_LTO and e.uncompressed_size <= MAX_PAYLOAD
            and e.stored_size <= MAX_PAYLOAD)


def _redo(e: FatbinEntry, payload: bytes, mode: str) -> bytes:
    """The payload recompressed in ``mode``; as it is when it cannot be decoded."""
    if not _redoable(e):
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


def recompress_all(
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
        if i % stride == 0 and _redoable(e)
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
