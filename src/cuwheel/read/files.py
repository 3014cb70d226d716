"""Files on disk opened as untrusted input: only regular files, never blocking on a FIFO
or device, read with bounds."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterator
from typing import BinaryIO

from cuwheel.errors import InputError
from cuwheel.read.stream import Chunk, FileBuffer

__all__ = ["file_chunks", "open_fd", "open_regular", "read_regular"]


def open_fd(path: str) -> int:
    """A descriptor for a regular file; never blocks (a FIFO is refused, not waited on)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise InputError(path, "not a regular file")
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_regular(path: str) -> BinaryIO:
    """A regular file opened for reading, without following a FIFO or device into a read
    that never ends (the one rule for files named by a mirror, a lock, a cache or an
    installed distribution); OSError when it cannot be opened or is not a regular file."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file (a FIFO, device or directory)")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str, limit: int) -> bytes | None:
    """The bytes of a regular file of at most ``limit`` bytes, None when it is larger;
    OSError as :func:`open_regular`."""
    with open_regular(path) as fh:
        data = fh.read(limit + 1)
    return None if len(data) > limit else data


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
