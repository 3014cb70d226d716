"""What each worker process of the scheduler (schedule.py) does first: die with its
parent."""

from __future__ import annotations

import os
import sys

__all__ = ["worker_init"]

_PR_SET_PDEATHSIG = 1


def worker_init(parent: int) -> None:
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
