"""SIGTERM, SIGHUP and SIGINT as an exception in the main thread, so that every ``finally`` runs:
a terminated ``toolkit`` removes its staging tree, a terminated ``scan`` its download
folder (docs/toolkit.md, docs/scan.md).  Python's default for SIGTERM ends the process at
once and leaves them behind."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

__all__ = ["Terminated", "terminate_cleanly"]


class Terminated(KeyboardInterrupt):
    """The process was asked to stop (SIGTERM / SIGHUP); ``signum`` says which."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


@contextlib.contextmanager
def terminate_cleanly() -> Iterator[None]:
    """While inside: the first SIGTERM / SIGHUP raises :class:`Terminated` in the main
    thread and the first SIGINT KeyboardInterrupt; every later one of the three is ignored,
    so that the clean-up (stopping workers, removing staging trees) is never cut short and
    any number of Ctrl-C's ends the run once.  Elsewhere than the main thread, nothing
    changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    fired: list[int] = []

    def handler(signum: int, frame: FrameType | None) -> None:
        for s in signums:
            signal.signal(s, signal.SIG_IGN)
        fired.append(signum)
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise Terminated(signum)

    signums = [signal.SIGINT, signal.SIGTERM] + (
        [signal.SIGHUP] if hasattr(signal, "SIGHUP") else [])
    old = {s: signal.signal(s, handler) for s in signums}
    try:
        yield
    finally:
        if not fired:  # after one, the process is ending: later ones stay ignored to exit
            for s, h in old.items():
                signal.signal(s, h)
