"""Run a scan: cached records first, then every other wheel read by the scheduler of
:func:`cuwheel.read.inspect.iter_inspect` (``engine="local"``: all cores of this
machine) or as tasks on a Dask cluster (``engine="dask"``).  Wheels from URLs stream
through a bounded number of slots (docs/scan.md, streaming): the temporary disk of a scan
is a few wheels, never the whole index."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from cuwheel.read.schedule import cpu_count
from cuwheel.rules.judge import Rules
from cuwheel.scan.cache import Cache
from cuwheel.scan.inputs import WheelRef
from cuwheel.scan.record import (
    RecordOptions,
    Tag,
    content_part,
    error_record,
    make_record,
    with_input,
)

__all__ = ["ScanResult", "scan"]

_DOWNLOADS = 4  # concurrent downloads


@dataclass
class ScanResult:
    """Counts of a scan, filled in as its records are yielded."""

    records: int = 0
    cached: int = 0  # served from the cache, not read
    read: int = 0  # wheels read
    errors: int = 0  # records with an error (not downloaded, not a wheel)
    unreadable: list[str] = field(default_factory=list)  # inputs with problems or errors
    peak_in_flight: int = 0  # most remote wheels downloading, on disk or read at once
    peak_disk: int = 0  # most bytes of downloaded wheels on disk at once
    peak_outstanding: int = 0  # most Dask tasks submitted and not yet yielded

    def count(self, line: str, *, cached: bool = False) -> None:
        self.records += 1
        if cached:
            self.cached += 1
        else:
            self.read += 1
        obj = json.loads(line)
        inv = obj.get("inventory") or {}
        if obj.get("error"):
            self.errors += 1
        if obj.get("error") or inv.get("problems") or any(
            b.get("anomalies") for b in inv.get("binaries", [])
        ):
            self.unreadable.append(obj["input"])


def scan(
    refs: Sequence[WheelRef],
    *,
    options: RecordOptions | None = None,
    workers: int | None = None,
    cache: Cache | None = None,
    engine: str = "local",
    dask_address: str | None = None,
    dask_workers: int | None = None,
    download_dir: str | None = None,
    result: ScanResult | None = None,
    max_in_flight: int | None = None,
    rules: Rules | None = None,
) -> Iterator[str]:
    """Yield one record line (no newline) per wheel of ``refs``, in no set order: each
    from the cache where it holds the wheel's sha256 (known from the index, or from an
    unchanged file hashed before), else read.  ``workers``: processes of the local
    engine (default: every CPU); ``engine="dask"`` runs the reading on the Dask
    scheduler at ``dask_address`` or, without one, on a local cluster of
    ``dask_workers`` processes.  Remote wheels stream: at most ``max_in_flight`` (default
    twice the workers) are downloading, on disk or being read at once, each deleted as
    soon as its record is yielded (kept in ``download_dir`` where one is given); on the
    Dask engine, at most that many tasks are outstanding.  ``rules``: the judge of every
    record (rules/judge.py; default: the shipped catalog's); records judged by other rules
    are neither read from nor written to ``cache``, whose key does not hold the catalog."""
    options = options or RecordOptions()
    if rules is not None:
        cache = None
    if engine not in ("local", "dask"):
        raise ValueError(f"engine must be 'local' or 'dask', not {engine!r}")
    res = result if result is not None else ScanResult()
    todo: list[tuple[WheelRef, str | None]] = []
    for ref in refs:
        sha = ref.sha256
        if sha is None and cache is not None and not ref.remote:
            sha = cache.known_sha256(ref.input)
        hit = cache.get(sha) if cache is not None and sha else None
        if hit is not None:
            line = with_input(hit, ref.input)
            res.count(line, cached=True)
            yield line
            continue
        todo.append((ref, sha))
    if not todo:
        return
    if engine == "dask":
        from cuwheel.scan.dask_engine import run_dask

        for line in run_dask(todo, options, address=dask_address, n_workers=dask_workers,
                             max_outstanding=max_in_flight, result=res, rules=rules):
            _store(cache, line, None)
            res.count(line)
            yield line
        return
    yield from _local(todo, options, workers, cache, download_dir, res, max_in_flight, rules)


def _store(cache: Cache | None, line: str, local_path: str | None) -> None:
    if cache is None:
        return
    obj = json.loads(line)
    sha = (obj.get("wheel") or {}).get("sha256")
    if not sha:
        return
    if local_path is not None:
        cache.remember_sha256(local_path, sha)
    if obj.get("inventory") is not None:  # not a download or file-system error
        cache.put(sha, content_part(line))


def _local(
    todo: list[tuple[WheelRef, str | None]],
    options: RecordOptions,
    workers: int | None,
    cache: Cache | None,
    download_dir: str | None,
    res: ScanResult,
    max_in_flight: int | None,
    rules: Rules | None = None,
) -> Iterator[str]:
    from cuwheel.read.inspect import iter_inspect

    files = [(ref, sha) for ref, sha in todo if not ref.remote]
    if files:
        paths = [ref.input for ref, _ in files]
        tags = [Tag(ref.input, ref.filename, sha, options, rules) for ref, sha in files]
        for i, line in iter_inspect(paths, workers=workers, payload=options.payload,
                                    finish=make_record, tags=tags):
            _store(cache, line, paths[i])
            res.count(line)
            yield line
    remote = [(ref, sha) for ref, sha in todo if ref.remote]
    if remote:
        bound = max_in_flight or 2 * (workers or cpu_count())
        yield from _stream(remote, options, workers, cache, download_dir, res, max(1, bound),
                           rules)


Fetched = tuple[WheelRef, "str | None", "str | None", "str | None"]  # ref, sha, path, error


def _stream(
    remote: list[tuple[WheelRef, str | None]],
    options: RecordOptions,
    workers: int | None,
    cache: Cache | None,
    keep_dir: str | None,
    res: ScanResult,
    bound: int,
    rules: Rules | None = None,
) -> Iterator[str]:
    """Download -> read -> record with at most ``bound`` wheels in flight (downloading,
    on disk or being read); each wheel is deleted as soon as its record is yielded
    (unless ``keep_dir`` keeps them), and the temporary folder is removed on any exit.
    The wheels on disk are read in batches by iter_inspect's scheduler while the next
    ones download."""
    from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

    from cuwheel._remote import Stop
    from cuwheel.read.inspect import iter_inspect

    tmp = None if keep_dir is not None else tempfile.mkdtemp(prefix="cuwheel-scan-")
    into = keep_dir if keep_dir is not None else tmp
    assert into is not None
    os.makedirs(into, exist_ok=True)
    stop = Stop()  # set: every download in flight ends now, not at its socket's timeout
    # Not a with-block: a scan that is closed early (SIGTERM, an error) must not wait for
    # every download to finish before its folder is removed.
    pool = ThreadPoolExecutor(min(_DOWNLOADS, bound))
    pending = iter(enumerate(remote))
    downloading: set[Future[Fetched]] = set()
    ready: list[tuple[WheelRef, str | None, str]] = []
    flight = 0
    on_disk: dict[str, int] = {}

    def refill() -> None:
        nonlocal flight
        while flight < bound:
            nxt = next(pending, None)
            if nxt is None:
                return
            k, (ref, sha) = nxt
            downloading.add(pool.submit(_fetch, k, ref, sha, into, stop))
            flight += 1
            res.peak_in_flight = max(res.peak_in_flight, flight)

    def release(path: str | None) -> None:
        nonlocal flight
        flight -= 1
        if path is not None:
            on_disk.pop(path, None)
            if tmp is not None:
                shutil.rmtree(os.path.dirname(path), ignore_errors=True)
        refill()

    try:
        refill()
        while downloading or ready:
            # A batch of about half the bound (the cores) is read at once: the other half
            # downloads meanwhile.
            while downloading and (not ready or len(ready) < max(1, bound // 2)):
                done, _ = wait(downloading, return_when=FIRST_COMPLETED)
                for fut in done:
                    downloading.discard(fut)
                    ref, sha, path, error = fut.result()
                    if error is not None or path is None:
                        line = error_record(ref.input, ref.filename, sha, error or "?", options)
                        res.count(line)
                        yield line
                        release(None)
                        continue
                    with contextlib.suppress(OSError):
                        on_disk[path] = os.path.getsize(path)
                    res.peak_disk = max(res.peak_disk, sum(on_disk.values()))
                    hit = cache.get(sha) if cache is not None and sha else None
                    if hit is not None:
                        line = with_input(hit, ref.input)
                        res.count(line, cached=True)
                        yield line
                        release(path)
                        continue
                    ready.append((ref, sha, path))
            if not ready:
                continue
            batch, ready = ready, []
            paths = [p for _, _, p in batch]
            tags = [Tag(ref.input, ref.filename, sha, options, rules) for ref, sha, _ in batch]
            for i, line in iter_inspect(paths, workers=workers, payload=options.payload,
                                        finish=make_record, tags=tags):
                _store(cache, line, None)
                res.count(line)
                yield line  # written by the caller before its wheel is deleted
                release(paths[i])
    finally:
        stop.set()
        pool.shutdown(wait=True, cancel_futures=True)
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def _fetch(k: int, ref: WheelRef, sha: str | None, into: str, stop: Any) -> Fetched:
    """(ref, sha256, local path, error) of one remote wheel, downloaded into a folder of
    its own under ``into``, under its own file name."""
    from cuwheel._download import download
    from cuwheel.errors import DownloadError, Stopped
    from cuwheel.scan.inputs import USER_AGENT

    d = os.path.join(into, str(k))
    os.makedirs(d, exist_ok=True)
    dest = os.path.join(d, os.path.basename(ref.filename) or "wheel.whl")
    try:
        got = download(ref.input, dest, sha256=sha, size=ref.size, stop=stop,
                       by=" by the index", user_agent=USER_AGENT)
    except DownloadError as exc:
        return ref, sha, None, exc.problem
    except Stopped:
        return ref, sha, None, "download stopped (the scan ended)"
    return ref, got, dest, None
