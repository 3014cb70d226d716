"""The public entry point: ``inspect(targets) -> Inventory``."""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import signal
import stat
import sys
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from cuwheel.errors import InputError
from cuwheel.model.inventory import Binary, Inventory, Problem, Source
from cuwheel.read.sources import (
    DEFAULT_LIMITS,
    Limits,
    WheelFile,
    read_member,
    read_path,
    wheel_info,
)

__all__ = ["Progress", "inspect"]

# Called as progress(label, done, total) with byte counts; never required.
Progress = Callable[[str, int, int], None]

# Members at least this large get a task (and a worker) of their own.
_BIG_MEMBER = 8 << 20
_BATCH = 1500
# Below this many bytes of binaries, starting worker processes costs more than it saves.
_PARALLEL_THRESHOLD = 64 << 20


def inspect(
    targets: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] = (),
    *,
    dists: Iterable[str] = (),
    env: bool = False,
    workers: int | None = None,
    limits: Limits = DEFAULT_LIMITS,
    progress: Progress | None = None,
    payload: str = "sample",
) -> Inventory:
    """Inventory the device code and linkage of wheels, directories, files or installed
    distributions (``dists``, or every distribution of this environment with ``env``).

    Unreadable inputs do not raise: each becomes a ``Problem`` in its ``Source``.
    ``payload`` says which cubins are decoded to read the toolkit that built them:
    "sample" (one per container, in containers 0, 1, 2, 4, 8, ...), "all", or "none".
    """
    if payload not in ("sample", "all", "none"):
        raise ValueError(f"payload must be 'sample', 'all' or 'none', not {payload!r}")
    if isinstance(targets, (str, os.PathLike)):
        targets = [targets]
    if workers is None:
        workers = min(2, os.cpu_count() or 1)
    workers = max(1, workers)
    sources: list[Source] = []
    for target in targets:
        sources.append(_inspect_target(os.fspath(target), workers, limits, progress, payload))
    names = list(dists)
    if env:
        seen = set()
        import importlib.metadata  # only here: it costs start-up time

        for d in importlib.metadata.distributions():
            n = d.metadata["Name"]
            if n and n.lower() not in seen:
                seen.add(n.lower())
                names.append(n)
    for name in names:
        sources.append(_inspect_dist(name, payload))
    return Inventory(tuple(sources))


def _inspect_target(
    path: str, workers: int, limits: Limits, progress: Progress | None, payload: str
) -> Source:
    if os.path.isdir(path):
        walk_problems: list[Problem] = []
        src = _inspect_files("directory", path, _walk(path, walk_problems), payload)
        if walk_problems:
            src = dataclasses.replace(src, problems=tuple(walk_problems) + src.problems)
        return src
    try:
        # Not open(): a FIFO would block it forever; a device is no input either.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return Source("file", path, problems=(Problem(path, "not a regular file"),))
            magic = os.pread(fd, 4, 0)
        finally:
            os.close(fd)
    except OSError as exc:
        return Source("file", path, problems=(Problem(path, exc.strerror or str(exc)),))
    if magic == b"PK\x03\x04" or (magic == b"PK\x05\x06"):
        return _inspect_wheel(path, workers, limits, progress, payload)
    binaries, problems, is_bin = read_path(path, payload)
    if not is_bin and not problems:
        problems = [Problem(path, "not a wheel, directory, or binary cuwheel can read")]
    return Source("file", path, files_seen=1, binaries=tuple(binaries), problems=tuple(problems))


def _walk(root: str, problems: list[Problem]) -> list[str]:
    """Every file under ``root`` that is no symlink, depth first in name order: a loop of
    links is never followed, and depth costs no recursion (a tree 100,000 levels deep is
    a list, not a stack overflow)."""
    out: list[str] = []
    stack = [root]
    while stack:
        d = stack.pop()
        try:
            with os.scandir(d) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            problems.append(Problem(str(exc.filename or d), exc.strerror or str(exc)))
            continue
        subdirs = []
        for e in entries:
            try:
                if e.is_dir(follow_symlinks=False):
                    subdirs.append(e.path)
                elif not e.is_symlink():
                    out.append(e.path)  # special files are refused by read_path
            except OSError as exc:
                problems.append(Problem(e.path, exc.strerror or str(exc)))
        stack.extend(reversed(subdirs))
    return out


def _inspect_files(kind: str, label: str, paths: list[str], payload: str) -> Source:
    binaries: list[Binary] = []
    problems: list[Problem] = []
    for p in paths:
        b, pr, _ = read_path(p, payload)
        binaries += b
        problems += pr
    return Source(kind, label, files_seen=len(paths), binaries=tuple(binaries),
                  problems=tuple(problems))


def _inspect_dist(name: str, payload: str) -> Source:
    import importlib.metadata

    try:
        dist = importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        return Source("distribution", name,
                      problems=(Problem(name, "no such distribution is installed"),))
    files = dist.files or []
    paths = []
    for f in files:
        p = str(f.locate())
        if os.path.isfile(p) and not os.path.islink(p):
            paths.append(p)
    label = f"{dist.metadata['Name']} {dist.version}"
    return _inspect_files("distribution", label, sorted(paths), payload)


# -- wheels ---------------------------------------------------------------------------
_open_wheels: dict[str, WheelFile] = {}

_TaskResult = list[tuple[str, list[Binary], list[Problem]]]


def _wheel_task(path: str, names: list[str], limits: Limits, payload: str) -> _TaskResult:
    wf = _open_wheels.get(path)
    if wf is None:
        wf = _open_wheels[path] = WheelFile(path, limits)
    out = []
    for name in names:
        binaries, problems, _ = read_member(wf, name, payload)
        out.append((name, binaries, problems))
    return out


def _cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


_PR_SET_PDEATHSIG = 1


def _worker_init(parent: int) -> None:
    """In each worker: die with the parent.  A worker left behind by a killed parent (CI
    cancellation, ``timeout``) would otherwise wait on its task queue forever."""
    # A forked worker inherits the parent's Python handlers; SIGTERM must terminate it.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, ctypes.c_ulong(signal.SIGTERM), ctypes.c_ulong(0),
                       ctypes.c_ulong(0), ctypes.c_ulong(0))
        except (OSError, AttributeError):
            pass
    # The parent may have died before prctl took effect (the child is then re-parented).
    if os.getppid() != parent:
        os._exit(1)


def _inspect_wheel(
    path: str, workers: int, limits: Limits, progress: Progress | None, payload: str
) -> Source:
    try:
        wf = WheelFile(path, limits)
    except InputError as exc:
        return Source("wheel", path, problems=(Problem(exc.path, exc.problem),))
    with wf:
        info, problems = wheel_info(wf)
        names: list[str] = []
        sizes_of: dict[str, int] = {}
        total = 0
        for m in wf.members:
            why = wf.refusal(m)
            if why:
                problems.append(Problem(wf.display(m.name), why))
                continue
            if m.is_dir():
                continue
            names.append(m.name)
            sizes_of[m.name] = m.file_size
            total += m.file_size
        if total > limits.max_total_size:
            problems.append(Problem(path, f"members declare {total} bytes in all, over the limit"))
            return Source("wheel", path, wheel=info, problems=tuple(problems))
        order = {n: i for i, n in enumerate(names)}
        big = sorted((n for n in names if sizes_of[n] >= _BIG_MEMBER), key=lambda n: -sizes_of[n])
        small = [n for n in names if sizes_of[n] < _BIG_MEMBER]
        tasks = [[n] for n in big] + [small[i : i + _BATCH] for i in range(0, len(small), _BATCH)]
        sizes = [sum(sizes_of[n] for n in t) for t in tasks]
        results: _TaskResult = []
        done = 0
        big_bytes = sum(sizes_of[n] for n in big)
        # No more workers than tasks or CPUs: --workers 2000 on a two-task wheel forks two.
        workers = min(workers, len(tasks), _cpu_count())
        if workers > 1 and big_bytes >= _PARALLEL_THRESHOLD:
            try:
                results = _run_pool(path, wf, tasks, sizes, workers, limits, payload,
                                    progress, total)
            except BrokenProcessPool:
                problems.append(Problem(path, "a worker process died (out of memory?)"))
                return Source("wheel", path, wheel=info, problems=tuple(problems))
        else:
            for t in tasks:
                for name in t:
                    results.append((name, *read_member(wf, name, payload)[:2]))
                    done += sizes_of[name]
                    if progress:
                        progress(path, done, total)
        results.sort(key=lambda r: order[r[0]])
        binaries = [b for _, bs, _ in results for b in bs]
        problems += [p for _, _, ps in results for p in ps]
    return Source("wheel", path, wheel=info, files_seen=len(names), binaries=tuple(binaries),
                  problems=tuple(problems))


def _run_pool(
    path: str,
    wf: WheelFile,
    tasks: list[list[str]],
    sizes: list[int],
    workers: int,
    limits: Limits,
    payload: str,
    progress: Progress | None,
    total: int,
) -> _TaskResult:
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if "fork" in methods else None)
    # Forked workers inherit the open wheel (its central directory already read;
    # reads use pread, so sharing the descriptor is safe).
    _open_wheels[path] = wf
    results: _TaskResult = []
    done = 0
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=ctx,
                               initializer=_worker_init, initargs=(os.getpid(),))
    try:
        futures: list[tuple[Future[_TaskResult], int]]
        futures = [(pool.submit(_wheel_task, path, t, limits, payload), s)
                   for t, s in zip(tasks, sizes, strict=True)]
        for fut, s in futures:
            results += fut.result()
            done += s
            if progress:
                progress(path, done, total)
    except BaseException:
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    finally:
        _open_wheels.pop(path, None)
    pool.shutdown(wait=True)
    return results
