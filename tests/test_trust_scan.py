"""Trust boundaries of `cuwheel scan` and `check --index` (docs/scan.md): what a remote
index can make cuwheel read (only http(s) on its own or allowed hosts, within request,
size, link and time budgets), and what damaged record and cache files cost (the damaged
lines, never the valid records).  Every hostile page, record and cache file is built here;
a slow server is bounded by the code's own time budget, asserted by its error."""

from __future__ import annotations

import io
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import wheelfactory
from cuwheel._remote import IndexPolicy
from cuwheel.checks.index import read_projects
from cuwheel.cli import main
from cuwheel.errors import InputError
from cuwheel.scan import RecordOptions, scan
from cuwheel.scan.cache import Cache
from cuwheel.scan.inputs import Filters, WheelRef, from_index
from cuwheel.scan.record import RECORD_VERSION, read_record_file

BIN = Path(__file__).parent / "data" / "bin"
WHEEL = "alpha-1.0-py3-none-manylinux_2_28_x86_64.whl"


@dataclass
class Site:
    """Pages by path; a page may be a function writing its own response (slow, redirecting)."""

    pages: dict[str, bytes | Callable[[BaseHTTPRequestHandler], None]] = field(
        default_factory=dict)
    asked: list[str] = field(default_factory=list)
    url: str = ""


@pytest.fixture
def site() -> Iterator[Site]:
    s = Site()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a: object) -> None:
            pass

        def do_GET(self) -> None:
            s.asked.append(self.path)
            page = s.pages.get(self.path)
            if page is None:
                self.send_error(404)
                return
            if callable(page):
                page(self)
                return
            ctype = "application/vnd.pypi.simple.v1+json" if page[:1] == b"{" else "text/html"
            self.send_response(200)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    s.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield s
    finally:
        server.shutdown()
        server.server_close()


def _files_page(*links: tuple[str, str]) -> bytes:
    return json.dumps({"meta": {"api-version": "1.0"}, "name": "alpha", "files": [
        {"filename": fn, "url": url, "hashes": {}} for fn, url in links]}).encode()


# ------------------------------------------------------------------ remote pages


def test_file_urls_on_a_page_are_never_read(site: Site, tmp_path: Path) -> None:
    site.pages["/simple/alpha/"] = _files_page(
        (WHEEL, "file:///dev/zero"), ("alpha-1.1-py3-none-any.whl", "file:///etc/passwd"),
        ("alpha-1.2-py3-none-any.whl", "ftp://127.0.0.1/x.whl"))
    problems: list[str] = []
    refs = from_index(f"{site.url}/simple/", Filters(projects=("alpha",)), problems=problems)
    assert refs == []
    assert len(problems) == 3 and all("refused" in p for p in problems)
    assert any("only http and https" in p for p in problems)
    # the CLI: one line per refusal, exit 2, and no record of a local file
    out = tmp_path / "r.jsonl"
    rc = main(["scan", "--index", f"{site.url}/simple/", "--project", "alpha", "-o",
               str(out), "--no-cache"])
    assert rc == 2 and out.read_text() == ""


def test_other_hosts_need_allow_host(site: Site) -> None:
    other = "http://localhost:1/alpha-1.0-py3-none-any.whl"
    site.pages["/simple/alpha/"] = _files_page(("alpha-1.0-py3-none-any.whl", other))
    problems: list[str] = []
    assert from_index(f"{site.url}/simple/", Filters(projects=("alpha",)),
                      problems=problems) == []
    assert "neither the index's nor allowed" in problems[0]
    policy = IndexPolicy(f"{site.url}/simple/", allow_hosts=("localhost",))
    refs = from_index(f"{site.url}/simple/", Filters(projects=("alpha",)), policy=policy)
    assert [r.input for r in refs] == [other]
    # an https index never leads to plain http, even on its own host
    assert "plain http" in (IndexPolicy("https://pypi.org/simple/").refusal(
        "http://files.pythonhosted.org/x.whl") or "")
    assert IndexPolicy("https://pypi.org/simple/").refusal(
        "https://files.pythonhosted.org/x.whl") is None


def test_a_redirect_to_a_local_file_is_refused(site: Site) -> None:
    def redirect(h: BaseHTTPRequestHandler) -> None:
        h.send_response(302)
        h.send_header("Location", "file:///etc/passwd")
        h.end_headers()

    site.pages["/simple/alpha/"] = redirect
    problems: list[str] = []
    from_index(f"{site.url}/simple/", Filters(projects=("alpha",)), problems=problems)
    assert len(problems) == 1 and "refused: a redirect to a file: URL" in problems[0]
    assert "root:" not in problems[0]


@pytest.mark.parametrize(
    "body,why",
    [
        (b"{" + b'"files": ' + b"[" * 10_000 + b"]" * 10_000 + b"}", "nested more than"),
        (b'{"files": [{"filename": "a.whl", "url": "a.whl", "size": ' + b"9" * 50_000 + b"}]}",
         "digits"),
        (b'{"files": [' + b",".join([b'{"filename":"a.whl","url":"a.whl"}'] * 3000) + b"]}",
         "more than 1000 files"),
        (b"<a href='x.whl'>x.whl</a>" * 2000, "more than 1000 links"),
        (b"<html>" + b"x" * 20_000, "over 10000 bytes"),
    ],
    ids=["deep-json", "huge-number", "many-files", "many-links", "huge-page"],
)
def test_hostile_pages_are_one_line_errors(site: Site, body: bytes, why: str) -> None:
    site.pages["/simple/alpha/"] = body
    policy = IndexPolicy(f"{site.url}/simple/", max_links=1000, max_page=10_000
                         if why.startswith("over") else 32 << 20)  # fmt: skip
    with pytest.raises(InputError, match=why) as info:
        from_index(f"{site.url}/simple/", Filters(projects=("alpha",)), policy=policy)
    assert "\n" not in str(info.value)


def test_tag_soup_is_read_within_the_budgets(site: Site) -> None:
    # unclosed tags, stray comment openers, nesting a recursive reader would choke on
    soup = (b"<div>" * 20_000 + b"<a href='alpha-1.0-py3-none-any.whl'>" + b"<!-- <a " * 5000
            + b"<a href=alpha-2.0-py3-none-any.whl>alpha-2.0-py3-none-any.whl</a>"
            + b"<b>" * 20_000)
    site.pages["/simple/alpha/"] = soup
    refs = from_index(f"{site.url}/simple/", Filters(projects=("alpha",)))
    assert all(r.input.startswith(site.url) for r in refs)


def test_a_slow_server_is_stopped_by_the_time_budget(site: Site) -> None:
    stop = threading.Event()

    def trickle(h: BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "text/html")
        h.end_headers()
        while not stop.is_set():  # one byte at a time, forever
            try:
                h.wfile.write(b" ")
                h.wfile.flush()
            except OSError:
                return
            stop.wait(0.05)

    site.pages["/simple/alpha/"] = trickle
    policy = IndexPolicy(f"{site.url}/simple/", seconds=1.0)
    try:
        with pytest.raises(InputError, match="longer than its budget of 1 s"):
            from_index(f"{site.url}/simple/", Filters(projects=("alpha",)), policy=policy)
    finally:
        stop.set()


def test_the_request_budget_holds(site: Site) -> None:
    policy = IndexPolicy(f"{site.url}/simple/", max_requests=3)
    problems: list[str] = []
    from_index(f"{site.url}/simple/", Filters(projects=tuple(f"p{i}" for i in range(10))),
               problems=problems, policy=policy)
    assert len(site.asked) == 3
    assert sum("more than 3 index requests" in p for p in problems) == 7


def test_check_index_asks_a_bounded_number_of_pages(site: Site) -> None:
    requires = [f"nvidia-ghost-{i}>=1" for i in range(5000)]
    projects = read_projects(f"{site.url}/simple/", requires)
    # docs/scan.md: "at most 100 projects per wheel"; the first past them gets an error
    assert len(site.asked) == 100
    assert len(projects) == 101
    last = list(projects.values())[-1]
    assert last.error is not None and "more than 100" in last.error


def test_check_index_refuses_a_file_index() -> None:
    with pytest.raises(InputError, match="http"):  # an unusable index: exit 2
        read_projects("file:///etc/", ["passwd"])


def test_a_wheel_longer_than_the_index_declares_is_cut(site: Site, tmp_path: Path) -> None:
    site.pages["/files/" + WHEEL] = b"PK" + bytes(1 << 20)
    ref = WheelRef(f"{site.url}/files/{WHEEL}", WHEEL, None, 100)
    (line,) = list(scan([ref], workers=1, download_dir=str(tmp_path)))
    assert "longer than the 100 bytes declared by the index" in json.loads(line)["error"]


# ------------------------------------------------------------------ records and the cache


def _wheel(d: Path, name: str = "alpha", version: str = "1.0") -> str:
    d.mkdir(parents=True, exist_ok=True)
    return wheelfactory.make_wheel(d, {"pkg/sm80.so": (BIN / "sm80.so").read_bytes()},
                                   name=name, version=version,
                                   tag="py3-none-manylinux_2_28_x86_64")  # fmt: skip


def test_resume_keeps_every_valid_record_after_a_damaged_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    w = tmp_path / "w"
    wheels = [_wheel(w, "alpha", v) for v in ("1.0", "2.0", "3.0", "4.0")]
    out = tmp_path / "r.jsonl"
    assert main(["scan", str(w), "--no-cache", "-o", str(out), "--workers", "1",
                 "--exit-zero"]) == 0
    lines = out.read_text().splitlines()
    deep = "[" * 100_000 + "]" * 100_000
    damaged = [lines[0], '{"record_version": 1, "input": "x", "wheel": ' + "1" * 9000 + "}",
               lines[1], "garbage \x1b[2J", deep, lines[2], lines[3][:30]]
    out.write_text("\n".join(damaged))
    capsys.readouterr()
    assert main(["scan", str(w), "--no-cache", "-o", str(out), "--resume",
                 "--workers", "1", "--exit-zero"]) == 0  # fmt: skip
    err = capsys.readouterr().err
    assert "4 damaged line(s) skipped, 3 valid records kept" in err  # one unfinished
    assert "\x1b" not in err
    kept = out.read_text().splitlines()
    # the three valid records are still there, the fourth wheel was scanned again
    assert [x for x in kept if x in lines] == [lines[0], lines[1], lines[2], lines[3]]
    assert len([ln for ln in wheels if ln]) == 4
    # the summary skips the damaged lines too, and says so
    capsys.readouterr()
    assert main(["scan", "--records", str(out), "--summary", "json", "--no-cache"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["wheels"] == 4
    assert captured.err.count("skipped") == 3


def test_record_reader_skips_and_reports(tmp_path: Path) -> None:
    good = json.dumps({"record_version": RECORD_VERSION, "input": "a", "wheel": {}})
    data = [f"{good}\n".encode(), b"\xff\xfe\n", b"[1]\n", f"{good}\n".encode(), b"{"]
    damaged: list[object] = []
    recs, whole = read_record_file(data, "f", damaged)  # type: ignore[arg-type]
    assert len(recs) == 2 and whole == sum(len(x) for x in data[:-1])
    assert [str(d).split(":")[1] for d in damaged] == ["2", "3", "5"]


def test_the_cache_serves_only_records_of_their_key(tmp_path: Path) -> None:
    w = tmp_path / "w"
    a, b = _wheel(w, "alpha", "1.0"), _wheel(w, "beta", "1.0")
    cache = Cache(str(tmp_path / "c"), RecordOptions())
    first = {json.loads(x)["wheel"]["name"]: x for x in scan(
        [WheelRef(a, os.path.basename(a)), WheelRef(b, os.path.basename(b))],
        workers=1, cache=cache)}  # fmt: skip
    sha = {n: json.loads(x)["wheel"]["sha256"] for n, x in first.items()}
    rec = {n: cache._record_path(s) for n, s in sha.items()}
    # beta's record filed under alpha's sha256 (a poisoned or misfiled cache)
    Path(rec["alpha"]).write_text(Path(rec["beta"]).read_text())
    # beta's record cut short (a full disk)
    Path(rec["beta"]).write_text(Path(rec["beta"]).read_text()[:50])
    cache2 = Cache(str(tmp_path / "c"), RecordOptions())
    again = {json.loads(x)["wheel"]["name"]: x for x in scan(
        [WheelRef(a, os.path.basename(a)), WheelRef(b, os.path.basename(b))],
        workers=1, cache=cache2)}  # fmt: skip
    assert again == first
    assert cache2.hits == 0 and cache2.evicted == 2
    # and a third run is served from the cache again, rewritten by the second
    cache3 = Cache(str(tmp_path / "c"), RecordOptions())
    assert len(list(scan([WheelRef(a, os.path.basename(a))], workers=1, cache=cache3))) == 1
    assert cache3.hits == 1


def test_undecodable_file_names_reach_records_and_the_cache(tmp_path: Path) -> None:
    w = tmp_path / "w"
    odd = os.fsdecode(os.path.join(os.fsencode(w), b"\xff\x1bdir"))  # not UTF-8
    _wheel(Path(odd))
    out = tmp_path / "r.jsonl"
    rc = main(["scan", str(w), "-o", str(out), "--cache", str(tmp_path / "c"),
               "--workers", "1", "--exit-zero"])  # fmt: skip
    assert rc == 0
    (line,) = out.read_text(encoding="utf-8").splitlines()
    assert "\\xff" in json.loads(line)["input"]


def test_control_characters_never_reach_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc = main(["scan", str(tmp_path / "no\x1b[31msuch\x07.whl"), "--no-cache"])
    err = capsys.readouterr().err
    assert rc == 2 and "\x1b" not in err and "\x07" not in err and "\\x1b[31m" in err


def test_no_budget_assertion_on_wall_clock() -> None:
    # the budgets are the code's: a policy with no time left refuses before any request
    policy = IndexPolicy("http://127.0.0.1:9/simple/", seconds=0.0)
    time.sleep(0.001)
    with pytest.raises(InputError, match="budget"):
        policy.get("http://127.0.0.1:9/simple/x/", "text/html", "t")


def test_the_text_summary_escapes_names_from_records(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    w = tmp_path / "w"
    _wheel(w)
    out = tmp_path / "r.jsonl"
    assert main(["scan", str(w), "--no-cache", "-o", str(out), "--workers", "1",
                 "--exit-zero"]) == 0
    rec = json.loads(out.read_text())
    rec["wheel"]["name"] = "evil\x1b]0;pwned\x07\x1b[2J"
    rec["wheel"]["version"] = "1.0\u202e"
    rec["input"] = "x\x1b[31m.whl"
    out.write_text(json.dumps(rec) + "\n")
    capsys.readouterr()
    assert main(["scan", "--records", str(out), "--summary", "text", "--no-cache"]) == 0
    text = capsys.readouterr().out
    assert "evil\\x1b]0;pwned\\x07\\x1b[2J" in text
    assert not any(c in text for c in "\x1b\x07\u202e")


def test_project_names_from_the_root_page_stay_under_the_index(site: Site) -> None:
    site.pages["/simple/"] = (b"<a href='x/'>x/../../../admin?y#z</a>"
                              b"<a href='x2/'>x2/..%2F..%2Fadmin</a>")
    problems: list[str] = []
    from_index(f"{site.url}/simple/", Filters(projects=("x*",)), problems=problems)
    assert len(site.asked) == 3
    pages = site.asked[1:]  # after the root: one path segment under /simple/ each
    assert all(p.startswith("/simple/") and "/" not in p[8:-1] for p in pages), pages


class _CountingFile(io.BytesIO):
    """A file that remembers the longest piece a reader asked for in one call."""

    longest = 0

    def readline(self, size: int | None = -1) -> bytes:  # type: ignore[override]
        line = super().readline(size)
        self.longest = max(self.longest, len(line))
        return line

    def __next__(self) -> bytes:  # iterating a file reads whole lines too
        line = super().__next__()
        self.longest = max(self.longest, len(line))
        return line


@pytest.mark.parametrize("last", [b"\n", b""])
def test_a_record_line_past_the_limit_is_read_past_in_pieces(
    monkeypatch: pytest.MonkeyPatch, last: bytes
) -> None:
    from cuwheel.scan import record

    monkeypatch.setattr(record, "MAX_RECORD", 100)
    good = json.dumps({"record_version": RECORD_VERSION, "input": "a", "wheel": {}}).encode()
    assert len(good) < 100
    long = b"x" * 1000 + last  # ten times the limit: never held whole
    f = _CountingFile(good + b"\n" + long + (good + b"\n" if last else b""))
    damaged: list[object] = []
    recs = list(record.RecordFile(f, "r.jsonl", damaged))
    assert f.longest <= 101
    if last:  # a long line, then a good one: both lines counted, the good one read
        assert len(recs) == 2 and "longer than 100 bytes" in str(damaged[0])
    else:  # the file ends inside the long line: an unfinished last line
        assert len(recs) == 1 and "unfinished" in str(damaged[0])


# -- issue 31: the second round's remainders (anchor flood, tag soup, slow-loris) --------


def test_a_slow_loris_page_is_stopped_by_its_own_page_budget(site: Site) -> None:
    stop = threading.Event()

    def trickle(h: BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "text/html")
        h.end_headers()
        while not stop.is_set():  # a byte every 50 ms: far under min_rate
            try:
                h.wfile.write(b" ")
                h.wfile.flush()
            except OSError:
                return
            stop.wait(0.05)

    site.pages["/simple/alpha/"] = trickle
    # the run's budget is ten minutes; the page's own (0.5 s plus a second per MiB) ends it
    policy = IndexPolicy(f"{site.url}/simple/", page_seconds=0.5)
    try:
        with pytest.raises(InputError, match="index page arrived too slowly"):
            from_index(f"{site.url}/simple/", Filters(projects=("alpha",)), policy=policy)
    finally:
        stop.set()


@pytest.mark.parametrize("soup", [
    "<a " * 2_000_000,  # 60 KB of this cost the HTML parser 32 s of CPU
    "<" * 4_000_000, "<a href='" + "x" * 10_000_000, "<!--" * 2_000_000, "<div " * 2_000_000,
])
def test_tag_soup_is_one_linear_pass(soup: str) -> None:
    from cuwheel.scan.inputs import _anchors

    t0 = time.process_time()  # CPU time, not the wall clock
    assert _anchors("u", soup, IndexPolicy("http://x/simple/")) == []
    assert time.process_time() - t0 < 5.0


def test_an_anchor_flood_stops_at_the_bound_and_holds_little() -> None:
    import tracemalloc

    from cuwheel.scan.inputs import _anchors

    flood = '<a href="x.whl">x.whl</a>\n' * 2_500_000  # a 64 MiB page of anchors
    policy = IndexPolicy("http://x/simple/")
    tracemalloc.start()
    try:
        with pytest.raises(InputError, match="more than 200000 links"):
            _anchors("u", flood, policy)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 128 << 20, peak  # the parser before held every anchor: 885 MB


@pytest.mark.parametrize("n,ok", [(200_000, True), (200_001, False)])
def test_links_per_page_at_and_past_the_bound(n: int, ok: bool) -> None:
    from cuwheel.scan.inputs import _anchors

    page = '<a href="x.whl">x.whl</a>' * n
    if ok:
        assert len(_anchors("u", page, IndexPolicy("http://x/simple/"))) == n
    else:
        with pytest.raises(InputError, match="more than 200000 links"):
            _anchors("u", page, IndexPolicy("http://x/simple/"))


def test_anchors_read_as_pep_503_writes_them() -> None:
    from cuwheel.scan.inputs import _anchors

    page = ('<!DOCTYPE html><html><body>\n<A HREF="../f/a-1.0.whl#sha256=ab" '
            "data-yanked='' data-requires-python=\"&gt;=3.9\">a-1.0.whl</A><br/>\n"
            "<a href=b-2.0.whl>b-2.0.whl</a></body></html>")
    links = _anchors("u", page, IndexPolicy("http://x/simple/"))
    assert [(h, t) for h, t, _ in links] == [("../f/a-1.0.whl#sha256=ab", "a-1.0.whl"),
                                             ("b-2.0.whl", "b-2.0.whl")]
    assert links[0][2]["data-yanked"] == "" and links[0][2]["data-requires-python"] == ">=3.9"
