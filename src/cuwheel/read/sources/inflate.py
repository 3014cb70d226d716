"""Bounded decompression of zip members (APPNOTE 4.4.5 methods: stored, deflate through
isal, bzip2, and LZMA as zip stores it): each decoder produces at most the output it is
asked for, so a bomb is caught as soon as it passes its declared size (wheelfile.py)."""

from __future__ import annotations

import bz2
import lzma
import struct
from typing import Any

__all__ = ["BZIP2", "CODEC_ERRORS", "DEFLATED", "LZMA", "METHODS", "STORED", "Decoder",
           "decoder", "isal"]

# Compression methods (APPNOTE 4.4.5) read here, as pip's zipfile reads them.
STORED, DEFLATED, BZIP2, LZMA = 0, 8, 12, 14
METHODS = {STORED: "stored", DEFLATED: "deflate", BZIP2: "bzip2", LZMA: "lzma"}


def _codec_errors() -> tuple[type[BaseException], ...]:
    """What the decompressors raise on corrupt data: isal's IsalError (isal_zlib.error),
    lzma.LZMAError, and OSError / ValueError (bz2 reports corrupt data as those)."""
    import lzma

    from isal import isal_zlib

    isal_error: type[BaseException] = isal_zlib.error  # type: ignore[assignment]  # stubs: an instance
    return (isal_error, lzma.LZMAError, OSError, ValueError, EOFError)


CODEC_ERRORS = _codec_errors()


class Decoder:
    """One member's decompressor: ``step(data, room)`` takes compressed bytes and returns
    (at most ``room`` bytes of output, the input it did not take)."""

    eof = False

    def wants_input(self) -> bool:
        return True

    def step(self, data: bytes, room: int) -> tuple[bytes, bytes]:
        return data[:room], data[room:]  # stored


def isal() -> Any:
    global _ISAL
    if _ISAL is None:
        from isal import isal_zlib  # only when a wheel is read: it costs start-up time

        _ISAL = isal_zlib
    return _ISAL


_ISAL: Any = None


class _Inflate(Decoder):
    def __init__(self) -> None:
        self._d = isal().decompressobj(-15)

    def step(self, data: bytes, room: int) -> tuple[bytes, bytes]:
        out: bytes = self._d.decompress(data, room)
        self.eof = bool(self._d.eof)
        tail: bytes = self._d.unconsumed_tail
        return out, tail


class _Bz2OrLzma(Decoder):
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


class _ZipLzma(Decoder):
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


def decoder(method: int, declared: int, max_dict: int) -> Decoder:
    """The decoder of a member stored with ``method`` (one of METHODS) that declares
    ``declared`` bytes; ``max_dict``: the largest LZMA dictionary allowed."""
    if method == DEFLATED:
        return _Inflate()
    if method == BZIP2:
        return _Bz2OrLzma(bz2.BZ2Decompressor())
    if method == LZMA:
        return _ZipLzma(declared, max_dict)
    return Decoder()
