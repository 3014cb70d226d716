"""SIGTERM during `scan` and `toolkit` (cuwheel/_signals.py): every clean-up runs, so no
download folder or staging tree is left behind.  The run is a child process; the signal is
sent once the child is provably mid-work (the server saw the wheel's request; the child
signals itself as the extraction starts), so nothing here depends on timing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from redistserver import Served, serve, tar_file, tar_xz
from test_toolkit_redist import TOP, publish

SRC = str(Path(__file__).resolve().parent.parent / "src")
WHEEL = "alpha-1.0-py3-none-any.whl"


def _env(tmp: Path) -> dict[str, str]:
    (tmp / "t").mkdir()
    return {**os.environ, "PYTHONPATH": SRC, "TMPDIR": str(tmp / "t")}


def test_sigterm_during_a_scan_download_removes_its_folder(tmp_path: Path) -> None:
    asked = threading.Event()
    release = threading.Event()
    stalled_out = threading.Event()  # the server stopped stalling (released or gave up)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a: object) -> None:
            pass

        def do_GET(self) -> None:
            if self.path.endswith("/alpha/"):
                body = (f'{{"files": [{{"filename": "{WHEEL}", "url": "/f/{WHEEL}"}}]}}'
                        ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/vnd.pypi.simple.v1+json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            self.send_response(200)
            self.send_header("Content-Length", str(1 << 30))
            self.end_headers()
            self.wfile.write(b"PK" + bytes(1 << 16))  # some bytes, then nothing more
            self.wfile.flush()
            asked.set()
            release.wait(60)
            stalled_out.set()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/simple/"
    try:
        child = subprocess.Popen(
            [sys.executable, "-m", "cuwheel", "scan", "--index", url, "--project", "alpha",
             "--no-cache", "-o", str(tmp_path / "r.jsonl")],
            env=_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert asked.wait(120), "the child never asked for the wheel"
        assert [p.name for p in (tmp_path / "t").iterdir() if p.name.startswith("cuwheel-scan-")]
        child.send_signal(signal.SIGTERM)
        _, err = child.communicate(timeout=120)
        # the child ended while the server still stalled: it did not wait out the read
        assert not stalled_out.is_set()
    finally:
        release.set()
        server.shutdown()
        server.server_close()
    assert child.returncode == 128 + signal.SIGTERM, err
    assert b"terminated" in err and b"Traceback" not in err
    assert list((tmp_path / "t").iterdir()) == []


_TOOLKIT_CHILD = r"""
import os, signal, sys
import cuwheel.toolkit.tree as x
real = x.Writer.write
def write(self, *args, **kw):
    if self.members == 100:
        os.kill(os.getpid(), signal.SIGTERM)  # mid-extraction, the staging tree half full
    return real(self, *args, **kw)
x.Writer.write = write
from cuwheel.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_sigterm_during_extraction_removes_the_staging_tree(tmp_path: Path) -> None:
    served = Served()
    with serve(served):
        # many members: the writer meets the stop flag long before the end
        publish(served, tar_xz([tar_file(f"{TOP}/f/{i}", b"x" * 100) for i in range(5000)]))
        child = subprocess.run(
            [sys.executable, "-c", _TOOLKIT_CHILD, "toolkit", "--train", "13.0.2",
             "--platform", "linux-x86_64", "--components", "cudart", "--prefix",
             str(tmp_path / "cuda"), "--base-url", f"{served.url}/redist/", "--cache",
             str(tmp_path / "cache"), "--no-progress"],
            env=_env(tmp_path), capture_output=True, timeout=300)
    assert child.returncode == 128 + signal.SIGTERM, child.stderr
    assert b"terminated" in child.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache", "t"]  # no staging, no prefix
    # the verified archive stays in the cache for the next run
    assert list((tmp_path / "cache").rglob("blobs/sha256/*/*"))


def test_sigterm_during_a_toolkit_download_ends_at_once(tmp_path: Path) -> None:
    from redistserver import manifest_with
    from test_toolkit_redist import REL, good_members

    archive = tar_xz(good_members())
    manifest = manifest_with({("cuda_cudart", "linux-x86_64"): (REL, archive)})
    asked = threading.Event()
    release = threading.Event()
    stalled_out = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a: object) -> None:
            pass

        def do_GET(self) -> None:
            body = manifest if self.path.endswith(".json") else archive[:100]
            self.send_response(200)
            self.send_header("Content-Length", str(len(manifest if body is manifest
                                                       else archive)))
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()
            if body is not manifest:  # part of the archive, then a stall
                asked.set()
                release.wait(60)
                stalled_out.set()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        child = subprocess.Popen(
            [sys.executable, "-m", "cuwheel", "toolkit", "--train", "13.0.2", "--platform",
             "linux-x86_64", "--components", "cudart", "--prefix", str(tmp_path / "cuda"),
             "--base-url", f"http://127.0.0.1:{server.server_address[1]}/redist/",
             "--cache", str(tmp_path / "cache"), "--no-progress"],
            env=_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert asked.wait(120), "the child never asked for the archive"
        child.send_signal(signal.SIGTERM)
        _, err = child.communicate(timeout=120)
        assert not stalled_out.is_set()  # ended while the server still stalled
    finally:
        release.set()
        server.shutdown()
        server.server_close()
    assert child.returncode == 128 + signal.SIGTERM, err
    assert not (tmp_path / "cuda").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".cuda.")] == []
    # the partial file stays for the next run (what was in the read cut short may be lost)
    assert [p.stat().st_size <= 100 for p in (tmp_path / "cache").rglob("partial/*.part")] == [
        True]
    assert not list((tmp_path / "cache").rglob("blobs/sha256/*/*"))
