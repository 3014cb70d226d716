"""The one downloader (_download.py), used by scan and toolkit: schemes, redirects, the
size ceiling, the sha256, interruption (partial file removed, or kept to resume) and
Stop.  A local HTTP server plays every misbehaving host."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from cuwheel._download import download, read_small
from cuwheel._remote import Stop
from cuwheel.errors import DownloadError, Stopped, ToolkitError
from cuwheel.toolkit.cache import Cache
from cuwheel.toolkit.fetch import Download, fetch_one

BODY = bytes(range(256)) * 400  # 102400 bytes


class Handler(BaseHTTPRequestHandler):
    ranges: list[str | None] = []  # noqa: RUF012  # the Range header of each body request

    def log_message(self, *a: object) -> None:
        pass

    def do_GET(self) -> None:
        if self.path == "/ftp":
            self.send_response(302)
            self.send_header("Location", "ftp://127.0.0.1/x")
            self.end_headers()
            return
        if self.path == "/file":
            self.send_response(302)
            self.send_header("Location", "file:///etc/passwd")
            self.end_headers()
            return
        if self.path == "/missing":
            self.send_error(404)
            return
        Handler.ranges.append(self.headers.get("Range"))
        if self.path == "/cut":  # says all, sends 1000 bytes, hangs up
            self.send_response(200)
            self.send_header("Content-Length", str(len(BODY)))
            self.end_headers()
            self.wfile.write(BODY[:1000])
            return
        if self.path == "/stall":  # 1000 bytes, then nothing until the client goes
            self.send_response(200)
            self.send_header("Content-Length", str(len(BODY)))
            self.end_headers()
            self.wfile.write(BODY[:1000])
            self.wfile.flush()
            STALL.wait(30)
            return
        rng = self.headers.get("Range")
        if rng and rng.startswith("bytes="):
            start = int(rng[6:].rstrip("-"))
            self.send_response(206)
            self.send_header("Content-Length", str(len(BODY) - start))
            self.end_headers()
            self.wfile.write(BODY[start:])
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)


STALL = threading.Event()


@pytest.fixture
def url() -> Iterator[str]:
    Handler.ranges = []
    STALL.clear()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        STALL.set()
        server.shutdown()
        server.server_close()


SHA = hashlib.sha256(BODY).hexdigest()


def test_a_whole_download_is_checked_and_kept(url: str, tmp_path: Path) -> None:
    dest = tmp_path / "f"
    assert download(f"{url}/ok", dest, sha256=SHA, size=len(BODY)) == SHA
    assert dest.read_bytes() == BODY


@pytest.mark.parametrize(
    ("path", "kw", "words"),
    [
        ("/ok", {"sha256": "0" * 64}, f"sha256 {SHA} does not match"),
        ("/ok", {"size": 100}, "longer than the 100 bytes declared"),
        ("/ok", {"size": len(BODY) + 5}, f"truncated: {len(BODY)} bytes"),
        ("/ok", {"max_size": 4096}, "longer than the 4096 bytes allowed (no size declared)"),
        ("/ok", {"size": 1 << 20, "max_size": 4096}, "longer than the 4096 bytes allowed"),
        ("/cut", {}, "download interrupted after 1000 bytes"),
        ("/missing", {}, "HTTP 404"),
        ("/ftp", {}, "refused: a redirect to a ftp: URL"),
        ("/file", {}, "refused: a redirect to a file: URL"),
    ],
    ids=["sha256", "declared", "short", "unsized-cap", "cap-under-declared", "cut", "404",
         "redirect-ftp", "redirect-file"],
)
def test_a_refused_download_leaves_no_file(url: str, tmp_path: Path, path: str,
                                           kw: dict[str, int | str], words: str) -> None:
    dest = tmp_path / "f"
    with pytest.raises(DownloadError) as info:
        download(f"{url}{path}", dest, **kw)  # type: ignore[arg-type]
    assert words in info.value.problem
    assert not dest.exists() and not info.value.kept


def test_file_urls_only_where_asked(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.write_bytes(BODY)
    with pytest.raises(DownloadError, match="only http and https"):
        download(src.as_uri(), tmp_path / "f")
    assert download(src.as_uri(), tmp_path / "f", allow_file=True) == SHA
    with pytest.raises(DownloadError, match="only http and https"):
        read_small("ftp://127.0.0.1/x", 100)


def test_an_interrupted_download_is_kept_to_resume(url: str, tmp_path: Path) -> None:
    dest = tmp_path / "f"
    with pytest.raises(DownloadError) as info:
        download(f"{url}/cut", dest, resume=True, size=len(BODY))
    assert info.value.kept and dest.stat().st_size == 1000
    # the rest, asked for with a Range: the whole file checked
    assert download(f"{url}/ok", dest, resume=True, size=len(BODY), sha256=SHA) == SHA
    assert Handler.ranges[-1] == "bytes=1000-" and dest.read_bytes() == BODY


def test_stop_ends_a_stalled_read_at_once(url: str, tmp_path: Path) -> None:
    stop = Stop()
    dest = tmp_path / "f"
    errors: list[BaseException] = []

    def run() -> None:
        try:
            download(f"{url}/stall", dest, stop=stop, timeout=30)
        except BaseException as exc:  # the test reads it
            errors.append(exc)

    t = threading.Thread(target=run)
    t.start()
    while not Handler.ranges:
        threading.Event().wait(0.01)
    stop.set()
    t.join(20)
    assert not t.is_alive()  # did not wait out the 30 s timeout (nor the server)
    assert not STALL.is_set()
    assert len(errors) == 1 and isinstance(errors[0], Stopped)
    assert not dest.exists()


def test_toolkit_refuses_a_redirect_off_http(url: str, tmp_path: Path) -> None:
    cache = Cache(tmp_path / "toolkit")
    with pytest.raises(ToolkitError, match=r"redirect to a ftp: URL.*nothing installed"):
        fetch_one(Download(f"{url}/ftp", SHA, len(BODY), "x"), cache)
    path, fresh = fetch_one(Download(f"{url}/ok", SHA, len(BODY), "x"), cache)
    assert fresh and path.read_bytes() == BODY
