"""Raw-deflate size of byte ranges of a binary, as the wheel's zip member would hold them
(docs/size.md): one stream over the whole binary, flushed at every range boundary, or --
past the budget -- one 64 KiB block in ``stride`` deflated alone and scaled by the bytes it
stands for."""

from __future__ import annotations

import zlib
from collections.abc import Iterator

__all__ = ["BLOCK", "ZIP_LEVEL", "deflate_spans"]

BLOCK = 64 << 10
# raw deflate, level 6, as ``wheel`` and ``zipfile`` write members
ZIP_LEVEL = 6


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


def deflate_spans(
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
