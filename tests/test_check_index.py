"""DEP007 against a package index served here (PEP 691 JSON): a requirement whose project
has only placeholder releases, or none that satisfies it, is reported; a real one is not;
without --index nothing is asked."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

import checkwheels as cw
from cuwheel.checks import check_wheel
from cuwheel.config import parse_config

PROJECTS = {
    # NVIDIA-style reserved name: one 2 KB sdist that tells users to look elsewhere
    "nvidia-ghost-cu13": [("nvidia_ghost_cu13-0.0.1.tar.gz", 2048)],
    "realpkg": [("realpkg-1.0.tar.gz", 2048), ("realpkg-1.2-py3-none-any.whl", 900_000)],
    # a metapackage: a tiny wheel of extras, real all the same
    "cuda-toolkit": [("cuda_toolkit-13.0.3-py2.py3-none-any.whl", 3000)],
}


class _Index(BaseHTTPRequestHandler):
    asked: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        name = self.path.strip("/").split("/")[-1]
        type(self).asked.append(name)
        if name not in PROJECTS:
            self.send_error(404)
            return
        body = json.dumps({"meta": {"api-version": "1.1"}, "name": name, "files": [
            {"filename": fn, "size": size, "url": f"/{fn}", "hashes": {}}
            for fn, size in PROJECTS[name]
        ]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/vnd.pypi.simple.v1+json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def index() -> Iterator[str]:
    _Index.asked = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Index)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/simple/"
    server.shutdown()
    server.server_close()


def _dep007(tmp_path: Path, requires: tuple[str, ...], index: str | None) -> list[str]:
    spec = replace(cw.linux_x86_cu13(), requires=(*cw.linux_x86_cu13().requires, *requires))
    cfg = parse_config({}, "test")
    report = check_wheel(spec.build(tmp_path), cfg.rows, cfg.check, environ={}, index=index)
    return [f.message for f in report.findings if f.code == "DEP007"]


def test_placeholder_and_missing_projects(tmp_path: Path, index: str) -> None:
    found = _dep007(tmp_path, (
        "nvidia-ghost-cu13>=0.0.1",
        'realpkg>=1.1; extra == "extras"',   # real: a 900 KB wheel satisfies it
        'nosuchpkg; extra == "more"',        # extras count too
        "realpkg>=5",                        # no release satisfies
    ), index)
    assert len(found) == 3, found
    assert any("nvidia-ghost-cu13" in m and "placeholder" in m for m in found)
    assert any("nosuchpkg" in m and "no release" in m for m in found)
    assert any("realpkg>=5" in m and "no release" in m for m in found)


def test_offline_without_index(tmp_path: Path, index: str) -> None:
    assert _dep007(tmp_path, ("nvidia-ghost-cu13",), None) == []
    assert _Index.asked == []


def test_index_findings_go_through_the_policy(tmp_path: Path, index: str) -> None:
    """DEP007 is a finding like the others: a `*` waiver waives it, --ignore drops it,
    fail-on warning still fails on it; before, index findings skipped the policy loop."""
    spec = replace(cw.linux_x86_cu13(),
                   requires=(*cw.linux_x86_cu13().requires, "nvidia-ghost-cu13>=0.0.1"))
    wheel = spec.build(tmp_path)
    waiver = {"waivers": [{"code": "DEP007", "path": "*", "reason": "reserved name"}]}
    for table, passed, state in (
        ({}, False, "open"),
        (waiver, True, "waived"),
        ({"ignore": ["DEP007"]}, True, "absent"),
    ):
        cfg = parse_config({"check": table}, "test")
        report = check_wheel(wheel, cfg.rows, cfg.check, environ={}, index=index)
        dep = [f for f in report.findings if f.code == "DEP007"]
        assert report.passed is passed, (table, [f.line() for f in report.failing])
        if state == "absent":
            assert dep == []
        else:
            assert len(dep) == 1 and (dep[0].waived is not None) == (state == "waived")
            assert dep[0].check == "index"
