"""Download a wheel to a local file, hashing it on the way (and checking the hash the
index gave)."""

from __future__ import annotations

import contextlib
import hashlib
import os

from cuwheel.errors import InputError

__all__ = ["fetch"]

_CHUNK = 1 << 20


def fetch(url: str, dest: str, *, sha256: str | None = None, timeout: float = 120.0,
          max_size: int = 64 << 30) -> str:
    """Write the file at ``url`` to the path ``dest``; return its sha256.  Raises
    InputError when it cannot be fetched, is larger than ``max_size``, or its sha256 is
    not the one given (the partial file is removed)."""
    import urllib.request

    h = hashlib.sha256()
    req = urllib.request.Request(url, headers={"User-Agent": "cuwheel-scan"})
    size = 0
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp, open(dest, "wb") as out:
            while chunk := resp.read(_CHUNK):
                size += len(chunk)
                if size > max_size:
                    raise InputError(url, f"larger than {max_size} bytes")
                h.update(chunk)
                out.write(chunk)
    except InputError:
        _remove(dest)
        raise
    except OSError as exc:
        _remove(dest)
        raise InputError(url, f"cannot download: {exc}") from None
    digest = h.hexdigest()
    if sha256 is not None and digest != sha256.lower():
        _remove(dest)
        raise InputError(url, f"sha256 {digest} is not the index's {sha256}")
    return digest


def _remove(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)
