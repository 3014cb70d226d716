"""Serve byte-range requests while a file streams past once, front to back.

A zip member can only be inflated in order, and a 500 MB library should not be held in
memory, so readers do not read at will: they *request* ranges with a callback, and the
``Scan`` calls each callback once the range has streamed in.  Callbacks may request
more ranges.  A range already gone by (outside the trailing window) is recorded as
missed; the driver then streams the file again and serves only those, stopping as soon
as none is pending.  A file in memory or on disk is one chunk, so every
request is served at once and nothing is ever missed.

While streaming, the scan also looks everywhere for a signature its caller names (the
fatbin container signature, read/device/fatbin.py), because device code is not always in
the named sections (docs/formats.md#code-outside-the-named-sections).

The bounded helpers every reader shares (anomalies, name budget, string tables, range
maps) are in tables.py.
"""

from __future__ import annotations

import heapq
import mmap
import os
from collections import deque
from collections.abc import Callable, Iterable
from typing import Union

from cuwheel.errors import StreamError

__all__ = ["Callback", "Chunk", "FileBuffer", "Scan"]

Callback = Callable[[bytes], None]


class FileBuffer:
    """A file on disk seen as one read-only buffer: slices and ``find`` read with
    ``pread``.  Unlike an mmap, walking thousands of small headers spread over a 500 MB
    library costs no page-table set-up, faults or tear-down."""

    _PIECE = 16 << 20

    def __init__(self, fd: int, size: int) -> None:
        self.fd = fd
        self.size = size

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, key: slice) -> bytes:
        start, stop, _ = key.indices(self.size)
        if stop <= start:
            return b""
        return os.pread(self.fd, stop - start, start)

    def find(self, sub: bytes, start: int = 0, end: int | None = None) -> int:
        end = self.size if end is None else min(end, self.size)
        overlap = len(sub) - 1
        at = start
        while at < end:
            stop = min(end, at + self._PIECE)
            piece = os.pread(self.fd, stop - at, at)
            i = piece.find(sub)
            if i >= 0:
                return at + i
            if stop >= end:
                break
            at = stop - overlap
        return -1

# A chunk of the file: bytes, or a whole file (mmap or FileBuffer, sliced on demand).
Chunk = Union[bytes, bytearray, mmap.mmap, "FileBuffer"]

# Bytes read at a time when searching a section of a file on disk.
_SEARCH_PIECE = 16 << 20
# What zero runs are compared with, a piece at a time.
_ZEROS = bytes(1 << 20)
# Bytes kept behind the stream's head, so that requests for something just passed
# (a string table right before the section headers) need no second pass.
DEFAULT_WINDOW = 1 << 20
# No single request may pin more than this much memory.
MAX_REQUEST = 512 << 20
# All requests of one file together: a few times the file, so that many headers pointing
# at one big table (65,535 SHT_DYNSYM sections of 256 MiB each) cannot make a small file
# cost terabytes of copying.  Honest readers ask for each table once.
REQUEST_FACTOR = 4
REQUEST_SLACK = 64 << 20
# The signature searched for has this many bytes (the fatbin container's: magic, version
# and header size); a hit may start up to _TAIL bytes before the end of what is searched.
SIGNATURE_SIZE = 8
_TAIL = SIGNATURE_SIZE - 1


class Scan:
    def __init__(
        self,
        size: int,
        *,
        signature: bytes = b"",
        on_signature: Callable[[int], None] | None = None,
        window: int = DEFAULT_WINDOW,
    ) -> None:
        if signature and len(signature) != SIGNATURE_SIZE:
            raise ValueError(f"a signature has {SIGNATURE_SIZE} bytes, not {len(signature)}")
        self.size = size
        self.signature = signature  # what on_signature is called for
        self.on_signature = on_signature
        self.window = window
        # Pending requests ordered by where they end (when they can be served) ...
        self._heap: list[tuple[int, int, int, int, Callback]] = []
        # ... and by where they start (what the buffer must keep); served ones are
        # dropped from this second heap lazily.
        self._starts: list[tuple[int, int]] = []
        self._served: set[int] = set()
        # Requests for bytes already in the buffer, in the order asked (see request).
        self._ready: deque[tuple[int, int, Callback]] = deque()
        self._live = False  # the buffer holds [_low, pos) (not between passes)
        self._seq = 0
        # The newest chunk, [_buf_start, pos), and the earlier chunks still needed, whole
        # and in order: chunks are kept as they came, never copied into one buffer.
        self._buf: Chunk = b""
        self._buf_start = 0
        self._old: deque[tuple[int, bytes]] = deque()
        self._low = 0  # bytes before this are gone (whatever the chunks kept still hold)
        self.pos = 0  # end of the data streamed in so far
        self._scanned = 0  # signature scan has covered [0, _scanned)
        self.missed: list[tuple[int, int, Callback]] = []
        self.passes = 1
        # File ranges the signature scan may skip (executable code), set by host readers.
        self.skip: list[tuple[int, int]] = []
        # ... unless this is set: then they are searched too, and the driver judges the
        # hits there once the sections are known (read/binary/sniff.py).
        self.search_code = False
        # Extents of containers already found: their payloads need no search either.
        self.skip_known: list[tuple[int, int]] = []
        self.requested = 0
        self.request_budget = REQUEST_FACTOR * size + REQUEST_SLACK
        self._skips: list[tuple[int, int]] = []  # heap of the ranges above, by start
        self._skips_seen = [0, 0]  # how much of skip / skip_known is in the heap

    # -- requests ---------------------------------------------------------------
    def request(self, start: int, length: int, callback: Callback) -> None:
        """Call ``callback(data)`` with bytes [start, start+length) when they stream in."""
        if start < 0 or length < 0 or start + length > self.size:
            raise StreamError(
                f"range 0x{start:x}+0x{length:x} is outside the file ({self.size} bytes)"
            )
        if length > MAX_REQUEST:
            raise StreamError(f"a structure claims {length} bytes, more than cuwheel reads")
        self._charge(length)
        if self._live and self._low <= start and start + length <= self.pos:
            # Already here: served by the next _pump in the order asked, without the two
            # heaps (cuFFT's 48k streamed containers make some 200k requests, nearly all
            # of bytes just streamed in).
            self._ready.append((start, length, callback))
            return
        self._push(start, length, callback)

    def buffered(self, start: int, length: int) -> bytes | None:
        """Bytes [start, start+length) at once when they are in the buffer, else None
        (then ask with ``request``).  A streamed file counts them as requested."""
        if not (self._live and self._low <= start and start + length <= self.pos):
            return None
        if self.pos < self.size or self._buf_start:  # not resident
            self._charge(length)
        return self._bytes(start, start + length)

    def _charge(self, length: int) -> None:
        self.requested += length
        if self.requested > self.request_budget:
            raise StreamError(
                f"its structures ask for more than {self.request_budget} bytes in all "
                f"(the file has {self.size})"
            )

    def _push(self, start: int, length: int, callback: Callback) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (start + length, self._seq, start, length, callback))
        heapq.heappush(self._starts, (start, self._seq))

    @property
    def pending(self) -> bool:
        return bool(self._heap or self._ready)

    # -- streaming --------------------------------------------------------------
    def feed(self, chunk: Chunk) -> None:
        """Append the next chunk of the file and serve what became available."""
        if self._ready:
            self._pump()  # served before the buffer changes
        old = self._old
        if self._live:
            keep = self._keep_from()
            if keep < self.pos and self._buf:
                old.append((self._buf_start, self._buf))  # type: ignore[arg-type]
            while old and old[0][0] + len(old[0][1]) <= keep:
                old.popleft()
        else:
            old.clear()
            keep = self.pos
        self._low = keep
        # Slices of bytes, an mmap or a FileBuffer are bytes, which callbacks are given.
        self._buf = chunk if isinstance(chunk, (bytes, mmap.mmap, FileBuffer)) else bytes(chunk)
        self._buf_start = self.pos
        self.pos += len(chunk)
        self._live = True
        if self.pos > self.size:
            raise StreamError(f"the data is longer than its declared size of {self.size} bytes")
        if self.on_signature is not None:
            self._scan_signatures()
        self._pump()

    @property
    def resident(self) -> bool:
        """True when the whole file is in memory, so any range can be read at once."""
        return self._buf_start == 0 and self.pos == self.size and len(self._buf) == self.size

    def serve(self) -> None:
        """Serve requests made after the data arrived (resident files)."""
        self._pump()

    def peek(self, start: int, length: int) -> bytes:
        """Bytes of a resident file, read at once (callers check ``resident`` first).

        A resident buffer is bytes, an mmap or a FileBuffer, whose slices are bytes: this is
        the hot path of walking a big file's containers."""
        return self._buf[start : start + length]  # type: ignore[return-value]

    def find(self, sub: bytes, start: int, end: int) -> int:
        """Offset of ``sub`` in [start, end) of a resident file, or -1."""
        i: int = self._buf.find(sub, start, end)
        return i

    def zeros_from(self, start: int, end: int) -> int:
        """Offset of the first non-zero byte in [start, end) of a resident file (``end``
        when there is none), read in growing pieces compared with a block of zeros
        (memcmp speed): alignment padding is usually under 256 bytes, and a gigabyte of
        zeros takes a thousand reads, not a hundred million."""
        at, piece = start, 256
        while at < end:
            stop = min(end, at + piece)
            data = self._buf[at:stop]
            if data != _ZEROS[: len(data)]:
                return stop - len(data.lstrip(b"\0"))
            at = stop
            piece = min(piece * 4, len(_ZEROS))
        return end

    def scan_now(self) -> None:
        """Run the signature scan over what is buffered (after enabling on_signature)."""
        self._scan_signatures()
        self._pump()

    def find_signatures(self, start: int, end: int) -> list[int]:
        """Container signatures in [start, end) of a resident file."""
        assert self.resident
        sig = self.signature
        assert sig
        hits: list[int] = []
        # Read in pieces, each once: a section holding thousands of containers (cuFFT's
        # .data) must not be re-read from every hit onwards.
        at = start
        while at < end:
            stop = min(end, at + _SEARCH_PIECE)
            piece = self._buf[at:stop]
            i = piece.find(sig)
            while i >= 0:
                hits.append(at + i)
                i = piece.find(sig, i + SIGNATURE_SIZE)
            if stop >= end:
                break
            at = stop - _TAIL  # a signature may straddle two pieces
        return hits

    def feed_all(self, chunks: Iterable[Chunk]) -> None:
        for chunk in chunks:
            self.feed(chunk)

    def finish(self) -> None:
        """End of one pass: anything still pending could not be served."""
        self._pump()
        if self.pos < self.size:
            raise StreamError(f"the data ended after {self.pos} of {self.size} bytes")
        while self._heap:  # cannot happen for in-range requests; kept for safety
            _end, _, start, length, cb = heapq.heappop(self._heap)
            self.missed.append((start, length, cb))
        self._buf = b""
        self._old.clear()
        self._live = False

    def restart(self) -> None:
        """Prepare another pass that serves only the missed requests."""
        missed, self.missed = self.missed, []
        self._heap = []
        self._starts = []
        self._served = set()
        for start, length, cb in missed:
            self._push(start, length, cb)
        self._buf = b""
        self._old.clear()
        self._buf_start = 0
        self.pos = 0
        self.on_signature = None  # signatures were all seen in the first pass
        self.passes += 1

    # -- internals --------------------------------------------------------------
    def _bytes(self, start: int, stop: int) -> bytes:
        """Buffered bytes [start, stop): a slice of one chunk, or the pieces of several
        joined (only a range across a chunk boundary is assembled)."""
        base = self._buf_start
        if start >= base:
            return self._buf[start - base : stop - base]  # type: ignore[return-value]
        parts = [c[max(0, start - s) : stop - s] for s, c in self._old
                 if s < stop and s + len(c) > start]
        if stop > base:
            parts.append(self._buf[: stop - base])  # type: ignore[arg-type]
        return b"".join(parts)

    def _find_signature(self, at: int, stop: int) -> int:
        """Offset of the first signature starting in [at, stop - _TAIL), or -1."""
        base, sig = self._buf_start, self.signature
        if at < base:  # one that starts in an earlier chunk and ends in this one
            i = self._bytes(at, min(stop, base + _TAIL)).find(sig)
            if i >= 0:
                return at + i
            at = base
            if stop - at < SIGNATURE_SIZE:
                return -1
        i = self._buf.find(sig, at - base, stop - base)
        return -1 if i < 0 else base + i

    def _keep_from(self) -> int:
        low = self._low
        keep = max(low, self.pos - self.window)
        starts = self._starts
        while starts and starts[0][1] in self._served:
            self._served.discard(heapq.heappop(starts)[1])
        if starts:
            keep = min(keep, max(starts[0][0], low))
        return keep

    def _take_skips(self) -> None:
        """Move ranges appended to ``skip`` / ``skip_known`` since the last look into the
        heap the scan walks (the lists themselves stay whole for the callers)."""
        heap = self._skips
        for lst, seen in ((() if self.search_code else self.skip, 0), (self.skip_known, 1)):
            n = self._skips_seen[seen]
            if len(lst) > n:
                for r in lst[n:]:
                    heapq.heappush(heap, r)
                self._skips_seen[seen] = len(lst)

    def _scan_signatures(self) -> None:
        """Search the new bytes for container signatures, skipping code ranges and the
        extents of containers already found.  Requests are served after each hit, so a
        container found early in a chunk has its payload skipped in the same chunk.

        The ranges to skip sit in a heap by start: each is popped once, when the scan
        reaches it (thousands of executable segments or known containers cost n log n,
        not a list rebuilt per step).  One that reaches into the next chunk is kept for
        the next call, which starts _TAIL bytes back for signatures across the boundary."""
        on_signature = self.on_signature
        assert on_signature is not None and self.signature
        find = self._find_signature
        at = max(self._scanned - _TAIL, self._low)
        hi = self.pos
        self._scanned = hi
        heap = self._skips
        tail: list[int] | None = None  # merged skipped ranges that reach past hi - SIGNATURE_SIZE
        while at + SIGNATURE_SIZE <= hi:
            self._take_skips()
            while heap and heap[0][0] <= at:
                s0, s1 = heapq.heappop(heap)
                if s1 > at:
                    at = s1
                    if s1 > hi - SIGNATURE_SIZE:
                        if tail is None:
                            tail = [s0, s1]
                        else:
                            tail[0], tail[1] = min(tail[0], s0), s1
            if at + SIGNATURE_SIZE > hi:
                break
            nxt = min(heap[0][0], hi) if heap else hi
            # a signature may start just before a skipped range
            i = find(at, min(nxt + _TAIL, hi))
            if i < 0:
                at = nxt if nxt > at else at + 1
                continue
            on_signature(i)
            self._pump()
            at = i + SIGNATURE_SIZE
        self._take_skips()
        if tail is not None:
            heapq.heappush(heap, (tail[0], tail[1]))

    def _pump(self) -> None:
        heap, ready, take = self._heap, self._ready, self._bytes
        while True:
            if ready:
                start, length, cb = ready.popleft()
                cb(take(start, start + length))
                continue
            if not heap or heap[0][0] > self.pos:
                return
            _end, seq, start, length, cb = heapq.heappop(heap)
            self._served.add(seq)
            if start < self._low:
                self.missed.append((start, length, cb))
                continue
            cb(take(start, start + length))
