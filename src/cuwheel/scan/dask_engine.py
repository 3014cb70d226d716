"""The scan on a Dask cluster (``pip install 'cuwheel[dask]'``): each wheel is one task
that reads it from shared storage or downloads it from its URL, and returns its record;
the records are the bytes the local engine writes (each is a pure function of the
wheel's content).  Biggest wheels are given the highest priority.  Without an address
the tasks run on a LocalCluster of worker processes (one thread each) on this machine.

Dask rather than Ray: the tasks are independent functions from a path or URL to a
string, which is what ``Client.submit`` runs, and ``dask[distributed]`` is 5 MB of pure
Python wheels (Ray is an 80 MB binary wheel with its own object store and daemons).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from typing import Any

from cuwheel.errors import CuwheelError
from cuwheel.rules.judge import Rules
from cuwheel.scan.inputs import USER_AGENT, WheelRef
from cuwheel.scan.record import RecordOptions, Tag, error_record, make_record

__all__ = ["record_task", "run_dask"]


def record_task(ref: WheelRef, sha256: str | None, options: RecordOptions,
                rules: Rules | None = None) -> str:
    """One wheel's record (runs on a Dask worker; in-process, one worker)."""
    from cuwheel.read.inspect import inspect

    tmp = None
    path = ref.input
    try:
        if ref.remote:
            from cuwheel._download import download
            from cuwheel.errors import DownloadError

            tmp = tempfile.mkdtemp(prefix="cuwheel-task-")
            path = os.path.join(tmp, os.path.basename(ref.filename) or "wheel.whl")
            try:
                sha256 = download(ref.input, path, sha256=sha256, size=ref.size,
                                  by=" by the index", user_agent=USER_AGENT)
            except DownloadError as exc:
                return error_record(ref.input, ref.filename, sha256, exc.problem, options)
        source = inspect([path], workers=1, payload=options.payload).sources[0]
        return make_record(source, Tag(ref.input, ref.filename, sha256, options, rules))
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def run_dask(
    todo: list[tuple[WheelRef, str | None]],
    options: RecordOptions,
    *,
    address: str | None = None,
    n_workers: int | None = None,
    max_outstanding: int | None = None,
    result: Any = None,
    rules: Rules | None = None,
) -> Iterator[str]:
    """Yield the records of ``todo`` as the cluster finishes them.  Backpressure: at most
    ``max_outstanding`` tasks (default: twice the cluster's worker threads) are submitted
    and not yet yielded; each finished one is replaced by the next (as_completed, refilled),
    biggest wheels first.  ``result.peak_outstanding`` gets the most seen at once."""
    try:
        import distributed
    except ImportError:
        raise CuwheelError("the dask engine needs dask[distributed]: "
                           "pip install 'cuwheel[dask]'") from None
    dd: Any = distributed  # untyped
    cluster = None
    n = 0
    if address is None:
        from cuwheel.read.schedule import cpu_count

        n = n_workers or cpu_count()
        cluster = dd.LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                               dashboard_address=None)
    client = dd.Client(cluster if cluster is not None else address)
    try:
        # our own cluster's threads are known; a scheduler's workers may still be joining
        bound = max_outstanding or 2 * (n or _threads(client))
        sized = sorted(((_size(ref), ref, sha) for ref, sha in todo),
                       key=lambda t: -t[0])
        queue = iter(sized)
        outstanding = 0
        done = dd.as_completed()

        def submit() -> bool:
            nonlocal outstanding
            nxt = next(queue, None)
            if nxt is None:
                return False
            size, ref, sha = nxt
            done.add(client.submit(record_task, ref, sha, options, rules, pure=False,
                                   priority=size >> 20))
            outstanding += 1
            if result is not None:
                result.peak_outstanding = max(result.peak_outstanding, outstanding)
            return True

        while outstanding < bound and submit():
            pass
        for fut in done:
            line: str = fut.result()
            fut.release()
            outstanding -= 1
            yield line
            submit()  # after the caller took the record: never more than the bound held
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def _size(ref: WheelRef) -> int:
    if ref.size is not None:
        return ref.size
    if ref.remote:
        return 0
    try:
        return os.path.getsize(ref.input)
    except OSError:
        return 0


def _threads(client: Any) -> int:
    """Worker threads of the cluster now (at least one)."""
    try:
        info = client.scheduler_info()
        return sum(int(w.get("nthreads", 1)) for w in info.get("workers", {}).values()) or 1
    except Exception:  # an unreachable scheduler: the first submit says why
        return 1
