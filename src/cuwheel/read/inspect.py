"""The public entry point ``inspect(targets) -> Inventory``, and the scheduler under it.

One scheduler reads every target of a call: each is cut into work items (a whole small
wheel or file; one member of a big wheel; a batch of a big wheel's small members or of a
directory's files) and the items run on a pool of worker processes biggest first, the
items of one wheel next to each other, so that one huge wheel and a thousand small ones
both keep every core busy.  At most twice as many items as workers are in flight, and a
target's result leaves the scheduler as soon as its last item is done, so memory does
not grow with the number of targets.  With one worker (or too little to read) nothing
is forked and neither ``multiprocessing`` nor ``concurrent.futures`` is imported.

Over 400 lines: the scheduler (work items, the pool, a dead worker's items rerun alone)
and the targets' own walks (wheels, directories, distributions) are one piece of state.
"""

from __future__ import annotations

import dataclasses
import heapq
import os
import stat
import sys
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from cuwheel.errors import InputError
from cuwheel.model.inventory import Binary, Inventory, Problem, Source, WheelInfo
from cuwheel.read.artifacts import artifact_kind, read_artifact
from cuwheel.read.sources import (
    DEFAULT_LIMITS,
    MAX_WHEEL_FILE,
    Limits,
    WheelFile,
    read_member,
    read_path,
    wheel_file_tags,
    wheel_info,
)

if TYPE_CHECKING:
    from concurrent.futures import Future

__all__ = ["Progress", "inspect", "iter_inspect"]

# Called as progress(label, done, total) with byte counts; never required.
Progress = Callable[[str, int, int], None]

# Members (and a directory's files) at least this large get a work item of their own.
_BIG_MEMBER = 8 << 20
# Smaller ones are batched: at most this many, and this many bytes, in one item.
_BATCH = 1500
_BATCH_BYTES = 32 << 20
# Below this many bytes in all, starting worker processes costs more than it saves; a
# wheel of at least half of it on disk (deflate at least halves a binary) is cut into
# member items.
_PARALLEL_THRESHOLD = 64 << 20
# Work items in flight per worker: enough that no worker waits for the next, few enough
# that results do not pile up.
_IN_FLIGHT = 2
# Big wheels the parent keeps open for forked workers to inherit (their central
# directories already read); each worker keeps up to _WORKER_WHEELS more of its own.
_INHERIT = 16
_WORKER_WHEELS = 8
# What a whole-wheel item is assumed to inflate to, per byte on disk (for ordering only).
_WHEEL_RATIO = 2
# A wheel's own finishing item (a ``finish`` run on its assembled Source) goes first.
_FIRST = 1 << 62

T = TypeVar("T")
Finish = Callable[[Source, Any], T]


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
    ``workers``: processes for the reading (default: up to 2).
    """
    _check_payload(payload)
    if isinstance(targets, (str, os.PathLike)):
        targets = [targets]
    paths = [os.fspath(t) for t in targets]
    if workers is None:
        workers = min(2, os.cpu_count() or 1)
    found: list[Source | None] = [None] * len(paths)
    for i, src in iter_inspect(paths, workers=workers, limits=limits, progress=progress,
                               payload=payload, finish=_keep):
        found[i] = src
    sources = [s for s in found if s is not None]
    names = list(dists)
    if env:
        seen = set()
        from cuwheel.read.installed import installed_names  # only here: start-up time

        for n in installed_names():
            if n and n.lower() not in seen:
                seen.add(n.lower())
                names.append(n)
    for name in names:
        sources.append(_inspect_dist(name, payload))
    return Inventory(tuple(sources))


def _keep(source: Source, tag: object) -> Source:
    return source


def _check_payload(payload: str) -> None:
    if payload not in ("sample", "all", "none"):
        raise ValueError(f"payload must be 'sample', 'all' or 'none', not {payload!r}")


def iter_inspect(
    targets: Sequence[str],
    *,
    workers: int | None = None,
    limits: Limits = DEFAULT_LIMITS,
    progress: Progress | None = None,
    payload: str = "sample",
    finish: Finish[T] = _keep,  # type: ignore[assignment]  # T is Source by default
    tags: Sequence[Any] | None = None,
) -> Iterator[tuple[int, T]]:
    """Read ``targets`` (wheels, directories, files) and yield ``(index, result)`` for
    each as soon as it is read, in no set order.  The result is ``finish(source, tag)``
    (``tags[index]``, or None); ``finish`` runs where the Source is completed: in the
    worker that read a whole target, or in one more work item for a wheel read in
    parts.  It must be picklable (a module-level function or a partial of one).
    ``workers``: processes (default: every CPU); 1 reads everything in this process.
    """
    _check_payload(payload)
    run = _Run(list(targets), workers, limits, progress, payload, finish,
               list(tags) if tags is not None else None)
    return run.results()


# -- work items ---------------------------------------------------------------------------
# ("whole", i, path, kind): the target read in one piece -> finish(Source)
# ("members", i, path, names): members of a wheel -> [(name, binaries, problems)]
# ("files", i, paths): files of a directory -> [(path, binaries, problems)]
# ("finish", i, source): finish(source) of a target read in parts
Item = tuple[Any, ...]
_Parts = list[tuple[str, list[Binary], list[Problem]]]


@dataclasses.dataclass
class _Parted:
    """A target read in several items: what its parts came to so far."""

    kind: str  # "wheel" or "directory"
    path: str
    info: Any  # WheelInfo | None
    problems: list[Problem]  # found while planning (METADATA, refused members, walk)
    order: dict[str, int]
    sizes: dict[str, int]
    files_seen: int
    left: int  # items not yet done
    size: int  # bytes, for progress
    parts: _Parts = dataclasses.field(default_factory=list)
    done: int = 0

    def source(self) -> Source:
        self.parts.sort(key=lambda r: self.order[r[0]])
        binaries = tuple(b for _, bs, _ in self.parts for b in bs)
        problems = tuple(self.problems) + tuple(p for _, _, ps in self.parts for p in ps)
        return Source(self.kind, self.path, wheel=self.info, files_seen=self.files_seen,
                      binaries=binaries, problems=problems)

    def died(self) -> Source:
        problems = (*self.problems, Problem(self.path, "a worker process died (out of memory?)"))
        return Source(self.kind, self.path, wheel=self.info, problems=problems)


class _Run(Generic[T]):
    def __init__(
        self,
        targets: list[str],
        workers: int | None,
        limits: Limits,
        progress: Progress | None,
        payload: str,
        finish: Finish[T],
        tags: list[Any] | None,
    ) -> None:
        self.targets = targets
        self.workers = max(1, _cpu_count() if workers is None else workers)
        self.limits = limits
        self.progress = progress
        self.payload = payload
        self.finish = finish
        self.tags = tags
        self.parted: dict[int, _Parted] = {}
        self.sizes: dict[int, int] = {}  # of targets read whole, for progress
        self.kinds: dict[int, str] = {}
        self.opened: dict[str, WheelFile] = {}  # split wheels, open in this process

    def tag(self, i: int) -> Any:
        return self.tags[i] if self.tags is not None else None

    def results(self) -> Iterator[tuple[int, T]]:
        classes: list[tuple[str, Any]] = [_classify(p) for p in self.targets]
        total = 0
        for i, (kind, what) in enumerate(classes):
            self.kinds[i] = kind
            if kind in ("zip", "file"):
                self.sizes[i] = what
            if kind == "zip":
                total += what * _WHEEL_RATIO
            elif kind == "file":
                total += what
            elif kind == "dir":
                total += sum(s for _, s in what[0])
        parallel = (self.workers > 1 and _cpu_count() > 1 and len(self.targets) > 0
                    and total >= _PARALLEL_THRESHOLD)
        items: list[tuple[int, int, int, Item]] = []  # (-group cost, -own cost, seq, item)
        try:
            for i, (kind, what) in enumerate(classes):
                if kind == "done":
                    yield i, self.finish(what, self.tag(i))
                    continue
                planned = self._plan(i, kind, what, parallel)
                if isinstance(planned, Source):  # the wheel could not be opened
                    yield i, self.finish(planned, self.tag(i))
                    continue
                group = max(c for c, _ in planned)
                for cost, item in planned:
                    items.append((-group, -cost, len(items), item))
            workers = min(self.workers, len(items), _cpu_count())
            _open_wheels.update(self.opened)
            if not parallel or workers <= 1:
                # In target order, each finished before the next starts (streaming).
                items.sort(key=lambda t: t[3][1])
                for _, _, _, item in items:
                    yield from self._done(item, _run_item(item, self.limits, self.payload,
                                                          self.finish, self.tag(item[1])))
                return
            heapq.heapify(items)
            yield from self._pool(items, workers)
        finally:
            for path, wf in self.opened.items():
                _open_wheels.pop(path, None)
                wf.close()
            self.opened.clear()

    # -- planning ----------------------------------------------------------------------
    def _plan(
        self, i: int, kind: str, what: Any, parallel: bool
    ) -> list[tuple[int, Item]] | Source:
        path = self.targets[i]
        if kind == "dir":
            files, walk_problems = what
            if not parallel or len(files) < 2:
                return [(sum(s for _, s in files) or 1, ("whole", i, path, kind))]
            groups = _batches(files)
            order = {p: k for k, (p, _) in enumerate(files)}
            self.parted[i] = _Parted("directory", path, None, list(walk_problems), order,
                                     dict(files), len(files), len(groups),
                                     sum(s for _, s in files))
            return [(sum(s for _, s in g) or 1, ("files", i, [p for p, _ in g]))
                    for g in groups]
        if kind in ("file", "artifact") or not parallel or what * 2 < _PARALLEL_THRESHOLD:
            cost = what * (_WHEEL_RATIO if kind == "zip" else 1)
            return [(cost or 1, ("whole", i, path, kind))]
        # A big wheel: cut into member items.
        try:
            wf = WheelFile(path, self.limits)
        except InputError as exc:
            return Source("wheel", path, problems=(Problem(exc.path, exc.problem),))
        keep = len(self.opened) < _INHERIT
        try:
            info, problems, members, total = _wheel_plan(wf)
        finally:
            if not keep:
                wf.close()
        if keep:
            self.opened[path] = wf
        if total > self.limits.max_total_size:
            problems.append(Problem(path, f"members declare {total} bytes in all, over the limit"))
            return Source("wheel", path, wheel=info, problems=tuple(problems))
        groups = _batches(members)
        order = {n: k for k, (n, _) in enumerate(members)}
        self.parted[i] = _Parted("wheel", path, info, problems, order, dict(members),
                                 len(members), len(groups), total)
        if not groups:
            self.parted[i].left = 1
            return [(1, ("members", i, path, []))]
        return [(sum(s for _, s in g) or 1, ("members", i, path, [n for n, _ in g]))
                for g in groups]

    # -- results -----------------------------------------------------------------------
    def _done(self, item: Item, result: Any) -> Iterator[tuple[int, T]]:
        """Take an item's result; yield the target's if it is complete.  A part-read
        target's finish is returned as an item instead (see _pool), or run here."""
        out = self._take(item, result)
        if out is None:
            return
        i, src = out
        if src is not None:
            yield i, self.finish(src, self.tag(i))
        else:
            yield i, result

    def _take(self, item: Item, result: Any) -> tuple[int, Source | None] | None:
        """(index, Source to finish) when ``item`` completes its target, (index, None)
        when ``result`` is the target's finished result, None while parts are missing."""
        kind, i = item[0], item[1]
        if kind in ("whole", "finish"):
            if self.progress and kind == "whole":
                size = self.sizes.get(i, 0)
                self.progress(self.targets[i], size, size)
            return i, None
        pend = self.parted[i]
        pend.parts += result
        pend.left -= 1
        if self.progress:
            pend.done += sum(pend.sizes.get(name, 0) for name, _, _ in result)
            self.progress(pend.path, pend.done, pend.size)
        if pend.left > 0:
            return None
        del self.parted[i]
        if pend.kind == "wheel" and pend.path in self.opened:
            _open_wheels.pop(pend.path, None)
            self.opened.pop(pend.path).close()
        return i, pend.source()

    def _pool(
        self, items: list[tuple[int, int, int, Item]], workers: int
    ) -> Iterator[tuple[int, T]]:
        import multiprocessing
        from concurrent.futures import FIRST_COMPLETED, wait
        from concurrent.futures.process import BrokenProcessPool

        methods = multiprocessing.get_all_start_methods()
        ctx = multiprocessing.get_context("fork" if "fork" in methods else None)
        # Forked workers inherit the open wheels (_open_wheels: their central
        # directories already read; reads use pread, so sharing a descriptor is safe).
        pool = _executor_class()(max_workers=workers, mp_context=ctx,
                                 initializer=_worker_init, initargs=(os.getpid(),))
        running: dict[Future[Any], Item] = {}
        seq = len(items)
        try:
            while items or running:
                while items and len(running) < workers * _IN_FLIGHT:
                    item = heapq.heappop(items)[3]
                    fut = pool.submit(_run_item, item, self.limits, self.payload,
                                      self.finish, self.tag(item[1]))
                    running[fut] = item
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                broken: list[Item] = []
                for fut in done:
                    item = running.pop(fut)
                    if isinstance(fut.exception(), BrokenProcessPool):
                        broken.append(item)
                        continue
                    result = fut.result()
                    out = self._take(item, result)
                    if out is None:
                        continue
                    i, src = out
                    if src is None:
                        yield i, result
                    elif self.finish is _keep:
                        yield i, self.finish(src, self.tag(i))
                    else:
                        heapq.heappush(items, (-_FIRST, 0, seq, ("finish", i, src)))
                        seq += 1
                if broken:
                    # Which item killed its worker is unknown: each unfinished one is run
                    # again alone, so that only its own target loses.
                    left = [*broken, *running.values(), *(t[3] for t in sorted(items))]
                    running.clear()
                    items.clear()
                    pool.shutdown(wait=True, cancel_futures=True)
                    yield from self._isolated(left, ctx)
                    return
        except BaseException:
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        pool.shutdown(wait=True)

    def _isolated(self, items: list[Item], ctx: Any) -> Iterator[tuple[int, T]]:
        """Run each item alone in a worker of its own: an item whose worker dies costs
        only its own target (a problem), and the others are still read."""
        from concurrent.futures.process import BrokenProcessPool

        dead: set[int] = set()
        pool: Any = None
        try:
            while items:
                item = items.pop(0)
                i = item[1]
                if i in dead:
                    continue
                if pool is None:
                    pool = _executor_class()(max_workers=1, mp_context=ctx,
                                             initializer=_worker_init,
                                             initargs=(os.getpid(),))
                try:
                    result = pool.submit(_run_item, item, self.limits, self.payload,
                                         self.finish, self.tag(i)).result()
                except BrokenProcessPool:
                    pool.shutdown(wait=True)
                    pool = None
                    dead.add(i)
                    pend = self.parted.pop(i, None)
                    if pend is not None:
                        src = pend.died()
                    else:
                        kind = {"zip": "wheel", "dir": "directory"}.get(self.kinds[i], "file")
                        src = Source(kind, self.targets[i], problems=(
                            Problem(self.targets[i], "a worker process died (out of memory?)"),))
                    yield i, self.finish(src, self.tag(i))
                    continue
                out = self._take(item, result)
                if out is None:
                    continue
                j, whole = out
                if whole is None:
                    yield j, result
                elif self.finish is _keep:
                    yield j, self.finish(whole, self.tag(j))
                else:
                    items.insert(0, ("finish", j, whole))
        finally:
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)


def _batches(sized: list[tuple[str, int]]) -> list[list[tuple[str, int]]]:
    """Big ones alone (biggest first), small ones in batches (in their order)."""
    big = sorted((t for t in sized if t[1] >= _BIG_MEMBER), key=lambda t: -t[1])
    out: list[list[tuple[str, int]]] = [[t] for t in big]
    batch: list[tuple[str, int]] = []
    size = 0
    for t in sized:
        if t[1] >= _BIG_MEMBER:
            continue
        if batch and (len(batch) >= _BATCH or size + t[1] > _BATCH_BYTES):
            out.append(batch)
            batch, size = [], 0
        batch.append(t)
        size += t[1]
    if batch:
        out.append(batch)
    return out


def _wheel_plan(wf: WheelFile) -> tuple[Any, list[Problem], list[tuple[str, int]], int]:
    """A wheel's info, the problems found before reading (METADATA, refused members),
    its members to read with their declared sizes, and the sum of those."""
    info, problems = wheel_info(wf)
    members: list[tuple[str, int]] = []
    total = 0
    for m in wf.members:
        why = wf.refusal(m)
        if why:
            problems.append(Problem(wf.display(m.name), why))
            continue
        if m.is_dir():
            continue
        members.append((m.name, m.file_size))
        total += m.file_size
    return info, problems, members, total


def _classify(path: str) -> tuple[str, Any]:
    """What a target is, from stat and magic: ("dir", (files with sizes, problems)),
    ("zip", size), ("file", size), ("artifact", size) for an exported program or Triton
    cache (read/artifacts.py), or ("done", Source) when it cannot be read at all."""
    if artifact_kind(path) is not None:
        return "artifact", max(os.path.getsize(path), 1) if os.path.isfile(path) else 1
    if os.path.isdir(path):
        walk_problems: list[Problem] = []
        files = _walk(path, walk_problems)
        sized = []
        for f in files:
            try:
                sized.append((f, os.lstat(f).st_size))
            except OSError:
                sized.append((f, 0))  # read_path reports it
        return "dir", (sized, walk_problems)
    try:
        # Not open(): a FIFO would block it forever; a device is no input either.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                return "done", Source("file", path, problems=(Problem(path, "not a regular file"),))
            magic = os.pread(fd, 4, 0)
        finally:
            os.close(fd)
    except OSError as exc:
        return "done", Source("file", path, problems=(Problem(path, exc.strerror or str(exc)),))
    if magic in (b"PK\x03\x04", b"PK\x05\x06"):
        return "zip", st.st_size
    return "file", st.st_size


def _run_item(item: Item, limits: Limits, payload: str, finish: Finish[Any], tag: Any) -> Any:
    """Do one work item (in a worker, or in this process when there is no pool)."""
    kind = item[0]
    if kind == "whole":
        return finish(_inspect_target(item[2], limits, payload, item[3]), tag)
    if kind == "finish":
        return finish(item[2], tag)
    out: _Parts = []
    if kind == "members":
        wf = _wheel(item[2], limits)
        for name in item[3]:
            binaries, problems, _ = read_member(wf, name, payload)
            out.append((name, binaries, problems))
        return out
    for p in item[2]:  # "files"
        binaries, problems, _ = read_path(p, payload)
        out.append((p, binaries, problems))
    return out


# Wheels open in this process: inherited from the parent at fork (read-only here), and
# the worker's own, the least recently used closed first.
_open_wheels: dict[str, WheelFile] = {}
_own_wheels: OrderedDict[str, WheelFile] = OrderedDict()


def _wheel(path: str, limits: Limits) -> WheelFile:
    wf = _open_wheels.get(path)
    if wf is not None:
        return wf
    wf = _own_wheels.get(path)
    if wf is None:
        wf = _own_wheels[path] = WheelFile(path, limits)
        while len(_own_wheels) > _WORKER_WHEELS:
            _own_wheels.popitem(last=False)[1].close()
    _own_wheels.move_to_end(path)
    return wf


def _inspect_target(path: str, limits: Limits, payload: str, known: str | None = None) -> Source:
    """Read one target whole; ``known``: what _classify found it to be (it is not looked
    at again, except that a directory is walked again)."""
    what: Any = None
    kind = known
    if known in (None, "dir"):
        kind, what = _classify(path)
    if kind == "done":
        done: Source = what
        return done
    if kind == "dir":
        files, walk_problems = what
        src = _inspect_files("directory", path, [f for f, _ in files], payload)
        if walk_problems:
            src = dataclasses.replace(src, problems=tuple(walk_problems) + src.problems)
        return src
    if kind == "zip":
        return _inspect_wheel(path, limits, payload)
    if kind == "artifact":
        return read_artifact(path, limits)
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
    from cuwheel.read.installed import find

    try:
        dist = find(name)
    except InputError as exc:
        return Source("distribution", name, problems=(Problem(exc.path, exc.problem),))
    label = f"{dist.name} {dist.version}"
    src = _inspect_files("distribution", label, list(dist.files), payload)
    return dataclasses.replace(src, problems=dist.problems + src.problems)


def installed_source(name: str, payload: str = "sample") -> Source:
    """An installed distribution read as the wheel it was installed from: its files under
    the site-packages directory, named ``<wheel file name>!<path>`` as a wheel's members
    are, and a WheelInfo from its METADATA and WHEEL (the file name is made up from the
    WHEEL file's ``Tag:`` lines).  InputError when it is not installed.  METADATA, WHEEL
    and RECORD are read bounded, and only files inside site-packages (read/installed.py)."""
    from packaging.version import InvalidVersion, Version

    from cuwheel.read.installed import find
    from cuwheel.read.tables import MAX_NAME

    dist = find(name)
    meta = dist.metadata
    dist_name = dist.name[:MAX_NAME]
    version = dist.version[:MAX_NAME]
    # The WHEEL file, read as a wheel's is: bounded, tags cut.
    wheel_file = wheel_file_tags(dist.wheel[:MAX_WHEEL_FILE]) if dist.wheel is not None \
        else None
    tags = tuple(dict.fromkeys(wheel_file or ("py3-none-any",)))
    parts: list[dict[str, None]] = [{}, {}, {}]  # the compressed tag set of a file name
    for tag in tags:
        for i, piece in enumerate(tag.split("-", 2)):
            parts[i][piece] = None
    filename = "-".join(
        [dist_name.replace("-", "_"), version, *(".".join(p) for p in parts)]
    ) + ".whl"
    base = dist.base
    src = _inspect_files("distribution", filename, list(dist.files), payload)

    def member(path: str | None) -> str | None:
        if path is None or not path.startswith(base + os.sep):
            return path
        return filename + "!" + path[len(base) + 1 :].replace(os.sep, "/")

    binaries = tuple(
        dataclasses.replace(b, path=member(b.path) or b.path, archive=member(b.archive))
        for b in src.binaries
    )
    problems = tuple(dataclasses.replace(p, path=member(p.path) or p.path)
                     for p in dist.problems + src.problems)
    try:
        local = Version(version).local
    except InvalidVersion:
        local = None
    rp = meta["Requires-Python"]
    info = WheelInfo(
        name=dist_name, version=version,
        # The WHEEL file's own lines, not the product of the name's compressed sets: that
        # product of hostile lines would grow as their count cubed.
        tags=tuple(sorted(tags)),
        requires_dist=tuple(str(r) for r in meta.get_all("Requires-Dist") or ()),
        local_version=local, wheel_file_tags=wheel_file,
        requires_python=str(rp)[:4096] if rp is not None else None,
    )  # fmt: skip
    return dataclasses.replace(src, wheel=info, binaries=binaries, problems=problems)


def _inspect_wheel(path: str, limits: Limits, payload: str) -> Source:
    """A wheel read whole, in this process."""
    try:
        wf = WheelFile(path, limits)
    except InputError as exc:
        return Source("wheel", path, problems=(Problem(exc.path, exc.problem),))
    with wf:
        info, problems, members, total = _wheel_plan(wf)
        if total > limits.max_total_size:
            problems.append(Problem(path, f"members declare {total} bytes in all, over the limit"))
            return Source("wheel", path, wheel=info, problems=tuple(problems))
        binaries: list[Binary] = []
        for name, _ in members:
            bs, ps, _ = read_member(wf, name, payload)
            binaries += bs
            problems += ps
    return Source("wheel", path, wheel=info, files_seen=len(members),
                  binaries=tuple(binaries), problems=tuple(problems))


# -- worker processes -----------------------------------------------------------------------
def _cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _executor_class() -> Any:
    """concurrent.futures' ProcessPoolExecutor, imported only when a pool starts (tests
    may put another in this module's namespace)."""
    cls = globals().get("ProcessPoolExecutor")
    if cls is None:
        from concurrent.futures import ProcessPoolExecutor as cls
    return cls


def __getattr__(name: str) -> Any:
    if name == "ProcessPoolExecutor":
        from concurrent.futures import ProcessPoolExecutor

        return ProcessPoolExecutor
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_PR_SET_PDEATHSIG = 1


def _worker_init(parent: int) -> None:
    """In each worker: die with the parent.  A worker left behind by a killed parent (CI
    cancellation, ``timeout``) would otherwise wait on its task queue forever."""
    import signal

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
