"""What each worker process of the scheduler (schedule.py) does first: die with its
parent, and leave Ctrl-C to it; and how the parent stops its pool when interrupted."""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any

__all__ = ["stop_pool", "worker_init"]

_PR_SET_PDEATHSIG = 1


def worker_init(parent: int) -> None:
    """In each worker: die with the parent.  A worker left behind by a killed parent (CI
    cancellation, ``timeout``) would otherwise wait on its task queue forever."""
    import signal

    # A forked worker inherits the parent's Python handlers; SIGTERM must terminate it.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    # Ctrl-C reaches the whole process group: the parent stops the workers (stop_pool), a
    # worker interrupted on its own would leave a result half written to the pipe.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "SIGHUP"):
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
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


def stop_pool(pool: Any) -> None:
    """End a process pool now (an interrupted run): its workers are terminated, not
    waited for; one blocked writing a result the parent no longer reads would otherwise
    hold ``shutdown(wait=True)`` for ever."""
    procs = list((getattr(pool, "_processes", None) or {}).values())
    for proc in procs:
        with contextlib.suppress(Exception):
            proc.terminate()  # SIGTERM: the default action in a worker (worker_init)
    for proc in procs:  # reaped, so that none outlives the run
        with contextlib.suppress(Exception):
            proc.join(timeout=2)
            if proc.is_alive():
                proc.kill()
                proc.join(timeout=2)
    pool.shutdown(wait=False, cancel_futures=True)
    # With its workers gone the pool's manager thread ends at once; joined here, the
    # interpreter's exit hook finds its wake-up pipe closed instead of racing to close it.
    manager = getattr(pool, "_executor_manager_thread", None)
    if manager is not None:
        with contextlib.suppress(Exception):
            manager.join(timeout=5)
