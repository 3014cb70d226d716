"""The URL policy for what a remote package index makes cuwheel read (``scan --index``,
``check --index``), in one place (docs/scan.md, trust boundaries):

* schemes: ``http`` and ``https`` only, for pages, for the files they link and for every
  redirect (no ``file:``, ``ftp:``, ``data:``: a page can never make cuwheel read a local
  file or device); an ``https`` index never leads to plain ``http``;
* hosts: a link is followed only to the index's own host or a host allowed explicitly
  (``allow_hosts``; PyPI's file host for PyPI), never to another origin a page names;
* budgets, each a hard stop with a one-line error: requests per run (``max_requests``),
  bytes per page (``max_page``), seconds for all pages of a run (``seconds``, checked
  between reads, each socket wait at most what is left), links per page
  (``max_links``), and seconds per page (``page_seconds`` plus one second per
  ``min_rate`` bytes it has sent: a page that trickles, a slow-loris, is stopped at its
  own budget, not at the run's); pages are never followed from pages beyond the fixed
  depth (root -> project page -> files).
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field

from cuwheel.errors import InputError

__all__ = ["KNOWN_FILE_HOSTS", "IndexPolicy", "Stop", "checked_opener"]

# An index's own documented file host (PyPI serves files from another host than pages).
KNOWN_FILE_HOSTS = {
    "pypi.org": ("files.pythonhosted.org",),
    "test.pypi.org": ("test-files.pythonhosted.org",),
}
_READ = 1 << 16


class _Redirects(urllib.request.HTTPRedirectHandler):
    """Follow a redirect only to http(s), and from https only to https."""

    def http_error_302(  # type: ignore[no-untyped-def]
        self, req, fp, code, msg, headers
    ):
        target = headers.get("location") or headers.get("uri") or ""
        old = urllib.parse.urlsplit(req.full_url).scheme
        new = urllib.parse.urlsplit(urllib.parse.urljoin(req.full_url, target)).scheme.lower()
        if new not in ("http", "https") or (old == "https" and new != "https"):
            fp.close()
            raise InputError(req.full_url, f"refused: a redirect to a {new}: URL (only http "
                             "and https are read, never from https to http)")
        return super().http_error_302(req, fp, code, msg, headers)

    http_error_301 = http_error_303 = http_error_307 = http_error_308 = http_error_302


def checked_opener() -> urllib.request.OpenerDirector:
    """An opener that speaks http(s) only (no file:, ftp:, data: handlers) and follows
    redirects by the policy's scheme rule."""
    opener = urllib.request.OpenerDirector()
    for handler in (
        urllib.request.ProxyHandler(),
        urllib.request.HTTPHandler(),
        urllib.request.HTTPSHandler(),
        urllib.request.HTTPDefaultErrorHandler(),
        _Redirects(),
        urllib.request.HTTPErrorProcessor(),
    ):
        opener.add_handler(handler)
    return opener


@dataclass
class IndexPolicy:
    """What one run may read from one index; counts what it has read."""

    index_url: str
    allow_hosts: tuple[str, ...] = ()
    max_requests: int = 2000
    max_page: int = 64 << 20  # PyPI's root page, for a --project glob, is ~40 MiB
    max_links: int = 200_000
    seconds: float = 600.0
    page_seconds: float = 30.0
    min_rate: int = 1 << 20  # bytes a second a page earns beyond page_seconds
    requests: int = field(default=0, init=False)
    _start: float | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        parts = urllib.parse.urlsplit(self.index_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise InputError(self.index_url, "an index must be an http(s) URL")
        self._scheme = parts.scheme
        self._hosts = {parts.hostname.lower(), *(h.lower() for h in self.allow_hosts)}
        self._hosts.update(KNOWN_FILE_HOSTS.get(parts.hostname.lower(), ()))

    def refusal(self, url: str) -> str | None:
        """Why a URL a page names may not be read; None when it may."""
        try:
            parts = urllib.parse.urlsplit(url)
            host = (parts.hostname or "").lower()
        except ValueError:
            return "not a valid URL"
        if parts.scheme not in ("http", "https"):
            return f"a {parts.scheme or 'relative'}: URL (only http and https are read)"
        if self._scheme == "https" and parts.scheme != "https":
            return "plain http from an https index"
        if host not in self._hosts:
            return f"host {host} is neither the index's nor allowed (--allow-host)"
        return None

    def check(self, url: str) -> None:
        why = self.refusal(url)
        if why is not None:
            raise InputError(url, f"refused: {why}")

    def _left(self, url: str) -> float:
        now = time.monotonic()
        if self._start is None:
            self._start = now
        left = self.seconds - (now - self._start)
        if left <= 0:
            raise InputError(url, f"index reading took longer than its budget of "
                             f"{self.seconds:g} s")
        return left

    def get(self, url: str, accept: str, user_agent: str) -> tuple[str, bytes]:
        """(content type, body) of one page, within every budget."""
        self.check(url)
        self.requests += 1
        if self.requests > self.max_requests:
            raise InputError(url, f"more than {self.max_requests} index requests in one run")
        req = urllib.request.Request(url, headers={"Accept": accept, "User-Agent": user_agent})
        chunks: list[bytes] = []
        size = 0
        start = time.monotonic()

        def wait() -> float:  # what this page may still take: its budget and the run's
            page = self.page_seconds + size / self.min_rate - (time.monotonic() - start)
            if page <= 0:
                raise InputError(url, f"index page arrived too slowly ({size} bytes in "
                                 f"{self.page_seconds + size / self.min_rate:.0f} s)")
            return min(page, self._left(url))

        try:
            with checked_opener().open(req, timeout=wait()) as resp:
                ctype = resp.headers.get("Content-Type", "")
                sock = getattr(getattr(getattr(resp, "fp", None), "raw", None), "_sock", None)
                while True:
                    left = wait()
                    if isinstance(sock, socket.socket):
                        sock.settimeout(left)  # one wait never outlasts the page's budget
                    try:
                        block = resp.read1(_READ)
                    except TimeoutError:
                        wait()  # the budget that ran out says so, not "timed out"
                        raise
                    if not block:
                        break
                    size += len(block)
                    if size > self.max_page:
                        raise InputError(url, f"index page over {self.max_page} bytes")
                    chunks.append(block)
        except InputError:
            raise
        except urllib.error.HTTPError:
            raise
        except (OSError, ValueError) as exc:
            raise InputError(url, f"cannot read the index page: {exc}") from None
        return ctype.split(";")[0].strip().lower(), b"".join(chunks)


class Stop:
    """Ends every download of a run at once: :meth:`set` marks them stopped and shuts the
    sockets of the reads in flight, so that none waits out its timeout on a stalled
    server (a terminated scan or toolkit cleans up at once)."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._socks: set[socket.socket] = set()

    def is_set(self) -> bool:
        return self._event.is_set()

    def set(self) -> None:
        self._event.set()
        with self._lock:
            for sock in self._socks:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def watch(self, resp: object) -> socket.socket | None:
        raw = getattr(getattr(resp, "fp", None), "raw", None)
        sock = getattr(raw, "_sock", None)
        if not isinstance(sock, socket.socket):
            return None
        with self._lock:
            self._socks.add(sock)
        if self._event.is_set():
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        return sock

    def forget(self, sock: socket.socket | None) -> None:
        if sock is not None:
            with self._lock:
                self._socks.discard(sock)
