"""What an ELF file asks of the dynamic linker (System V gABI; LSB Core, "Symbol
Versioning"): the defined and undefined names of ``.dynsym``, the versions that
``.gnu.version_r`` / ``.gnu.version_d`` give them through ``.gnu.version``, and the
DT_RPATH / DT_RUNPATH search paths.  The bytes come from elf.py's reader; every record
is bounds-checked here, and what is beyond a budget is an anomaly, not read."""

from __future__ import annotations

import contextlib
import struct
import sys
from array import array
from collections.abc import Iterator
from dataclasses import dataclass

from cuwheel.model.inventory import UndefinedSymbol, VersionNeed
from cuwheel.read.bytes.tables import Anomalies, StringTable

__all__ = [
    "DT_RPATH",
    "DT_RUNPATH",
    "EXPORTS",
    "MAX_PATH_ENTRIES",
    "MAX_PATH_LIST",
    "MAX_SYMBOLS",
    "MAX_UNDEFINED",
    "MAX_VERSION_RECORDS",
    "SHT_GNU_VERDEF",
    "SHT_GNU_VERNEED",
    "SHT_GNU_VERSYM",
    "STATIC_CUDART",
    "VERSION_SECTIONS",
    "Symbols",
    "dynamic_symbols",
    "exports_read",
    "has_static_cudart",
    "rodata_windows",
    "search_paths",
]

# One 16-bit index per .dynsym entry, the versions required of each needed library, and
# the versions this file defines.
SHT_GNU_VERSYM, SHT_GNU_VERNEED, SHT_GNU_VERDEF = 0x6FFFFFFF, 0x6FFFFFFE, 0x6FFFFFFD
VERSION_SECTIONS = {SHT_GNU_VERSYM: ".gnu.version", SHT_GNU_VERNEED: ".gnu.version_r",
                    SHT_GNU_VERDEF: ".gnu.version_d"}
VER_FLG_BASE = 1
# Budgets per binary, far above real libraries (libtorch_cuda.so: 75k dynamic symbols).
MAX_SYMBOLS = 2_000_000  # defined dynamic symbols

# Whether the names of the defined symbols are decoded (inspect(exports=False) turns it
# off for a reading that never shows them: a C++ library exports tens of thousands, most of
# a one-library inspect's time). A process switch, so that forked workers inherit it.
EXPORTS = [True]


@contextlib.contextmanager
def exports_read(on: bool) -> Iterator[None]:
    """While inside, exported names are decoded (``on``) or left out (``Binary.exported``
    empty; the undefined symbols and versions a check judges are read either way)."""
    before = EXPORTS[0]
    EXPORTS[0] = on
    try:
        yield
    finally:
        EXPORTS[0] = before
MAX_UNDEFINED = 2_000_000  # undefined dynamic symbols (libtorch_cpu.so: 9k)
# .gnu.version_r / .gnu.version_d records walked, all chains together (real files: under
# a hundred; the chains only go forward, so this bounds the walk of a hostile one).
MAX_VERSION_RECORDS = 100_000
DT_RPATH, DT_RUNPATH = 15, 29
MAX_PATH_ENTRIES = 10_000  # RPATH + RUNPATH entries, after the split on ':'
MAX_PATH_LIST = 64 << 10  # one DT_RPATH / DT_RUNPATH string


def search_paths(paths: list[tuple[int, int]], lists: StringTable,
                 anomalies: Anomalies) -> tuple[list[str], list[str]]:
    """The DT_RPATH and DT_RUNPATH entries of ``paths`` ((tag, string offset) in file
    order), split on ':', at most MAX_PATH_ENTRIES in all."""
    rpath: list[str] = []
    runpath: list[str] = []
    entries = 0
    for tag, val in paths:
        text = lists.get(val)
        if text is None:
            continue
        # Empty entries are kept: ld.so searches the working directory for each
        # ("$ORIGIN:" has two entries, glibc's fillin_rpath).
        parts = text.split(":")
        if entries + len(parts) > MAX_PATH_ENTRIES:
            anomalies.add(f"PT_DYNAMIC: more than {MAX_PATH_ENTRIES} RPATH / "
                          "RUNPATH entries; the rest are not read")
            break
        entries += len(parts)
        (rpath if tag == DT_RPATH else runpath).extend(parts)
    return rpath, runpath


@dataclass
class Symbols:
    exported: list[str]
    undefined: list[UndefinedSymbol]
    version_needs: list[VersionNeed]
    version_defs: list[str]


def dynamic_symbols(
    dynsym: bytes | None,
    cls: int,
    names: StringTable,
    version_at: dict[int, tuple[int, int, int]],
    version_data: dict[int, bytes],
    anomalies: Anomalies,
) -> Symbols:
    """The symbols of a .dynsym (None: the file has none) whose names are in ``names``;
    ``version_at`` gives each versioning section's (offset, size, sh_info) by type and
    ``version_data`` its bytes.  .gnu.version_r and .gnu.version_d give each version
    index a name (and, for a requirement, the library); .gnu.version gives each .dynsym
    entry its index.  A damaged table is an anomaly and the references it would have
    versioned are reported unversioned."""
    out = Symbols([], [], [], [])
    split = None
    if dynsym is not None:
        split = _split_dynsym(dynsym, cls)
        if EXPORTS[0]:
            out.exported = _defined_symbols(split, names, anomalies)
        elif split.defined_over:  # the bound is a fact of the table, decoded or not
            _defined_symbols(_Dynsym(0, [], True, [], False), names, anomalies)
    index: dict[int, tuple[str, str | None]] = {}  # version index -> (name, library)
    budget = [MAX_VERSION_RECORDS]
    data = version_data.get(SHT_GNU_VERNEED)
    if data is not None:
        count = version_at[SHT_GNU_VERNEED][2]
        out.version_needs = _version_needs(data, count, names, index, budget, anomalies)
    data = version_data.get(SHT_GNU_VERDEF)
    if data is not None:
        count = version_at[SHT_GNU_VERDEF][2]
        out.version_defs = _version_defs(data, count, names, index, budget, anomalies)
    if split is not None:
        out.undefined = _undefined_symbols(split, version_data.get(SHT_GNU_VERSYM), index,
                                           names, anomalies)
    return out


@dataclass
class _Dynsym:
    """One pass over .dynsym: the name offsets of the defined GLOBAL / WEAK / UNIQUE
    symbols, and (table index, name offset, weak) of the undefined GLOBAL / WEAK ones,
    each list cut at its limit (``*_over``: more were there)."""

    count: int  # entries in the table
    defined: list[int]
    defined_over: bool
    undefined: list[tuple[int, int, bool]]
    undefined_over: bool


def _split_dynsym(data: bytes, cls: int) -> _Dynsym:
    width = 24 if cls == 2 else 16
    usable = len(data) - len(data) % width
    fmt, at = ("<IBBHQQ", (0, 1, 3)) if cls == 2 else ("<IIIBBH", (0, 3, 5))
    i_name, i_info, i_shndx = at
    defined: list[int] = []
    undefined: list[tuple[int, int, bool]] = []
    d_over = u_over = False
    for i, rec in enumerate(struct.iter_unpack(fmt, data[:usable])):
        off = rec[i_name]
        if not off:
            continue
        bind = rec[i_info] >> 4
        # st_shndx 0 is SHN_UNDEF; binding 1 GLOBAL, 2 WEAK, 10 GNU_UNIQUE
        if rec[i_shndx]:
            if bind in (1, 2, 10) and not d_over:
                if len(defined) >= MAX_SYMBOLS:
                    d_over = True
                else:
                    defined.append(off)
        elif bind in (1, 2) and not u_over:
            if len(undefined) >= MAX_UNDEFINED:
                u_over = True
            else:
                undefined.append((i, off, bind == 2))
        if d_over and u_over:
            break
    return _Dynsym(usable // width, defined, d_over, undefined, u_over)


def _defined_symbols(split: _Dynsym, names: StringTable, anomalies: Anomalies) -> list[str]:
    """Names of the defined GLOBAL / WEAK / UNIQUE symbols, in table order, once each."""
    if split.defined_over:
        anomalies.add(f".dynsym: more than {MAX_SYMBOLS} defined symbols; the rest "
                      "are not read")
    return list(dict.fromkeys(n for n in names.many(split.defined) if n is not None))


def _record(table: str, data: bytes, at: int, width: int, budget: list[int],
            anomalies: Anomalies) -> bool:
    """Whether the next record of a version chain may be read: one more of the budget
    spent, and the ``width`` bytes at ``at`` inside the table (else an anomaly)."""
    if budget[0] <= 0:
        anomalies.add(f"{table}: more than {MAX_VERSION_RECORDS} records; the rest are not "
                      "read")
        return False
    budget[0] -= 1
    if at + width > len(data):
        anomalies.add(f"{table}: entry at 0x{at:x} lies outside its {len(data)} bytes")
        return False
    return True


def _version_needs(data: bytes, count: int, names: StringTable,
                   index: dict[int, tuple[str, str | None]], budget: list[int],
                   anomalies: Anomalies) -> list[VersionNeed]:
    """The Elf_Verneed chain (16-byte records: vn_version, vn_cnt, vn_file, vn_aux,
    vn_next), each with its Elf_Vernaux chain (16 bytes: vna_hash, vna_flags, vna_other,
    vna_name, vna_next).  ``count`` is sh_info, the number of entries.  Offsets are
    relative and unsigned, so the walk only goes forward; it stops at a zero next
    offset, after ``count`` entries, or when ``budget`` records are spent."""
    out: list[VersionNeed] = []
    at = 0
    for _ in range(count):
        if not _record(".gnu.version_r", data, at, 16, budget, anomalies):
            break
        _ver, cnt, file_off, aux, nxt = struct.unpack_from("<HHIII", data, at)
        library = names.get(file_off) or ""
        versions: list[str] = []
        a = at + aux
        for _ in range(cnt):
            if budget[0] <= 0:
                break
            budget[0] -= 1
            if a + 16 > len(data):
                anomalies.add(f".gnu.version_r: auxiliary entry at 0x{a:x} lies outside "
                              f"its {len(data)} bytes")
                break
            _hash, _flags, other, name_off, anext = struct.unpack_from("<IHHII", data, a)
            name = names.get(name_off)
            if name is not None:
                versions.append(name)
                index.setdefault(other & 0x7FFF, (name, library))
            if not anext:
                break
            a += anext
        out.append(VersionNeed(library, tuple(versions)))
        if not nxt:
            break
        at += nxt
    return out


def _version_defs(data: bytes, count: int, names: StringTable,
                  index: dict[int, tuple[str, str | None]], budget: list[int],
                  anomalies: Anomalies) -> list[str]:
    """The Elf_Verdef chain (20-byte records: vd_version, vd_flags, vd_ndx, vd_cnt,
    vd_hash, vd_aux, vd_next); a definition's name is its first Elf_Verdaux (8 bytes:
    vda_name, vda_next), the others name its parents.  The base entry (VER_FLG_BASE)
    repeats the SONAME and is left out."""
    out: list[str] = []
    at = 0
    for _ in range(count):
        if not _record(".gnu.version_d", data, at, 20, budget, anomalies):
            break
        _ver, flags, ndx, cnt, _hash, aux, nxt = struct.unpack_from("<HHHHIII", data, at)
        if cnt:
            if at + aux + 8 > len(data):
                anomalies.add(f".gnu.version_d: auxiliary entry at 0x{at + aux:x} lies "
                              f"outside its {len(data)} bytes")
            else:
                name = names.get(struct.unpack_from("<I", data, at + aux)[0])
                if name is not None:
                    index.setdefault(ndx & 0x7FFF, (name, None))
                    if not flags & VER_FLG_BASE:
                        out.append(name)
        if not nxt:
            break
        at += nxt
    return out


def _undefined_symbols(split: _Dynsym, versym: bytes | None,
                       index: dict[int, tuple[str, str | None]], names: StringTable,
                       anomalies: Anomalies) -> list[UndefinedSymbol]:
    """The undefined GLOBAL / WEAK dynamic symbols in table order, once per (name,
    version), each with the version its .gnu.version entry names (index 0 and 1 are
    local and unversioned; bit 15 marks a hidden version)."""
    vers: array[int] = array("H")
    if versym is not None:
        vers.frombytes(versym[: len(versym) - len(versym) % 2])
        if sys.byteorder != "little":  # pragma: no cover - the readers are little-endian
            vers.byteswap()
        if len(vers) < split.count:
            anomalies.add(f".gnu.version: {len(vers)} entries for {split.count} "
                          "dynamic symbols; the rest are read as unversioned")
    nvers = len(vers)
    if split.undefined_over:
        anomalies.add(f".dynsym: more than {MAX_UNDEFINED} undefined symbols; the rest "
                      "are not read")
    picked = [(off, vers[i] & 0x7FFF if i < nvers else 1, weak)
              for i, off, weak in split.undefined]  # (name offset, version index, weak)
    out: list[UndefinedSymbol] = []
    seen: set[tuple[str, int]] = set()
    unknown: int | None = None
    resolved = names.many(p[0] for p in picked)
    for (_, ver, weak), name in zip(picked, resolved, strict=True):
        if name is None or (name, ver) in seen:
            continue
        seen.add((name, ver))
        version = library = None
        if ver > 1:
            hit = index.get(ver)
            if hit is None:
                if unknown is None:
                    unknown = ver
            else:
                version, library = hit
        out.append(UndefinedSymbol(name, version, library, weak))
    if unknown is not None:
        anomalies.add(f".gnu.version: version index {unknown} names no version in "
                      ".gnu.version_r or .gnu.version_d (read as unversioned)")
    return out


# The CUDA runtime's shared-memory name format, in .rodata wherever libcudart_static is
# linked in, stripped or not (docs/formats.md#a-statically-linked-cuda-runtime).
STATIC_CUDART = b"/cudart.shm."
_RODATA_WINDOW = 8 << 20


def rodata_windows(loads: list[tuple[int, int, int]], size: int) -> list[tuple[int, int]]:
    """(offset, length) of the parts of a file where .rodata sits, from its PT_LOAD
    segments' (flags, offset, size): the start of each read-only segment after the first
    (ld -z separate-code puts .rodata first there), else, in older layouts without one,
    the end of each executable segment (.rodata follows .text); 8 MiB of each at most.
    Known from the program headers alone, so a streamed file is searched where a file
    on disk is.  libcudart_static, linked last, puts its strings at the end of .rodata:
    past the window of a .rodata over 8 MiB, which is then not searched."""
    fits = [(f, off, n) for f, off, n in loads if n and off + n <= size]
    ro = [(off, min(n, _RODATA_WINDOW)) for f, off, n in fits if f & 7 == 4 and off]
    if ro:
        return ro
    return [(off + n - min(n, _RODATA_WINDOW), min(n, _RODATA_WINDOW))
            for f, off, n in fits if f & 7 == 5]


def has_static_cudart(data: bytes) -> bool:
    return STATIC_CUDART in data
