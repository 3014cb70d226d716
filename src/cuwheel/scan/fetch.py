"""Download a wheel to a local file, hashing it on the way (and checking the hash the
index gave).  Only http(s), redirects included (:func:`cuwheel._remote.checked_opener`),
and never more bytes than the index declared (docs/scan.md, trust boundaries)."""

from __future__ import annotations

import contextlib
import hashlib
import os

from cuwheel._remote import Stop
from cuwheel.errors import InputError

__all__ = ["Stop", "fetch"]

_CHUNK = 1 << 20


def fetch(url: str, dest: str, *, sha256: str | None = None, timeout: float = 120.0,
          max_size: int = 64 << 30, size: int | None = None,
          stop: Stop | None = None) -> str:
    """Write the file at ``url`` to the path ``dest``; return its sha256.  Raises
    InputError when it cannot be fetched, is not an http(s) URL, is larger than ``size``
    (the index's declared size) or ``max_size``, or its sha256 is not the one given (the
    partial file is removed)."""
    import urllib.parse
    import urllib.request

    from cuwheel._remote import checked_opener

    if urllib.parse.urlsplit(url).scheme not in ("http", "https"):
        raise InputError(url, "only http and https URLs are downloaded")
    ceiling = min(max_size, size) if size is not None else max_size
    h = hashlib.sha256()
    req = urllib.request.Request(url, headers={"User-Agent": "cuwheel-scan"})
    got = 0
    try:
        with checked_opener().open(req, timeout=timeout) as resp, open(dest, "wb") as out:
            sock = stop.watch(resp) if stop is not None else None
            try:
                while chunk := resp.read1(min(_CHUNK, ceiling - got + 1)):
                    if stop is not None and stop.is_set():
                        raise InputError(url, "download stopped (the scan ended)")
                    got += len(chunk)
                    if got > ceiling:
                        declared = "the index declared" if ceiling == size else "allowed"
                        raise InputError(url, f"larger than the {ceiling} bytes {declared}")
                    h.update(chunk)
                    out.write(chunk)
            finally:
                if stop is not None:
                    stop.forget(sock)
        if stop is not None and stop.is_set():
            raise InputError(url, "download stopped (the scan ended)")
    except InputError:
        _remove(dest)
        raise
    except OSError as exc:
        _remove(dest)
        raise InputError(url, f"cannot download: {exc}") from None
    if size is not None and got != size:
        _remove(dest)
        raise InputError(url, f"{got} bytes, the index declared {size}")
    digest = h.hexdigest()
    if sha256 is not None and digest != sha256.lower():
        _remove(dest)
        raise InputError(url, f"sha256 {digest} is not the index's {sha256}")
    return digest


def _remove(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)
