"""Whether the host code of an x86-64 ELF reads the device variables of its kernel-less
fatbin containers (docs/compat.md#kernel-less-containers).

A container with no kernel can fail nothing but a host read of its variables: the CUDA
runtime loads a module when a kernel of it is launched or one of its variables is used
(``cudaMemcpyFromSymbol``, ``cudaGetSymbolAddress``, ...), and each of those calls takes
the address of the variable's host shadow.  nvcc's registration code passes that address
to ``__cudaRegisterVar`` beside the variable's name (``lea rsi, shadow`` next to ``lea
rdx/rcx, "name"``), after taking the address of the container's wrapper record
(docs/formats.md#wrapper-records).  A shadow whose address is taken nowhere else, held in
no relocated pointer and exported by no dynamic symbol is never read.

This reads instructions by their encoding, not by disassembly: every RIP-relative
``lea``/``mov`` with a REX.W prefix (``48``-``4f``, then ``8d``/``8b``/``89``, a ModRM
byte with mod 00 and r/m 101, a 32-bit displacement).  A byte run that only looks like
one adds a reference, never removes one, so a mistake makes a variable read, not unread.
Anything it cannot account for (a variable whose registration is not found, another
machine, a file it cannot lay out) leaves the answer unknown (None).
"""

from __future__ import annotations

import bisect
import dataclasses
import re
import struct
from collections.abc import Callable, Iterable, Sequence

from cuwheel.model.inventory import CodeKind, FatbinContainer

__all__ = ["MAX_HOST_FILE", "needs_host_reads", "read_host_reads", "with_host_reads"]

# Host files laid out for the search at most (read whole); larger ones stay unknown.
MAX_HOST_FILE = 1 << 30
# RIP-relative operands kept at most (cuBLASLt 12.9's 123 MB of code has 361,464): past
# it the answer is unknown rather than memory spent on a file made of them.
MAX_REFERENCES = 1 << 22
_EM_X86_64 = 62
_ET_DYN = 3
_SHF_WRITE, _SHF_ALLOC, _SHF_EXECINSTR = 1, 2, 4
_SHT_NOBITS, _SHT_RELA, _SHT_DYNSYM = 8, 4, 11
_R_X86_64_RELATIVE = 8
_WRAPPER_MAGIC = 0x466243B1
_RIP = re.compile(rb"[\x48-\x4f][\x89\x8b\x8d][\x05\x0d\x15\x1d\x25\x2d\x35\x3d]", re.S)
_RSI, _RDX, _RCX = 6, 2, 1
# The shadow's lea sits beside the name's in one call's argument set; references this
# close to a registration are the registration's own (-O0 code loads an address twice).
_NEAR = 48
_MAX_NAME = 4096
# Variables of one kernel-less container accounted for at most.
_MAX_VARIABLES = 256


class _Unknown(Exception):
    """The file cannot be laid out for the search."""


@dataclasses.dataclass(frozen=True)
class _Section:
    name: str
    sh_type: int
    flags: int
    addr: int
    off: int
    size: int


def _sections(data: memoryview) -> list[_Section]:
    if len(data) < 64 or bytes(data[:6]) != b"\x7fELF\x02\x01":
        raise _Unknown
    e_type, e_machine = struct.unpack_from("<HH", data, 16)
    if e_machine != _EM_X86_64 or e_type != _ET_DYN:
        raise _Unknown
    shoff, = struct.unpack_from("<Q", data, 40)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 58)
    if shentsize != 64 or not 0 < shnum <= 0xFFFF or shoff + shnum * 64 > len(data):
        raise _Unknown
    raw = [struct.unpack_from("<IIQQQQ", data, shoff + i * 64) for i in range(shnum)]
    if shstrndx >= shnum:
        raise _Unknown
    _, _, _, _, str_off, str_size = raw[shstrndx]
    if str_off + str_size > len(data):
        raise _Unknown
    names = bytes(data[str_off : str_off + str_size])
    out = []
    for name_off, sh_type, flags, addr, off, size in raw:
        end = names.find(b"\0", name_off)
        name = names[name_off : end if end >= 0 else len(names)].decode("latin-1")
        if sh_type != _SHT_NOBITS and off + size > len(data):
            raise _Unknown
        out.append(_Section(name, sh_type, flags, addr, off, size))
    return out


class _Layout:
    """The allocated sections by address, for :meth:`at` (bisect, not a scan: a file may
    have 65,535 sections and millions of references)."""

    def __init__(self, sections: Sequence[_Section]) -> None:
        self.sections = sorted((x for x in sections if x.flags & _SHF_ALLOC),
                               key=lambda x: x.addr)
        self.starts = [x.addr for x in self.sections]

    def at(self, addr: int) -> _Section | None:
        k = bisect.bisect_right(self.starts, addr) - 1
        if k < 0:
            return None
        x = self.sections[k]
        return x if addr < x.addr + x.size else None


def _string(data: memoryview, layout: _Layout, addr: int) -> str | None:
    """The NUL-terminated name at ``addr`` in read-only data, or None."""
    s = layout.at(addr)
    if s is None or s.sh_type == _SHT_NOBITS or s.flags & (_SHF_WRITE | _SHF_EXECINSTR):
        return None
    start = s.off + (addr - s.addr)
    end = min(s.off + s.size, start + _MAX_NAME)
    blob = bytes(data[start:end])
    nul = blob.find(b"\0")
    if nul <= 0:
        return None
    return blob[:nul].decode("latin-1")


def _references(data: memoryview, sections: Sequence[_Section]
                ) -> dict[int, list[tuple[int, int, int]]]:
    """Target address -> (instruction address, opcode, ModRM reg) of every RIP-relative
    operand in the executable sections; _Unknown past MAX_REFERENCES."""
    out: dict[int, list[tuple[int, int, int]]] = {}
    count = 0
    for s in sections:
        if not s.flags & _SHF_EXECINSTR or s.sh_type == _SHT_NOBITS:
            continue
        text = bytes(data[s.off : s.off + s.size])
        for m in _RIP.finditer(text):
            i = m.start()
            if i + 7 > len(text):
                break
            rex, op, modrm = text[i], text[i + 1], text[i + 2]
            disp, = struct.unpack_from("<i", text, i + 3)
            reg = ((modrm >> 3) & 7) | (8 if rex & 4 else 0)
            out.setdefault(s.addr + i + 7 + disp, []).append((s.addr + i, op, reg))
            count += 1
            if count > MAX_REFERENCES:
                raise _Unknown
    return out


def _pointed_at(data: memoryview, sections: Sequence[_Section], wanted: set[int]
                ) -> set[int]:
    """Those of ``wanted`` held in relocated pointers (R_X86_64_RELATIVE addends) or named
    by a defined dynamic symbol: what code can reach without an instruction of its own."""
    out: set[int] = set()
    for s in sections:
        if s.sh_type == _SHT_RELA and s.flags & _SHF_ALLOC:
            for _off, info, addend in struct.iter_unpack(
                    "<QQq", bytes(data[s.off : s.off + s.size - s.size % 24])):
                if info & 0xFFFFFFFF == _R_X86_64_RELATIVE and addend in wanted:
                    out.add(addend)
        elif s.sh_type == _SHT_DYNSYM:
            for _name, _info, _other, shndx, value, _size in struct.iter_unpack(
                    "<IBBHQQ", bytes(data[s.off : s.off + s.size - s.size % 24])):
                if shndx and value in wanted:
                    out.add(value)
    return out


def _held(ro: Sequence[bytes], name: str) -> bool:
    """Whether read-only data (``ro``: its sections' bytes) holds ``name`` as a
    NUL-terminated string."""
    want = name.encode("utf-8", "replace") + b"\0"
    for blob in ro:
        at = blob.find(want)
        while at >= 0:
            if at == 0 or blob[at - 1] == 0:
                return True
            at = blob.find(want, at + 1)
    return False


def needs_host_reads(c: FatbinContainer) -> bool:
    """A container whose device code was read for names and holds variables, no kernel."""
    code = [e for e in c.entries if e.kind in (CodeKind.SASS, CodeKind.PTX)]
    return bool(code) and all(e.kernel_names == () for e in code) and any(
        e.data_names for e in code)


def _variables(c: FatbinContainer) -> set[str]:
    return {n for e in c.entries for n in e.data_names or ()}


def read_host_reads(data: memoryview, containers: Iterable[FatbinContainer]
                    ) -> dict[int, tuple[str, ...] | None]:
    """Container offset -> the names of its variables the host code reads (sorted), or
    None when that cannot be told, for each of ``containers`` (kernel-less ones)."""
    wanted = list(containers)
    try:
        sections = _sections(data)
    except (_Unknown, struct.error):
        return {c.offset: None for c in wanted}
    by_name = {s.name: s for s in sections}
    seg, fat = by_name.get(".nvFatBinSegment"), by_name.get(".nv_fatbin")
    if seg is None or seg.sh_type == _SHT_NOBITS:
        return {c.offset: None for c in wanted}
    # Container (by its link-time address) -> its wrapper record's address.
    record_of: dict[int, int] = {}
    blob = bytes(data[seg.off : seg.off + seg.size - seg.size % 24])
    for n, (magic, _version, ptr, _) in enumerate(struct.iter_unpack("<IIQQ", blob)):
        if magic == _WRAPPER_MAGIC:
            record_of.setdefault(ptr, seg.addr + 24 * n)
    try:
        refs = _references(data, sections)
    except _Unknown:
        return {c.offset: None for c in wanted}
    layout = _Layout(sections)
    starts = _function_starts(data, by_name.get(".eh_frame_hdr"))
    if not starts:
        return {c.offset: None for c in wanted}
    starts_set = set(starts)

    def function(a: int) -> int:
        return starts[bisect.bisect_right(starts, a) - 1] if a >= starts[0] else -1

    # The functions that register each module: the one that takes its record's address,
    # and each function whose address that one takes (nvcc's registration callback).
    funcs_of: dict[int, set[int]] = {}
    leas_in: dict[int, list[int]] = {}  # function -> targets of its leas
    for target, hits in refs.items():
        for a, op, _ in hits:
            if op == 0x8D:
                leas_in.setdefault(function(a), []).append(target)
    for record in set(record_of.values()):
        for a, op, _ in refs.get(record, ()):
            if op == 0x8D:
                g = function(a)
                funcs_of.setdefault(record, set()).update(
                    {g} | {t for t in leas_in.get(g, ()) if t in starts_set})
    names_in: dict[int, list[tuple[int, str]]] = {}  # function -> (lea address, name)
    for target, hits in refs.items():
        for a, op, reg in hits:
            if op == 0x8D and reg in (_RDX, _RCX):
                name = _string(data, layout, target)
                if name is not None:
                    names_in.setdefault(function(a), []).append((a, name))
    shadows_near = _shadows(refs, layout)
    ro_cache: list[list[bytes]] = []

    def ro() -> list[bytes]:
        """Read-only data, copied once and only when a variable's name is looked up."""
        if not ro_cache:
            ro_cache.append([bytes(data[x.off : x.off + x.size]) for x in sections
                             if x.flags & _SHF_ALLOC and x.sh_type != _SHT_NOBITS
                             and not x.flags & (_SHF_WRITE | _SHF_EXECINSTR)])
        return ro_cache[0]
    out: dict[int, tuple[str, ...] | None] = {}
    # container -> its variables' registrations (lea of the shadow, the shadow)
    found: dict[int, dict[str, set[tuple[int, int]]]] = {}
    for c in wanted:
        addr = _address(sections, fat, c.offset)
        rec = record_of.get(addr) if addr is not None else None
        funcs = funcs_of.get(rec) if rec is not None else None
        if not funcs:
            out[c.offset] = None  # no registration found for it
            continue
        registered: dict[str, set[tuple[int, int]]] = {}
        for f in funcs:
            for a, name in names_in.get(f, ()):
                for shadow_lea, shadow in shadows_near(a):
                    if function(shadow_lea) == f:
                        registered.setdefault(name, set()).add((shadow_lea, shadow))
        # A variable whose name the host does not hold cannot be registered (the runtime
        # finds a module's variables by name): the compiler's own (__nv_reserved...).
        variables = {v for v in _variables(c) if v in registered or _held(ro(), v)}
        if len(variables) > _MAX_VARIABLES or not variables <= set(registered):
            out[c.offset] = None  # a variable whose registration was not found
            continue
        found[c.offset] = {n: registered[n] for n in variables}
    # one pass over the relocations and dynamic symbols, for the shadows registered
    pointed = _pointed_at(data, sections, {shadow for regs in found.values()
                                           for pairs in regs.values() for _, shadow in pairs})
    for offset, regs in found.items():
        read = set()
        for name, pairs in regs.items():
            for lea, shadow in pairs:
                others = [x for x, _, _ in refs.get(shadow, ()) if abs(x - lea) > _NEAR]
                if others or shadow in pointed:
                    read.add(name)
        out[offset] = tuple(sorted(read))
    return out


def _function_starts(data: memoryview, hdr: _Section | None) -> list[int]:
    """The start address of every function with unwind information, sorted, from
    ``.eh_frame_hdr``'s search table (LSB, "Exception Frames"); [] when there is none or
    its encoding is not the one linkers write (table of (datarel sdata4) pairs)."""
    if hdr is None or hdr.sh_type == _SHT_NOBITS or hdr.size < 12:
        return []
    blob = bytes(data[hdr.off : hdr.off + hdr.size])
    version, ptr_enc, count_enc, table_enc = blob[:4]
    if version != 1 or table_enc != 0x3B or ptr_enc & 0x0F not in (3, 0xB) \
            or count_enc & 0x0F not in (3, 0xB):
        return []
    count, = struct.unpack_from("<I", blob, 8)
    if 12 + 8 * count > len(blob):
        return []
    table = blob[12 : 12 + 8 * count]
    return sorted({hdr.addr + loc for loc, _fde in struct.iter_unpack("<ii", table)})


def _shadows(refs: dict[int, list[tuple[int, int, int]]], layout: _Layout
             ) -> Callable[[int], list[tuple[int, int]]]:
    """A function: a name's lea address -> the (lea address, target) of the ``lea rsi``
    beside it whose target is writable data (a host shadow)."""
    rsi = sorted((a, t) for t, hits in refs.items() for a, op, reg in hits
                 if op == 0x8D and reg == _RSI)
    writable = {t for _, t in rsi
                if (s := layout.at(t)) is not None and s.flags & _SHF_WRITE}
    addrs = [a for a, _ in rsi]

    def near(a: int) -> list[tuple[int, int]]:
        lo = bisect.bisect_left(addrs, a - _NEAR)
        found = []
        for j in range(lo, len(rsi)):
            x, t = rsi[j]
            if x > a + _NEAR:
                break
            if t in writable:
                found.append((x, t))
        found.sort(key=lambda p: abs(p[0] - a))
        return found[:1]

    return near


def _address(sections: Sequence[_Section], fat: _Section | None, offset: int) -> int | None:
    """The link-time address of the byte at file ``offset``."""
    for s in ([fat] if fat is not None else []) + list(sections):
        if s.flags & _SHF_ALLOC and s.sh_type != _SHT_NOBITS and s.off <= offset < s.off + s.size:
            return s.addr + (offset - s.off)
    return None


def with_host_reads(containers: Sequence[FatbinContainer], data: memoryview | None
                    ) -> list[FatbinContainer]:
    """``containers`` with ``host_reads`` filled in for the kernel-less ones that hold
    variables (all None when ``data``, the whole host file, is None)."""
    wanted = [c for c in containers if needs_host_reads(c)]
    if not wanted:
        return list(containers)
    found = read_host_reads(data, wanted) if data is not None else {}
    offsets = {c.offset for c in wanted}
    return [dataclasses.replace(c, host_reads=found.get(c.offset)) if c.offset in offsets
            else c for c in containers]
