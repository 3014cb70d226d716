"""Run a scan: cached records first, then every other wheel read by the scheduler of
:func:`cuwheel.read.inspect.iter_inspect` (``engine="local"``: all cores of this
machine) or as tasks on a Dask cluster (``engine="dask"``)."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from cuwheel.errors import InputError
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
) -> Iterator[str]:
    """Yield one record line (no newline) per wheel of ``refs``, in no set order: each
    from the cache where it holds the wheel's sha256 (known from the index, or from an
    unchanged file hashed before), else read.  ``workers``: processes of the local
    engine (default: every CPU); ``engine="dask"`` runs the reading on the Dask
    scheduler at ``dask_address`` or, without one, on a local cluster of
    ``dask_workers`` processes."""
    options = options or RecordOptions()
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

        for line in run_dask(todo, options, address=dask_address, n_workers=dask_workers):
            _store(cache, line, None)
            res.count(line)
            yield line
        return
    yield from _local(todo, options, workers, cache, download_dir, res)


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
) -> Iterator[str]:
    from cuwheel.read.inspect import iter_inspect

    tmp: str | None = None
    if download_dir is None and any(ref.remote for ref, _ in todo):
        tmp = tempfile.mkdtemp(prefix="cuwheel-scan-")
    try:
        paths: list[str] = []
        tags: list[Tag] = []
        local: list[bool] = []
        ready: list[tuple[WheelRef, str | None, str | None]] = []  # ref, sha, local path
        remote = [(ref, sha) for ref, sha in todo if ref.remote]
        fetched = _download(remote, download_dir or tmp or "") if remote else iter(())
        ready += [(ref, sha, ref.input) for ref, sha in todo if not ref.remote]
        for ref, sha, path, error in fetched:
            if error is not None:
                line = error_record(ref.input, ref.filename, sha, error, options)
                res.count(line)
                yield line
                continue
            hit = cache.get(sha) if cache is not None and sha else None
            if hit is not None:
                line = with_input(hit, ref.input)
                res.count(line, cached=True)
                yield line
                continue
            ready.append((ref, sha, path))
        for ref, sha, path in ready:
            assert path is not None
            paths.append(path)
            tags.append(Tag(ref.input, ref.filename, sha, options))
            local.append(not ref.remote)
        for i, line in iter_inspect(paths, workers=workers, payload=options.payload,
                                    finish=make_record, tags=tags):
            _store(cache, line, paths[i] if local[i] else None)
            res.count(line)
            yield line
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def _download(
    remote: list[tuple[WheelRef, str | None]], into: str
) -> Iterator[tuple[WheelRef, str | None, str | None, str | None]]:
    """(ref, sha256, local path, error) for each remote wheel, downloaded a few at a
    time into ``into`` (each in a folder of its own, under its own file name)."""
    from concurrent.futures import ThreadPoolExecutor

    from cuwheel.scan.fetch import Stop, fetch

    os.makedirs(into, exist_ok=True)
    stop = Stop()  # set: every download in flight ends now, not at its socket's timeout

    def one(k: int, ref: WheelRef, sha: str | None) -> tuple[WheelRef, str | None,
                                                           str | None, str | None]:
        d = os.path.join(into, str(k))
        os.makedirs(d, exist_ok=True)
        dest = os.path.join(d, os.path.basename(ref.filename) or "wheel.whl")
        try:
            got = fetch(ref.input, dest, sha256=sha, size=ref.size, stop=stop)
        except InputError as exc:
            return ref, sha, None, exc.problem
        return ref, got, dest, None

    # Not a with-block: a scan that is closed early (SIGTERM, an error) must not wait for
    # every download to finish before its folder is removed.
    pool = ThreadPoolExecutor(_DOWNLOADS)
    try:
        futures = [pool.submit(one, k, ref, sha) for k, (ref, sha) in enumerate(remote)]
        for fut in futures:
            yield fut.result()
    finally:
        stop.set()
        pool.shutdown(wait=True, cancel_futures=True)
