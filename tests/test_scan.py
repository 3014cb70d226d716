"""cuwheel scan: the scheduler over many targets, records, the cache, resuming, a PEP 691
/ PEP 503 index served on localhost, the summary, and start-up without multiprocessing.
Wheels are built at test time from the committed fixtures."""

from __future__ import annotations

import hashlib
import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

import _absent

sys.path.insert(0, str(Path(__file__).parent))
import cuwheel
import cuwheel.read.schedule as api_mod
import cuwheel.read.sources.source as sources_mod
import wheelfactory
from cuwheel.cli import main
from cuwheel.read.inspect import iter_inspect
from cuwheel.scan import RecordOptions, ScanResult, WheelRef, scan
from cuwheel.scan.cache import Cache
from cuwheel.scan.inputs import Filters, expand, from_index
from cuwheel.scan.summary import render, summarize

BIN = Path(__file__).parent / "data" / "bin"


def _bytes(name: str) -> bytes:
    return (BIN / name).read_bytes()


def corpus(d: Path) -> list[str]:
    """A small mixed corpus: Linux and Windows device code, host-only, a damaged member,
    two versions and two platforms of one project."""
    d.mkdir(parents=True, exist_ok=True)
    mk = wheelfactory.make_wheel
    return [
        mk(d, {"pkg/sm80.so": _bytes("sm80.so"), "pkg/sm90a.so": _bytes("sm90a.so"),
               "pkg/__init__.py": b""}, name="alpha", version="1.0",
           tag="cp311-cp311-manylinux_2_28_x86_64"),
        mk(d, {"pkg/sm80.so": _bytes("sm80.so")}, name="alpha", version="2.0",
           tag="cp311-cp311-manylinux_2_28_x86_64"),
        mk(d, {"pkg/k.dll": _bytes("win_sm80_86.dll")}, name="alpha", version="2.0",
           tag="cp311-cp311-win_amd64"),
        mk(d, {"lib/host.so": _bytes("hostonly.so"), "lib/cut.so": _bytes("sm80.so")[:5000]},
           name="beta", version="0.1", tag="py3-none-manylinux_2_28_x86_64"),
        mk(d, {"lib/sm100f.so": _bytes("sm100f.so"), "lib/ptx.so": _bytes("ptx120.so")},
           name="gamma", version="3.1", tag="py3-none-manylinux_2_28_x86_64"),
    ]


def records(lines: Iterator[str] | list[str]) -> dict[str, dict[str, object]]:
    out = {}
    for line in lines:
        obj = json.loads(line)
        out[os.path.basename(obj["wheel"]["filename"])] = obj
    return out


# -- the scheduler -----------------------------------------------------------------------
@pytest.fixture
def every_member_an_item(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(api_mod, "_PARALLEL_THRESHOLD", 0)
    monkeypatch.setattr(api_mod, "_BIG_MEMBER", 1)
    monkeypatch.setattr(api_mod, "cpu_count", lambda: 3)


def test_many_targets_in_parallel_read_what_one_process_reads(
    tmp_path: Path, every_member_an_item: None
) -> None:
    wheels = corpus(tmp_path / "w")
    tree = tmp_path / "tree"
    tree.mkdir()
    shutil.copy(BIN / "sm80.so", tree / "a.so")
    shutil.copy(BIN / "k90.cubin", tree / "b.cubin")
    (tree / "notes.txt").write_text("x")
    targets = [*wheels, str(tree), str(BIN / "sm90a.so"), str(tmp_path / "missing.whl")]
    serial = cuwheel.inspect(targets, workers=1)
    parallel = cuwheel.inspect(targets, workers=3)
    assert parallel == serial
    assert [s.path for s in parallel.sources] == targets
    assert len(serial.sources[3].problems) == 1  # the cut member
    got = dict(iter_inspect(targets, workers=3))
    assert sorted(got) == list(range(len(targets)))


def test_items_biggest_first_a_wheels_own_together() -> None:
    sized = [("a", 5), ("b", 100 << 20), ("c", 7), ("d", 50 << 20)]
    batches = api_mod._batches(sized)
    assert [[n for n, _ in b] for b in batches] == [["b"], ["d"], ["a", "c"]]


def test_a_finish_runs_where_the_source_is_complete(
    tmp_path: Path, every_member_an_item: None
) -> None:
    wheels = corpus(tmp_path / "w")
    opts = RecordOptions(check=False)
    seq = dict(iter_inspect(wheels, workers=1, finish=_finish_pid, tags=wheels))
    par = dict(iter_inspect(wheels, workers=3, finish=_finish_pid, tags=wheels))
    assert {i: r[0] for i, r in seq.items()} == {i: r[0] for i, r in par.items()}
    assert {r[1] for r in seq.values()} == {os.getpid()}
    assert os.getpid() not in {r[1] for r in par.values()}  # in workers, split or not
    del opts


def _finish_pid(source: cuwheel.Source, tag: str) -> tuple[str, int]:
    assert source.path == tag
    return f"{len(source.binaries)}:{len(source.problems)}", os.getpid()


def test_one_worker_imports_no_multiprocessing() -> None:
    code = (
        "import sys\n"
        "from cuwheel.cli import main\n"
        f"rc = main(['inspect', {str(BIN / 'sm80.so')!r}])\n"
        "bad = [m for m in ('multiprocessing', 'concurrent.futures') if m in sys.modules]\n"
        "sys.exit(f'imported {bad}' if bad else rc)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


# -- records -----------------------------------------------------------------------------
def test_records_depend_on_content_only(tmp_path: Path) -> None:
    wheels = corpus(tmp_path / "a")
    moved = tmp_path / "elsewhere"
    shutil.copytree(tmp_path / "a", moved)
    opts = RecordOptions()
    first = records(scan([WheelRef(w, os.path.basename(w)) for w in wheels], options=opts,
                         workers=1))
    second = records(scan([WheelRef(str(moved / os.path.basename(w)), os.path.basename(w))
                           for w in wheels], options=opts, workers=2))
    assert first.keys() == second.keys() and len(first) == 5
    for name, rec in first.items():
        other = dict(second[name])
        assert other.pop("input") != rec["input"]
        mine = dict(rec)
        mine.pop("input")
        assert mine == other
        text = json.dumps(mine)
        assert str(tmp_path) not in text  # no local path inside
    a1 = first["alpha-1.0-cp311-cp311-manylinux_2_28_x86_64.whl"]
    w = a1["wheel"]
    assert w["name"] == "alpha" and w["version"] == "1.0"
    assert w["sha256"] == hashlib.sha256(Path(wheels[0]).read_bytes()).hexdigest()
    assert w["size"] == os.path.getsize(wheels[0])
    assert w["tags"] == ["cp311-cp311-manylinux_2_28_x86_64"]
    paths = [b["path"] for b in a1["inventory"]["binaries"]]
    assert paths == ["pkg/sm80.so", "pkg/sm90a.so"]
    assert "containers" not in a1["inventory"]["binaries"][0]
    check = a1["check"]
    assert check["profile"] == "audit" and isinstance(check["passed"], bool)
    beta = first["beta-0.1-py3-none-manylinux_2_28_x86_64.whl"]
    assert beta["inventory"]["problems"][0]["path"] == "lib/cut.so"


def test_record_options(tmp_path: Path) -> None:
    (w,) = corpus(tmp_path)[:1]
    ref = [WheelRef(w, os.path.basename(w))]
    (full,) = scan(ref, options=RecordOptions(check=False, detail="containers"), workers=1)
    obj = json.loads(full)
    assert obj["check"] is None and obj["options"]["detail"] == "containers"
    assert obj["inventory"]["binaries"][0]["containers"]


# -- the cache ---------------------------------------------------------------------------
def test_cache_reads_only_what_changed(tmp_path: Path) -> None:
    wheels = corpus(tmp_path / "w")
    refs = [WheelRef(w, os.path.basename(w)) for w in wheels]
    opts = RecordOptions()
    cache = Cache(str(tmp_path / "cache"), opts)
    r1 = ScanResult()
    first = sorted(scan(refs, options=opts, workers=1, cache=cache, result=r1))
    assert (r1.read, r1.cached) == (5, 0)
    r2 = ScanResult()
    again = sorted(scan(refs, options=opts, workers=1, cache=Cache(cache.root, opts), result=r2))
    assert (r2.read, r2.cached) == (0, 5) and again == first
    # One wheel rebuilt with other content: only it is read again.
    wheelfactory.make_wheel(wheels[1], {"pkg/sm90a.so": _bytes("sm90a.so")}, name="alpha",
                            version="2.0", tag="cp311-cp311-manylinux_2_28_x86_64")
    r3 = ScanResult()
    third = records(scan(refs, options=opts, workers=1, cache=Cache(cache.root, opts),
                         result=r3))
    assert (r3.read, r3.cached) == (1, 4)
    assert [b["path"] for b in third[os.path.basename(wheels[1])]["inventory"]["binaries"]] \
        == ["pkg/sm90a.so"]
    # Other options: another key, nothing served.
    r4 = ScanResult()
    list(scan(refs, options=RecordOptions(check=False), workers=1,
              cache=Cache(cache.root, RecordOptions(check=False)), result=r4))
    assert r4.cached == 0


# -- the CLI: JSON Lines, resume, exit status --------------------------------------------
def test_cli_scan_resume_and_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus(tmp_path / "w")
    out = tmp_path / "records.jsonl"
    rc = main(["scan", str(tmp_path / "w"), "--no-cache", "-o", str(out), "--workers", "1"])
    assert rc == 2  # beta's cut member
    lines = out.read_text().splitlines()
    assert len(lines) == 5
    # An interrupted run: two records and half of a third.
    out.write_text("\n".join(lines[:2]) + "\n" + lines[2][:40])
    rc = main(["scan", str(tmp_path / "w"), "--no-cache", "-o", str(out), "--resume",
               "--summary", "json", "--summary-output", str(tmp_path / "s.json")])
    again = out.read_text().splitlines()
    assert sorted(again) == sorted(lines)
    summary = json.loads((tmp_path / "s.json").read_text())
    assert summary["wheels"] == 5 and set(summary["projects"]) == {"alpha", "beta", "gamma"}
    capsys.readouterr()
    rc = main(["scan", "--records", str(out), "--summary", "text", "--no-cache"])
    text = capsys.readouterr().out
    assert rc == 0 and "5 wheels" in text and "alpha: 3 wheels (1.0, 2.0)" in text


def test_cli_filters_local_inputs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus(tmp_path / "w")
    rc = main(["scan", str(tmp_path / "w"), "--no-cache", "--project", "alpha",
               "--version", ">=2", "--platform", "manylinux*", "--exit-zero"])
    got = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert rc == 0
    assert [r["wheel"]["filename"] for r in got] == [
        "alpha-2.0-cp311-cp311-manylinux_2_28_x86_64.whl"]


def test_filters() -> None:
    f = Filters(projects=("Torch*",), versions=">=2.4,<3", platforms=("win_*",))
    assert f.accepts("torch-2.5.0-cp311-cp311-win_amd64.whl")
    assert f.accepts("torchvision-2.5.0-cp311-cp311-win_amd64.whl")
    assert not f.accepts("torch-2.5.0-cp311-cp311-manylinux_2_28_x86_64.whl")
    assert not f.accepts("torch-3.0-cp311-cp311-win_amd64.whl")
    assert not f.accepts("torch-2.6.0rc1-cp311-cp311-win_amd64.whl")
    assert not f.accepts("not a wheel name.whl")
    refs, missing = expand(["/nonexistent/x.whl"])
    assert refs == [] and missing


# -- a simple index on localhost ---------------------------------------------------------
class _Index(http.server.SimpleHTTPRequestHandler):
    pages: ClassVar[dict[str, tuple[str, bytes]]] = {}

    def do_GET(self) -> None:
        page = self.pages.get(self.path)
        if page is None:
            super().do_GET()
            return
        ctype, body = page
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a: object) -> None:
        pass


@pytest.fixture
def index(tmp_path: Path) -> Iterator[tuple[str, list[str]]]:
    files = tmp_path / "files"
    wheels = corpus(files)
    handler = type("H", (_Index,), {"pages": {}})

    def serve(*a: object, **k: object) -> _Index:
        return handler(*a, directory=str(tmp_path), **k)  # type: ignore[arg-type]

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), serve)  # type: ignore[arg-type]
    base = f"http://127.0.0.1:{server.server_address[1]}"
    alpha = [w for w in wheels if os.path.basename(w).startswith("alpha")]
    entries = []
    for w in alpha:
        name = os.path.basename(w)
        sha = hashlib.sha256(Path(w).read_bytes()).hexdigest()
        entries.append({"filename": name, "url": f"../../files/{name}",
                        "hashes": {"sha256": sha}, "size": os.path.getsize(w)})
    entries.append({"filename": "alpha-0.5.tar.gz", "url": "../../files/x.tar.gz",
                    "hashes": {}})
    entries.append({"filename": "alpha-0.9-py3-none-any.whl", "url": "../../files/y.whl",
                    "hashes": {}, "yanked": "broken"})
    handler.pages = {
        "/simple/": ("application/vnd.pypi.simple.v1+json", json.dumps(
            {"meta": {"api-version": "1.1"}, "projects": [{"name": "alpha"}, {"name": "Beta"},
                                                          {"name": "gamma"}]}).encode()),
        "/simple/alpha/": ("application/vnd.pypi.simple.v1+json", json.dumps(
            {"meta": {"api-version": "1.1"}, "name": "alpha", "files": entries}).encode()),
        "/simple/beta/": ("text/html", "".join(
            f'<a href="../../files/{os.path.basename(w)}#sha256='
            f'{hashlib.sha256(Path(w).read_bytes()).hexdigest()}">{os.path.basename(w)}</a>'
            for w in wheels if "beta" in w).encode()),
    }
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield base + "/simple/", wheels
    finally:
        server.shutdown()
        server.server_close()


def test_index_pep691_and_pep503(index: tuple[str, list[str]], tmp_path: Path) -> None:
    url, wheels = index
    refs = from_index(url, Filters(projects=("alpha", "beta")))
    names = sorted(r.filename for r in refs)
    assert names == sorted(os.path.basename(w) for w in wheels if "gamma" not in w)
    assert all(r.sha256 and r.input.startswith("http://127.0.0.1") for r in refs)
    assert from_index(url, Filters(projects=("alp*",), versions="<2")) == [
        r for r in refs if r.filename.startswith("alpha-1.0")]
    plat = from_index(url, Filters(projects=("alpha",), platforms=("win_amd64",)))
    assert [r.filename for r in plat] == ["alpha-2.0-cp311-cp311-win_amd64.whl"]
    # The records of downloaded wheels: the URL as input, content as for local files.
    opts = RecordOptions()
    cache = Cache(str(tmp_path / "c"), opts)
    remote = records(scan(refs, options=opts, workers=1, cache=cache))
    local = records(scan([WheelRef(w, os.path.basename(w)) for w in wheels if "gamma" not in w],
                         options=opts, workers=1))
    for name, rec in remote.items():
        assert rec["input"].endswith("/files/" + name)
        assert {k: v for k, v in rec.items() if k != "input"} == \
            {k: v for k, v in local[name].items() if k != "input"}
    # Again: the index's sha256 finds every record in the cache, nothing is downloaded.
    res = ScanResult()
    list(scan(refs, options=opts, workers=1, cache=Cache(cache.root, opts), result=res))
    assert (res.cached, res.read) == (4, 0)


def test_index_bad_hash_is_an_error_record(index: tuple[str, list[str]]) -> None:
    url, _ = index
    (ref,) = [r for r in from_index(url, Filters(projects=("beta",)))]
    bad = WheelRef(ref.input, ref.filename, "0" * 64, None)
    res = ScanResult()
    (line,) = scan([bad], workers=1, result=res)
    obj = json.loads(line)
    assert obj["inventory"] is None and "does not match the expected" in obj["error"]
    assert res.unreadable == [ref.input]


def test_cli_index(index: tuple[str, list[str]], capsys: pytest.CaptureFixture[str]) -> None:
    url, _ = index
    rc = main(["scan", "--index", url, "--project", "gamma", "--project", "alpha",
               "--platform", "manylinux*", "--no-cache"])
    got = sorted(json.loads(x)["wheel"]["filename"] for x in capsys.readouterr().out.splitlines())
    assert rc == 2  # gamma has no page: an error, the rest is still scanned
    assert got == ["alpha-1.0-cp311-cp311-manylinux_2_28_x86_64.whl",
                   "alpha-2.0-cp311-cp311-manylinux_2_28_x86_64.whl"]


# -- the summary -------------------------------------------------------------------------
def test_summary_matrix(tmp_path: Path) -> None:
    wheels = corpus(tmp_path)
    recs = [json.loads(x) for x in scan([WheelRef(w, os.path.basename(w)) for w in wheels],
                                        workers=1)]
    s = summarize(recs)
    assert s["wheels"] == 5 and s["with_device_code"] == 4
    rows = {w["filename"]: w for w in s["matrix"]}
    a2 = rows["alpha-2.0-cp311-cp311-manylinux_2_28_x86_64.whl"]["gpus"]
    # sm80.so: sm_80 SASS + compute_80 PTX
    assert a2["sm_80"] == "runs" and a2["sm_86"] == "runs" and a2["sm_75"] == "does not run"
    a1 = rows["alpha-1.0-cp311-cp311-manylinux_2_28_x86_64.whl"]["gpus"]
    assert a1["sm_90"] == "runs"  # sm90a.so has its cubin, sm80.so compute_80 PTX
    assert rows["beta-0.1-py3-none-manylinux_2_28_x86_64.whl"]["gpus"] is None
    assert a2["sm_87"] == "wrong platform"  # Orin: no x86_64 machine carries it
    gpu = {g["arch"]: g for g in s["gpus"]}
    # sm90a.so is a module for Hopper only: on 8.0 it is for other GPUs, not a failure
    assert a1["sm_80"] == "runs"
    # gamma: sm100f.so is for Blackwell, ptx120.so's compute_120 needs CC 12.0
    gamma = rows["gamma-3.1-py3-none-manylinux_2_28_x86_64.whl"]["gpus"]
    assert gamma["sm_80"] == "does not run" and gamma["sm_120"] == "runs"
    assert gpu["sm_80"]["runs"] == 3 and gpu["sm_80"]["does not run"] == 1
    assert summarize(list(reversed(recs))) == s  # order of records does not matter
    html = render(s, "html")
    assert html.startswith("<!DOCTYPE html>") and "<script" not in html
    assert "http" not in html.split("<body>", 1)[1]  # self-contained
    assert "alpha-2.0-cp311-cp311-win_amd64.whl" in html
    assert json.loads(render(s, "json")) == json.loads(json.dumps(s))
    assert "per project" in render(s, "text")


# -- Dask: the same records, byte for byte -----------------------------------------------
def test_dask_local_cluster_equals_local_run(tmp_path: Path) -> None:
    _absent.extra("dask", "distributed")
    wheels = corpus(tmp_path / "w")
    refs = [WheelRef(w, os.path.basename(w)) for w in wheels]
    local = sorted(scan(refs, workers=1))
    dask = sorted(scan(refs, engine="dask", dask_workers=2))
    assert dask == local


def test_results_stream_as_targets_complete(tmp_path: Path) -> None:
    wheels = corpus(tmp_path)
    seen: list[str] = []
    it = iter_inspect(wheels, workers=1, progress=lambda p, d, t: seen.append(p))
    first = next(it)
    assert first[0] == 0 and seen == [wheels[0]]  # the others are not read yet
    assert sorted([first[0], *(i for i, _ in it)]) == list(range(5))


def test_a_dying_worker_costs_only_its_wheels_record(
    tmp_path: Path, every_member_an_item: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    wheels = corpus(tmp_path)
    parent = os.getpid()
    real = sources_mod.read_member

    def dies(wf: object, name: str, *a: object, **k: object) -> object:
        if os.getpid() != parent and "gamma" in str(getattr(wf, "path", "")):
            os._exit(3)  # as the OOM killer would end it
        return real(wf, name, *a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(sources_mod, "read_member", dies)
    got = records(scan([WheelRef(w, os.path.basename(w)) for w in wheels], workers=2))
    assert len(got) == 5
    gamma = got["gamma-3.1-py3-none-manylinux_2_28_x86_64.whl"]
    assert [p["message"] for p in gamma["inventory"]["problems"]] == [
        "a worker process died (out of memory?)"]
    alpha = got["alpha-1.0-cp311-cp311-manylinux_2_28_x86_64.whl"]
    assert alpha["inventory"]["problems"] == [] and alpha["check"] is not None
