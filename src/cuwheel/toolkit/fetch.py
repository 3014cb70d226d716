"""Downloads into the content-addressed cache: parallel, resumable, checked.

Every archive is written to ``partial/<sha256>.part`` and moved into the cache only when
its size and sha256 are the expected ones; a download that breaks off keeps its partial
file, and the next run asks the server for the rest (HTTP ``Range``).  URLs may be
``http(s)://``, ``file://`` or plain paths (a local mirror).

Bounds (docs/toolkit.md, trust boundaries): a download stops at the size the manifest or
lock declares (a server or mirror file that sends more is refused after one byte more,
never written to the end), or at MAX_UNSIZED for a wheel whose size is not declared; a
mirror's file must be a regular file (a FIFO or device is refused, never waited on); a
cached blob is hashed again before it is used.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from cuwheel._remote import Stop
from cuwheel._version import __version__
from cuwheel.errors import ToolkitError
from cuwheel.toolkit.cache import Cache

__all__ = ["Download", "as_url", "fetch_all", "fetch_one", "read_url"]

CHUNK = 1 << 20
TIMEOUT = 60.0
MAX_MANIFEST = 16 << 20
MAX_UNSIZED = 8 << 30  # a wheel whose size nobody declared (NVIDIA's largest are ~1 GiB)
USER_AGENT = f"cuwheel/{__version__} (toolkit)"

Progress = Callable[[str, int, int | None], None]  # (key, bytes just read, total)


@dataclass(frozen=True)
class Download:
    url: str
    sha256: str
    size: int | None  # None: not known beforehand (wheels)
    label: str  # for progress and messages


def as_url(location: str) -> str:
    """A URL for an http(s)/file URL or a local path."""
    if urllib.parse.urlsplit(location).scheme in ("http", "https", "file"):
        return location
    return Path(location).resolve().as_uri()


def _local_path(url: str) -> Path | None:
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != "file":
        return None
    return Path(urllib.request.url2pathname(parts.path))


def _open(url: str, offset: int = 0) -> http.client.HTTPResponse:
    headers = {"User-Agent": USER_AGENT}
    if offset:
        headers["Range"] = f"bytes={offset}-"
    request = urllib.request.Request(url, headers=headers)
    try:
        response: http.client.HTTPResponse = urllib.request.urlopen(request, timeout=TIMEOUT)
    except urllib.error.HTTPError as exc:
        raise ToolkitError(f"{url}: HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ToolkitError(f"{url}: cannot connect: {reason}") from None
    return response


def read_url(url: str, limit: int = MAX_MANIFEST) -> bytes:
    """The whole body of a small document (a manifest); ToolkitError naming the URL."""
    from cuwheel.read.sources import open_regular

    local = _local_path(url)
    if local is not None:
        try:
            with open_regular(str(local)) as fh:
                data = fh.read(limit + 1)
        except OSError as exc:
            raise ToolkitError(f"{url}: {exc.strerror or exc}") from None
    else:
        with _open(url) as response:
            try:
                data = response.read(limit + 1)
            except (OSError, http.client.HTTPException) as exc:
                raise ToolkitError(f"{url}: download interrupted: {exc}") from None
    if len(data) > limit:
        raise ToolkitError(f"{url}: larger than {limit} bytes, not a manifest")
    return data


class _Stopped(Exception):
    pass


def fetch_one(
    item: Download,
    cache: Cache,
    progress: Progress | None = None,
    stop: Stop | threading.Event | None = None,
) -> tuple[Path, bool]:
    """The cached, verified file of ``item`` and whether it had to be downloaded."""
    from cuwheel.read.sources import open_regular

    cached = cache.verified_blob(item.sha256, item.size)
    if cached is not None:
        return cached, False
    dest = cache.blob(item.sha256)
    ceiling = item.size if item.size is not None else MAX_UNSIZED
    part = cache.partial(item.sha256)
    part.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    local = _local_path(item.url)
    if local is not None:
        try:
            src = open_regular(str(local))
        except OSError as exc:
            raise ToolkitError(f"{item.url}: {exc.strerror or exc}") from None
        with src, open(part, "wb") as out:
            _copy(src, out, digest, item, progress, stop, room=ceiling)
        complete = True
    else:
        offset = part.stat().st_size if part.is_file() else 0
        if offset > ceiling:
            offset = 0
        response = _open(item.url, offset)
        sock = stop.watch(response) if isinstance(stop, Stop) else None
        with response:
            if offset and response.status == 206:
                with open(part, "rb") as fh:
                    while block := fh.read(CHUNK):
                        digest.update(block)
                if progress is not None:
                    progress(item.label, offset, item.size)
                mode = "ab"
            else:
                offset = 0
                mode = "wb"
            length = response.getheader("Content-Length")
            expected_body = int(length) if length and length.isdigit() else None
            with open(part, mode) as out:
                got = _copy(response, out, digest, item, progress, stop, url_error=True,
                            room=ceiling - offset)
            complete = got >= 0 and (expected_body is None or got == expected_body)
        if isinstance(stop, Stop):
            stop.forget(sock)
            if stop.is_set():
                raise _Stopped
        if not complete:
            have = part.stat().st_size
            total = f" of {item.size}" if item.size is not None else ""
            raise ToolkitError(
                f"{item.url}: download interrupted after {have}{total} bytes "
                "(the partial file is kept; run again to resume)"
            )
    have = part.stat().st_size
    if item.size is not None and have != item.size:
        part.unlink(missing_ok=True)
        what = "truncated" if have < item.size else "too long"
        raise ToolkitError(
            f"{item.url}: {what}: {have} bytes, the manifest says {item.size}; nothing installed"
        )
    got_sha = digest.hexdigest()
    if got_sha != item.sha256:
        part.unlink(missing_ok=True)
        raise ToolkitError(
            f"{item.url}: sha256 {got_sha} does not match the expected {item.sha256}; "
            "nothing installed"
        )
    dest.parent.mkdir(parents=True, exist_ok=True)
    os.replace(part, dest)
    return dest, True


def _copy(
    src: object,
    out: object,
    digest: hashlib._Hash,
    item: Download,
    progress: Progress | None,
    stop: Stop | threading.Event | None,
    url_error: bool = False,
    room: int = MAX_UNSIZED,
) -> int:
    """Copy ``src`` to ``out``, at most ``room`` bytes: one byte more is a ToolkitError
    (the partial file is removed), so a body longer than declared is never stored."""
    read = src.read  # type: ignore[attr-defined]
    write = out.write  # type: ignore[attr-defined]
    n = 0
    while True:
        if stop is not None and stop.is_set():
            raise _Stopped
        try:
            block = read(min(CHUNK, room - n + 1))
        except (OSError, http.client.HTTPException):
            if not url_error:
                raise
            out.flush()  # type: ignore[attr-defined]
            return -1  # interrupted: the caller reports it, the partial file stays
        if not block:
            return n
        if n + len(block) > room:
            out.truncate(0)  # type: ignore[attr-defined]
            declared = f"the {item.size} bytes declared" if item.size is not None else (
                f"{MAX_UNSIZED} bytes (no size declared)")
            raise ToolkitError(f"{item.url}: longer than {declared}; nothing installed")
        digest.update(block)
        write(block)
        n += len(block)
        if progress is not None:
            progress(item.label, len(block), item.size)


def fetch_all(
    items: Sequence[Download],
    cache: Cache,
    jobs: int = 4,
    progress: Progress | None = None,
) -> tuple[dict[str, Path], int]:
    """Every item's cached file (by sha256) and how many bytes were downloaded; the first
    failure stops the others and is raised."""
    paths: dict[str, Path] = {}
    downloaded = 0
    pending = [i for i in items if i.sha256 not in paths]
    stop = Stop()  # set: reads in flight end now, not at their socket's timeout
    if not pending:
        return paths, 0
    with ThreadPoolExecutor(max_workers=max(1, min(jobs, len(pending)))) as pool:
        futures = {pool.submit(fetch_one, i, cache, progress, stop): i for i in pending}
        try:
            for future in as_completed(futures):
                item = futures[future]
                try:
                    path, fresh = future.result()
                except _Stopped:
                    continue
                paths[item.sha256] = path
                if fresh:
                    downloaded += path.stat().st_size
        except BaseException:
            stop.set()
            for f in futures:
                f.cancel()
            raise
    return paths, downloaded
