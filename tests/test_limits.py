"""Every limit at its value and one past it.

The limits are stated here by hand from the documents that promise them (docs/inspect.md,
"Limits on hostile input"; the JSON loader's docstring; docs/compat.md for the device-link
stub), not read from the constants: a limit that moves or a comparison off by one fails
here.  Limits in the hundreds of MiB are exercised through the loader's explicit bound
where building the input would cost more than the 2-core CI machine should spend.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import cuwheel
from cuwheel._json import load_json
from cuwheel.errors import JsonError
from cuwheel.model.arch import Arch
from cuwheel.model.inventory import Binary, CodeKind, Compression, FatbinContainer, FatbinEntry
from cuwheel.rules.loading import link_stub_index

sys.path.insert(0, str(Path(__file__).parent))
from wheelfactory import make_wheel

# -- anomalies: at most 64 kept per binary, in sorted order, then a count of the rest
# (docs/inspect.md, "Anomalies").


def _anomalies(n: int) -> tuple[str, ...]:
    from cuwheel.read.bytes.tables import Anomalies

    notes = Anomalies()
    for i in reversed(range(n)):  # added out of order: the kept ones are the first sorted
        notes.add(f"anomaly {i:04d}")
        notes.add(f"anomaly {i:04d}")  # a repeat is one anomaly
    return notes.result()


def test_anomalies_at_the_limit() -> None:
    kept = _anomalies(64)
    assert kept == tuple(f"anomaly {i:04d}" for i in range(64))


def test_anomalies_past_the_limit() -> None:
    kept = _anomalies(65)
    assert kept[:64] == tuple(f"anomaly {i:04d}" for i in range(64))
    assert kept[64:] == ("(and 2 more anomalies)",)  # the 65th, added twice
    assert len(_anomalies(200)) == 65


# -- WHEEL Tag lines: at most 10,000 read, each cut to 4096 characters (docs/inspect.md)


def _tags(tmp_path: Path, tags: tuple[str, ...]) -> tuple[str, ...]:
    whl = make_wheel(tmp_path, {"pkg/__init__.py": b""}, wheel_tags=tags)
    (source,) = cuwheel.inspect([whl]).sources
    assert source.wheel is not None
    assert source.wheel.wheel_file_tags is not None
    return source.wheel.wheel_file_tags


@pytest.mark.parametrize(("n", "kept"), [(10_000, 10_000), (10_001, 10_000)])
def test_wheel_tag_lines(tmp_path: Path, n: int, kept: int) -> None:
    tags = tuple(f"cp3{i}-none-any" for i in range(n))
    assert _tags(tmp_path, tags) == tags[:kept]


@pytest.mark.parametrize(("length", "kept"), [(4096, 4096), (4097, 4096)])
def test_wheel_tag_length(tmp_path: Path, length: int, kept: int) -> None:
    tag = "py3-none-" + "x" * (length - 9)
    assert _tags(tmp_path, (tag,)) == (tag[:kept],)


# -- the JSON loader: nesting 64 deep, numbers of 40 characters, documents of 64 MiB


@pytest.mark.parametrize(("depth", "ok"), [(64, True), (65, False)])
def test_json_depth(depth: int, ok: bool) -> None:
    doc = "[" * depth + "]" * depth
    if ok:
        assert load_json(doc) is not None
    else:
        with pytest.raises(JsonError, match="nested more than 64 deep"):
            load_json(doc)


@pytest.mark.parametrize("number", ["1" * 40, "0." + "1" * 38])
def test_json_number_at_the_limit(number: str) -> None:
    assert load_json(f"[{number}]") == [int(number) if "." not in number else float(number)]


@pytest.mark.parametrize("number", ["1" * 41, "0." + "1" * 39])
def test_json_number_past_the_limit(number: str) -> None:
    with pytest.raises(JsonError, match="at most 40"):
        load_json(f"[{number}]")


def test_json_size() -> None:
    limit = 64 << 20
    doc = b"[" + b" " * (limit - 2) + b"]"
    assert load_json(doc) == []
    with pytest.raises(JsonError, match=f"larger than {limit} bytes"):
        load_json(doc + b" ")


# -- nvcc's device-link stub: the first of several containers holding only cubins of at
# most 4 KiB, where no wrapper record says which container the link step wrote
# (docs/compat.md, "Containers that do not count")


def _cubin(size: int, arch: int) -> FatbinEntry:
    return FatbinEntry(
        offset=0x50, kind=CodeKind.SASS, arch=Arch(arch), code_version=(1, 8), flags=0x11,
        header_size=64, stored_size=size, compression=Compression.NONE, compressed_size=0,
        uncompressed_size=size, host="linux", debug=False, relocatable=False,
    )  # fmt: skip


def _linked(stub_size: int) -> Binary:
    def box(offset: int, *entries: FatbinEntry) -> FatbinContainer:
        return FatbinContainer(offset, 16 + sum(e.stored_size for e in entries),
                               ".nv_fatbin", True, False, entries)

    return Binary(path="libk.so", format="elf", size=1 << 20, file_type="shared",
                  machine="x86_64", containers=(box(0x100, _cubin(stub_size, 75)),
                                                box(0x8000, _cubin(50_000, 80))))


@pytest.mark.parametrize(("size", "stub"), [(4096, 0), (4097, None)])
def test_device_link_stub_size(size: int, stub: int | None) -> None:
    assert link_stub_index(_linked(size)) == stub


# -- documents read from outside: manifests 16 MiB and lockfiles 4 MiB (docs/toolkit.md,
# "Inputs are bounded documents"); a `check --index` page 32 MiB (docs/scan.md)


def _padded(doc: bytes, size: int) -> bytes:
    return doc[:-1] + b" " * (size - len(doc)) + doc[-1:]


@pytest.mark.parametrize(("size", "refused"), [(16 << 20, False), ((16 << 20) + 1, True)])
def test_manifest_size(size: int, refused: bool) -> None:
    from cuwheel.errors import ToolkitError
    from cuwheel.toolkit.manifest import parse_manifest

    data = _padded(b'{"release_label": "13.0.2"}', size)
    with pytest.raises(ToolkitError) as exc:  # no components: no manifest either way
        parse_manifest(data, "m.json")
    assert (f"larger than {16 << 20} bytes" in str(exc.value)) == refused, exc.value


@pytest.mark.parametrize(("size", "refused"), [(4 << 20, False), ((4 << 20) + 1, True)])
def test_lockfile_size(tmp_path: Path, size: int, refused: bool) -> None:
    from cuwheel.errors import ToolkitError
    from cuwheel.toolkit.lock import read_lock

    path = tmp_path / "cuwheel.lock"
    path.write_bytes(_padded(b"{}", size))
    with pytest.raises(ToolkitError) as exc:  # {} is no lockfile either way
        read_lock(path)
    assert (f"larger than {4 << 20} bytes" in str(exc.value)) == refused, exc.value


class _Pages:
    """An index that answers every project page with ``body`` (IndexPolicy's get)."""

    requests = 0
    max_requests = 100

    def __init__(self, body: bytes) -> None:
        self.body = body

    def get(self, url: str, accept: str, agent: str) -> tuple[str, bytes]:
        return url, self.body


@pytest.mark.parametrize(("size", "refused"), [(32 << 20, False), ((32 << 20) + 1, True)])
def test_index_page_size(size: int, refused: bool) -> None:
    from cuwheel.checks.index import read_projects
    from cuwheel.errors import IndexUnusable

    body = _padded(b'{"files": [{"filename": "x-1.0-py3-none-any.whl", "size": 5}]}', size)
    if refused:  # an index page past the bound makes the index unusable (exit 2)
        with pytest.raises(IndexUnusable, match=f"larger than {32 << 20} bytes"):
            read_projects("https://index.invalid/simple", ["x"],
                          policy=_Pages(body))  # type: ignore[arg-type]
        return
    (project,) = read_projects("https://index.invalid/simple", ["x"],
                               policy=_Pages(body)).values()  # type: ignore[arg-type]
    assert project.error is None and project.files == (("x-1.0-py3-none-any.whl", 5),)


# -- a wheel's WHEEL file: read when at most 1 MiB (read/sources/source.py, "a WHEEL file is a few
# hundred bytes")


@pytest.mark.parametrize(("size", "read"), [(1 << 20, True), ((1 << 20) + 1, False)])
def test_wheel_file_size(tmp_path: Path, size: int, read: bool) -> None:
    head = b"Wheel-Version: 1.0\nTag: py3-none-any\n"
    whl = make_wheel(tmp_path, {"pkg/__init__.py": b"",
                                "cwfixture-1.0.dist-info/WHEEL": head + b"#" * (size - len(head))},
                     wheel_file=False)
    (source,) = cuwheel.inspect([whl]).sources
    assert source.wheel is not None
    assert source.wheel.wheel_file_tags == (("py3-none-any",) if read else None)


# -- ELF dynamic section: 10,000 DT_NEEDED entries and 10,000 RPATH / RUNPATH entries read,
# a DT_RPATH / DT_RUNPATH string of 64 KiB (docs/inspect.md, "Limits on hostile input")


def _dynamic_elf(entries: list[tuple[int, int]], dynstr: bytes) -> bytes:
    import binbuild
    from binbuild import Elf, Sec

    strtab_at = 0x1000  # where elf64 lays out the first section's data
    dyn = binbuild.dynamic([(5, strtab_at), (10, len(dynstr)), *entries])
    return binbuild.elf64(Elf([Sec(".dynstr", dynstr, sh_type=3, align=0x1000),
                               Sec(".dynamic", dyn, sh_type=6, flags=3)]))


def _read(tmp_path: Path, data: bytes) -> Binary:
    path = tmp_path / "lib.so"
    path.write_bytes(data)
    inv = cuwheel.inspect([path])
    assert inv.problems == ()
    (b,) = inv.binaries
    return b


@pytest.mark.parametrize(("n", "over"), [(10_000, False), (10_001, True)])
def test_needed_entries(tmp_path: Path, n: int, over: bool) -> None:
    # DT_NEEDED (1) entries naming libN.so, N in 0..n-1
    names = [f"lib{i}.so".encode() for i in range(n)]
    offsets, dynstr = [], b"\0"
    for name in names:
        offsets.append(len(dynstr))
        dynstr += name + b"\0"
    b = _read(tmp_path, _dynamic_elf([(1, o) for o in offsets], dynstr))
    assert len(b.needed) == 10_000 and b.needed[:2] == ("lib0.so", "lib1.so")
    assert any("more than 10000 DT_NEEDED entries" in a for a in b.anomalies) == over


@pytest.mark.parametrize(("n", "over"), [(10_000, False), (10_001, True)])
def test_run_path_entries(tmp_path: Path, n: int, over: bool) -> None:
    # one DT_RUNPATH (29) string of n one-letter entries (under the 64 KiB string limit);
    # a string that would pass the limit is not read at all ("the rest are not read")
    value = ":".join("x" for _ in range(n)).encode()
    b = _read(tmp_path, _dynamic_elf([(29, 1)], b"\0" + value + b"\0"))
    assert b.runpath == (() if over else ("x",) * 10_000)
    assert any("more than 10000 RPATH / RUNPATH entries" in a for a in b.anomalies) == over


@pytest.mark.parametrize(("length", "cut"), [(64 << 10, False), ((64 << 10) + 1, True)])
def test_run_path_string_length(tmp_path: Path, length: int, cut: bool) -> None:
    value = b"/" + b"x" * (length - 1)
    b = _read(tmp_path, _dynamic_elf([(29, 1)], b"\0" + value + b"\0"))
    (entry,) = b.runpath
    assert (entry == value.decode()) == (not cut)
    assert bool(b.anomalies) == cut, b.anomalies
