"""The one downloader: a scan's wheels and a toolkit's archives, wheels and manifests.

Trust rules (docs/scan.md and docs/toolkit.md, trust boundaries), the strictest of
what both commands had:

* ``http`` and ``https`` only, through :func:`cuwheel._remote.checked_opener` (a
  redirect only to http(s), never from https to plain http); ``file:`` only where the
  caller asks for it (a toolkit's local mirror), and then a regular file only (a FIFO or
  device is refused, never waited on);
* a hard ceiling: the size the index or manifest declared, else ``max_size``
  (MAX_UNSIZED); one byte more ends the download, the body is never written to its end;
* a socket timeout on every wait, and a :class:`cuwheel._remote.Stop` that ends every
  read in flight at once (a terminated run cleans up without waiting out a timeout);
* the sha256 checked where it is known, the size where it was declared; a file that
  fails either is removed; so is a partial file, unless the caller resumes (``resume``:
  an interrupted download keeps its bytes and the next run asks for the rest with an
  HTTP ``Range``).
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import os
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any

from cuwheel._remote import Stop
from cuwheel._version import __version__
from cuwheel.errors import DownloadError, InputError, Stopped

__all__ = ["CHUNK", "MAX_UNSIZED", "TIMEOUT", "download",
           "read_small"]

CHUNK = 1 << 20
TIMEOUT = 60.0  # seconds, each socket wait
MAX_UNSIZED = 8 << 30  # a file whose size nobody declared (NVIDIA's largest wheels are ~1 GiB)
USER_AGENT = f"cuwheel/{__version__}"


def _remove(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


def _open(url: str, *, offset: int = 0, timeout: float = TIMEOUT,
          user_agent: str = USER_AGENT) -> Any:
    """The response for ``url`` (http or https only, redirects by the checked rule)."""
    headers = {"User-Agent": user_agent}
    if offset:
        headers["Range"] = f"bytes={offset}-"
    request = urllib.request.Request(url, headers=headers)
    from cuwheel._remote import checked_opener

    try:
        return checked_opener().open(request, timeout=timeout)
    except InputError as exc:  # a refused redirect
        raise DownloadError(url, exc.problem) from None
    except urllib.error.HTTPError as exc:
        exc.close()  # its body holds the connection's socket
        raise DownloadError(url, f"HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError, http.client.HTTPException, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise DownloadError(url, f"cannot connect: {reason}") from None


def _scheme(url: str, allow_file: bool) -> str:
    scheme = urllib.parse.urlsplit(url).scheme.lower()
    if scheme in ("http", "https") or (allow_file and scheme == "file"):
        return scheme
    only = "http, https and file" if allow_file else "http and https"
    raise DownloadError(url, f"only {only} URLs are downloaded")


def _file_path(url: str) -> str:
    return urllib.request.url2pathname(urllib.parse.urlsplit(url).path)


def read_small(url: str, limit: int, *, allow_file: bool = False,
               timeout: float = TIMEOUT, user_agent: str = USER_AGENT) -> bytes:
    """The whole body of a small document (a manifest): at most ``limit`` bytes, else a
    DownloadError."""
    if _scheme(url, allow_file) == "file":
        from cuwheel.read.sources.files import open_regular

        try:
            with open_regular(_file_path(url)) as fh:
                data: bytes = fh.read(limit + 1)
        except OSError as exc:
            raise DownloadError(url, str(exc.strerror or exc)) from None
    else:
        with _open(url, timeout=timeout, user_agent=user_agent) as response:
            try:
                data = response.read(limit + 1)
            except (OSError, http.client.HTTPException) as exc:
                raise DownloadError(url, f"download interrupted: {exc}") from None
    if len(data) > limit:
        raise DownloadError(url, f"larger than {limit} bytes")
    return data


def download(
    url: str,
    dest: str | os.PathLike[str],
    *,
    sha256: str | None = None,
    size: int | None = None,
    max_size: int = MAX_UNSIZED,
    timeout: float = TIMEOUT,
    stop: Stop | threading.Event | None = None,
    progress: Callable[[int], None] | None = None,
    resume: bool = False,
    allow_file: bool = False,
    by: str = "",
    user_agent: str = USER_AGENT,
) -> str:
    """Write the file at ``url`` to ``dest`` and return its sha256.  ``size``: the
    declared size (the ceiling, and what the file must come to); ``sha256``: what it
    must hash to; ``by`` names who declared them in messages (``" by the index"``);
    ``progress(n)`` after each block of ``n`` bytes.  Raises DownloadError (the file
    removed, or kept for a resumed run) or Stopped."""
    dest = os.fspath(dest)
    scheme = _scheme(url, allow_file)
    ceiling = min(size, max_size) if size is not None else max_size
    over = (f"longer than the {size} bytes declared{by}" if size is not None and size <= max_size
            else f"longer than the {max_size} bytes allowed"
            + ("" if size is not None else " (no size declared)"))
    digest = hashlib.sha256()
    got = 0  # bytes in dest
    complete = True
    try:
        if scheme == "file":
            from cuwheel.read.sources.files import open_regular

            try:
                src = open_regular(_file_path(url))
            except OSError as exc:
                raise DownloadError(url, str(exc.strerror or exc)) from None
            with src, open(dest, "wb") as out:
                got = _copy(url, src, out, digest, stop, progress, ceiling, over)
        else:
            offset = 0
            if resume and os.path.isfile(dest):
                offset = os.path.getsize(dest)
                if offset > ceiling:
                    offset = 0
            response = _open(url, offset=offset, timeout=timeout, user_agent=user_agent)
            sock = stop.watch(response) if isinstance(stop, Stop) else None
            try:
                with response:
                    if offset and response.status == 206:
                        with open(dest, "rb") as fh:
                            while block := fh.read(CHUNK):
                                digest.update(block)
                        if progress is not None:
                            progress(offset)
                        mode = "ab"
                    else:
                        offset = 0
                        mode = "wb"
                    length = response.getheader("Content-Length")
                    expected = int(length) if length and length.isdigit() else None
                    with open(dest, mode) as out:
                        try:
                            body = _copy(url, response, out, digest, stop, progress,
                                         ceiling - offset, over)
                        except (OSError, http.client.HTTPException):
                            body = -1  # interrupted
                    complete = body >= 0 and (expected is None or body == expected)
                    got = offset + max(body, 0) if complete else os.path.getsize(dest)
            finally:
                if isinstance(stop, Stop):
                    stop.forget(sock)
        if stop is not None and stop.is_set():
            raise Stopped
    except Stopped:
        if not resume:
            _remove(dest)
        raise
    except DownloadError:
        _remove(dest)
        raise
    except OSError as exc:  # writing dest
        _remove(dest)
        raise DownloadError(url, f"cannot write {dest}: {exc.strerror or exc}") from None
    if not complete:
        total = f" of {size}" if size is not None else ""
        if resume:
            raise DownloadError(url, f"download interrupted after {got}{total} bytes "
                                "(the partial file is kept; run again to resume)", kept=True)
        _remove(dest)
        raise DownloadError(url, f"download interrupted after {got}{total} bytes")
    if size is not None and got != size:
        _remove(dest)
        what = "truncated" if got < size else "too long"
        raise DownloadError(url, f"{what}: {got} bytes, {size} declared{by}")
    hexdigest = digest.hexdigest()
    if sha256 is not None and hexdigest != sha256.lower():
        _remove(dest)
        raise DownloadError(url, f"sha256 {hexdigest} does not match the expected {sha256}")
    return hexdigest


def _copy(url: str, src: Any, out: Any, digest: Any,
          stop: Stop | threading.Event | None, progress: Callable[[int], None] | None,
          room: int, over: str) -> int:
    """Copy ``src`` to ``out``, at most ``room`` bytes (one byte more is a DownloadError
    saying ``over``), hashing on the way; the number of bytes copied."""
    read = getattr(src, "read1", None) or src.read
    n = 0
    while True:
        if stop is not None and stop.is_set():
            raise Stopped
        block = read(min(CHUNK, room - n + 1))
        if not block:
            return n
        if n + len(block) > room:
            raise DownloadError(url, over)
        digest.update(block)
        out.write(block)
        n += len(block)
        if progress is not None:
            progress(len(block))
