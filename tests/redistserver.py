"""A local HTTP server for the toolkit tests: serves files from memory with Range
support, records every request, and can break a response off after N bytes (an
interrupted download) or serve fewer bytes than a manifest says (a truncated archive).

Only 127.0.0.1, an ephemeral port, a thread that stops with the test."""

from __future__ import annotations

import hashlib
import io
import json
import lzma
import tarfile
import threading
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

REDIST = Path(__file__).parent / "data" / "redist"


@dataclass
class Served:
    files: dict[str, bytes] = field(default_factory=dict)  # path -> body
    cut_after: dict[str, int] = field(default_factory=dict)  # path -> bytes, then close
    requests: list[tuple[str, str | None]] = field(default_factory=list)  # (path, Range)
    types: dict[str, str] = field(default_factory=dict)  # path -> Content-Type
    url: str = ""

    def archive_requests(self) -> list[tuple[str, str | None]]:
        return [r for r in self.requests if not r[0].endswith(".json")]


def _handler(served: Served) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            rng = self.headers.get("Range")
            served.requests.append((path, rng))
            body = served.files.get(path)
            if body is None:
                self.send_error(404, "Not Found")
                return
            start = 0
            if rng and rng.startswith("bytes=") and rng.endswith("-"):
                start = int(rng[6:-1])
                if start >= len(body):
                    self.send_error(416, "Range Not Satisfiable")
                    return
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
            else:
                self.send_response(200)
            chunk = body[start:]
            self.send_header("Content-Length", str(len(chunk)))
            if path in served.types:
                self.send_header("Content-Type", served.types[path])
            self.send_header("Accept-Ranges", "bytes")
            self.end_headers()
            cut = served.cut_after.get(path)
            if cut is not None:
                self.wfile.write(chunk[:cut])
                self.wfile.flush()
                self.close_connection = True
                return
            self.wfile.write(chunk)

    return Handler


@contextmanager
def serve(served: Served) -> Iterator[Served]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(served))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    served.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield served
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


# ---------------------------------------------------------------------- archives


def tar_xz(members: list[tuple[tarfile.TarInfo, bytes | None]]) -> bytes:
    buf = io.BytesIO()
    with lzma.open(buf, "wb", preset=0) as xz, tarfile.open(fileobj=xz, mode="w") as tar:
        for info, data in members:
            if data is not None:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
            else:
                tar.addfile(info)
    return buf.getvalue()


def tar_file(name: str, data: bytes, mode: int = 0o644) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.mode = mode
    return info, data


def tar_link(name: str, target: str, kind: bytes = tarfile.SYMTYPE) -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = target
    return info, None


def tar_device(name: str) -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type = tarfile.CHRTYPE
    info.devmajor, info.devminor = 1, 3
    return info, None


def zip_bytes(members: list[tuple[str, bytes]]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members:
            zf.writestr(name, data)
    return buf.getvalue()


def manifest_with(
    entries: dict[tuple[str, str], tuple[str, bytes]], label: str = "13.0.2"
) -> bytes:
    """NVIDIA's real manifest of ``label`` with the archives of some (component, platform)
    replaced: relative_path, sha256 and size of the given bytes."""
    doc = json.loads((REDIST / f"redistrib_{label}.json").read_bytes())
    for (component, platform), (relative_path, data) in entries.items():
        doc[component][platform] = {
            "relative_path": relative_path,
            "sha256": hashlib.sha256(data).hexdigest(),
            "md5": hashlib.md5(data).hexdigest(),
            "size": str(len(data)),
        }
    return json.dumps(doc, indent=4).encode()
