"""Progress of long commands on a terminal: rich's progress display on stderr, never on
stdout (the result stays byte-identical), and only where someone watches: stderr is a
terminal, ``TERM`` is not ``dumb`` and ``-q`` was not given. Readers never print; they take
a callback (:data:`cuwheel.read.inspect.Progress`) that :class:`Bar` implements.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import threading
from collections.abc import Iterator
from typing import Any

__all__ = ["Bar", "enabled", "progress"]


def enabled(args: argparse.Namespace | None, stream: Any = None) -> bool:
    """Whether to show progress: ``--progress/--no-progress`` where a command has it, else
    a terminal on stderr without ``-q``."""
    choice = getattr(args, "progress", None)
    if choice is not None:
        return bool(choice)
    if getattr(args, "quiet", False) or os.environ.get("TERM") == "dumb":
        return False
    stream = sys.stderr if stream is None else stream
    return bool(getattr(stream, "isatty", lambda: False)())


class Bar:
    """One overall line (``count`` items of a known or unknown total) and a line per input
    being read (bytes done of its size), removed when the input is read."""

    def __init__(self, what: str, total: int | None, unit: str) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            Progress,
            TaskProgressColumn,
            TextColumn,
            TimeElapsedColumn,
        )

        self._rich = Progress(TextColumn("{task.description}"), BarColumn(),
                              TaskProgressColumn(), TimeElapsedColumn(),
                              console=Console(stderr=True), transient=True,
                              refresh_per_second=8,
                              # stdout through the display only where it is the same
                              # terminal; a redirected result is written as it is
                              redirect_stdout=_isatty(sys.stdout))
        self._overall = self._rich.add_task(what, total=total)
        self._what, self._unit, self._total = what, unit, total
        self._tasks: dict[str, Any] = {}
        self._done = 0
        self._lock = threading.Lock()

    def step(self, name: str | None = None, n: int = 1) -> None:
        """``n`` more items done; ``name``: the one just finished."""
        with self._lock:
            self._done += n
            total = f"/{self._total}" if self._total is not None else ""
            last = f": {_short(name)}" if name else ""
            self._rich.update(self._overall, advance=n,
                              description=f"{self._what} {self._done}{total} {self._unit}{last}")

    def __call__(self, label: str, done: int, total: int) -> None:
        """The reader's callback: ``done`` of ``total`` bytes of ``label`` read."""
        with self._lock:
            task = self._tasks.get(label)
            if task is None:
                if done >= total:  # read in one piece: no line of its own
                    return
                task = self._tasks[label] = self._rich.add_task(f"  {_short(label)}",
                                                                total=total)
            self._rich.update(task, completed=done, total=total)
            if done >= total:
                self._rich.remove_task(self._tasks.pop(label))

    def start(self) -> None:
        self._rich.start()

    def stop(self) -> None:
        self._rich.stop()


def _isatty(stream: Any) -> bool:
    return bool(getattr(stream, "isatty", lambda: False)())


def _short(label: str, width: int = 40) -> str:
    from cuwheel.render.escape import escape

    name = escape(label.rstrip("/").rsplit("/", 1)[-1])
    return name if len(name) <= width else name[: width - 3] + "..."


@contextlib.contextmanager
def progress(args: argparse.Namespace | None, what: str, total: int | None = None,
             unit: str = "inputs") -> Iterator[Bar | None]:
    """A :class:`Bar` shown while the block runs (None where progress is off); its lines
    are erased at the end, so what stays on the terminal is the command's own output."""
    if not enabled(args):
        yield None
        return
    bar = Bar(what, total, unit)
    bar.start()
    try:
        yield bar
    finally:
        bar.stop()
