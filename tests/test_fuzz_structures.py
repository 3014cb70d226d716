"""Structure-level fuzzing of the committed fixtures: counts, offsets, sizes, string-table
indices, ELF section / program header fields, dynamic entries, PE headers and section
table, fatbin container and entry header fields, ar member headers.

Every mutant is read with ``read_binary`` from one chunk (resident) and streamed in
small chunks: each must return Binaries or raise InputError (never another exception),
within a bounded time, and both ways must agree.  The fields are found here by a parse
independent of cuwheel.  CI runs a fixed set of examples (derandomized); set
CUWHEEL_FUZZ=N to explore N fresh random examples per test (tests/test_corrupt.py's
convention).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import struct
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cuwheel.errors import InputError
from cuwheel.model.inventory import Binary
from cuwheel.read.binary.sniff import read_binary, sniff

BIN = Path(__file__).parent / "data" / "bin"
SIGNATURE = b"\x50\xed\x55\xba\x01\x00\x10\x00"
SECONDS = 10  # per mutant, both reads (each is milliseconds; a hang or blow-up is not)

_FUZZ_N = int(os.environ.get("CUWHEEL_FUZZ", "0"))
_FIXED = _FUZZ_N == 0


@dataclasses.dataclass(frozen=True)
class Field:
    offset: int
    width: int  # bytes; 0 < width <= 8, little-endian; or an ASCII decimal field (ascii)
    what: str
    ascii: bool = False


def _u(data: bytes, fmt: str, at: int) -> int:
    return int(struct.unpack_from(fmt, data, at)[0])


def _fatbin_fields(data: bytes, base: int = 0, end: int | None = None) -> list[Field]:
    out: list[Field] = []
    end = len(data) if end is None else end
    i = data.find(SIGNATURE, base, end)
    while i >= 0 and i + 16 <= end:
        out += [Field(i, 4, "container magic"), Field(i + 4, 2, "container version"),
                Field(i + 6, 2, "container header size"), Field(i + 8, 8, "payload size")]
        stop = i + 16 + _u(data, "<Q", i + 8)
        at = i + 16
        while at + 64 <= min(stop, len(data)):
            out += [Field(at, 2, "entry kind"), Field(at + 4, 4, "entry header size"),
                    Field(at + 8, 8, "entry payload size"),
                    Field(at + 16, 4, "entry compressed size"),
                    Field(at + 28, 4, "entry arch"), Field(at + 32, 4, "identifier offset"),
                    Field(at + 36, 4, "identifier length"), Field(at + 40, 8, "entry flags"),
                    Field(at + 56, 8, "entry uncompressed size")]
            step = _u(data, "<I", at + 4) + _u(data, "<Q", at + 8)
            if step <= 0:
                break
            at += step
        i = data.find(SIGNATURE, max(stop, i + 8), end)
    return out


def _elf_fields(data: bytes, base: int = 0) -> list[Field]:
    """ELF64 little-endian header, section and program headers, dynamic entries, the first
    dynamic symbols, wrapper records."""
    b = base
    out = [Field(b + 4, 1, "EI_CLASS"), Field(b + 5, 1, "EI_DATA"), Field(b + 16, 2, "e_type"),
           Field(b + 32, 8, "e_phoff"), Field(b + 40, 8, "e_shoff"),
           Field(b + 54, 2, "e_phentsize"), Field(b + 56, 2, "e_phnum"),
           Field(b + 58, 2, "e_shentsize"), Field(b + 60, 2, "e_shnum"),
           Field(b + 62, 2, "e_shstrndx")]
    phoff, shoff = _u(data, "<Q", b + 32), _u(data, "<Q", b + 40)
    phnum, shnum = _u(data, "<H", b + 56), _u(data, "<H", b + 60)
    dyn: tuple[int, int] | None = None
    for i in range(phnum):
        at = b + phoff + 56 * i
        out += [Field(at, 4, "p_type"), Field(at + 4, 4, "p_flags"), Field(at + 8, 8, "p_offset"),
                Field(at + 16, 8, "p_vaddr"), Field(at + 32, 8, "p_filesz")]
        if _u(data, "<I", at) == 2:
            dyn = (_u(data, "<Q", at + 8), _u(data, "<Q", at + 32))
    for i in range(shnum):
        at = b + shoff + 64 * i
        out += [Field(at, 4, "sh_name"), Field(at + 4, 4, "sh_type"), Field(at + 8, 8, "sh_flags"),
                Field(at + 24, 8, "sh_offset"), Field(at + 32, 8, "sh_size"),
                Field(at + 40, 4, "sh_link"), Field(at + 48, 8, "sh_addralign")]
        sh_type = _u(data, "<I", at + 4)
        off, size = _u(data, "<Q", at + 24), _u(data, "<Q", at + 32)
        if sh_type == 11:  # .dynsym: the first symbols
            for k in range(1, min(size // 24, 48)):
                s = b + off + 24 * k
                out += [Field(s, 4, "st_name"), Field(s + 4, 1, "st_info"),
                        Field(s + 6, 2, "st_shndx")]
        if (sh_type == 1 and size and size % 24 == 0 and size <= 24 * 64
                and _u(data, "<I", b + off) == 0x466243B1):  # .nvFatBinSegment records
            for k in range(size // 24):
                r = b + off + 24 * k
                out += [Field(r, 4, "wrapper magic"), Field(r + 4, 4, "wrapper version"),
                        Field(r + 8, 8, "wrapper address")]
    if dyn is not None:
        for k in range(dyn[1] // 16):
            at = b + dyn[0] + 16 * k
            out += [Field(at, 8, "d_tag"), Field(at + 8, 8, "d_val")]
            if _u(data, "<q", at) == 0:
                break
    return out


def _pe_fields(data: bytes) -> list[Field]:
    lfanew = _u(data, "<I", 0x3C)
    coff = lfanew + 4
    optsize = _u(data, "<H", coff + 16)
    nsec = _u(data, "<H", coff + 2)
    opt = coff + 20
    out = [Field(0x3C, 4, "e_lfanew"), Field(coff + 2, 2, "NumberOfSections"),
           Field(coff + 8, 4, "PointerToSymbolTable"), Field(coff + 12, 4, "NumberOfSymbols"),
           Field(coff + 16, 2, "SizeOfOptionalHeader"), Field(opt, 2, "optional magic"),
           Field(opt + 108, 4, "NumberOfRvaAndSizes")]
    for d in (0, 1, 13):
        out += [Field(opt + 112 + 8 * d, 4, f"dir{d} rva"), Field(opt + 116 + 8 * d, 4,
                                                                   f"dir{d} size")]
    secs = []
    for i in range(nsec):
        at = opt + optsize + 40 * i
        out += [Field(at, 8, "section name"), Field(at + 8, 4, "VirtualSize"),
                Field(at + 12, 4, "VirtualAddress"), Field(at + 16, 4, "SizeOfRawData"),
                Field(at + 20, 4, "PointerToRawData"), Field(at + 36, 4, "Characteristics")]
        secs.append((_u(data, "<I", at + 12), _u(data, "<I", at + 16), _u(data, "<I", at + 20)))

    def rva(r: int) -> int | None:
        return next((ptr + r - va for va, raw, ptr in secs if va <= r < va + raw), None)

    symptr, nsym = _u(data, "<I", coff + 8), _u(data, "<I", coff + 12)
    if symptr and symptr + 18 * nsym + 4 <= len(data):
        out.append(Field(symptr + 18 * nsym, 4, "string table size"))
    exp = rva(_u(data, "<I", opt + 112))
    if exp is not None and _u(data, "<I", opt + 112):
        out += [Field(exp + 24, 4, "NumberOfNames"), Field(exp + 32, 4, "AddressOfNames")]
        names = rva(_u(data, "<I", exp + 32))
        for k in range(min(_u(data, "<I", exp + 24), 16) if names is not None else 0):
            out.append(Field(names + 4 * k, 4, "export name RVA"))
    imp = rva(_u(data, "<I", opt + 120))
    if imp is not None and _u(data, "<I", opt + 120):
        for k in range(8):
            at = imp + 20 * k
            if at + 20 > len(data) or not any(data[at : at + 20]):
                break
            out.append(Field(at + 12, 4, "import name RVA"))
    return out


def _ar_fields(data: bytes) -> list[Field]:
    out: list[Field] = []
    at = 8
    while at + 60 <= len(data):
        out += [Field(at, 16, "member name", ascii=True),
                Field(at + 48, 10, "member size", ascii=True), Field(at + 58, 2, "terminator")]
        size = int(data[at + 48 : at + 58])
        name = data[at : at + 16].rstrip()
        if data[at + 60 : at + 64] == b"\x7fELF":
            out += _elf_fields(data, at + 60)
        elif name == b"//":
            out.append(Field(at + 60, 8, "long names"))
        at += 60 + size + (size & 1)
    return out


def fields_of(name: str, data: bytes) -> list[Field]:
    kind = sniff(data[:1024])
    if kind == "elf" or kind == "cubin":
        out = _elf_fields(data)
    elif kind == "pe":
        out = _pe_fields(data)
    elif kind == "ar":
        out = _ar_fields(data)
    else:
        out = []
    return out + _fatbin_fields(data)


NAMES = sorted(p.name for p in BIN.iterdir()
               if p.suffix in (".so", ".a", ".dll", ".fatbin", ".o", ".cubin") or p.name == "prog")
DATA = {n: (BIN / n).read_bytes() for n in NAMES}
FIELDS = {n: fields_of(n, DATA[n]) for n in NAMES}
GROUPS = {
    "elf": [n for n in NAMES if n.endswith((".so", ".o")) or n == "prog"],
    "ar": [n for n in NAMES if n.endswith(".a")],
    "pe": [n for n in NAMES if n.endswith(".dll")],
    "raw": [n for n in NAMES if n.endswith((".fatbin", ".cubin"))],
}


def test_every_fixture_has_fields() -> None:
    for n in NAMES:
        assert FIELDS[n], n
    assert sum(len(v) for v in GROUPS.values()) == len(NAMES)


def _value(draw: st.DrawFn, f: Field, data: bytes, others: list[int]) -> bytes:
    if f.ascii:
        choice = draw(st.sampled_from(["num", "huge", "junk", "near"]))
        if choice == "num":
            text = str(draw(st.integers(0, 10**9)))
        elif choice == "huge":
            text = "9" * draw(st.integers(1, f.width))
        elif choice == "near":
            old = data[f.offset : f.offset + f.width].strip()
            base = int(old) if old.isdigit() else 0
            text = str(max(0, base + draw(st.integers(-64, 64))))
            if f.width == 16:
                text = "/" + text  # a long-name reference
        else:
            text = draw(st.text("0123456789/ abc#`\n", max_size=f.width))
        return text.encode()[: f.width].ljust(f.width)
    old = int.from_bytes(data[f.offset : f.offset + f.width], "little")
    top = (1 << (8 * f.width)) - 1
    size = len(data)
    specials = [0, 1, 2, 7, 8, 16, 24, 56, 64, top, top - 1, top >> 1, old + 1, old - 1,
                old + 8, old - 8, old + 4096, old * 2, old // 2, size, size - 1, size + 1,
                size - 8, size // 2, 1 << 16, 1 << 31, 1 << 32, *others]
    v = draw(st.one_of(st.sampled_from(specials), st.integers(0, top)))
    return (v & top).to_bytes(f.width, "little")


@dataclasses.dataclass(frozen=True)
class Mutant:
    """A fixture and the edits made to it: small to print when a case fails."""

    name: str
    edits: tuple[tuple[int, str, bytes], ...]  # (offset, field, new bytes)
    cut: int | None
    chunk: int

    @property
    def data(self) -> bytes:
        buf = bytearray(DATA[self.name])
        for off, _what, value in self.edits:
            buf[off : off + len(value)] = value
        if self.cut is not None:
            del buf[self.cut :]
        return bytes(buf)


@st.composite
def mutants(draw: st.DrawFn, names: list[str]) -> Mutant:
    name = draw(st.sampled_from(names))
    data = DATA[name]
    fields = FIELDS[name]
    others = sorted({f.offset for f in fields})
    edits = []
    for _ in range(draw(st.integers(1, 4))):
        f = fields[draw(st.integers(0, len(fields) - 1))]
        pick = draw(st.lists(st.sampled_from(others), min_size=0, max_size=2))
        edits.append((f.offset, f.what, _value(draw, f, data, pick)))
    cut = draw(st.integers(0, len(data))) if draw(st.integers(0, 9)) == 0 else None
    chunk = draw(st.sampled_from([64, 509, 1024, 4096]))
    return Mutant(name, tuple(edits), cut, chunk)


@contextlib.contextmanager
def time_limit(seconds: int) -> Iterator[None]:
    def boom(signum: int, frame: object) -> None:
        raise TimeoutError(f"read_binary did not finish within {seconds} s of CPU time")

    # CPU time, not the wall clock a loaded machine stretches
    old = signal.signal(signal.SIGPROF, boom)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, old)


def _read(name: str, data: bytes, chunk: int | None) -> list[Binary] | str:
    kind = sniff(data[:1024])
    if kind is None:
        return "not a binary"

    def chunks() -> Iterator[bytes]:
        if chunk is None:
            yield data
        else:
            for at in range(0, len(data), chunk):
                yield data[at : at + chunk]

    try:
        return read_binary(name, len(data), chunks, kind)
    except InputError as exc:
        assert "\n" not in str(exc) and exc.problem.strip() == exc.problem
        assert exc.path == name
        return f"InputError: {exc.problem}"


STATS = {"cases": 0, "slowest": 0.0}


def _check(m: Mutant) -> None:
    name, data, chunk = m.name, m.data, m.chunk
    t0 = time.process_time()
    with time_limit(SECONDS):
        whole = _read(name, data, None)
        streamed = _read(name, data, chunk)
    STATS["cases"] += 1
    spent = time.process_time() - t0
    STATS["slowest"] = max(STATS["slowest"], spent)
    if spent > 0.5 and os.environ.get("CUWHEEL_FUZZ_LOG"):  # slow mutants, to look into
        with open(os.environ["CUWHEEL_FUZZ_LOG"], "a") as log:
            log.write(f"{spent:.2f}s {m!r}\n")
    for res in (whole, streamed):
        if isinstance(res, list):
            for b in res:
                assert isinstance(b, Binary)
                for a in b.anomalies:
                    assert a and "\n" not in a and a.strip() == a, a
    # The two ways of reading agree: both unreadable, or the same Binaries.
    assert isinstance(whole, list) == isinstance(streamed, list), (whole, streamed)
    if isinstance(whole, list):
        assert whole == streamed, _diff(whole, streamed)


def _diff(a: list[Binary], b: list[Binary]) -> str:
    """The first field where two reads of the same bytes differ."""
    if len(a) != len(b):
        return f"{len(a)} binaries vs {len(b)}"
    for x, y in zip(a, b, strict=True):
        for f in dataclasses.fields(Binary):
            if getattr(x, f.name) != getattr(y, f.name):
                return f"{f.name}: {getattr(x, f.name)!r:.600} vs {getattr(y, f.name)!r:.600}"
    return "?"


def _settings(ci_examples: int):  # type: ignore[no-untyped-def]
    return settings(max_examples=_FUZZ_N or ci_examples, deadline=None, derandomize=_FIXED,
                    database=None, suppress_health_check=list(HealthCheck))


@pytest.mark.parametrize("group", sorted(GROUPS))
def test_structure_fuzz(group: str) -> None:
    names = GROUPS[group]

    @_settings({"elf": 150, "ar": 60, "pe": 80, "raw": 40}[group])
    @given(m=mutants(names))
    def run(m: Mutant) -> None:
        _check(m)

    before = STATS["cases"]
    run()
    # (shown with -s: how many mutants this run read, and the slowest pair of reads)
    print(f"\nfuzz {group}: {STATS['cases'] - before} mutants, slowest "
          f"{STATS['slowest']:.2f} s")
