"""Exit status across commands (docs/cli.md#exit-status): unusable input or an unreachable
service is 2 with one line naming it, never findings and never a pass; ``check --index``
against an index that cannot be used; ``scan`` gates as ``check`` does (1 on a wheel that
fails its audit, ``--exit-zero`` to keep 0)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

import checkwheels as cw
import cuwheel.cli

Run = Callable[..., tuple[int, str, str]]


@pytest.fixture()
def cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        tmp_path: Path) -> Run:
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    for var in ("CUWHEEL_TRAIN", "CUWHEEL_ROW", "CUWHEEL_PLATFORM", "CU_VERSION",
                "DESIRED_CUDA", "NO_COLOR", "CUWHEEL_COLOR", "FORCE_COLOR"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))

    def run(*argv: str) -> tuple[int, str, str]:
        code = cuwheel.cli.main(list(argv))
        out, err = capsys.readouterr()
        return code, out, err

    return run


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A wheel with a requirement (so --index is asked) that passes its audit."""
    return str(cw.linux_x86_cu13().build(tmp_path_factory.mktemp("good")))


# ------------------------------------------------------------------ check --index URL


class _Pages(BaseHTTPRequestHandler):
    status = 200
    body = b""
    ctype = "text/html"

    def do_GET(self) -> None:
        self.send_response(self.status)
        self.send_header("Content-Type", self.ctype)
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args: object) -> None:
        pass


def _serve(status: int, body: bytes, ctype: str) -> Iterator[str]:
    handler = type("H", (_Pages,), {"status": status, "body": body, "ctype": ctype})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/simple/"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture()
def refused() -> str:
    """A local port nothing listens on: bound, then closed."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/simple/"


@pytest.fixture()
def http500() -> Iterator[str]:
    yield from _serve(500, b"oops", "text/plain")


@pytest.fixture()
def html_page() -> Iterator[str]:
    # a web site's page at the index's address: 200, but no PEP 691 project page
    yield from _serve(200, b"<html><body>Welcome</body></html>", "text/html")


@pytest.fixture()
def json_not_index() -> Iterator[str]:
    yield from _serve(200, b'{"status": "ok"}', "application/json")


@pytest.mark.parametrize("kind, why", [
    ("refused", "refused"),
    ("http500", "HTTP 500"),
    ("html_page", "no PEP 691"),
    ("json_not_index", "no PEP 691 project page"),
    ("file", "http(s)"),
    ("dns", "cannot read"),
])
def test_check_with_an_unusable_index_is_exit_2(
    cli: Run, good: str, request: pytest.FixtureRequest, kind: str, why: str,
) -> None:
    if kind == "file":
        url = "file:///etc/"
    elif kind == "dns":
        url = "http://no-such-host.invalid/simple/"  # .invalid never resolves (RFC 6761)
    else:
        url = request.getfixturevalue(kind)
    code, out, err = cli("check", good, "--index", url)
    assert code == 2, (out, err)
    assert out == ""  # no findings, no verdict
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert url in lines[0] and why in lines[0], lines[0]
    assert "Traceback" not in err


def test_check_with_an_unusable_index_stops_at_the_first_wheel(
    cli: Run, good: str, refused: str, tmp_path: Path
) -> None:
    second = cw.linux_x86_cu13().build(tmp_path / "b" if (tmp_path / "b").mkdir() is None
                                       else tmp_path)
    code, out, err = cli("check", good, str(second), "--index", refused)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1, err  # said once, not once per wheel


def test_check_without_the_index_passes(cli: Run, good: str) -> None:
    """The same wheel passes offline: the exit 2 above is the index's, not the wheel's."""
    code, out, err = cli("check", good)
    assert code == 0, (out, err)


# ------------------------------------------------------------------ scan gates as check


def test_scan_exit_status_follows_the_audit(cli: Run, good: str, tmp_path: Path) -> None:
    bad_dir = tmp_path / "bad"
    bad_dir.mkdir()
    bad = str(cw.broken_seeds()["linux-x86_64-cu13"].build(bad_dir))
    common = ("--no-cache", "--workers", "1")
    assert cli("scan", good, *common)[0] == 0
    code, out, err = cli("scan", good, bad, *common)
    assert code == 1, err
    assert len(out.splitlines()) == 2  # every record is written all the same
    assert "1 wheel(s) fail their audit" in err
    assert cli("scan", good, bad, *common, "--exit-zero")[0] == 0
    missing = str(tmp_path / "gone.whl")
    # unusable input wins over failing wheels, with or without --exit-zero
    assert cli("scan", bad, missing, *common)[0] == 2
    assert cli("scan", bad, missing, *common, "--exit-zero")[0] == 2
    # an inventory-only scan has no verdict to fail
    assert cli("scan", bad, *common, "--no-check")[0] == 0


def test_scan_with_an_unreachable_index_is_exit_2(cli: Run, refused: str) -> None:
    code, out, err = cli("scan", "--index", refused, "--project", "demo", "--no-cache")
    assert code == 2 and out == ""
    assert "127.0.0.1" in err and "Traceback" not in err


# ------------------------------------------------------------------ every command


@pytest.mark.parametrize("argv", [
    ("inspect", "{missing}"),
    ("check", "{missing}"),
    ("check", "{notwheel}"),
    ("compat", "{missing}", "--cc", "8.0"),
    ("compat", "{notwheel}", "--cc", "8.0"),
    ("size", "{missing}"),
    ("scan", "{missing}", "--no-cache"),
    ("variant", "{missing}"),
    ("init", "--from", "{missing}"),
    ("plan", "--config", "{missing}", "--train", "cu130"),
    ("check", "{good}", "--config", "{missing}"),
    ("explain", "XX999"),
    ("compat", "{good}", "--gpu", "no-such-gpu-xyz"),
    ("toolkit", "--train", "cu999", "--prefix", "{tmp}/tk"),
    ("doctor", "--path", "{missing}", "--gpu", "H100", "--driver", "580",
     "--ld-cache", "none"),
])
def test_unusable_input_is_exit_2_with_one_line(cli: Run, good: str, tmp_path: Path,
                                                argv: tuple[str, ...]) -> None:
    notwheel = tmp_path / "notes.whl"
    notwheel.write_bytes(b"this is not a zip archive")
    args = [a.format(missing=tmp_path / "missing.whl", notwheel=notwheel, good=good,
                     tmp=tmp_path) for a in argv]
    code, out, err = cli(*args)
    assert code == 2, (argv, out, err)
    assert "Traceback" not in err
    assert err.strip(), "the problem is named on stderr"
    first = err.strip().splitlines()[0]
    assert first.startswith("cuwheel: error:") or "error:" in first, err


def test_gpus_is_a_search(cli: Run) -> None:
    """A name that matches no GPU is a search without result (exit 1, as grep), not
    unusable input: the answer is on stdout."""
    code, out, err = cli("gpus", "no-such-gpu-xyz")
    assert (code, err) == (1, "")
    assert "no GPU matches" in out
