"""Files on disk opened as untrusted input: only regular files, never blocking on a FIFO
or device, read with bounds."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Iterator
from typing import BinaryIO

from cuwheel._paths import open_untrusted, read_untrusted
from cuwheel.errors import InputError
from cuwheel.read.bytes.stream import Chunk, FileBuffer

__all__ = ["file_chunks", "open_fd", "open_regular", "read_regular"]


def open_fd(path: str) -> int:
    """A descriptor for a regular file; never blocks (a FIFO is refused, not waited on)."""
    try:
        fh = open_untrusted(path)
    except OSError as exc:
        if exc.errno == errno.EINVAL:
            raise InputError(path, "not a regular file") from None
        raise
    with fh:
        return os.dup(fh.fileno())


def open_regular(path: str) -> BinaryIO:
    """A regular file opened for reading (the one rule: :func:`cuwheel._paths.open_untrusted`);
    OSError when it cannot be opened or is not a regular file."""
    return open_untrusted(path)


def read_regular(path: str, limit: int) -> bytes | None:
    """The bytes of a regular file of at most ``limit`` bytes, None when it is larger;
    OSError as :func:`open_regular` (:func:`cuwheel._paths.read_untrusted`)."""
    return read_untrusted(path, limit)


def file_chunks(path: str) -> Callable[[], Iterator[Chunk]]:
    """Chunk source for a file on disk: the whole file as one chunk, read on demand."""

    def gen() -> Iterator[Chunk]:
        try:
            fd = open_fd(path)
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
