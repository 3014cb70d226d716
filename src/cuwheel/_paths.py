"""Path rules in one place: containment, "does this path stay under that directory"
(a toolkit tree being written, a site-packages directory whose RECORD is read), and
where cuwheel's cache lives (:func:`cache_dir`, shared by ``scan`` and ``toolkit``), and
the one way an untrusted file is opened (:func:`open_untrusted`, :func:`read_untrusted`,
:func:`decode_text`; docs/trust.md).

The whole path is resolved as the kernel would (every link of the chain, ``..`` after a
link applied to where the link led), and nothing is created to decide: a path that ends
outside is refused before any directory of it exists.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, BinaryIO

if TYPE_CHECKING:
    from pathlib import Path

__all__ = [
    "cache_dir",
    "cache_root",
    "decode_text",
    "inside",
    "open_untrusted",
    "read_untrusted",
    "resolve_inside",
]

_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


def cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """cuwheel's cache directory: ``$CUWHEEL_CACHE`` when set, else the platform's
    (``$XDG_CACHE_HOME/cuwheel`` or ``~/.cache/cuwheel``; ``~/Library/Caches/cuwheel``;
    ``%LOCALAPPDATA%\\cuwheel\\cache``).  Each user of the cache keeps a folder of its
    own under it (``scan/``, ``toolkit/``, the catalog's file)."""
    from pathlib import Path  # here: start-up asks only cache_root (the catalog's cache)

    return Path(cache_root(environ))


def cache_root(environ: Mapping[str, str] | None = None) -> str:
    """:func:`cache_dir` as a string, without importing pathlib (cuwheel's start-up)."""
    env = os.environ if environ is None else environ
    if env.get("CUWHEEL_CACHE"):
        return env["CUWHEEL_CACHE"]
    home = os.path.expanduser("~")
    if sys.platform == "win32":
        base = env.get("LOCALAPPDATA") or os.path.join(home, "AppData", "Local")
        return os.path.join(base, "cuwheel", "cache")
    if sys.platform == "darwin":
        return os.path.join(home, "Library", "Caches", "cuwheel")
    return os.path.join(env.get("XDG_CACHE_HOME") or os.path.join(home, ".cache"), "cuwheel")


def inside(real_root: str, real_path: str) -> bool:
    """Whether ``real_path`` (resolved) is ``real_root`` (resolved) or under it."""
    return real_path == real_root or real_path.startswith(real_root.rstrip(os.sep) + os.sep)


def resolve_inside(real_root: str, path: str) -> str | None:
    """``path`` with every link of it resolved (the missing tail kept as written), or None
    when that leaves ``real_root`` or the chain loops.  Creates nothing."""
    try:
        real = os.path.realpath(path, strict=False)
    except (OSError, ValueError):
        return None
    if not inside(real_root, real):
        return None
    # realpath keeps a looping chain as it is: such a path resolves nowhere.
    try:
        os.stat(real)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return None
    return real


def open_untrusted(path: str, root: str | None = None, *, follow: bool = True) -> BinaryIO:
    """A regular file opened for reading, the one rule for every file cuwheel did not
    write itself (an installed distribution's, a config, the ld.so cache, an artifact, a
    cache entry): opened non-blocking (a FIFO or device is refused, never waited on),
    ``S_ISREG`` checked on the open descriptor (no race with a swap after a stat), and,
    with ``root`` (resolved), every link of ``path`` resolved first and the file refused
    when that leaves ``root`` or loops; ``follow=False``: a final link is refused
    (``O_NOFOLLOW``: the catalog cache's key).  OSError when it cannot be opened or is
    refused."""
    if root is not None:
        real = resolve_inside(root, path)
        if real is None:
            raise OSError(errno.EXDEV, "leads outside its directory (a link or '..')")
        path = real
    fd = os.open(path, _FLAGS if follow else _FLAGS | getattr(os, "O_NOFOLLOW", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file (a FIFO, device or directory)")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_untrusted(path: str, limit: int, root: str | None = None) -> bytes | None:
    """The bytes of an untrusted regular file (:func:`open_untrusted`) of at most
    ``limit`` bytes; None when it is larger, known from its size before any byte is read
    (a 3 GiB sparse file costs one ``fstat``), and read at most ``limit + 1`` bytes
    (a file that grows while read)."""
    with open_untrusted(path, root) as fh:
        if os.fstat(fh.fileno()).st_size > limit:
            return None
        data = fh.read(limit + 1)
    return None if len(data) > limit else data


def decode_text(data: bytes, *, strict: bool = False) -> str:
    """Text of an untrusted file, one stated rule: a UTF-8 (BOM dropped) or UTF-16/32
    file with its BOM is decoded as such; other bytes that are not UTF-8 are decoded as
    UTF-8 with U+FFFD for each bad byte, or, ``strict``, a ValueError whose message is
    one line (``not UTF-8 (byte N)``)."""
    for bom, codec in ((b"\xef\xbb\xbf", "utf-8"), (b"\xff\xfe\x00\x00", "utf-32-le"),
                       (b"\x00\x00\xfe\xff", "utf-32-be"), (b"\xff\xfe", "utf-16-le"),
                       (b"\xfe\xff", "utf-16-be")):  # fmt: skip
        if data.startswith(bom):
            data, enc = data[len(bom):], codec
            break
    else:
        enc = "utf-8"
    try:
        return data.decode(enc)
    except UnicodeDecodeError as exc:
        if strict:
            raise ValueError(f"not {enc.upper()} (byte {exc.start})") from None
        return data.decode(enc, "replace")
