"""Structure fuzzing of every document cuwheel reads across a trust boundary: redist
manifests, lockfiles, index pages (PEP 691 JSON and PEP 503 HTML), scan records and cache
entries.  Documents are generated with the real field names and wrong types, wrong
nesting and hostile values, or are a real document cut and mutated byte by byte; the only
exceptions allowed are each reader's own one-line error."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cuwheel._json import load_json
from cuwheel._remote import IndexPolicy
from cuwheel.errors import InputError, JsonError, ToolkitError
from cuwheel.scan.cache import Cache
from cuwheel.scan.inputs import _project_files, _root_projects
from cuwheel.scan.record import RECORD_VERSION, RecordOptions, parse_record, read_record_file
from cuwheel.toolkit.lock import parse_lock, read_lock
from cuwheel.toolkit.manifest import parse_manifest

REDIST = Path(__file__).parent / "data" / "redist" / "redistrib_13.0.2.json"
FIELDS = ["relative_path", "sha256", "size", "md5", "version", "name", "release_label",
          "files", "filename", "url", "hashes", "yanked", "projects", "components",
          "cuwheel_toolkit_lock", "kind", "top", "input", "wheel", "record_version",
          "linux-x86_64", "cuda_nvcc", "train", "source", "os", "platform", "cuda"]
# A few dozen documents per reader in the suite; the campaign ran with
# CUWHEEL_TRUST_FUZZ=3000 (docs/scan.md, docs/toolkit.md: trust boundaries).
SETTINGS = settings(max_examples=int(os.environ.get("CUWHEEL_TRUST_FUZZ", "40")),
                    deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(1 << 70), max_value=1 << 70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(["", "..", "../../x.tar.xz", "%2e%2e/a.tar.xz", "a/b.tar.xz", "0" * 64,
                     "file:///etc/passwd", "javascript:x", "a.whl", "\x1b[2J", "\udcff",
                     "13.0.2", "1", "redist", "linux", "tar.xz", "wheel"]),
    st.text(max_size=20),
)
DOCS = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=5),
        st.dictionaries(st.one_of(st.sampled_from(FIELDS), st.text(max_size=8)), inner,
                        max_size=6),
    ),
    max_leaves=20,
)


def _text(doc: Any) -> str:
    return json.dumps(doc, ensure_ascii=False)


def _mutants() -> st.SearchStrategy[bytes]:
    real = REDIST.read_bytes()

    @st.composite
    def mutate(draw: st.DrawFn) -> bytes:
        data = bytearray(real[: draw(st.integers(0, len(real)))])
        for _ in range(draw(st.integers(0, 8))):
            if not data:
                break
            at = draw(st.integers(0, len(data) - 1))
            data[at] = draw(st.sampled_from(b'{}[]",:0\\9e-\x00\xff'))
        return bytes(data)

    return mutate()


# ------------------------------------------------------------------ manifests and locks


@SETTINGS
@given(DOCS)
def test_manifests_fail_only_with_toolkit_errors(doc: Any) -> None:
    try:
        parse_manifest(_text(doc).encode("utf-8", "surrogatepass"), "m.json")
    except ToolkitError as exc:
        assert "\n" not in str(exc)


@SETTINGS
@given(_mutants())
def test_mutated_real_manifests_fail_only_with_toolkit_errors(data: bytes) -> None:
    try:
        m = parse_manifest(data, "m.json")
    except ToolkitError as exc:
        assert "\n" not in str(exc)
        return
    for c in m.components:  # whatever parsed: paths stay plain relative ones
        for _, a in c.archives:
            assert ".." not in a.relative_path.split("/") and "%" not in a.relative_path


@SETTINGS
@given(DOCS)
def test_locks_fail_only_with_toolkit_errors(doc: Any) -> None:
    try:
        parse_lock(doc, "l.lock")
    except ToolkitError as exc:
        assert "\n" not in str(exc)
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "l.lock"
        path.write_bytes(_text(doc).encode("utf-8", "surrogatepass"))
        try:
            read_lock(path)
        except ToolkitError as exc:
            assert "\n" not in str(exc)


# ------------------------------------------------------------------ index pages


POLICY = IndexPolicy("http://127.0.0.1/simple/", max_links=1000)


@SETTINGS
@given(DOCS)
def test_json_index_pages_fail_only_with_input_errors(doc: Any) -> None:
    text = _text(doc)
    for reader in (_project_files, _root_projects):
        try:
            out = reader("http://127.0.0.1/simple/p/", "application/vnd.pypi.simple.v1+json",
                         text, POLICY)
        except InputError as exc:
            assert "\n" not in str(exc)
            continue
        assert isinstance(out, list)


_HTML = st.lists(st.one_of(
    st.sampled_from(["<a href='x.whl'>", "</a>", "<a href=\"file:///etc/passwd\">",
                     "<a data-yanked>", "<!--", "-->", "<![CDATA[", "<script>", "</script>",
                     "<a href='../../../x.whl#sha256=00'>", "&#x0;", "&#99999999;", "<",
                     ">", "<a href=javascript:alert(1)>", "<div>", "a.whl"]),
    st.text(max_size=10)), max_size=60).map("".join)


@SETTINGS
@given(_HTML)
def test_html_index_pages_fail_only_with_input_errors(text: str) -> None:
    try:
        files = _project_files("http://127.0.0.1/simple/p/", "text/html", text, POLICY)
    except InputError:
        return
    for f in files:  # links are only ever collected, and the policy judges each one
        assert isinstance(f["url"], str) and isinstance(f["filename"], str)
        if f["url"].startswith(("file:", "javascript:")):
            assert POLICY.refusal(f["url"]) is not None


# ------------------------------------------------------------------ records and the cache


@SETTINGS
@given(st.lists(st.one_of(DOCS.map(_text), st.binary(max_size=40).map(
    lambda b: b.decode("latin-1"))), max_size=8))
def test_record_files_keep_every_valid_record(lines: list[str]) -> None:
    valid = {"record_version": RECORD_VERSION, "input": "w.whl", "wheel": {"sha256": None}}
    raw = [(ln.replace("\n", " ") + "\n").encode("utf-8", "surrogatepass") for ln in lines]
    raw.insert(len(raw) // 2, (json.dumps(valid) + "\n").encode())
    damaged: list[Any] = []
    records, whole = read_record_file(raw, "r.jsonl", damaged)
    assert valid in records
    assert len(records) + len(damaged) == sum(1 for r in raw if r.strip())
    assert whole == sum(len(r) for r in raw)
    for r in records:
        assert parse_record(json.dumps(r)) == r


@SETTINGS
@given(st.one_of(DOCS.map(_text), st.binary(max_size=200).map(lambda b: b.decode("latin-1"))))
def test_cache_entries_are_served_only_when_they_belong(text: str) -> None:
    sha = "ab" * 32
    with tempfile.TemporaryDirectory() as d:
        cache = Cache(d, RecordOptions())
        path = cache._record_path(sha)
        os.makedirs(os.path.dirname(path))
        with open(path, "w", encoding="utf-8", errors="surrogatepass") as f:
            f.write(text)
        got = cache.get(sha)
        if got is None:
            assert not os.path.exists(path)  # evicted
        else:
            obj = load_json(got)
            assert obj["wheel"]["sha256"] == sha and "input" not in obj


@SETTINGS
@given(st.text(max_size=200))
def test_the_json_loader_raises_only_its_own_error(text: str) -> None:
    try:
        load_json(text)
    except JsonError as exc:
        assert "\n" not in str(exc)


# ------------------------------------------------------------------ archives vs containment

_SEG = st.sampled_from(["a", "b", "..", ".", "", "c"])
_REL = st.lists(_SEG, min_size=1, max_size=4).map("/".join)
_MEMBER = st.tuples(st.sampled_from(["file", "dir", "sym", "hard"]), _REL,
                    st.one_of(_REL, st.sampled_from(["/etc/passwd", "/tmp", "C:/x"])))


@SETTINGS
@given(st.lists(_MEMBER, min_size=1, max_size=8))
def test_no_archive_writes_or_links_outside_its_tree(members: list[tuple[str, str, str]]) -> None:
    import tarfile

    from cuwheel.toolkit.extract import Tree, extract_redist
    from redistserver import tar_xz

    entries: list[tuple[tarfile.TarInfo, bytes | None]] = []
    for kind, name, target in members:
        info = tarfile.TarInfo(f"T/{name}")
        if kind == "file":
            entries.append((info, b"data"))
            continue
        info.type = {"dir": tarfile.DIRTYPE, "sym": tarfile.SYMTYPE,
                     "hard": tarfile.LNKTYPE}[kind]
        info.linkname = target if kind == "sym" else f"T/{target}"
        entries.append((info, None))
    with tempfile.TemporaryDirectory() as d:
        outer = Path(d)
        root = outer / "w" / "x" / "root"
        root.mkdir(parents=True)
        archive = outer / "a.tar.xz"
        archive.write_bytes(tar_xz(entries))
        before = sorted(str(p) for p in outer.rglob("*") if root not in p.parents)
        try:
            extract_redist(archive, "tar.xz", "T", Tree(root), "a", "c")
        except ToolkitError as exc:
            assert "\n" not in str(exc)
        after = sorted(str(p) for p in outer.rglob("*") if root not in p.parents)
        assert after == before  # nothing created outside the tree
        real_root = os.path.realpath(root)
        for dirpath, dirnames, filenames in os.walk(root):
            for n in dirnames + filenames:
                p = os.path.join(dirpath, n)
                if os.path.islink(p):
                    real = os.path.realpath(p)
                    assert real == real_root or real.startswith(real_root + os.sep), (p, real)
