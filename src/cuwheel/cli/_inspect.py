"""``cuwheel inspect``: list the device code and CUDA linkage of binaries."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from cuwheel.read.inspect import inspect

__all__ = ["register"]


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "inspect",
        help="list the GPU code and CUDA linkage of wheels, directories, files, installs",
        description="List the device code (SASS, PTX, LTO-IR per fatbin container) and the "
        "CUDA linkage of every binary in wheels, directories, installed distributions or "
        "single ELF / PE / ar / cubin / fatbin / PTX files.",
    )
    p.add_argument("targets", nargs="*", metavar="TARGET", help="wheel, directory or file")
    p.add_argument("--dist", action="append", default=[], metavar="NAME",
                   help="an installed distribution (files from its RECORD); repeatable")
    p.add_argument("--env", action="store_true",
                   help="every distribution installed in this environment")
    p.add_argument("--json", action="store_true", help="emit the versioned JSON document")
    p.add_argument("--all", action="store_true",
                   help="show every container and entry (text) / exported symbols (JSON)")
    p.add_argument("--toolkit", choices=("sample", "all", "none"), default="sample",
                   help="which cubins to decode for the toolkit that built them "
                   "(default: one per container in containers 0, 1, 2, 4, 8, ...)")
    p.add_argument("--workers", type=int, default=None,
                   help="worker processes for big wheels (default: up to 2)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from cuwheel.errors import CuwheelError

    if not args.targets and not args.dist and not args.env:
        raise CuwheelError("nothing to inspect: give a TARGET, --dist NAME or --env")
    progress = _progress() if sys.stderr.isatty() else None
    try:
        inv = inspect(args.targets, dists=args.dist, env=args.env, workers=args.workers,
                      progress=progress, payload=args.toolkit)
    finally:
        if progress is not None:
            progress.close()
    if args.json:
        from cuwheel.render.inspect_json import render_json

        sys.stdout.write(render_json(inv, full=args.all))
    else:
        from cuwheel.render.inspect_text import render_text

        sys.stdout.write(render_text(inv, full=args.all))
    for problem in inv.problems:
        print(f"cuwheel: error: {problem}", file=sys.stderr)
    damaged = [b for b in inv.binaries if b.anomalies]
    for b in damaged:
        for a in b.anomalies:
            print(f"cuwheel: warning: {b.path}: {a}", file=sys.stderr)
    # Something could not be read (a file, or a structure of one): the inventory is
    # incomplete, exit 2 as for an unreadable file.
    return 2 if inv.problems or damaged else 0


class _progress:
    """A rich progress bar on stderr, refreshed from inspect's callbacks (no thread)."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn

        self._p = Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(),
                           console=Console(stderr=True), auto_refresh=False, transient=True)
        self._tasks: dict[str, Any] = {}
        self._p.start()

    def __call__(self, label: str, done: int, total: int) -> None:
        task = self._tasks.get(label)
        if task is None:
            name = label.rsplit("/", 1)[-1]
            task = self._tasks[label] = self._p.add_task(name, total=total)
        self._p.update(task, completed=done, total=total)
        self._p.refresh()

    def close(self) -> None:
        self._p.stop()
