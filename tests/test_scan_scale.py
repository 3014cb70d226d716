"""cuwheel scan at scale (docs/scan.md, streaming): an index scan keeps a bounded number of
wheels in flight and on disk, checkpoints to its output and resumes; the summary's
memory does not grow with the records; a large HTML report is split into pages; Dask
submission keeps a bounded number of tasks outstanding.

Bounds are checked by what is independent of the engine's own counters: the server counts
the downloads it was asked for, the test counts the records it received, a thread samples
the temporary folder, a child process reports its own peak RSS."""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

import _absent

sys.path.insert(0, str(Path(__file__).parent))
import scanrecords
import wheelfactory
from cuwheel.scan import ScanResult, WheelRef, scan
from cuwheel.scan.inputs import Filters, from_index
from cuwheel.scan.summary import Summary, render, summarize, write

SRC = str(Path(__file__).resolve().parents[1] / "src")
BIN = Path(__file__).parent / "data" / "bin"


# -- a local index of N wheels ------------------------------------------------------------
@dataclass
class Site:
    url: str
    wheels: dict[str, bytes]
    asked: list[str] = field(default_factory=list)  # wheel file names, in request order
    yielded: list[int] = field(default_factory=lambda: [0])  # records the test received
    in_flight_seen: list[int] = field(default_factory=list)  # asked - yielded, per request
    stall: dict[str, threading.Event] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _wheels(d: Path, n: int) -> dict[str, bytes]:
    """``n`` small wheels of committed device code, each a little different (a pad
    member of its own size): distinct sha256s and sizes."""
    out = {}
    d.mkdir(parents=True, exist_ok=True)
    so = (BIN / "sm80.so").read_bytes()
    for i in range(n):
        path = wheelfactory.make_wheel(
            d, {"pkg/sm80.so": so, f"pkg/pad{i}.txt": os.urandom(20_000 + 1000 * i)},
            name="alpha", version=f"1.{i}", tag="cp311-cp311-manylinux_2_28_x86_64")
        out[os.path.basename(path)] = Path(path).read_bytes()
    return out


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Site]:
    wheels = _wheels(tmp_path / "w", 12)
    state: list[Site] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a: object) -> None:
            pass

        def do_GET(self) -> None:
            s = state[0]
            if self.path == "/simple/alpha/":
                files = [{"filename": n, "url": f"/files/{n}", "size": len(b),
                          "hashes": {"sha256": hashlib.sha256(b).hexdigest()}}
                         for n, b in sorted(s.wheels.items())]
                body = json.dumps({"meta": {"api-version": "1.1"}, "name": "alpha",
                                   "files": files}).encode()
                ctype = "application/vnd.pypi.simple.v1+json"
            elif self.path.startswith("/files/") and self.path[7:] in s.wheels:
                name = self.path[7:]
                with s.lock:
                    s.asked.append(name)
                    s.in_flight_seen.append(len(s.asked) - s.yielded[0])
                body, ctype = s.wheels[name], "application/octet-stream"
                if name in s.stall:
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body[:1000])
                    self.wfile.flush()
                    s.stall[name].wait(60)
                    self.wfile.write(body[1000:])
                    return
            else:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state.append(Site(f"http://127.0.0.1:{server.server_address[1]}", wheels))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield state[0]
    finally:
        for ev in state[0].stall.values():
            ev.set()
        server.shutdown()
        server.server_close()


class _Sampler:
    """Samples the bytes and the wheel files under a folder until stopped."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.peak_bytes = 0
        self.peak_files = 0
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> _Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            size = files = 0
            for dirpath, _, names in os.walk(self.root):
                for n in names:
                    try:
                        size += os.path.getsize(os.path.join(dirpath, n))
                    except OSError:
                        continue
                    files += n.endswith(".whl")
            self.peak_bytes = max(self.peak_bytes, size)
            self.peak_files = max(self.peak_files, files)
            self.samples += 1
            time.sleep(0.001)


def test_an_index_scan_keeps_the_bound_in_flight_and_on_disk(
    site: Site, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tmp = tmp_path / "t"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    refs = from_index(f"{site.url}/simple/", Filters(projects=("alpha",)))
    assert len(refs) == 12
    bound = 2
    biggest = max(len(b) for b in site.wheels.values())
    res = ScanResult()
    got = []
    with _Sampler(tmp) as sampler:
        for line in scan(refs, workers=1, max_in_flight=bound, result=res):
            got.append(json.loads(line))
            with site.lock:
                site.yielded[0] += 1
            time.sleep(0.02)  # a slow consumer: downloads must wait for it, not pile up
    assert sorted(r["wheel"]["filename"] for r in got) == sorted(site.wheels)
    assert all(r["error"] is None and r["inventory"] for r in got)
    assert sorted(site.asked) == sorted(site.wheels)  # each downloaded once
    # the server's count: never more wheels asked for than records received + the bound
    assert max(site.in_flight_seen) <= bound
    assert sampler.samples > 10
    assert sampler.peak_files <= bound
    assert sampler.peak_bytes <= bound * biggest
    assert res.peak_in_flight <= bound and res.peak_disk <= bound * biggest
    assert list(tmp.iterdir()) == []  # the download folder is gone


def test_a_bound_of_one_reads_one_wheel_at_a_time(site: Site) -> None:
    refs = from_index(f"{site.url}/simple/", Filters(projects=("alpha",)))
    for _ in scan(refs[:5], workers=1, max_in_flight=1):
        with site.lock:
            site.yielded[0] += 1
    assert len(site.asked) == 5 and max(site.in_flight_seen) == 1


_RESUME_CHILD = r"""
import sys
from cuwheel.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 128 + signal.SIGTERM),
                                             (signal.SIGINT, 130)], ids=["SIGTERM", "Ctrl-C"])
def test_a_killed_scan_resumes_from_its_output(site: Site, tmp_path: Path, signum: int,
                                               code: int) -> None:
    tmp = tmp_path / "t"
    tmp.mkdir()
    env = {**os.environ, "PYTHONPATH": SRC, "TMPDIR": str(tmp)}
    out = tmp_path / "r.jsonl"
    stalled = sorted(site.wheels)[5]
    site.stall[stalled] = threading.Event()
    cmd = [sys.executable, "-c", _RESUME_CHILD, "scan", "--index", f"{site.url}/simple/",
           "--project", "alpha", "--no-cache", "--workers", "1", "--max-in-flight", "2",
           "-o", str(out), "--exit-zero"]
    child = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # every wheel but the stalled one recorded
            if out.exists() and out.read_bytes().count(b"\n") >= 11:
                break
            time.sleep(0.05)
        assert out.read_bytes().count(b"\n") == 11
        child.send_signal(signum)
        _, err = child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == code, err
    assert b"Traceback" not in err
    assert list(tmp.iterdir()) == []  # no download left behind
    first = [json.loads(x) for x in out.read_text().splitlines()]
    assert stalled not in {r["wheel"]["filename"] for r in first}
    site.stall[stalled].set()
    del site.stall[stalled]
    asked_before = list(site.asked)
    rerun = subprocess.run([*cmd, "--resume"], env=env, capture_output=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    assert site.asked[len(asked_before):] == [stalled]  # nothing recorded is fetched again
    recs = [json.loads(x) for x in out.read_text().splitlines()]
    assert sorted(r["wheel"]["filename"] for r in recs) == sorted(site.wheels)
    assert b"11 kept from" in rerun.stderr
    assert list(tmp.iterdir()) == []


def test_resume_rescans_a_wheel_whose_sha256_changed(site: Site, tmp_path: Path) -> None:
    from cuwheel.scan.checkpoint import Checkpoint

    refs = from_index(f"{site.url}/simple/", Filters(projects=("alpha",)))[:3]
    out = tmp_path / "r.jsonl"
    out.write_text("".join(line + "\n" for line in scan(refs, workers=1)) + '{"cut')
    damaged: list[object] = []
    cp = Checkpoint.read(str(out), damaged)
    assert cp.records == 3 and len(damaged) == 1  # the cut last line, removed
    assert out.read_bytes().endswith(b"}\n")
    moved = WheelRef(refs[0].input, refs[0].filename, "0" * 64, refs[0].size)
    assert cp.remaining([*refs, moved]) == [moved]
    assert cp.remaining([WheelRef(refs[1].input, refs[1].filename)]) == []  # by input


# -- the summary: bounded memory ------------------------------------------------------------
_SUMMARY_CHILD = r"""
import json, resource, sys
from cuwheel.scan.summary import Summary, iter_records, write
damaged = []
with Summary() as s:
    s.add_all(iter_records([sys.argv[1]], damaged))
    head = s.head()
    for fmt in ("text", "json", "html"):
        path = sys.argv[2] + "." + fmt
        with open(path, "w", encoding="utf-8") as f:
            write(s, fmt, f, path=path)
# VmHWM: this process's own peak since exec (ru_maxrss keeps the parent's peak at fork)
try:
    hwm = [int(l.split()[1]) * 1024 for l in open("/proc/self/status")
           if l.startswith("VmHWM:")][0]
except (OSError, IndexError):
    hwm = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"rss": hwm,
                  "wheels": head["wheels"], "errors": head["errors"],
                  "device": head["with_device_code"], "damaged": len(damaged)}))
"""


def test_a_20k_record_summary_stays_within_200_mb(tmp_path: Path) -> None:
    n = 20_000
    recs = tmp_path / "r.jsonl"
    gen = subprocess.run([sys.executable, str(Path(__file__).parent / "scanrecords.py"),
                          str(recs), str(n)], env={**os.environ, "PYTHONPATH": SRC},
                         capture_output=True, text=True, timeout=600)
    assert gen.returncode == 0, gen.stderr
    assert recs.stat().st_size > 100 << 20  # records of a real wheel's size, not stubs
    child = subprocess.run([sys.executable, "-c", _SUMMARY_CHILD, str(recs),
                            str(tmp_path / "s")], env={**os.environ, "PYTHONPATH": SRC},
                           capture_output=True, text=True, timeout=600)
    assert child.returncode == 0, child.stderr
    got = json.loads(child.stdout)
    assert got["rss"] < 200 << 20
    # what the generator made: every 50th record an error, every 5th without device code
    assert (got["wheels"], got["errors"], got["device"], got["damaged"]) == (
        n, n // 50, n - n // 5, 0)
    doc = json.loads((tmp_path / "s.json").read_text())
    assert len(doc["matrix"]) == n and doc["wheels"] == n
    pages = sorted(tmp_path.glob("s-*.html"))
    assert len(pages) == 10  # 2000 rows a page


def test_the_last_record_of_an_input_wins_in_the_counts() -> None:
    first, second = scanrecords.records(2)
    second = {**second, "input": first["input"]}  # the same URL, scanned again
    s = summarize([first, second])
    assert s["wheels"] == 1
    assert [w["filename"] for w in s["matrix"]] == [second["wheel"]["filename"]]
    assert set(s["projects"]) == {second["wheel"]["name"]}  # proj0 is gone, proj1 stays
    p = s["projects"][second["wheel"]["name"]]
    assert p["wheels"] == 1 and p["versions"] == [second["wheel"]["version"]]
    want = {f["code"] for f in second["check"]["findings"]}
    assert set(s["codes"]) == want


def test_json_written_row_by_row_is_the_document(tmp_path: Path) -> None:
    recs = list(scanrecords.records(30))
    doc = summarize(recs)
    text = render(doc, "json")
    assert json.loads(text) == json.loads(json.dumps(doc))
    assert json.loads(render(summarize([]), "json"))["matrix"] == []


# -- HTML pages -----------------------------------------------------------------------------
def test_a_large_html_report_is_split_into_pages(tmp_path: Path) -> None:
    n, per = 1050, 100
    recs = list(scanrecords.records(n))
    index = tmp_path / "report.html"
    with Summary() as s:
        s.add_all(recs)
        with open(index, "w", encoding="utf-8") as f:
            pages = write(s, "html", f, path=str(index), page_rows=per)
    assert [Path(p).name for p in pages] == [f"report-{k:04d}.html" for k in range(1, 12)]
    text = index.read_text()
    for p in pages:
        assert f"href='{Path(p).name}'" in text
    seen: list[str] = []
    for p in pages:
        page = Path(p).read_text()
        rows = re.findall(r"<tr><td>([^<]+)</td><td title", page)
        assert len(rows) <= per
        seen += rows
        # a page: its rows (each at most a file name and one short cell per GPU) + a header
        assert len(page.encode()) <= 8_000 + per * (200 + 60 * len(recs[0]["gpus"]))
    assert sorted(seen) == sorted(r["wheel"]["filename"] for r in recs)
    assert len(text.encode()) < 64_000  # the index holds no matrix row
    assert "<tr><td>proj" in text  # but its per-project table


def test_html_to_a_stream_is_cut_at_one_page() -> None:
    recs = list(scanrecords.records(120))
    buf = io.StringIO()
    with Summary() as s:
        s.add_all(recs)
        assert write(s, "html", buf, page_rows=50) == []
    rows = re.findall(r"<tr><td>([^<]+)</td><td title", buf.getvalue())
    assert len(rows) == 50 and "The first 50 of 120 wheels" in buf.getvalue()


def test_a_small_html_report_is_one_file(tmp_path: Path) -> None:
    recs = list(scanrecords.records(20))
    path = tmp_path / "r.html"
    with open(path, "w", encoding="utf-8") as f:
        assert write(summarize(recs), "html", f, path=str(path)) == []
    assert len(re.findall(r"<tr><td>([^<]+)</td><td title", path.read_text())) == 20


# -- Dask backpressure ------------------------------------------------------------------------
def test_dask_keeps_a_bounded_number_of_tasks_outstanding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    distributed = _absent.extra("dask", "distributed")
    so = (BIN / "sm80.so").read_bytes()
    wheels = [wheelfactory.make_wheel(tmp_path, {"pkg/sm80.so": so}, name="alpha",
                                      version=f"1.{i}", tag="py3-none-manylinux_2_28_x86_64")
              for i in range(14)]
    submitted = [0]
    real = distributed.Client.submit

    def counting(self: object, *a: object, **k: object) -> object:
        submitted[0] += 1
        return real(self, *a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(distributed.Client, "submit", counting)
    cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                       dashboard_address=None)
    try:
        bound = 3
        received = 0
        outstanding = []
        res = ScanResult()
        for _ in scan([WheelRef(w, os.path.basename(w)) for w in wheels], engine="dask",
                      dask_address=cluster.scheduler_address, max_in_flight=bound,
                      result=res):
            outstanding.append(submitted[0] - received)
            received += 1
    finally:
        cluster.close()
    assert received == 14 and submitted[0] == 14
    assert max(outstanding) <= bound and res.peak_outstanding <= bound
