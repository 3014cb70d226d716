"""Path rules in one place: containment, "does this path stay under that directory"
(a toolkit tree being written, a site-packages directory whose RECORD is read), and
where cuwheel's cache lives (:func:`cache_dir`, shared by ``scan`` and ``toolkit``).

The whole path is resolved as the kernel would (every link of the chain, ``..`` after a
link applied to where the link led), and nothing is created to decide: a path that ends
outside is refused before any directory of it exists.
"""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Mapping
from pathlib import Path

__all__ = ["cache_dir", "inside", "resolve_inside"]


def cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """cuwheel's cache directory: ``$CUWHEEL_CACHE`` when set, else the platform's
    (``$XDG_CACHE_HOME/cuwheel`` or ``~/.cache/cuwheel``; ``~/Library/Caches/cuwheel``;
    ``%LOCALAPPDATA%\\cuwheel\\cache``).  Each user of the cache keeps a folder of its
    own under it (``scan/``, ``toolkit/``)."""
    env = os.environ if environ is None else environ
    if env.get("CUWHEEL_CACHE"):
        return Path(env["CUWHEEL_CACHE"])
    if sys.platform == "win32":
        base = env.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        return Path(base) / "cuwheel" / "cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "cuwheel"
    return Path(env.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "cuwheel"


def inside(real_root: str, real_path: str) -> bool:
    """Whether ``real_path`` (resolved) is ``real_root`` (resolved) or under it."""
    return real_path == real_root or real_path.startswith(real_root.rstrip(os.sep) + os.sep)


def resolve_inside(real_root: str, path: str) -> str | None:
    """``path`` with every link of it resolved (the missing tail kept as written), or None
    when that leaves ``real_root`` or the chain loops.  Creates nothing."""
    try:
        real = os.path.realpath(path, strict=False)
    except (OSError, ValueError):
        return None
    if not inside(real_root, real):
        return None
    # realpath keeps a looping chain as it is: such a path resolves nowhere.
    try:
        os.stat(real)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return None
    return real
