"""Build small ELF64, PE32+ and ar files with struct.pack, for tests of hostile inputs.

Independent of cuwheel.  Every field a hostile file could lie in can be set by hand:
section name offsets, offsets and sizes that disagree with the data, program headers,
dynamic entries.  Layouts follow the System V gABI and the Microsoft PE format spec.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

SIGNATURE = b"\x50\xed\x55\xba\x01\x00\x10\x00"


@dataclass
class Sec:
    """One ELF section.  ``data`` is placed in the file unless ``offset`` is given; ``size``
    defaults to len(data); ``name_off`` overrides the offset of the name in .shstrtab."""

    name: str
    data: bytes = b""
    sh_type: int = 1  # SHT_PROGBITS
    flags: int = 2  # SHF_ALLOC
    align: int = 8
    addr: int | None = None  # default: the file offset (one identity PT_LOAD)
    offset: int | None = None
    size: int | None = None
    link: int = 0
    entsize: int = 0
    name_off: int | None = None


@dataclass
class Elf:
    sections: list[Sec] = field(default_factory=list)
    # (p_type, p_flags, p_offset, p_vaddr, p_filesz); None: one PT_LOAD over the file,
    # plus PT_DYNAMIC over a section called .dynamic if there is one
    phdrs: list[tuple[int, int, int, int, int]] | None = None
    e_type: int = 3
    machine: int = 62
    shstrtab: bytes | None = None  # replaces the generated one (names by name_off)
    shoff: int | None = None
    shnum: int | None = None
    shstrndx: int | None = None


def elf64(spec: Elf) -> bytes:
    names = bytearray(b"\0")
    name_offs = []
    for s in spec.sections:
        if s.name_off is not None:
            name_offs.append(s.name_off)
        else:
            name_offs.append(len(names))
            names += s.name.encode() + b"\0"
    shstr_name = len(names)
    names += b".shstrtab\0"
    shstrtab = bytes(names) if spec.shstrtab is None else spec.shstrtab
    nph = 2 if spec.phdrs is None else len(spec.phdrs)
    out = bytearray(64 + 56 * nph)
    placed: list[tuple[int, int]] = []
    for s in spec.sections:
        if s.offset is None and s.sh_type != 8:
            align = max(1, s.align)
            out += bytes(-len(out) % align)
            placed.append((len(out), len(s.data)))
            out += s.data
        else:
            placed.append((s.offset or 0, len(s.data)))
    shstr_at = len(out)
    out += shstrtab
    out += bytes(-len(out) % 8)
    shoff = len(out)
    headers = [bytes(64)]
    for s, (off, n), name_off in zip(spec.sections, placed, name_offs, strict=True):
        size = n if s.size is None else s.size
        addr = off if s.addr is None else s.addr
        headers.append(struct.pack("<IIQQQQIIQQ", name_off, s.sh_type, s.flags, addr, off,
                                   size, s.link, 0, s.align, s.entsize))
    headers.append(struct.pack("<IIQQQQIIQQ", shstr_name, 3, 0, 0, shstr_at, len(shstrtab),
                               0, 0, 1, 0))
    out += b"".join(headers)
    total = len(out)
    if spec.phdrs is None:
        phdrs = [(1, 5, 0, 0, total)]
        dyn = next(((off, n) for s, (off, n) in zip(spec.sections, placed, strict=True)
                    if s.name == ".dynamic"), None)
        phdrs.append((2, 6, dyn[0], dyn[0], dyn[1]) if dyn else (0, 0, 0, 0, 0))
    else:
        phdrs = spec.phdrs
    for i, (p_type, p_flags, p_off, p_vaddr, p_filesz) in enumerate(phdrs):
        struct.pack_into("<IIQQQQQQ", out, 64 + 56 * i, p_type, p_flags, p_off, p_vaddr,
                         p_vaddr, p_filesz, p_filesz, 8)
    shnum = len(headers) if spec.shnum is None else spec.shnum
    shstrndx = len(headers) - 1 if spec.shstrndx is None else spec.shstrndx
    ident = b"\x7fELF\x02\x01\x01" + bytes(9)
    struct.pack_into("<16sHHIQQQIHHHHHH", out, 0, ident, spec.e_type, spec.machine, 1, 0,
                     64, shoff if spec.shoff is None else spec.shoff, 0, 64, 56, len(phdrs),
                     64, shnum, shstrndx)
    return bytes(out)


def dynamic(entries: list[tuple[int, int]]) -> bytes:
    return b"".join(struct.pack("<qQ", t, v) for t, v in [*entries, (0, 0)])


def dynsym(names: list[int]) -> bytes:
    """Defined GLOBAL FUNC symbols whose st_name are ``names`` (a null symbol first)."""
    syms = [bytes(24)] + [struct.pack("<IBBHQQ", n, 0x12, 0, 1, 0, 0) for n in names]
    return b"".join(syms)


def fatbin_container(entries: list[tuple[int, int, bytes]]) -> bytes:
    """A fatbin container of (kind, sm, payload) entries: kind 1 PTX, 2 cubin; payloads
    stored (no compression), padded to 8."""
    body = bytearray()
    for kind, sm, payload in entries:
        payload = payload + bytes(-len(payload) % 8)
        hdr = struct.pack("<HHIQIIHHIIIQQQ", kind, 0x101, 64, len(payload), 0, 0, 0, 1, sm,
                          0, 0, 0x11, 0, len(payload))
        body += hdr + payload
    return struct.pack("<IHHQ", 0xBA55ED50, 1, 16, len(body)) + bytes(body)


def ar(members: list[tuple[bytes, bytes]], long_names: bytes | None = None) -> bytes:
    """A GNU ar archive: members (raw 16-byte name field, data); ``long_names`` is the
    ``//`` member's data."""
    out = bytearray(b"!<arch>\n")

    def member(name: bytes, data: bytes) -> None:
        out.extend(name.ljust(16) + b"0".ljust(12) + b"0".ljust(6) + b"0".ljust(6)
                   + b"644".ljust(8) + str(len(data)).encode().ljust(10) + b"`\n")
        out.extend(data)
        if len(data) & 1:
            out.extend(b"\n")

    if long_names is not None:
        member(b"//", long_names)
    for name, data in members:
        member(name, data)
    return bytes(out)


@dataclass
class PeSec:
    name: bytes  # the 8-byte name field (b"/4" for a long name at string-table offset 4)
    data: bytes = b""
    va: int = 0
    chars: int = 0x40000040  # initialised data, readable
    rawptr: int | None = None
    rawsize: int | None = None
    vsize: int | None = None


def pe32plus(sections: list[PeSec], *, dirs: dict[int, tuple[int, int]] | None = None,
             strtab: bytes | None = None, nsec: int | None = None) -> bytes:
    """A PE32+ DLL.  ``dirs``: data directory index -> (rva, size).  ``strtab``: a COFF
    string table (its 4-byte size field included) put after a one-symbol table."""
    dirs = dirs or {}
    optsize = 112 + 16 * 8
    lfanew = 64
    head = 64 + 24 + optsize + 40 * len(sections)
    out = bytearray(head)
    out[:2] = b"MZ"
    struct.pack_into("<I", out, 0x3C, lfanew)
    placed = []
    for s in sections:
        if s.rawptr is None:
            out += bytes(-len(out) % 16)
            placed.append(len(out))
            out += s.data
        else:
            placed.append(s.rawptr)
    symptr = nsym = 0
    if strtab is not None:  # one (empty) symbol, then the string table
        symptr, nsym = len(out), 1
        out += bytes(18) + strtab
    struct.pack_into("<4sHHIIIHH", out, lfanew, b"PE\0\0", 0x8664,
                     len(sections) if nsec is None else nsec, 0, symptr, nsym, optsize,
                     0x2022)
    opt = lfanew + 24
    struct.pack_into("<H", out, opt, 0x20B)
    struct.pack_into("<Q", out, opt + 24, 0x180000000)
    struct.pack_into("<I", out, opt + 108, 16)
    for i, (rva, size) in dirs.items():
        struct.pack_into("<II", out, opt + 112 + 8 * i, rva, size)
    at = opt + optsize
    for s, ptr in zip(sections, placed, strict=True):
        raw = len(s.data) if s.rawsize is None else s.rawsize
        vsize = len(s.data) if s.vsize is None else s.vsize
        struct.pack_into("<8sIIIIIIHHI", out, at, s.name[:8].ljust(8, b"\0"), vsize, s.va,
                         raw, ptr, 0, 0, 0, 0, s.chars)
        at += 40
    return bytes(out)


def elf_header_only(e_type: int = 1) -> bytes:
    """A 64-byte ELF64 header with no program or section headers (an empty object)."""
    out = bytearray(64)
    struct.pack_into("<16sHHIQQQIHHHHHH", out, 0, b"\x7fELF\x02\x01\x01" + bytes(9), e_type,
                     62, 1, 0, 0, 0, 0, 64, 56, 0, 64, 0, 0)
    return bytes(out)
