"""Host ELF files (System V gABI): section table, dynamic section and dynamic symbols.

Reads by requests on a Scan (see stream.py) so that a library streamed out of a wheel
is never held whole.  pyelftools needs a seekable stream of the whole file, and walking
a 75,000-symbol ``.dynsym`` through it is much slower than ``struct.iter_unpack``, so
the few structures needed are decoded here; tests compare the results with readelf.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from cuwheel.readers.devicecode import PAD_LIMIT, Region
from cuwheel.readers.stream import Scan

__all__ = ["DEVICE_SECTIONS", "ELF_MACHINES", "ElfFacts", "ElfReader"]

ELF_MACHINES = {
    3: "i386",
    20: "ppc",
    21: "ppc64le",
    40: "arm",
    62: "x86_64",
    183: "aarch64",
    190: "cuda",
    243: "riscv64",
}
_TYPES = {1: "object", 2: "executable", 3: "shared", 4: "core"}
# Name -> relocatable? (binary-formats.md 1.1)
DEVICE_SECTIONS = {".nv_fatbin": False, "__nv_relfatbin": True}

PT_LOAD, PT_DYNAMIC = 1, 2
SHT_DYNSYM = 11
DT_NULL, DT_NEEDED, DT_STRTAB, DT_STRSZ, DT_SONAME, DT_RPATH, DT_RUNPATH = 0, 1, 5, 10, 14, 15, 29
# A position-independent executable is ET_DYN; readelf tells it by this flag, and so do we.
DT_FLAGS_1, DF_1_PIE = 0x6FFFFFFB, 0x08000000
# Bytes of the file start kept in full: .dynsym / .dynstr usually sit there, before
# .dynamic, and keeping them avoids a second pass over a streamed file.
HEAD_BYTES = 4 << 20
MAX_TABLE = 256 << 20
# Loadable sections that hold toolchain tables, never embedded data: not searched.
NOT_DATA_SECTIONS = (
    ".eh_frame",
    ".gcc_except_table",
    ".got",
    ".nvFatBinSegment",
    "__nv_module_id",
    ".nvHR",
    ".note",
    ".gnu",
    ".interp",
    ".tdata",
    ".ctors",
    ".dtors",
)
# At most this much of the writable segments is kept for the fatbin wrapper records.
MAX_RW_KEPT = 64 << 20
WRAPPER_MAGIC = 0x466243B1  # .nvFatBinSegment record (binary-formats.md 1.2)


class ElfError(ValueError):
    pass


@dataclass
class ElfFacts:
    file_type: str = ""
    machine: str = ""
    e_machine: int = 0
    sections: list[Region] = field(default_factory=list)
    needed: list[str] = field(default_factory=list)
    rpath: list[str] = field(default_factory=list)
    runpath: list[str] = field(default_factory=list)
    soname: str | None = None
    exported: list[str] = field(default_factory=list)
    # .nvFatBinSegment wrapper records: container file offset -> record version
    # (2 = written by nvcc's device-link step).
    wrappers: dict[int, int] = field(default_factory=dict)


class ElfReader:
    """Requests what it needs from ``scan`` for the ELF image at [base, base + size)."""

    def __init__(
        self,
        scan: Scan,
        base: int,
        size: int,
        *,
        head: bool = True,
        lenient: bool = False,
        skip_code: bool = False,
    ) -> None:
        self.scan = scan
        self.base = base
        self.size = size
        self.facts = ElfFacts()
        self.is_elf = True
        self._lenient = lenient
        self._skip_code = skip_code
        self._head: bytes = b""
        self._want_head = head and size > 64
        self._loads: list[tuple[int, int, int]] = []  # (vaddr, offset, filesz)
        self._dynamic: list[tuple[int, int]] = []
        self._dynstr: bytes | None = None
        self._dynsym_data: bytes | None = None
        self._shdrs: list[tuple[int, int, int, int, int, int, int]] = []
        self._rw: list[tuple[int, bytes]] = []  # writable segments kept while streaming
        self._wrapper_section: tuple[int, int] | None = None
        self._wrapper_bytes: bytes | None = None
        scan.request(base, min(size, 64), self._ehdr)

    # Offsets below are relative to the image; _get adds the base.
    def _get(self, off: int, length: int, cb: object) -> None:
        if off < 0 or length < 0 or off + length > self.size:
            raise ElfError(f"ELF structure at 0x{off:x}+0x{length:x} lies outside the file")
        if length > MAX_TABLE:
            raise ElfError(f"ELF table of {length} bytes is implausibly large")
        if self._head and off + length <= len(self._head):
            cb(self._head[off : off + length])  # type: ignore[operator]
            return
        self.scan.request(self.base + off, length, cb)  # type: ignore[arg-type]

    def _ehdr(self, data: bytes) -> None:
        if len(data) < 52 or data[:4] != b"\x7fELF":
            if self._lenient:  # an archive member that is not an object file
                self.is_elf = False
                return
            raise ElfError("not an ELF file")
        cls, enc = data[4], data[5]
        if enc != 1:
            raise ElfError("big-endian ELF is not supported")
        if cls == 2:
            self._w, self._phsz, self._shsz = "Q", 56, 64
            (e_type, e_machine, _v, _entry, phoff, shoff, _flags, _ehsize, phentsize, phnum,
             shentsize, shnum, shstrndx) = struct.unpack_from("<HHIQQQIHHHHHH", data, 16)
        elif cls == 1:
            self._w, self._phsz, self._shsz = "I", 32, 40
            (e_type, e_machine, _v, _entry, phoff, shoff, _flags, _ehsize, phentsize, phnum,
             shentsize, shnum, shstrndx) = struct.unpack_from("<HHIIIIIHHHHHH", data, 16)
        else:
            raise ElfError(f"unknown ELF class {cls}")
        self._cls = cls
        self.facts.file_type = _TYPES.get(e_type, f"type-{e_type}")
        self.facts.e_machine = e_machine
        self.facts.machine = ELF_MACHINES.get(e_machine, f"machine-{e_machine}")
        if self._want_head and not self.scan.resident:
            self._get(0, min(self.size, HEAD_BYTES), self._take_head)
        if phnum:
            if phentsize != self._phsz:
                raise ElfError(f"program header size {phentsize} is not {self._phsz}")
            self._get(phoff, phnum * phentsize, self._phdrs)
        if shnum:
            if shentsize != self._shsz:
                raise ElfError(f"section header size {shentsize} is not {self._shsz}")
            self._shstrndx = shstrndx
            self._get(shoff, shnum * shentsize, self._sections)

    def _take_head(self, data: bytes) -> None:
        self._head = data

    def _phdrs(self, data: bytes) -> None:
        dyn: tuple[int, int] | None = None
        fmt = "<IIQQQQQQ" if self._cls == 2 else "<IIIIIIII"
        load_flags: list[tuple[int, int, int]] = []
        for rec in struct.iter_unpack(fmt, data):
            if self._cls == 2:
                p_type, flags, off, vaddr, _paddr, filesz = rec[:6]
            else:
                p_type, off, vaddr, _paddr, filesz, _memsz, flags = rec[:7]
            if p_type == PT_LOAD:
                self._loads.append((vaddr, off, filesz))
                load_flags.append((flags, off, filesz))
            elif p_type == PT_DYNAMIC:
                dyn = (off, filesz)
        # With ld's -z separate-code layout (a read-only segment besides the executable
        # one), executable segments hold only code, so the signature scan can skip them.
        # If a device-code section turns out to lie there after all, the caller reads
        # the file again without skipping.
        # The wrapper records (.nvFatBinSegment, flags WA) sit in a writable segment; a
        # streamed file's section table comes too late to ask for them, so keep the
        # writable segments (bounded) as they pass.
        if not self.scan.resident:
            budget = MAX_RW_KEPT
            for f, off, filesz in load_flags:
                # Best effort: a segment outside the file is left for the section table
                # (and its checks) to judge, exactly as for a file read from disk.
                if f & 2 and 0 < filesz <= budget and off + filesz <= self.size:
                    budget -= filesz
                    self._get(off, filesz, lambda b, o=off: self._rw.append((o, b)))
        if self._skip_code and any(f & 7 == 4 for f, _, _ in load_flags):
            for f, off, filesz in load_flags:
                if f & 1 and filesz:
                    self.scan.skip.append((self.base + off, self.base + off + filesz))
        if dyn and dyn[1]:
            self._get(dyn[0], dyn[1], self._dynamic_section)

    def _vaddr_to_off(self, vaddr: int) -> int | None:
        for start, off, filesz in self._loads:
            if start <= vaddr < start + filesz:
                return off + (vaddr - start)
        return None

    def _dynamic_section(self, data: bytes) -> None:
        fmt = "<qQ" if self._cls == 2 else "<iI"
        usable = len(data) - len(data) % struct.calcsize(fmt)
        strtab = strsz = None
        for tag, val in struct.iter_unpack(fmt, data[:usable]):
            if tag == DT_NULL:
                break
            self._dynamic.append((tag, val))
            if tag == DT_STRTAB:
                strtab = val
            elif tag == DT_STRSZ:
                strsz = val
        if strtab is not None and strsz:
            off = self._vaddr_to_off(strtab)
            if off is None:
                raise ElfError("DT_STRTAB points outside every loaded segment")
            self._get(off, strsz, self._dynstr_data)

    def _dynstr_data(self, data: bytes) -> None:
        self._dynstr = data

    def _sections(self, data: bytes) -> None:
        fmt = "<IIQQQQIIQQ" if self._cls == 2 else "<IIIIIIIIII"
        for rec in struct.iter_unpack(fmt, data):
            name, sh_type, flags, _addr, off, size, link, _info, align = rec[:9]
            self._shdrs.append((name, sh_type, off, size, link, flags, align))
        if self._shstrndx < len(self._shdrs):
            _, _, off, size, _, _, _ = self._shdrs[self._shstrndx]
            if size:
                self._get(off, size, self._names)
        for _name, sh_type, off, size, _link, _, _ in self._shdrs:
            if sh_type == SHT_DYNSYM and size:
                self._get(off, size, self._dynsym_bytes)

    def _dynsym_bytes(self, data: bytes) -> None:
        self._dynsym_data = data

    def _names(self, data: bytes) -> None:
        regions = []
        for name_off, sh_type, off, size, _link, flags, align in self._shdrs:
            end = data.find(b"\0", name_off)
            name = data[name_off : end if end >= 0 else len(data)].decode("latin-1")
            if sh_type == 8:  # SHT_NOBITS: no file bytes
                continue
            if off + size > self.size:
                raise ElfError(f"section {name} runs past the end of the file")
            relocatable = DEVICE_SECTIONS.get(name)
            regions.append(
                Region(
                    name=name,
                    start=self.base + off,
                    end=self.base + off + size,
                    device_code=relocatable is not None,
                    relocatable=bool(relocatable),
                    # SHT_PROGBITS, SHF_ALLOC and not SHF_EXECINSTR: loadable data, except
                    # the tables the toolchain itself writes there.
                    searchable=relocatable is None
                    and sh_type == 1
                    and flags & 6 == 2
                    and not name.startswith(NOT_DATA_SECTIONS),
                    # sh_addralign: the pads between the containers of aligned inputs
                    pad=max(16, min(align, PAD_LIMIT)),
                )
            )
        self.facts.sections = regions
        for name_off, _t, off, size, _l, _f, _a in self._shdrs:
            end = data.find(b"\0", name_off)
            if data[name_off:end] == b".nvFatBinSegment" and 0 < size <= MAX_RW_KEPT:
                self._wrapper_section = (off, size)
                if self.scan.resident:
                    self._get(off, size, self._take_wrappers)

    def _take_wrappers(self, data: bytes) -> None:
        self._wrapper_bytes = data

    def _wrappers(self) -> dict[int, int]:
        """Container offset -> wrapper version, from the records' link-time addresses."""
        data = self._wrapper_bytes
        if data is None and self._wrapper_section is not None:
            off, size = self._wrapper_section
            for start, blob in self._rw:
                if start <= off and off + size <= start + len(blob):
                    data = blob[off - start : off - start + size]
        if not data or self.facts.file_type == "object":  # .o: addresses are relocations
            return {}
        out = {}
        for magic, version, addr, _prelinked in struct.iter_unpack(
            "<IIQQ", data[: len(data) - len(data) % 24]
        ):
            where = self._vaddr_to_off(addr) if magic == WRAPPER_MAGIC else None
            if where is not None:
                out[self.base + where] = version
        return out

    def finish(self) -> ElfFacts:
        """Build the facts once the scan is over."""
        facts = self.facts
        facts.wrappers = self._wrappers()
        strs = self._dynstr or b""

        def cstr(off: int) -> str:
            end = strs.find(b"\0", off)
            return strs[off : end if end >= 0 else len(strs)].decode("utf-8", "replace")

        for tag, val in self._dynamic:
            if tag == DT_NEEDED:
                facts.needed.append(cstr(val))
            elif tag == DT_SONAME:
                facts.soname = cstr(val)
            # Empty entries are kept: ld.so searches the working directory for each
            # ("$ORIGIN:" has two entries, glibc's fillin_rpath).
            elif tag == DT_RPATH:
                facts.rpath.extend(cstr(val).split(":"))
            elif tag == DT_RUNPATH:
                facts.runpath.extend(cstr(val).split(":"))
            elif tag == DT_FLAGS_1 and val & DF_1_PIE and facts.file_type == "shared":
                facts.file_type = "executable"
        if self._dynsym_data is not None and strs:
            # .dynsym's string table (sh_link) is .dynstr, which DT_STRTAB already gave.
            facts.exported = _defined_symbols(self._dynsym_data, strs, self._cls)
        return facts


def _defined_symbols(data: bytes, strs: bytes, cls: int) -> list[str]:
    """Names of the defined GLOBAL / WEAK / UNIQUE symbols, in table order, once each."""
    offsets: list[int] = []
    keep = offsets.append
    usable = len(data) - len(data) % (24 if cls == 2 else 16)
    if cls == 2:
        for name, info, _other, shndx, _value, _size in struct.iter_unpack(
            "<IBBHQQ", data[:usable]
        ):
            # st_shndx 0 is SHN_UNDEF; binding 1 GLOBAL, 2 WEAK, 10 GNU_UNIQUE
            if name and shndx and (info >> 4) in (1, 2, 10):
                keep(name)
    else:
        for name, _value, _size, info, _other, shndx in struct.iter_unpack(
            "<IIIBBH", data[:usable]
        ):
            if name and shndx and (info >> 4) in (1, 2, 10):
                keep(name)
    find = strs.find
    names = [strs[o : find(b"\0", o)] for o in offsets]
    return list(dict.fromkeys(n.decode("utf-8", "replace") for n in names))
