"""Downloads into the content-addressed cache: parallel, resumable, checked, by the one
downloader (_download.py: its trust rules are scan's too).

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

import os
import threading
import urllib.parse
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from cuwheel._download import MAX_UNSIZED
from cuwheel._remote import Stop
from cuwheel._version import __version__
from cuwheel.errors import Stopped, ToolkitError
from cuwheel.toolkit.cache import Cache

__all__ = ["Download", "as_url", "fetch_all", "fetch_one", "read_url"]

TIMEOUT = 60.0
MAX_MANIFEST = 16 << 20
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


def read_url(url: str, limit: int = MAX_MANIFEST) -> bytes:
    """The whole body of a small document (a manifest); ToolkitError naming the URL."""
    from cuwheel._download import read_small
    from cuwheel.errors import DownloadError

    try:
        return read_small(url, limit, allow_file=True, timeout=TIMEOUT, user_agent=USER_AGENT)
    except DownloadError as exc:
        if exc.problem == f"larger than {limit} bytes":
            raise ToolkitError(f"{url}: larger than {limit} bytes, not a manifest") from None
        raise ToolkitError(str(exc)) from None


def fetch_one(
    item: Download,
    cache: Cache,
    progress: Progress | None = None,
    stop: Stop | threading.Event | None = None,
) -> tuple[Path, bool]:
    """The cached, verified file of ``item`` and whether it had to be downloaded (by the
    one downloader, _download.py, resuming its partial file)."""
    from cuwheel._download import download
    from cuwheel.errors import DownloadError

    cached = cache.verified_blob(item.sha256, item.size)
    if cached is not None:
        return cached, False
    dest = cache.blob(item.sha256)
    part = cache.partial(item.sha256)
    part.parent.mkdir(parents=True, exist_ok=True)
    report = None
    if progress is not None:
        def report(n: int) -> None:
            progress(item.label, n, item.size)
    try:
        download(item.url, part, sha256=item.sha256, size=item.size, max_size=MAX_UNSIZED,
                 timeout=TIMEOUT, stop=stop, progress=report, resume=True, allow_file=True,
                 user_agent=USER_AGENT)
    except DownloadError as exc:
        tail = "" if exc.kept else "; nothing installed"
        raise ToolkitError(f"{exc}{tail}") from None
    dest.parent.mkdir(parents=True, exist_ok=True)
    os.replace(part, dest)
    return dest, True


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
        futures: dict[Future[tuple[Path, bool]], Download] = {}
        try:
            # Submitting inside the try: a SIGTERM can arrive while submit() starts a worker
            # (before the pool records it), and that worker's read must still be stopped.
            for i in pending:
                futures[pool.submit(fetch_one, i, cache, progress, stop)] = i
            for future in as_completed(futures):
                item = futures[future]
                try:
                    path, fresh = future.result()
                except Stopped:
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
