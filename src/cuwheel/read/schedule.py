"""The scheduler under ``inspect`` and ``iter_inspect`` (inspect.py).

One scheduler reads every target of a call: each is cut into work items (a whole small
wheel or file; one member of a big wheel; a batch of a big wheel's small members or of a
directory's files) and the items run on a pool of worker processes biggest first, the
items of one wheel next to each other, so that one huge wheel and a thousand small ones
both keep every core busy.  At most twice as many items as workers are in flight, and a
target's result leaves the scheduler as soon as its last item is done, so memory does
not grow with the number of targets.  With one worker (or too little to read) nothing
is forked and neither ``multiprocessing`` nor ``concurrent.futures`` is imported.
Forked workers inherit the big wheels the parent opened (central directories read).
"""

from __future__ import annotations

import dataclasses
import heapq
import os
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from cuwheel.errors import InputError
from cuwheel.model.inventory import Problem, Source
from cuwheel.read.device.payloads import PayloadMode
from cuwheel.read.items import (
    FinishItem,
    Item,
    MembersItem,
    Parts,
    WholeItem,
    open_wheels,
    run_item,
)
from cuwheel.read.sources.source import Plan, WheelSource
from cuwheel.read.sources.zipdir import Limits
from cuwheel.read.targets import classify
from cuwheel.read.workers import stop_pool, worker_init

if TYPE_CHECKING:
    from concurrent.futures import Future

__all__ = [
    "Finish",
    "Progress",
    "Run",
    "cpu_count",
    "default_workers",
    "keep_source",
]

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
# directories already read); each worker keeps a few more of its own (items.py).
_INHERIT = 16
# What a whole-wheel item is assumed to inflate to, per byte on disk (for ordering only).
_WHEEL_RATIO = 2
# A wheel's own finishing item (a ``finish`` run on its assembled Source) goes first.
_FIRST = 1 << 62

T = TypeVar("T")
Finish = Callable[[Source, Any], T]


def keep_source(source: Source, tag: object) -> Source:
    """The default ``finish``: the Source itself."""
    return source


def default_workers() -> int:
    """Worker processes when none are asked for: every CPU this process may run on.  The
    pool starts only for 64 MiB or more to read (_PARALLEL_THRESHOLD), and the inventory
    is the same for any count."""
    return cpu_count()




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
    parts: Parts = dataclasses.field(default_factory=list)
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


class Run(Generic[T]):
    """One call's targets, read; ``results()`` yields (index, finish(source, tag))."""

    def __init__(
        self,
        targets: list[str],
        workers: int | None,
        limits: Limits,
        progress: Progress | None,
        payload: PayloadMode,
        finish: Finish[T],
        tags: list[Any] | None,
    ) -> None:
        self.targets = targets
        self.workers = max(1, cpu_count() if workers is None else workers)
        self.limits = limits
        self.progress = progress
        self.payload = payload
        self.finish = finish
        self.tags = tags
        self.parted: dict[int, _Parted] = {}
        self.sizes: dict[int, int] = {}  # of targets read whole, for progress
        self.kinds: dict[int, str] = {}
        self.opened: dict[str, WheelSource] = {}  # split wheels, open in this process

    def tag(self, i: int) -> Any:
        return self.tags[i] if self.tags is not None else None

    def results(self) -> Iterator[tuple[int, T]]:
        classes: list[tuple[str, Any]] = [classify(p) for p in self.targets]
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
                total += sum(s for _, s in what.members)
        parallel = (self.workers > 1 and cpu_count() > 1 and len(self.targets) > 0
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
            workers = min(self.workers, len(items), cpu_count())
            open_wheels.update(self.opened)
            if not parallel or workers <= 1:
                # In target order, each finished before the next starts (streaming).
                items.sort(key=lambda t: t[3].target)
                for _, _, _, item in items:
                    yield from self._done(item, run_item(item, self.limits, self.payload,
                                                         self.finish, self.tag(item.target)))
                return
            heapq.heapify(items)
            yield from self._pool(items, workers)
        finally:
            for path, wf in self.opened.items():
                open_wheels.pop(path, None)
                wf.close()
            self.opened.clear()

    # -- planning ----------------------------------------------------------------------
    def _plan(
        self, i: int, kind: str, what: Any, parallel: bool
    ) -> list[tuple[int, Item]] | Source:
        path = self.targets[i]
        if kind == "dir":
            plan: Plan = what
            if not parallel or len(plan.members) < 2:
                return [(sum(s for _, s in plan.members) or 1, WholeItem(i, path, kind))]
            return self._parts(i, kind, "directory", plan)
        if kind in ("file", "artifact") or not parallel or what * 2 < _PARALLEL_THRESHOLD:
            cost = what * (_WHEEL_RATIO if kind == "zip" else 1)
            return [(cost or 1, WholeItem(i, path, kind))]
        # A big wheel: cut into member items.
        try:
            src = WheelSource(path, self.limits)
        except InputError as exc:
            return Source("wheel", path, problems=(Problem(exc.path, exc.problem),))
        keep = len(self.opened) < _INHERIT
        try:
            plan = src.plan()
        finally:
            if not keep:
                src.close()
        if keep:
            self.opened[path] = src
        if plan.refused is not None:
            return Source("wheel", path, wheel=plan.info, problems=(*plan.problems, plan.refused))
        return self._parts(i, kind, "wheel", plan)

    def _parts(self, i: int, kind: str, source_kind: str, plan: Plan) -> list[tuple[int, Item]]:
        """A target's members in items of one or a batch of members each."""
        path = self.targets[i]
        members = plan.members
        groups = _batches(members)
        order = {n: k for k, (n, _) in enumerate(members)}
        self.parted[i] = _Parted(source_kind, path, plan.info, plan.problems, order,
                                 dict(members), len(members), max(1, len(groups)),
                                 sum(s for _, s in members))
        return [(sum(s for _, s in g) or 1, MembersItem(i, path, kind, [n for n, _ in g]))
                for g in groups] or [(1, MembersItem(i, path, kind, []))]

    # -- results -----------------------------------------------------------------------
    def _done(self, item: Item, result: Any) -> Iterator[tuple[int, T]]:
        """Take an item's result in this process; a target it completes is finished here."""
        ready, fin = self._settle(item, result)
        yield from ready
        if fin is not None:
            yield fin.target, self.finish(fin.source, self.tag(fin.target))

    def _settle(self, item: Item, result: Any) -> tuple[list[tuple[int, T]], FinishItem | None]:
        """Take an item's result: the targets' results it makes ready, and the item that
        finishes a target read in parts (run by a worker unless ``finish`` is keep_source)."""
        out = self._take(item, result)
        if out is None:
            return [], None
        i, src = out
        if src is None:
            return [(i, result)], None
        if self.finish is keep_source:
            return [(i, self.finish(src, self.tag(i)))], None
        return [], FinishItem(i, src)

    def _take(self, item: Item, result: Any) -> tuple[int, Source | None] | None:
        """(index, Source to finish) when ``item`` completes its target, (index, None)
        when ``result`` is the target's finished result, None while parts are missing."""
        i = item.target
        if not isinstance(item, MembersItem):
            if self.progress and isinstance(item, WholeItem):
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
            open_wheels.pop(pend.path, None)
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
        # Forked workers inherit the open wheels (open_wheels: their central
        # directories already read; reads use pread, so sharing a descriptor is safe).
        pool = _executor_class()(max_workers=workers, mp_context=ctx,
                                 initializer=worker_init, initargs=(os.getpid(),))
        running: dict[Future[Any], Item] = {}
        seq = len(items)
        try:
            while items or running:
                while items and len(running) < workers * _IN_FLIGHT:
                    item = heapq.heappop(items)[3]
                    fut = pool.submit(run_item, item, self.limits, self.payload,
                                      self.finish, self.tag(item.target))
                    running[fut] = item
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                broken: list[Item] = []
                for fut in done:
                    item = running.pop(fut)
                    if isinstance(fut.exception(), BrokenProcessPool):
                        broken.append(item)
                        continue
                    ready, fin = self._settle(item, fut.result())
                    yield from ready
                    if fin is not None:
                        heapq.heappush(items, (-_FIRST, 0, seq, fin))
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
            stop_pool(pool)
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
                i = item.target
                if i in dead:
                    continue
                if pool is None:
                    pool = _executor_class()(max_workers=1, mp_context=ctx,
                                             initializer=worker_init,
                                             initargs=(os.getpid(),))
                try:
                    result = pool.submit(run_item, item, self.limits, self.payload,
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
                ready, fin = self._settle(item, result)
                yield from ready
                if fin is not None:
                    items.insert(0, fin)
        except BaseException:
            if pool is not None:
                stop_pool(pool)
                pool = None
            raise
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


# -- worker processes -----------------------------------------------------------------------
def cpu_count() -> int:
    """The CPUs this process may use (its affinity mask where the OS has one): the one
    count every worker pool sizes itself by (inspect, scan, the Dask cluster)."""
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
