"""Hostile inputs for the binary readers: bounded memory and time for each, and a one-line
message (a Problem naming the file, or an anomaly of its binary), never a traceback.

Each case builds its input here with struct.pack (tests/binbuild.py) and is read in a
child process under RLIMIT_AS = 1 GiB; the child reports the read's wall time.  The
classes: one stored string decoded once per reference (amplification), counts a file
inflates (budgets), lookups that were quadratic in the input's structures, and a
regular expression that backtracked.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
import binbuild
import wheelfactory
from binbuild import Elf, PeSec, Sec

SRC = Path(__file__).resolve().parent.parent / "src"
LIMIT_AS = 1 << 30
SECONDS = 5.0

_CHILD = r"""
import json, os, resource, sys, time
limit = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
import cuwheel
import cuwheel.read.sources.wheelfile
if os.environ.get("CW_OUT_SIZE"):  # stream wheel members in pieces of this size
    cuwheel.read.sources.wheelfile.OUT_SIZE = int(os.environ["CW_OUT_SIZE"])
t0 = time.process_time()  # CPU time: a loaded machine stretches the wall clock
inv = cuwheel.inspect(sys.argv[2:], workers=1)
seconds = time.process_time() - t0
print(json.dumps({
    "seconds": seconds,
    "problems": [{"path": p.path, "message": p.message} for p in inv.problems],
    "binaries": [{"path": b.path[:200], "anomalies": list(getattr(b, "anomalies", ())),
                  "needed": len(b.needed),
                  "rpath": len(b.rpath), "runpath": len(b.runpath),
                  "exported": len(b.exported), "containers": len(b.containers),
                  "sections": sorted({c.section or "" for c in b.containers})}
                 for b in inv.binaries],
}))
"""


def read_isolated(*paths: Path, src: Path = SRC, out_size: int | None = None) -> dict:
    env = {**os.environ, "PYTHONPATH": str(src)}
    if out_size is not None:
        env["CW_OUT_SIZE"] = str(out_size)
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(LIMIT_AS), *map(str, paths)],
                          capture_output=True, text=True, timeout=120, env=env, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    out: dict = json.loads(proc.stdout)
    for p in out["problems"]:
        assert "\n" not in p["message"] and "Traceback" not in p["message"]
    for b in out["binaries"]:
        for a in b["anomalies"]:
            assert "\n" not in a and "Traceback" not in a
    return out


def check(out: dict, path: str, expect: str) -> str:
    """The one message about ``path`` containing ``expect``: a Problem of the file or an
    anomaly of one of its binaries; the read took under SECONDS."""
    assert out["seconds"] < SECONDS, out["seconds"]
    texts = [p["message"] for p in out["problems"] if path in p["path"]]
    texts += [a for b in out["binaries"] if path in b["path"] for a in b["anomalies"]]
    hits = [t for t in texts if expect in t]
    assert hits, (expect, texts)
    return hits[0]


def _write(tmp_path: Path, name: str, data: bytes) -> Path:
    p = tmp_path / name
    p.write_bytes(data)
    return p


# ------------------------------------------------------------------ amplification (B.4)
UNTERMINATED = b"A" * (8 << 20)  # one string table without a NUL


def elf_section_names_share_one_string() -> bytes:
    """65,534 sections whose names all start at offset 0 of an 8 MiB .shstrtab with no
    NUL: each name was searched and copied from there (512 GB)."""
    secs = [Sec(".x", b"", sh_type=1, name_off=0, offset=64, size=0) for _ in range(65533)]
    return binbuild.elf64(Elf(secs, shstrtab=UNTERMINATED, phdrs=[]))


def elf_section_names_overlap() -> bytes:
    """65,534 sections named at offsets 0, 1, 2, ... of one unterminated string: each a
    distinct 4 KiB decode; the name budget (not the cache) bounds them."""
    secs = [Sec(".x", b"", name_off=i * 97, offset=64, size=0) for i in range(65533)]
    return binbuild.elf64(Elf(secs, shstrtab=UNTERMINATED, phdrs=[]))


def _dynamic_elf(entries: list[tuple[int, int]], dynstr: bytes, extra: list[Sec] | None = None
                 ) -> bytes:
    """An ELF whose .dynamic has ``entries`` plus DT_STRTAB / DT_STRSZ for ``dynstr`` (laid
    out first, at a known offset, in one identity-mapped PT_LOAD)."""
    strtab_at = 0x1000  # where elf64 places the first section's data (aligned 0x1000)
    dyn = binbuild.dynamic([(5, strtab_at), (10, len(dynstr)), *entries])
    secs = [Sec(".dynstr", dynstr, sh_type=3, align=0x1000),
            Sec(".dynamic", dyn, sh_type=6, flags=3), *(extra or [])]
    data = binbuild.elf64(Elf(secs))
    assert data[strtab_at : strtab_at + 16] == dynstr[:16]
    return data


def elf_million_needed_one_name() -> bytes:
    return _dynamic_elf([(1, 0)] * 1_000_000, b"a" * (1 << 20))


def elf_million_symbols_one_name() -> bytes:
    syms = binbuild.dynsym([1] * 1_000_000)
    return _dynamic_elf([], b"\0" + b"s" * (1 << 20),
                        [Sec(".dynsym", syms, sh_type=11, entsize=24)])


def elf_runpath_of_colons() -> bytes:
    """One RUNPATH of 64 KiB of ':' (65,537 empty entries), referenced 100,000 times."""
    return _dynamic_elf([(29, 0)] * 100_000, b":" * (64 << 10) + b"\0")


def pe_exports_share_one_name() -> bytes:
    """2,000,000 export name pointers at one unterminated 4 MiB name: each was copied
    (512 bytes a name then: 1 GB of strings)."""
    n = 2_000_000
    names = b"E" * (4 << 20)
    table = struct.pack(f"<{n}I", *([0x2000 + 40 + 4 * n] * n))
    edata = bytearray(40)
    struct.pack_into("<III", edata, 24, n, 0, 0x2000 + 40)
    blob = bytes(edata) + table + names
    return binbuild.pe32plus([PeSec(b".edata", blob, va=0x2000)], dirs={0: (0x2000, len(blob))})


def pe_imports_share_one_table() -> bytes:
    """10,000 import descriptors naming one lookup table of 300,000 entries, each at one
    unterminated 4 MiB name: the table is read once, the names are cut and decoded once,
    and the (DLL, name) pairs stop at the import-name budget."""
    n_desc, n_ent, va = 10_000, 300_000, 0x2000
    desc_end = 20 * (n_desc + 1)
    ilt = desc_end
    dll = ilt + 8 * (n_ent + 1)
    hint = dll + 8
    blob = bytearray(hint + 2)
    struct.pack_into(f"<{n_ent}Q", blob, ilt, *([va + hint] * n_ent))
    blob[dll : dll + 6] = b"x.dll\0"
    for i in range(n_desc):
        struct.pack_into("<IIIII", blob, 20 * i, va + ilt, 0, 0, va + dll, va + ilt)
    blob += b"A" * (4 << 20)
    return binbuild.pe32plus([PeSec(b".idata", bytes(blob), va=va)],
                             dirs={1: (va, desc_end)})


def pe_long_section_names_share_one_string() -> bytes:
    """4,000 sections named "/4", one COFF string table of 8 MiB with no NUL."""
    strtab = struct.pack("<I", 4 + len(UNTERMINATED)) + UNTERMINATED
    secs = [PeSec(b"/4", b"", va=0x1000 * (i + 1), rawptr=0, rawsize=0) for i in range(4000)]
    return binbuild.pe32plus(secs, strtab=strtab)


def ar_long_names_share_one_string() -> bytes:
    """20,000 (empty ELF object) members named /0 into a 1 MiB long-name table with no
    "/\\n": each name was searched for and copied from there (20 GB)."""
    obj = binbuild.elf_header_only()
    return binbuild.ar([(b"/0", obj)] * 20_000, long_names=b"L" * (1 << 20))


def ar_many_empty_members() -> bytes:
    """150,000 empty members: none of them can be an object, none gets a reader."""
    return binbuild.ar([(b"e.o/", b"")] * 150_000)


def ar_too_many_members() -> bytes:
    return binbuild.ar([(b"e.o/", b"")] * 1_000_000)


def elf_dynsym_sections_share_one_table() -> bytes:
    """65,000 SHT_DYNSYM headers over one 16 MiB table: only the first is read."""
    table = bytes(16 << 20)
    secs = [Sec(".dynsym", table, sh_type=11, entsize=24)]
    secs += [Sec(".dynsym", b"", sh_type=11, offset=0x1000, size=len(table))
             for _ in range(65000)]
    return binbuild.elf64(Elf(secs))


AMPLIFY: dict[str, tuple[Callable[[], bytes], str, str]] = {
    # name: (builder, file name, expected message fragment)
    "elf-section-names": (elf_section_names_share_one_string, "names.so",
                          ".shstrtab: the string at 0x0 is longer than 4096 bytes (cut)"),
    "elf-section-names-overlap": (elf_section_names_overlap, "overlap.so",
                                  "names: more than 134217728 bytes decoded"),
    "elf-needed": (elf_million_needed_one_name, "needed.so",
                   "PT_DYNAMIC: more than 10000 DT_NEEDED entries"),
    "elf-symbols": (elf_million_symbols_one_name, "syms.so",
                    "dynamic string table: the string at 0x1 is longer than 4096 bytes"),
    "elf-runpath": (elf_runpath_of_colons, "runpath.so",
                    "more than 10000 RPATH / RUNPATH entries"),
    "pe-exports": (pe_exports_share_one_name, "exports.dll",
                   "export names: the string at 0x0 is longer than 4096 bytes (cut)"),
    "pe-imports": (pe_imports_share_one_table, "imports.dll",
                   "more than 2000000 functions imported by name"),
    "pe-long-names": (pe_long_section_names_share_one_string, "longnames.dll",
                      "COFF string table: the string at 0x4 is longer than 4096 bytes"),
    "ar-long-names": (ar_long_names_share_one_string, "longnames.a",
                      "member name /0 is longer than 4096 bytes (cut)"),
    "ar-too-many": (ar_too_many_members, "many.a", "more than 200000 members"),
    "elf-dynsym-repeated": (elf_dynsym_sections_share_one_table, "dynsyms.so", ""),
}


@pytest.mark.parametrize("case", sorted(AMPLIFY))
def test_amplification_is_bounded(case: str, tmp_path: Path) -> None:
    build, name, expect = AMPLIFY[case]
    path = _write(tmp_path, name, build())
    out = read_isolated(path)
    if expect:
        check(out, name, expect)
    else:
        assert out["seconds"] < SECONDS and out["problems"] == []


def test_amplified_names_are_decoded_once(tmp_path: Path) -> None:
    """What the budgets leave: one name, cut and marked, kept once."""
    out = read_isolated(_write(tmp_path, "needed.so", elf_million_needed_one_name()),
                        _write(tmp_path, "syms.so", elf_million_symbols_one_name()))
    needed, syms = out["binaries"]
    assert needed["needed"] == 10_000  # the budget
    assert syms["exported"] == 1  # a million references to one name: one export


def test_many_empty_members_are_cheap(tmp_path: Path) -> None:
    out = read_isolated(_write(tmp_path, "empty.a", ar_many_empty_members()))
    assert out["seconds"] < SECONDS
    assert out["problems"] == [] and out["binaries"] == []


# ------------------------------------------------------------------------ CPU (B.5)
def elf_thousands_of_code_segments() -> bytes:
    """20,000 executable PT_LOADs (plus a read-only one: the -z separate-code shortcut
    applies) and 20,000 sections: the streamed scan rebuilt its skip list per step and
    checked every segment against every section."""
    text = b"\xc3" * 16
    n = 20_000
    secs = [Sec(f".t{i}", text, flags=6, align=16) for i in range(n)]
    secs.append(Sec(".nv_fatbin", binbuild.fatbin_container([]), align=16))
    data = binbuild.elf64(Elf(secs, phdrs=[]))
    shoff = struct.unpack_from("<Q", data, 40)[0]
    phdrs = [(1, 4, 0, 0, 64)]  # R only
    for i in range(n):
        off = struct.unpack_from("<Q", data, shoff + 64 * (i + 1) + 24)[0]
        phdrs.append((1, 5, off, off, 16))  # R X
    # program headers after everything else
    ph = b"".join(struct.pack("<IIQQQQQQ", t, f, o, v, v, s, s, 16) for t, f, o, v, s in phdrs)
    out = bytearray(data) + ph
    struct.pack_into("<Q", out, 32, len(data))  # e_phoff
    struct.pack_into("<H", out, 56, len(phdrs))  # e_phnum
    return bytes(out)


def elf_many_containers_many_sections() -> bytes:
    """30,000 sections and 50,000 (empty, valid) containers in one data section: each
    container's section was found by a linear search."""
    blob = binbuild.fatbin_container([]) * 50_000
    secs = [Sec(f".d{i}", b"\0" * 8, align=8) for i in range(30_000)]
    secs.append(Sec(".data.big", blob, flags=3, align=16))
    return binbuild.elf64(Elf(secs))


def elf_many_wrappers_many_segments() -> bytes:
    """500,000 .nvFatBinSegment records against 65,000 PT_LOADs: each record's address
    was looked up in every segment."""
    n_seg = 65_000
    records = struct.pack("<IIQQ", 0x466243B1, 1, 0x10, 0) * 500_000
    data = binbuild.elf64(Elf([Sec(".nvFatBinSegment", records, flags=3)], phdrs=[]))
    ph = b"".join(struct.pack("<IIQQQQQQ", 1, 4, 0, v, v, 8, 8, 8)
                  for v in range(0x100000, 0x100000 + 16 * n_seg, 16))
    out = bytearray(data) + ph
    struct.pack_into("<Q", out, 32, len(data))
    struct.pack_into("<H", out, 56, n_seg)
    return bytes(out)


def ptx_whitespace() -> bytes:
    """.version and then 64 KiB of newlines (the most of a PTX file that is parsed): the
    .target expression retried its whitespace run from every line start."""
    return b".version 9.0" + b"\n" * ((64 << 10) - 13) + b"x"


def cubin_many_notes() -> bytes:
    """A cubin of 200,000 NVIDIA note headers, each claiming the rest of the file as its
    body: each body was searched for the release text."""
    ehdr = bytearray(64)
    ehdr[:6] = b"\x7fELF\x02\x01"
    ehdr[8] = 8
    struct.pack_into("<HHI", ehdr, 16, 2, 190, 1)
    struct.pack_into("<I", ehdr, 48, 90 << 8)
    n, rec = 200_000, 24
    notes = b"".join(struct.pack("<III", 12, rec * (n - i - 1) + 12, 2000) + b"NVIDIA Corp\0"
                     for i in range(n))
    return bytes(ehdr) + notes + bytes(12)


CPU: dict[str, tuple[Callable[[], bytes], str, bool, str]] = {
    # name: (builder, file name, streamed from a wheel?, expected message fragment)
    "code-segments": (elf_thousands_of_code_segments, "segs.so", True, ""),
    "containers-sections": (elf_many_containers_many_sections, "cands.so", False, ""),
    "wrappers-segments": (elf_many_wrappers_many_segments, "wraps.so", False, ""),
    "ptx-whitespace": (ptx_whitespace, "ws.ptx", False, "PTX text without a .version and "
                       ".target"),
    "cubin-notes": (cubin_many_notes, "notes.cubin", False, ""),
}


@pytest.mark.parametrize("case", sorted(CPU))
def test_lookups_are_linear_or_n_log_n(case: str, tmp_path: Path) -> None:
    build, name, streamed, expect = CPU[case]
    data = build()
    if streamed:  # in 4 KiB pieces: the streamed scan, not the walk of a resident file
        path = wheelfactory.make_wheel(tmp_path, {f"lib/{name}": data})
        out = read_isolated(path, out_size=4096)
    else:
        out = read_isolated(_write(tmp_path, name, data))
    if expect:
        check(out, name, expect)
    else:
        assert out["seconds"] < SECONDS, out["seconds"]
        assert out["problems"] == [], out["problems"]
    if case == "containers-sections":
        (b,) = out["binaries"]
        assert b["containers"] == 50_000 and b["sections"] == [".data.big"]


def test_request_budget_is_a_one_line_problem() -> None:
    """The catch-all behind the budgets: all requests of one file together are bounded
    (4x the file + 64 MiB), whatever structure asks."""
    from cuwheel.errors import StreamError
    from cuwheel.read.bytes.stream import Scan

    scan = Scan(1 << 20)
    with pytest.raises(StreamError, match=r"ask for more than \d+ bytes in all"):
        for _ in range(100):
            scan.request(0, 1 << 20, lambda b: None)
    assert scan.requested <= scan.request_budget + (1 << 20)


# ------------------------------------- the fast lookups answer as the slow ones did
_RANGES = st.lists(st.tuples(st.integers(0, 300), st.integers(0, 60)), max_size=30)


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(ranges=_RANGES, points=st.lists(st.integers(-5, 400), max_size=40))
def test_range_map_is_the_first_range_in_table_order(ranges: list[tuple[int, int]],
                                                     points: list[int]) -> None:
    from cuwheel.read.bytes.tables import RangeMap

    spans = [(s, s + n, i) for i, (s, n) in enumerate(ranges)]
    rmap = RangeMap(spans)
    for p in points:
        want = next((i for s, e, i in spans if s <= p < e), None)
        assert rmap.get(p) == want, (spans, p)


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(
    hits=st.lists(st.integers(0, 2000), max_size=25),
    skips=st.lists(st.tuples(st.integers(0, 2100), st.integers(1, 300)), max_size=25),
    chunk=st.integers(1, 700),
)
def test_signature_scan_skips_exactly_the_skipped_starts(
    hits: list[int], skips: list[tuple[int, int]], chunk: int
) -> None:
    """Streamed in any chunk size, the scan reports each signature that does not start
    inside a skipped range (the definition the quadratic version implemented)."""
    from cuwheel.read.bytes.stream import Scan

    buf = bytearray(2100)
    placed: list[int] = []
    for h in sorted(set(hits)):
        if all(abs(h - p) >= 8 for p in placed) and h + 8 <= len(buf):
            buf[h : h + 8] = binbuild.SIGNATURE
            placed.append(h)
    ranges = [(s, s + n) for s, n in skips]
    seen: list[int] = []
    scan = Scan(len(buf), signature=binbuild.SIGNATURE, on_signature=seen.append)
    scan.skip.extend(ranges[: len(ranges) // 2])
    scan.skip_known.extend(ranges[len(ranges) // 2 :])
    for at in range(0, len(buf), chunk):
        scan.feed(bytes(buf[at : at + chunk]))
    want = [p for p in placed if not any(s <= p < e for s, e in ranges)]
    assert sorted(set(seen)) == want
