"""The public entry points: ``inspect(targets) -> Inventory`` and ``iter_inspect``, which
yields each target's result as soon as it is read.  The scheduler under both is
schedule.py; wheels and directories are read through read/sources/source.py, installed
distributions through read/sources/installed.py.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from cuwheel.model.inventory import Inventory, Source
from cuwheel.read.device.payloads import PAYLOAD_MODES, PayloadMode
from cuwheel.read.schedule import Finish, Progress, Run, T, default_workers, keep_source
from cuwheel.read.sources.zipdir import DEFAULT_LIMITS, Limits

__all__ = ["inspect", "installed_source", "iter_inspect"]


def inspect(
    targets: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] = (),
    *,
    dists: Iterable[str] = (),
    env: bool = False,
    workers: int | None = None,
    limits: Limits = DEFAULT_LIMITS,
    progress: Progress | None = None,
    payload: str = "sample",
    exports: bool = True,
) -> Inventory:
    """Inventory the device code and linkage of wheels, directories, files or installed
    distributions (``dists``, or every distribution of this environment with ``env``).

    Unreadable inputs do not raise: each becomes a ``Problem`` in its ``Source``.
    ``payload`` says which payloads are decoded: "sample" (up to three cubins per container,
    in containers 0, 1, 2, 4, 8, ..., for the toolkit that built it), "all" (every cubin),
    "none", or "kernels" (every cubin and PTX text, with the names of their entry kernels:
    ``FatbinEntry.kernel_names``).
    ``workers``: processes for the reading (default: every CPU this process may use, as
    ``iter_inspect``; no process starts for less than 64 MiB to read). ``exports=False``
    leaves the names of ELF libraries' exported symbols out (``Binary.exported`` empty),
    for a reading that never shows them: decoding tens of thousands of C++ names is most
    of the time of a large library (bench/bench_startup.py).
    """
    from cuwheel.read.binary.elfsyms import exports_read

    mode = _check_payload(payload)
    if isinstance(targets, (str, os.PathLike)):
        targets = [targets]
    paths = [os.fspath(t) for t in targets]
    found: list[Source | None] = [None] * len(paths)
    with exports_read(exports):
        for i, src in iter_inspect(paths, workers=workers, limits=limits, progress=progress,
                                   payload=payload, finish=keep_source):
            found[i] = src
    sources = [s for s in found if s is not None]
    names = list(dists)
    # only here: the installed-distribution reader costs start-up time
    from cuwheel.read.sources.installed import dist_source, installed_names

    if env:
        seen = set()
        for n in installed_names():
            if n and n.lower() not in seen:
                seen.add(n.lower())
                names.append(n)
    for name in names:
        sources.append(dist_source(name, mode))
    return Inventory(tuple(sources))


def _check_payload(payload: str) -> PayloadMode:
    """``payload`` as a mode; ValueError when it names none."""
    for mode in PAYLOAD_MODES:
        if payload == mode:
            return mode
    raise ValueError(f"payload must be one of {', '.join(PAYLOAD_MODES)}, not {payload!r}")


def iter_inspect(
    targets: Sequence[str],
    *,
    workers: int | None = None,
    limits: Limits = DEFAULT_LIMITS,
    progress: Progress | None = None,
    payload: str = "sample",
    finish: Finish[T] = keep_source,  # type: ignore[assignment]  # T is Source by default
    tags: Sequence[Any] | None = None,
) -> Iterator[tuple[int, T]]:
    """Read ``targets`` (wheels, directories, files) and yield ``(index, result)`` for
    each as soon as it is read, in no set order.  The result is ``finish(source, tag)``
    (``tags[index]``, or None); ``finish`` runs where the Source is completed: in the
    worker that read a whole target, or in one more work item for a wheel read in
    parts.  It must be picklable (a module-level function or a partial of one).
    ``workers``: processes (default: every CPU this process may use); 1 reads
    everything in this process.
    """
    mode = _check_payload(payload)
    run = Run(list(targets), default_workers() if workers is None else workers, limits,
              progress, mode, finish, list(tags) if tags is not None else None)
    return run.results()


def installed_source(name: str, payload: str = "sample") -> Source:
    """An installed distribution read as the wheel it was installed from (see
    :func:`cuwheel.read.sources.installed.installed_source`); InputError when not installed."""
    from cuwheel.read.sources.installed import installed_source as read

    return read(name, _check_payload(payload))
