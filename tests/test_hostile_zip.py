"""Hostile zips: every crafted wheel gives one-line problems naming the file and what is
wrong, never a traceback, in bounded memory and time.

Each hostile zip is built here, byte by byte (``build_zip``), or mutated from a small real
wheel (``wheelfactory.make_wheel``) at the zip-structure level (the fuzz test at the end).
"""

from __future__ import annotations

import bz2
import contextlib
import dataclasses
import lzma
import os
import signal
import struct
import subprocess
import sys
import tempfile
import time
import tracemalloc
import zipfile
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import _absent

sys.path.insert(0, str(Path(__file__).parent))
import cuwheel
import cuwheel.read.schedule as api_mod
import cuwheel.read.sources.source as sources_mod
import wheelfactory
from cuwheel.model.inventory import Inventory, Problem, Source
from cuwheel.read.sources.zipdir import Limits

BIN = Path(__file__).parent / "data" / "bin"
LIB = (BIN / "sm80.so").read_bytes()  # 2 containers
PTX = (BIN / "k89.ptx").read_bytes()
WHL = "hz-1.0-py3-none-any.whl"


# ----------------------------------------------------------------------------- helpers
@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Fail rather than spin: a limit on this process's CPU time (not the wall clock, which
    a loaded 2-core machine stretches)."""

    def boom(signum: int, frame: object) -> None:
        raise TimeoutError(f"did not finish within {seconds} s of CPU time")

    old = signal.signal(signal.SIGPROF, boom)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, old)


@dataclasses.dataclass
class Measured:
    inv: Inventory
    peak: int  # bytes, tracemalloc
    seconds: float  # CPU time of this process


def measure(*targets: str | os.PathLike[str], limit_s: float = 30, **kw: object) -> Measured:
    """inspect() with a time limit, tracing the peak of Python's (and bz2's, lzma's,
    isal's buffers') allocations."""
    tracemalloc.start()
    t0 = time.process_time()
    try:
        with time_limit(limit_s):
            inv = cuwheel.inspect(list(targets), workers=1, **kw)  # type: ignore[arg-type]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return Measured(inv, peak, time.process_time() - t0)


def assert_one_line(p: Problem, where: str) -> None:
    text = str(p)
    assert "\n" not in text and "\r" not in text, text
    assert "Traceback" not in text and p.message.strip() == p.message, text
    assert where in p.path, (where, text)


def problems(src: Source, where: str) -> list[Problem]:
    for p in src.problems:
        assert_one_line(p, where)
    return list(src.problems)


def members_read(src: Source) -> list[str]:
    return [b.path.rsplit("!", 1)[1] for b in src.binaries]


# A zip writer of our own: every field can lie.
LOCAL_FIELDS = [("sig", "I"), ("version", "H"), ("flags", "H"), ("method", "H"),
                ("time", "H"), ("date", "H"), ("crc", "I"), ("csize", "I"), ("usize", "I"),
                ("nlen", "H"), ("elen", "H")]
CENTRAL_FIELDS = [("sig", "I"), ("made", "H"), ("version", "H"), ("flags", "H"),
                  ("method", "H"), ("time", "H"), ("date", "H"), ("crc", "I"), ("csize", "I"),
                  ("usize", "I"), ("nlen", "H"), ("elen", "H"), ("clen", "H"), ("disk", "H"),
                  ("iattr", "H"), ("eattr", "I"), ("offset", "I")]
EOCD_FIELDS = [("sig", "I"), ("disk", "H"), ("cd_disk", "H"), ("n_disk", "H"),
               ("count", "H"), ("cd_size", "I"), ("cd_offset", "I"), ("clen", "H")]
EOCD64_FIELDS = [("sig", "I"), ("size", "Q"), ("made", "H"), ("needed", "H"), ("disk", "I"),
                 ("cd_disk", "I"), ("n_disk", "Q"), ("count", "Q"), ("cd_size", "Q"),
                 ("cd_offset", "Q")]
LOC64_FIELDS = [("sig", "I"), ("disk", "I"), ("offset", "Q"), ("disks", "I")]


def pack(fields: list[tuple[str, str]], **values: int) -> bytes:
    return struct.pack("<" + "".join(f for _, f in fields), *(values[n] for n, _ in fields))


def lzma_body(data: bytes, dict_size: int = 1 << 20, header_dict: int | None = None) -> bytes:
    """Zip's LZMA (APPNOTE 5.8.8): version, properties size 5, lc/lp/pb, dictionary size,
    then a raw LZMA1 stream with an end marker."""
    filt = {"id": lzma.FILTER_LZMA1, "dict_size": dict_size, "lc": 3, "lp": 0, "pb": 2}
    c = lzma.LZMACompressor(lzma.FORMAT_RAW, filters=[filt])
    props = struct.pack("<BBHBI", 9, 4, 5, (2 * 5 + 0) * 9 + 3, header_dict or dict_size)
    return props + c.compress(data) + c.flush()


def compress(method: int, data: bytes) -> bytes:
    if method == 8:
        c = zlib.compressobj(6, zlib.DEFLATED, -15)
        return c.compress(data) + c.flush()
    if method == 12:
        return bz2.compress(data)
    if method == 14:
        return lzma_body(data)
    return data


@dataclasses.dataclass
class Entry:
    name: bytes
    data: bytes = b""
    method: int = 8
    body: bytes | None = None  # the stored (compressed) bytes; default: data compressed
    crc: int | None = None
    usize: int | None = None
    flags: int = 0
    version: int = 20
    local_name: bytes | None = None
    local_extra: bytes = b""
    extra: bytes = b""  # central
    shares: int | None = None  # no local header: the central entry points at entry k's
    offset: int | None = None  # the central entry's local header offset, a lie


def build_zip(
    entries: list[Entry],
    *,
    zip64: bool = False,
    count: int | None = None,
    cd_offset: int | None = None,
    comment: bytes = b"",
    prefix: bytes = b"",
    eocd: dict[str, int] | None = None,
) -> bytes:
    out = bytearray(prefix)
    base = len(prefix)  # offsets are written from the start of the zip, as zipfile allows
    central = bytearray()
    offsets: list[int] = []
    for e in entries:
        body = e.body if e.body is not None else compress(e.method, e.data)
        crc = zlib.crc32(e.data) if e.crc is None else e.crc
        usize = len(e.data) if e.usize is None else e.usize
        csize = len(body)
        if e.shares is not None:
            off = offsets[e.shares]
        else:
            off = len(out) - base
            lname = e.name if e.local_name is None else e.local_name
            lextra = e.local_extra
            lsize, lcsize = usize, csize
            if zip64:
                lextra = struct.pack("<HHQQ", 1, 16, usize, csize) + lextra
                lsize = lcsize = 0xFFFFFFFF
            out += pack(LOCAL_FIELDS, sig=0x04034B50, version=e.version, flags=e.flags,
                        method=e.method, time=0, date=0x21, crc=crc, csize=lcsize,
                        usize=lsize, nlen=len(lname), elen=len(lextra))
            out += lname + lextra + body
        offsets.append(off)
        cextra = e.extra
        if e.offset is not None:
            off = e.offset
        c_u, c_c, c_o = usize, csize, off
        if zip64:
            cextra = struct.pack("<HHQQQ", 1, 24, usize, csize, off) + cextra
            c_u = c_c = c_o = 0xFFFFFFFF
        central += pack(CENTRAL_FIELDS, sig=0x02014B50, made=20, version=e.version,
                        flags=e.flags, method=e.method, time=0, date=0x21, crc=crc, csize=c_c,
                        usize=c_u, nlen=len(e.name), elen=len(cextra), clen=0, disk=0,
                        iattr=0, eattr=0o644 << 16, offset=c_o)
        central += e.name + cextra
    cd_at = len(out) - base
    out += central
    n = len(entries) if count is None else count
    cdo = cd_at if cd_offset is None else cd_offset
    values = dict(sig=0x06054B50, disk=0, cd_disk=0, n_disk=n, count=n, cd_size=len(central),
                  cd_offset=cdo, clen=len(comment))
    if zip64:
        rec_at = len(out) - base
        out += pack(EOCD64_FIELDS, sig=0x06064B50, size=44, made=45, needed=45, disk=0,
                    cd_disk=0, n_disk=n, count=n, cd_size=len(central), cd_offset=cdo)
        out += pack(LOC64_FIELDS, sig=0x07064B50, disk=0, offset=rec_at, disks=1)
        values.update(n_disk=0xFFFF, count=0xFFFF, cd_size=0xFFFFFFFF, cd_offset=0xFFFFFFFF)
    values.update(eocd or {})
    out += pack(EOCD_FIELDS, **values) + comment
    return bytes(out)


def write(tmp: Path, data: bytes, name: str = WHL) -> Path:
    p = tmp / name
    p.write_bytes(data)
    return p


def zeros_after(method: int, head: bytes, zeros: int) -> bytes:
    """``head`` then ``zeros`` zero bytes, compressed piecewise (no big buffer)."""
    block = bytes(16 << 20)
    if method == 8:
        c: zlib._Compress | bz2.BZ2Compressor | lzma.LZMACompressor = zlib.compressobj(
            1, zlib.DEFLATED, -15)
        parts = []
    elif method == 12:
        c = bz2.BZ2Compressor(9)
        parts = []
    else:
        filt = {"id": lzma.FILTER_LZMA1, "dict_size": 1 << 20, "lc": 3, "lp": 0, "pb": 2,
                "mode": lzma.MODE_FAST}
        c = lzma.LZMACompressor(lzma.FORMAT_RAW, filters=[filt])
        parts = [struct.pack("<BBHBI", 9, 4, 5, 93, 1 << 20)]
    parts.append(c.compress(head))
    left = zeros
    while left:
        k = min(left, len(block))
        parts.append(c.compress(block[:k]))
        left -= k
    parts.append(c.flush())
    return b"".join(parts)


# ------------------------------------------------ 1. bounded decompression, every method
BOMB_EXTRA = {8: 256 << 20, 12: 128 << 20, 14: 256 << 20}
METHOD_NAME = {8: "deflate", 12: "bzip2", 14: "lzma"}


@pytest.fixture(scope="module")
def bomb_bodies() -> dict[int, bytes]:
    """Per method: a stream that inflates to LIB and then many MiB of zeros."""
    return {m: zeros_after(m, LIB, extra) for m, extra in BOMB_EXTRA.items()}


@pytest.mark.parametrize("method", [8, 12, 14], ids=METHOD_NAME.get)
def test_member_inflating_past_its_declared_size(
    method: int, tmp_path: Path, bomb_bodies: dict[int, bytes]
) -> None:
    """Declares LIB's size, inflates hundreds of MiB more: refused as soon as it passes
    the declared size, in a few MiB (zipfile's bzip2 / lzma stream inflated a whole input
    chunk with no output limit first: a 1.6 KB bzip2 member reached 4 GB)."""
    whl = write(tmp_path, build_zip([
        Entry(b"lib/bomb.so", LIB, method=method, body=bomb_bodies[method]),
        Entry(b"lib/fine.so", LIB, method=method),
    ]))
    r = measure(whl)
    src = r.inv.sources[0]
    (p,) = problems(src, f"{WHL}!lib/bomb.so")
    assert p.message == f"inflates beyond its declared size of {len(LIB)} bytes"
    assert members_read(src) == ["lib/fine.so"]
    assert r.peak < (16 << 20), r.peak
    assert r.seconds < 10


@pytest.mark.parametrize("method", [0, 8, 12, 14], ids=["stored", "deflate", "bzip2", "lzma"])
def test_every_method_reads_the_same_binary(method: int, tmp_path: Path) -> None:
    whl = write(tmp_path, build_zip([Entry(b"lib/a.so", LIB, method=method),
                                     Entry(b"lib/b.ptx", PTX, method=method)]))
    src = measure(whl).inv.sources[0]
    assert src.problems == ()
    assert members_read(src) == ["lib/a.so", "lib/b.ptx"]
    want = cuwheel.inspect(BIN / "sm80.so").binaries[0]
    got = src.binaries[0]
    assert got.containers == want.containers


@pytest.mark.parametrize("method", [0, 8, 12, 14], ids=["stored", "deflate", "bzip2", "lzma"])
def test_wheelfactory_methods_are_read(method: int, tmp_path: Path) -> None:
    """Members as zipfile itself writes them (its lzma header, its bzip2 streams)."""
    whl = wheelfactory.make_wheel(tmp_path, {"lib/a.so": LIB}, compression=method)
    src = measure(whl).inv.sources[0]
    assert src.problems == () and members_read(src) == ["lib/a.so"]
    assert src.wheel is not None and src.wheel.name == "cwfixture"


@pytest.mark.parametrize("method", [8, 12, 14], ids=METHOD_NAME.get)
def test_short_and_corrupt_streams(method: int, tmp_path: Path) -> None:
    body = compress(method, LIB)
    flipped = body[:40] + bytes(b ^ 0x5A for b in body[40:200]) + body[200:]
    whl = write(tmp_path, build_zip([
        Entry(b"lib/short.so", LIB, method=method, usize=len(LIB) + 100),
        Entry(b"lib/flipped.so", LIB, method=method, body=flipped),
        Entry(b"lib/cut.so", LIB, method=method, body=body[: len(body) // 2]),
        Entry(b"lib/crc.so", LIB, method=method, crc=zlib.crc32(LIB) ^ 1),
        Entry(b"lib/fine.so", LIB, method=method),
    ]))
    src = measure(whl).inv.sources[0]
    probs = {p.path.rsplit("!", 1)[1]: p.message for p in problems(src, WHL)}
    assert set(probs) == {"lib/short.so", "lib/flipped.so", "lib/cut.so", "lib/crc.so"}
    assert probs["lib/short.so"] == f"inflates to {len(LIB)} bytes, declared {len(LIB) + 100}"
    assert probs["lib/crc.so"] == "CRC mismatch: the member is corrupt"
    assert members_read(src) == ["lib/fine.so"]


def test_lzma_properties_are_checked_and_the_dictionary_bounded(tmp_path: Path) -> None:
    # A header claiming a 4 GiB dictionary: only what the declared size needs is allocated.
    huge = lzma_body(LIB, header_dict=0xFFFFFFFF)
    bad_props = bytearray(lzma_body(LIB))
    bad_props[4] = 240  # lc/lp/pb byte past 9 * 5 * 5
    bad_size = bytearray(lzma_body(LIB))
    bad_size[2] = 7  # properties size 7
    whl = write(tmp_path, build_zip([
        Entry(b"lib/huge_dict.so", LIB, method=14, body=huge),
        Entry(b"lib/bad_props.so", LIB, method=14, body=bytes(bad_props)),
        Entry(b"lib/bad_size.so", LIB, method=14, body=bytes(bad_size)),
        Entry(b"lib/tiny.so", LIB, method=14, body=lzma_body(LIB)[:5]),
    ]))
    r = measure(whl)
    src = r.inv.sources[0]
    probs = {p.path.rsplit("!", 1)[1]: p.message for p in problems(src, WHL)}
    assert set(probs) == {"lib/bad_props.so", "lib/bad_size.so", "lib/tiny.so"}
    assert "bad LZMA properties" in probs["lib/bad_props.so"]
    assert members_read(src) == ["lib/huge_dict.so"]
    assert r.peak < (16 << 20)
    # the dictionary limit itself
    src = measure(whl, limits=Limits(max_lzma_dictionary=8192)).inv.sources[0]
    assert "LZMA dictionary of" in problems(src, WHL)[0].message


@pytest.mark.parametrize(("method", "flags", "message"), [
    (8, 1, "encrypted member"),
    (0, 1, "encrypted member"),
    (8, 0x40, "encrypted member"),
    (99, 1, "encrypted member"),  # AES (WinZip)
    (9, 0, "compression method 9 is not supported"),  # deflate64
    (93, 0, "compression method 93 is not supported"),  # zstd
    (1, 0, "compression method 1 is not supported"),  # shrink
    (8, 0x20, "compressed patched data is not supported"),
])
def test_encrypted_and_unknown_methods_are_problems(
    method: int, flags: int, message: str, tmp_path: Path
) -> None:
    whl = write(tmp_path, build_zip([
        Entry(b"lib/odd.so", LIB, method=method, flags=flags,
              body=compress(8 if method not in (0, 8) else method, LIB)),
        Entry(b"lib/fine.so", LIB),
    ]))
    src = measure(whl).inv.sources[0]
    (p,) = problems(src, f"{WHL}!lib/odd.so")
    assert p.message == message
    assert members_read(src) == ["lib/fine.so"]


@pytest.fixture
def opens() -> Iterator[Callable[[str], int]]:
    """How often a path is opened (os.open and open() raise the "open" audit event)."""
    counts: dict[str, int] = {}
    active = [True]

    def hook(event: str, args: tuple[object, ...]) -> None:
        if active[0] and event == "open" and isinstance(args[0], str):
            counts[args[0]] = counts.get(args[0], 0) + 1

    sys.addaudithook(hook)  # audit hooks cannot be removed: this one is switched off
    yield lambda p: counts.get(p, 0)
    active[0] = False


@pytest.mark.parametrize("method", [12, 14], ids=METHOD_NAME.get)
def test_many_members_one_open(method: int, tmp_path: Path,
                               opens: Callable[[str], int]) -> None:
    """Every bzip2 member used to re-open the zip: quadratic for many members."""
    entries = [Entry(f"lib/m{i:04d}.txt".encode(), b"x" * 100, method=method)
               for i in range(1500)] + [Entry(b"lib/a.so", LIB, method=method)]
    whl = write(tmp_path, build_zip(entries))
    before = opens(str(whl))
    r = measure(whl)
    assert r.inv.sources[0].problems == ()
    assert members_read(r.inv.sources[0]) == ["lib/a.so"]
    assert opens(str(whl)) - before == 2  # the magic sniff, and the wheel
    assert r.seconds < 10


def test_inflation_ratio_limit(tmp_path: Path, bomb_bodies: dict[int, bytes]) -> None:
    """An honest bzip2 member of 128 MiB of zeros in a few hundred bytes: refused unread
    (ratios past 2000:1 are not binaries, and would cost minutes for kilobytes)."""
    body = bomb_bodies[12]
    whl = write(tmp_path, build_zip([
        Entry(b"lib/zeros.so", b"", method=12, body=body, usize=len(LIB) + BOMB_EXTRA[12],
              crc=0),
        Entry(b"lib/fine.so", LIB),
    ]))
    r = measure(whl)
    src = r.inv.sources[0]
    (p,) = problems(src, f"{WHL}!lib/zeros.so")
    assert p.message.startswith(f"declares {len(LIB) + BOMB_EXTRA[12]} bytes from {len(body)}")
    assert members_read(src) == ["lib/fine.so"]
    assert r.seconds < 5


BOMB_CLI = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}))
from cuwheel.cli import main
sys.exit(main(["inspect", *sys.argv[1:]]))
"""


@_absent.skip_without("linux", not sys.platform.startswith("linux"), "RLIMIT_AS")
def test_bombs_under_an_address_space_limit(tmp_path: Path,
                                            bomb_bodies: dict[int, bytes]) -> None:
    """The CLI, with 1 GiB of address space, on a bomb of every method: exit status 2 and
    one line per problem, no MemoryError."""
    paths = []
    for method, body in bomb_bodies.items():
        paths.append(str(write(tmp_path, build_zip([
            Entry(b"lib/bomb.so", LIB, method=method, body=body)]),
            f"b{method}-1.0-py3-none-any.whl")))
    script = BOMB_CLI.format(limit=1 << 30)
    r = subprocess.run([sys.executable, "-c", script, *paths], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 3, r.stderr
    for line, path in zip(lines, paths, strict=True):
        assert line == (f"cuwheel: error: {path}!lib/bomb.so: inflates beyond its declared "
                        f"size of {len(LIB)} bytes")


# ----------------------------------------------------- 2. central-directory oddities
def _one(tmp: Path, entries: list[Entry], **kw: object) -> tuple[Source, Measured]:
    whl = write(tmp, build_zip([*entries, Entry(b"lib/fine.so", LIB)], **kw))  # type: ignore[arg-type]
    r = measure(whl)
    return r.inv.sources[0], r


@pytest.mark.parametrize(("name", "flags", "message"), [
    (b"", 0, "empty member name"),
    (b"\x00lib/a.so", 0, "control character in member name"),  # zipfile cut it to ""
    (b"lib/a.so\x00.txt", 0, "control character in member name"),
    (b"lib/\xff\xfe.so", 0x800, "member name is flagged UTF-8 but is not valid UTF-8"),
    ("lib/a\u202eos.so".encode(), 0x800, "invisible formatting character in member name"),
    ("lib/a\u2028.so".encode(), 0x800, "line separator in member name"),
    (b"lib/\x85.so", 0, None),  # cp437 without the flag: a printable character
])
def test_odd_member_names(name: bytes, flags: int, message: str | None, tmp_path: Path) -> None:
    src, _ = _one(tmp_path, [Entry(name, LIB, flags=flags)])
    probs = problems(src, WHL)
    if message is None:
        assert probs == [] and len(src.binaries) == 2
        return
    (p,) = probs
    assert p.message == message
    assert members_read(src) == ["lib/fine.so"]


@pytest.mark.parametrize("version", [64, 0xFF, 0xFFFF])
def test_unsupported_version_needed(version: int, tmp_path: Path) -> None:
    src, _ = _one(tmp_path, [Entry(b"lib/v.so", LIB, version=version)])
    (p,) = problems(src, f"{WHL}!lib/v.so")
    assert p.message.startswith("needs zip version") and "not supported" in p.message
    assert members_read(src) == ["lib/fine.so"]


def _whole_wheel_problem(tmp: Path, data: bytes) -> str:
    whl = write(tmp, data)
    r = measure(whl, limit_s=10)
    src = r.inv.sources[0]
    (p,) = problems(src, WHL)
    assert p.path == str(whl) and src.binaries == ()
    assert r.seconds < 5 and r.peak < (16 << 20)
    return p.message


def test_end_record_offset_making_the_shift_negative(tmp_path: Path) -> None:
    """zipfile computes concat = end record's position - cd size - cd offset; a cd offset
    past that made it negative (header offsets before the file: a traceback)."""
    msg = _whole_wheel_problem(tmp_path, build_zip([Entry(b"lib/a.so", LIB)],
                                                    cd_offset=1 << 31))
    assert msg.startswith("corrupt zip: central directory of")


def test_bytes_before_the_archive_are_allowed(tmp_path: Path) -> None:
    """Bytes before the zip (offsets not adjusted) shift every offset, as zipfile reads.
    (A wheel is recognised by its first bytes: these start with a local header's.)"""
    whl = write(tmp_path, build_zip([Entry(b"lib/a.so", LIB)],
                                    prefix=b"PK\x03\x04" + bytes(60)))
    src = measure(whl).inv.sources[0]
    assert src.problems == () and members_read(src) == ["lib/a.so"]


@pytest.mark.parametrize("offset", [1 << 63, (1 << 64) - 1, 1 << 32, 0xFFFFFFFE])
def test_zip64_local_header_offset_outside_the_file(offset: int, tmp_path: Path) -> None:
    entries = [Entry(b"lib/a.so", LIB)]
    data = bytearray(build_zip(entries, zip64=True))
    # the central entry's zip64 extra: usize, csize, offset (8 bytes each), after the name
    at = data.index(b"PK\x01\x02") + 46 + len(b"lib/a.so") + 4 + 16
    struct.pack_into("<Q", data, at, offset)
    msg = _whole_wheel_problem(tmp_path, bytes(data))
    assert "lies outside the archive's data" in msg


def test_zip64_wheel_is_read(tmp_path: Path) -> None:
    whl = write(tmp_path, build_zip([Entry(b"lib/a.so", LIB, method=m) for m in (8,)]
                                    + [Entry(b"lib/b.so", LIB, method=12)], zip64=True))
    src = measure(whl).inv.sources[0]
    assert src.problems == () and members_read(src) == ["lib/a.so", "lib/b.so"]
    assert zipfile.ZipFile(whl).testzip() is None  # a zip64 zipfile reads, too


@pytest.mark.parametrize(("mutate", "message"), [
    (lambda d: d[:-22] + pack(EOCD_FIELDS, sig=0x06054B50, disk=0, cd_disk=0, n_disk=1,
                              count=1, cd_size=0xFFFFFFF0, cd_offset=0, clen=0),
     "zip central directory of 4294967280 bytes is implausibly large"),
    (lambda d: d[:-22] + d[-22:-12] + struct.pack("<H", 3) + d[-10:],
     "corrupt zip: the end record counts 3 members, the central directory holds 2"),
    (lambda d: d[:-22] + d[-22:-18] + struct.pack("<H", 1) + d[-16:],
     "zip archives that span disks are not supported"),
    (lambda d: d.replace(b"PK\x01\x02", b"PK\x01\x03", 1),
     "corrupt zip: central directory entry 0 is not one (bad signature)"),
    (lambda d: d[:-4] if False else d[:-22] + b"PK\x05\x06" + bytes(16),
     None),  # an empty end record after real members: an empty zip, nothing to read
])
def test_end_record_lies(mutate: Callable[[bytes], bytes], message: str | None,
                         tmp_path: Path) -> None:
    data = mutate(build_zip([Entry(b"lib/a.so", LIB), Entry(b"lib/b.so", LIB)]))
    whl = write(tmp_path, data)
    r = measure(whl)
    src = r.inv.sources[0]
    probs = problems(src, WHL)
    if message is None:
        assert src.binaries == ()
        return
    assert [p.message for p in probs] == [message]


def test_zip64_records_that_lie(tmp_path: Path) -> None:
    good = build_zip([Entry(b"lib/a.so", LIB)], zip64=True)
    rec = good.rindex(b"PK\x06\x06")
    no_record = good[:rec] + b"XX" + good[rec + 2 :]
    assert _whole_wheel_problem(tmp_path, no_record) == (
        "corrupt zip: zip64 end-of-central-directory record is missing")
    loc = good.rindex(b"PK\x06\x07")
    disks = bytearray(good)
    struct.pack_into("<I", disks, loc + 16, 2)
    assert _whole_wheel_problem(tmp_path, bytes(disks)) == (
        "zip archives that span disks are not supported")
    short = bytearray(good)
    cen = good.index(b"PK\x01\x02")
    at = cen + 46 + len(b"lib/a.so")
    struct.pack_into("<HH", short, at, 1, 8)  # the zip64 field says 8 bytes: 3 are needed
    msg = _whole_wheel_problem(tmp_path, bytes(short))
    assert msg == "corrupt zip: central directory entry 0: zip64 extra field is short"
    overrun = bytearray(good)
    struct.pack_into("<HH", overrun, at, 1, 200)
    msg = _whole_wheel_problem(tmp_path, bytes(overrun))
    assert msg == "corrupt zip: central directory entry 0: extra field 0x0001 runs past its end"


# -------------------------------------------------- 3. overlapping and duplicate entries
def test_duplicate_member_names(tmp_path: Path) -> None:
    msg = _whole_wheel_problem(tmp_path, build_zip([
        Entry(b"lib/a.so", LIB), Entry(b"lib/a.so", PTX)]))
    assert msg == "corrupt zip: duplicate member name 'lib/a.so'"


def test_local_name_differs_from_the_central_name(tmp_path: Path) -> None:
    src, _ = _one(tmp_path, [Entry(b"lib/a.so", LIB, local_name=b"lib/b.so"),
                             Entry(b"lib/c.so", LIB, local_name=b"lib/c.sox")])
    probs = {p.path.rsplit("!", 1)[1]: p.message for p in problems(src, WHL)}
    assert probs == {
        "lib/a.so": "local header names the member 'lib/b.so': it differs from the central "
                    "directory's name",
        "lib/c.so": "local header names the member 'lib/c.sox': it differs from the central "
                    "directory's name",
    }
    assert members_read(src) == ["lib/fine.so"]


@pytest.fixture(scope="module")
def zeros_256m() -> bytes:
    return zeros_after(8, LIB, 256 << 20)


def test_many_central_entries_on_one_stream(tmp_path: Path, zeros_256m: bytes) -> None:
    """64 central entries on one honest 256 MiB stream would inflate 16 GiB: refused at
    once, nothing inflated."""
    usize = len(LIB) + (256 << 20)
    crc = 0  # never read
    entries = [Entry(b"lib/a0.so", b"", body=zeros_256m, usize=usize, crc=crc)]
    entries += [Entry(f"lib/a{i}.so".encode(), b"", body=zeros_256m, usize=usize, crc=crc,
                      shares=0) for i in range(1, 64)]
    msg = _whole_wheel_problem(tmp_path, build_zip(entries))
    assert msg == "corrupt zip: members 'lib/a0.so' and 'lib/a1.so' overlap"


def test_entries_that_overlap_partly(tmp_path: Path) -> None:
    # entry b's local header offset points inside entry a's data
    a = Entry(b"lib/a.so", LIB)
    data = build_zip([a, Entry(b"lib/b.so", LIB, offset=100)])
    assert _whole_wheel_problem(tmp_path, data) == (
        "corrupt zip: members 'lib/a.so' and 'lib/b.so' overlap")


def test_local_extra_running_into_the_next_entry(tmp_path: Path) -> None:
    """The central directory leaves no room to spare; the local header's extra length
    (not in the central entry) pushes the data over the next local header."""
    data = bytearray(build_zip([Entry(b"lib/a.so", LIB), Entry(b"lib/b.so", PTX)]))
    struct.pack_into("<H", data, 28, 200)  # a's local extra length
    src = measure(write(tmp_path, bytes(data))).inv.sources[0]
    (p,) = problems(src, f"{WHL}!lib/a.so")
    assert p.message == "member data runs into the next zip entry (overlapping entries)"
    assert members_read(src) == ["lib/b.so"]


def test_total_declared_size_bounds_the_work(tmp_path: Path, zeros_256m: bytes) -> None:
    """Distinct honest members: what is inflated is bounded by the declared sizes, whose
    sum Limits.max_total_size bounds."""
    usize = len(LIB) + (256 << 20)
    entries = [Entry(f"lib/z{i}.so".encode(), b"", body=zeros_256m, usize=usize, crc=0)
               for i in range(4)]
    whl = write(tmp_path, build_zip(entries))
    r = measure(whl, limits=Limits(max_total_size=512 << 20))
    (p,) = problems(r.inv.sources[0], WHL)
    assert p.message == f"members declare {4 * usize} bytes in all, over the limit"
    assert r.seconds < 5


# ---------------------------------------------------------------------- 4. processes
def _children(pid: int) -> list[int]:
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                stat_line = Path(f"/proc/{d}/stat").read_text()
            except OSError:
                continue
            if int(stat_line.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(d))
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


SLOW_WORKERS = """
import sys, time
import cuwheel.read.schedule as api
import cuwheel.read.sources.source as sources
from cuwheel.cli import main
api._PARALLEL_THRESHOLD = 0  # workers for any wheel
api._BIG_MEMBER = 1  # a task per member
api.cpu_count = lambda: 4  # even on a one-CPU runner
def slow(*a, **k):
    time.sleep(120)
sources.read_member = slow
sys.exit(main(["inspect", "--workers", "4", sys.argv[1]]))
"""


@_absent.skip_without("linux", not sys.platform.startswith("linux"), "PR_SET_PDEATHSIG")
def test_workers_die_with_their_parent(tmp_path: Path) -> None:
    whl = wheelfactory.make_wheel(tmp_path, {f"lib/{i}.so": LIB for i in range(4)})
    proc = subprocess.Popen([sys.executable, "-c", SLOW_WORKERS, whl],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    kids: list[int] = []
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(kids) < 4:
            time.sleep(0.05)
            kids = _children(proc.pid)
        assert len(kids) == 4, (kids, proc.poll())
        time.sleep(0.3)  # the workers are in their tasks (or their initializer)
        proc.kill()
        proc.wait()
        deadline = time.monotonic() + 30  # a hang guard: the kernel's delivery, not a bound
        while time.monotonic() < deadline and any(_alive(k) for k in kids):
            time.sleep(0.02)
        assert [k for k in kids if _alive(k)] == []
    finally:
        proc.kill()
        proc.wait()
        assert proc.stderr is not None
        proc.stderr.close()
        for k in kids:  # survivors of a failure: they would sleep on for two minutes
            if _alive(k):
                with contextlib.suppress(OSError):
                    os.kill(k, signal.SIGKILL)


def test_workers_are_no_more_than_tasks_and_cpus(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pools: list[int] = []

    class Recording(api_mod.ProcessPoolExecutor):
        def __init__(self, max_workers: int, **kw: object) -> None:
            pools.append(max_workers)
            super().__init__(max_workers, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(api_mod, "ProcessPoolExecutor", Recording)
    monkeypatch.setattr(api_mod, "_PARALLEL_THRESHOLD", 0)
    monkeypatch.setattr(api_mod, "_BIG_MEMBER", len(LIB))
    monkeypatch.setattr(api_mod, "cpu_count", lambda: 8)
    whl = wheelfactory.make_wheel(tmp_path, {"lib/a.so": LIB})  # lib/a.so + dist-info batch
    inv = cuwheel.inspect(whl, workers=2000)
    assert inv.problems == () and len(inv.binaries) == 1
    assert pools == [2]
    monkeypatch.setattr(api_mod, "cpu_count", lambda: 1)
    inv = cuwheel.inspect(whl, workers=2000)
    assert pools == [2] and len(inv.binaries) == 1  # one CPU: no pool at all


def test_workers_read_what_one_process_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    whl = wheelfactory.make_wheel(tmp_path, {f"lib/{i}.so": LIB for i in range(3)}
                                  | {"lib/k.ptx": PTX, "lib/cut.so": LIB[:9000]})
    serial = cuwheel.inspect(whl, workers=1)
    monkeypatch.setattr(api_mod, "_PARALLEL_THRESHOLD", 0)
    monkeypatch.setattr(api_mod, "_BIG_MEMBER", 1)
    monkeypatch.setattr(api_mod, "cpu_count", lambda: 3)
    parallel = cuwheel.inspect(whl, workers=3)
    assert parallel == serial
    assert len(serial.binaries) == 4 and len(serial.problems) == 1


def test_a_worker_that_dies_is_a_problem(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    parent = os.getpid()
    real = sources_mod.read_member

    def dies(*a: object, **k: object) -> object:
        if os.getpid() != parent:
            os._exit(3)  # as the kernel's OOM killer would end it
        return real(*a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(sources_mod, "read_member", dies)
    monkeypatch.setattr(api_mod, "_PARALLEL_THRESHOLD", 0)
    monkeypatch.setattr(api_mod, "_BIG_MEMBER", 1)
    monkeypatch.setattr(api_mod, "cpu_count", lambda: 2)
    whl = wheelfactory.make_wheel(tmp_path, {"lib/a.so": LIB})
    with time_limit(60):
        inv = cuwheel.inspect([whl, BIN / "sm80.so"], workers=2)
    (p,) = problems(inv.sources[0], whl)
    assert p.path == whl and p.message == "a worker process died (out of memory?)"
    assert len(inv.sources[1].binaries) == 1


def test_worker_initializer_is_harmless_here() -> None:
    """In this process (its parent alive) the initializer sets the death signal and
    returns: a SIGTERM handler of the parent's is reset."""
    old = signal.getsignal(signal.SIGTERM)
    try:
        api_mod.worker_init(os.getppid())
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
    finally:
        signal.signal(signal.SIGTERM, old)
        if sys.platform.startswith("linux"):
            import ctypes

            ctypes.CDLL(None).prctl(1, ctypes.c_ulong(0), ctypes.c_ulong(0),
                                    ctypes.c_ulong(0), ctypes.c_ulong(0))


# --------------------------------------------------------- 5. deep trees, links, FIFOs
def _rmtree_deep(root: str) -> None:
    """shutil.rmtree recurses once per level too (Python < 3.12)."""
    stack = [(root, False)]
    while stack:
        p, emptied = stack.pop()
        if emptied:
            os.rmdir(p)
            continue
        stack.append((p, True))
        with os.scandir(p) as it:
            for e in it:
                if e.is_dir(follow_symlinks=False):
                    stack.append((e.path, False))
                else:
                    os.unlink(e.path)


def test_directory_a_thousand_levels_deep() -> None:
    """os.walk recursed once per level (RecursionError at about 1,000 on Python 3.11).
    The tree is not under pytest's tmp_path: pytest's own clean-up of old temporary
    directories would hit the same RecursionError, in every later run."""
    top = tempfile.mkdtemp(prefix="cuwheel-deep-")
    try:
        d = Path(top) / "deep"
        d.mkdir()
        fd = os.open(d, os.O_RDONLY)
        try:
            for _ in range(1000):  # relative to the last level: the syscalls stay short
                os.mkdir("d", dir_fd=fd)
                nfd = os.open("d", os.O_RDONLY, dir_fd=fd)
                os.close(fd)
                fd = nfd
            wfd = os.open("lib.so", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
            os.write(wfd, LIB)
            os.close(wfd)
        finally:
            os.close(fd)
        r = measure(d)
        src = r.inv.sources[0]
        assert src.problems == ()
        (b,) = src.binaries
        assert b.path == str(d) + "/d" * 1000 + "/lib.so" and len(b.containers) == 2
        assert r.seconds < 10
    finally:
        _rmtree_deep(top)


def test_symlink_loops_and_fifos_do_not_hang(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    (root / "lib").mkdir(parents=True)
    (root / "lib" / "a.so").write_bytes(LIB)
    (root / "lib" / "self").symlink_to(root / "lib")  # a directory loop
    (root / "lib" / "up").symlink_to("..")
    (root / "lib" / "x").symlink_to("y")  # a file loop
    (root / "lib" / "y").symlink_to("x")
    loop = tmp_path / "loop.whl"
    loop.symlink_to(loop)
    fifo = tmp_path / "fifo-1.0-py3-none-any.whl"
    os.mkfifo(fifo)
    to_fifo = tmp_path / "to_fifo.so"
    to_fifo.symlink_to(fifo)
    r = measure(root, loop, fifo, to_fifo, "/dev/zero", limit_s=10)
    tree, lp, ff, tf, zero = r.inv.sources
    assert tree.problems == () and [b.path for b in tree.binaries] == [str(root / "lib/a.so")]
    assert "symbolic links" in problems(lp, str(loop))[0].message
    assert problems(ff, str(fifo))[0].message == "not a regular file"
    assert problems(tf, str(to_fifo))[0].message == "not a regular file"
    assert problems(zero, "/dev/zero")[0].message == "not a regular file"
    assert r.seconds < 5


# ----------------------------------------------------------------- 6. structure fuzzing
def zip_layout(data: bytes) -> list[tuple[str, int, str]]:
    """(label, offset, struct format) of every field of a well-formed zip's records:
    end records, zip64 records, central entries and their extra fields, local headers.
    Independent of cuwheel's parser."""
    out: list[tuple[str, int, str]] = []

    def record(label: str, at: int, fields: list[tuple[str, str]]) -> None:
        for name, fmt in fields:
            out.append((f"{label}.{name}", at, fmt))
            at += struct.calcsize("<" + fmt)

    eocd = data.rindex(b"PK\x05\x06")
    record("eocd", eocd, EOCD_FIELDS)
    (count, _, cd_offset) = struct.unpack_from("<HII", data, eocd + 10)
    loc = eocd - 20
    if data[loc : loc + 4] == b"PK\x06\x07":
        record("loc64", loc, LOC64_FIELDS)
        record("eocd64", loc - 56, EOCD64_FIELDS)
        (count, _, cd_offset) = struct.unpack_from("<QQQ", data, loc - 56 + 32)
    at = cd_offset
    for k in range(count):
        record(f"cd{k}", at, CENTRAL_FIELDS)
        nlen, elen, clen = struct.unpack_from("<HHH", data, at + 28)
        (offset,) = struct.unpack_from("<I", data, at + 42)
        x = at + 46 + nlen
        while x + 4 <= at + 46 + nlen + elen:
            hid, hlen = struct.unpack_from("<HH", data, x)
            out += [(f"cd{k}.extra.id", x, "H"), (f"cd{k}.extra.len", x + 2, "H")]
            if hid == 1:
                for j in range(hlen // 8):
                    out.append((f"cd{k}.zip64.{j}", x + 4 + 8 * j, "Q"))
                    if j == 2:
                        (offset,) = struct.unpack_from("<Q", data, x + 4 + 16)
            x += 4 + hlen
        record(f"local{k}", offset, LOCAL_FIELDS)
        at += 46 + nlen + elen + clen
    return out


def _base_wheels() -> dict[str, bytes]:
    with tempfile.TemporaryDirectory() as d:
        members = {"pkg/lib/a.so": LIB, "pkg/k.ptx": PTX, "pkg/__init__.py": b"# hi\n"}
        out = {}
        for label, method in [("deflate", 8), ("stored", 0)]:
            p = wheelfactory.make_wheel(d, members, compression=method)
            out[label] = Path(p).read_bytes()
        p = wheelfactory.make_wheel(d, members, per_member={
            "pkg/lib/a.so": zipfile.ZIP_BZIP2, "pkg/k.ptx": zipfile.ZIP_LZMA})
        out["bzip2+lzma"] = Path(p).read_bytes()
        with zipfile.ZipFile(p) as zf:
            entries = [Entry(i.filename.encode(), zf.read(i), method=m)
                       for i, m in zip(zf.infolist(), [12, 14, 8, 8, 8, 8], strict=True)]
        out["zip64"] = build_zip(entries, zip64=True)
    return out


BASES = _base_wheels()
LAYOUTS = {k: zip_layout(v) for k, v in BASES.items()}
_FUZZ_N = int(os.environ.get("CUWHEEL_FUZZ", "0"))
_FUZZ_FIXED = _FUZZ_N == 0
_WIDTH = {"H": 16, "I": 32, "Q": 64}


def _value(kind: int, old: int, fmt: str, rnd: int, size: int) -> int:
    bits = _WIDTH[fmt]
    choices = [0, 1, old + 1, old - 1, old * 2, old // 2, (1 << bits) - 1, (1 << bits) - 2,
               1 << (bits - 1), size, size - old, old + size, old ^ (1 << (rnd % bits)),
               rnd, 0xFFFF, 0xFFFFFFFF, 46, 30, 22, 63, 64]
    return choices[kind % len(choices)] % (1 << bits)


def mutate(base: str, edits: list[tuple[int, int, int]], flips: list[tuple[int, int]],
           splice: tuple[int, int, bytes] | None, cut: int | None) -> bytes:
    data = bytearray(BASES[base])
    layout = LAYOUTS[base]
    for pick, kind, rnd in edits:
        _label, at, fmt = layout[pick % len(layout)]
        (old,) = struct.unpack_from("<" + fmt, data, at)
        struct.pack_into("<" + fmt, data, at, _value(kind, old, fmt, rnd, len(data)))
    for at, value in flips:
        data[at % len(data)] = value
    if splice is not None:  # bytes inserted or removed: every later offset shifts
        at, drop, ins = splice
        at %= len(data)
        data[at : at + drop] = ins
    if cut is not None:
        del data[cut % (len(data) + 1) :]
    return bytes(data)


@settings(max_examples=_FUZZ_N or 1500, deadline=None, derandomize=_FUZZ_FIXED,
          database=None, suppress_health_check=list(HealthCheck))
@given(
    base=st.sampled_from(sorted(BASES)),
    edits=st.lists(st.tuples(st.integers(0, 1000), st.integers(0, 100),
                             st.integers(0, (1 << 64) - 1)), min_size=1, max_size=4),
    flips=st.lists(st.tuples(st.integers(0, 1 << 20), st.integers(0, 255)), max_size=3),
    splice=st.none() | st.tuples(st.integers(0, 1 << 20), st.integers(0, 64),
                                 st.binary(max_size=64)),
    # rarely a cut: it loses the end records, and the zip is no zip
    cut=st.one_of(st.none(), st.none(), st.none(), st.integers(0, 1 << 20)),
)
def test_fuzzed_zip_structure_never_raises(
    base: str, edits: list[tuple[int, int, int]], flips: list[tuple[int, int]],
    splice: tuple[int, int, bytes] | None, cut: int | None,
) -> None:
    data = mutate(base, edits, flips, splice, cut)
    with tempfile.TemporaryDirectory() as d:
        whl = Path(d) / WHL
        whl.write_bytes(data)
        with time_limit(20):
            inv = cuwheel.inspect(whl, workers=1)
        assert isinstance(inv, Inventory)
        for p in inv.problems:
            assert_one_line(p, str(whl))


def test_fuzz_bases_are_clean_and_laid_out() -> None:
    for label, data in BASES.items():
        with tempfile.TemporaryDirectory() as d:
            whl = Path(d) / WHL
            whl.write_bytes(data)
            inv = cuwheel.inspect(whl)
        assert inv.problems == (), label
        assert [len(b.containers) for b in inv.binaries] == [2, 1], label
        labels = {lab for lab, _, _ in LAYOUTS[label]}
        assert {"eocd.count", "cd0.offset", "local0.elen", "cd5.nlen"} <= labels
    assert {lab for lab, _, _ in LAYOUTS["zip64"]} >= {"eocd64.cd_offset", "cd0.zip64.2"}
