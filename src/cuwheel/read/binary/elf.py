"""Host ELF files (System V gABI): section table, dynamic section and dynamic symbols,
read by requests on a Scan (read/bytes/stream.py), so a library streamed out of a wheel is
never held whole (pyelftools needs the file seekable, and is slow on a 75,000-symbol ``.dynsym``);
tests compare with readelf.  Symbols, versions and search paths: elfsyms.py."""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from cuwheel.errors import ElfError
from cuwheel.model.inventory import UndefinedSymbol, VersionNeed

# The dynamic-linker structures are decoded in elfsyms.py; their bounds and section
# types are re-exported here, where the ELF reader's own are.
from cuwheel.read.binary.elfsyms import (
    DT_RPATH,
    DT_RUNPATH,
    MAX_PATH_ENTRIES,
    MAX_PATH_LIST,
    VERSION_SECTIONS,
    dynamic_symbols,
    has_static_cudart,
    rodata_windows,
    search_paths,
)
from cuwheel.read.bytes.regions import PAD_LIMIT, Region, section_region
from cuwheel.read.bytes.stream import Scan
from cuwheel.read.bytes.tables import Anomalies, NameBudget, RangeMap, StringTable, guarded

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
# Name -> relocatable? (docs/formats.md#elf-sections)
DEVICE_SECTIONS = {".nv_fatbin": False, "__nv_relfatbin": True}

PT_LOAD, PT_DYNAMIC = 1, 2
SHT_DYNSYM, SHT_NOBITS = 11, 8
SHN_XINDEX = 0xFFFF
DT_NULL, DT_NEEDED, DT_STRTAB, DT_STRSZ, DT_SONAME = 0, 1, 5, 10, 14
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
# Budgets per binary, far above real libraries (libtorch_cuda.so: 75k dynamic symbols,
# about 20 DT_NEEDED, 1 RUNPATH of 3 entries); what is beyond is not read, an anomaly.
MAX_DYNAMIC = 1_000_000  # PT_DYNAMIC entries before DT_NULL
MAX_NEEDED = 10_000
# At most this much of the writable segments is kept for the fatbin wrapper records.
MAX_RW_KEPT = 64 << 20
WRAPPER_MAGIC = 0x466243B1  # .nvFatBinSegment record (docs/formats.md#wrapper-records)


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
    undefined: list[UndefinedSymbol] = field(default_factory=list)
    version_needs: list[VersionNeed] = field(default_factory=list)
    version_defs: list[str] = field(default_factory=list)
    # .nvFatBinSegment wrapper records: container file offset -> record version
    # (2 = written by nvcc's device-link step).
    wrappers: dict[int, int] = field(default_factory=dict)
    static_cudart: bool = False  # .rodata holds STATIC_CUDART


class ElfReader:
    """Requests what it needs from ``scan`` for the ELF image at [base, base + size).

    The ELF header and the section header table are the file's own: when they cannot be
    read the file is unreadable (ElfError).  Every other structure (program headers, the
    dynamic section and its strings, the section names, .dynsym, a section's bytes) is
    read on its own: a damaged one is recorded in ``anomalies`` and the rest is kept.  In
    an archive member (``member``) even the header's problems are anomalies of the member,
    so that one bad object does not lose the archive.
    """

    def __init__(
        self,
        scan: Scan,
        base: int,
        size: int,
        *,
        head: bool = True,
        lenient: bool = False,
        skip_code: bool = False,
        member: bool = False,
        anomalies: Anomalies | None = None,
        budget: NameBudget | None = None,
    ) -> None:
        self.scan = scan
        self.base = base
        self.size = size
        self.facts = ElfFacts()
        self.is_elf = True
        self.anomalies = Anomalies() if anomalies is None else anomalies
        self.budget = NameBudget() if budget is None else budget
        self._lenient = lenient
        self._member = member
        self._unit = "member" if member else "file"
        self._skip_code = skip_code
        self._head: bytes = b""
        self._want_head = head and size > 64
        self._cls = 2
        self._loads: RangeMap[tuple[int, int]] = RangeMap(())  # vaddr -> (vaddr, offset)
        self._needed: list[int] = []  # string offsets, in file order
        self._paths: list[tuple[int, int]] = []  # (DT_RPATH / DT_RUNPATH, string offset)
        self._soname: int | None = None
        self._pie = False
        self._named_dynamic = False  # any entry that names a string
        self._dynstr: bytes | None = None
        self._dynsym_data: bytes | None = None
        # sh_type -> (offset, size, sh_info) of the first versioning section of each type
        self._version_at: dict[int, tuple[int, int, int]] = {}
        self._version_data: dict[int, bytes] = {}
        self._shdrs: list[tuple[int, int, int, int, int, int, int]] = []
        self._rw: list[tuple[int, bytes]] = []  # writable segments kept while streaming
        self._rw_ranges: list[tuple[int, int]] = []  # ... and where they lie
        self._wrapper_section: tuple[int, int] | None = None
        self._wrapper_bytes: bytes | None = None
        self._static: list[bool] = []
        self._get(0, min(size, 64), self._ehdr)

    # Offsets below are relative to the image; _get adds the base.
    def _get(self, off: int, length: int, cb: Callable[[bytes], None],
             what: str | None = None) -> None:
        """Ask for [off, off + length) of the image.  ``what`` names a structure read on
        its own (a failure is an anomaly); None is the file's own header tables."""
        problem = None
        if off < 0 or length < 0 or off + length > self.size:
            problem = (f"{what or 'ELF structure'} at 0x{off:x}+0x{length:x} lies outside "
                       f"the {self._unit}")
        elif length > MAX_TABLE:
            problem = f"{what or 'ELF table'} of {length} bytes is implausibly large"
        if problem is not None:
            self._fail(problem, what)
            return
        if what is not None or self._member:
            cb = guarded(cb, what or "ELF header", self.anomalies, ElfError)
        if self._head and off + length <= len(self._head):
            cb(self._head[off : off + length])
            return
        self.scan.request(self.base + off, length, cb)

    def _fail(self, problem: str, what: str | None) -> None:
        if what is None and not self._member:
            raise ElfError(problem)
        self.anomalies.add(problem)

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
            if len(data) < 64:
                raise ElfError("truncated ELF header")
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
            self._get(0, min(self.size, HEAD_BYTES), partial(setattr, self, "_head"))
        if phnum:
            if phentsize != self._phsz:
                self.anomalies.add(f"program header size {phentsize} is not {self._phsz}: "
                                   "the program headers are not read")
            else:
                self._get(phoff, phnum * phentsize, self._phdrs, "program headers")
        if shnum:
            if shentsize != self._shsz:
                self._fail(f"section header size {shentsize} is not {self._shsz}", None)
                return
            self._shstrndx = shstrndx
            self._get(shoff, shnum * shentsize, self._sections)

    def _phdrs(self, data: bytes) -> None:
        dyn: tuple[int, int] | None = None
        fmt = "<IIQQQQQQ" if self._cls == 2 else "<IIIIIIII"
        load_flags: list[tuple[int, int, int]] = []
        loads: list[tuple[int, int, tuple[int, int]]] = []
        for rec in struct.iter_unpack(fmt, data):
            if self._cls == 2:
                p_type, flags, off, vaddr, _paddr, filesz = rec[:6]
            else:
                p_type, off, vaddr, _paddr, filesz, _memsz, flags = rec[:7]
            if p_type == PT_LOAD:
                loads.append((vaddr, vaddr + filesz, (vaddr, off)))
                load_flags.append((flags, off, filesz))
            elif p_type == PT_DYNAMIC and dyn is None:
                dyn = (off, filesz)
        # The first PT_LOAD that holds an address maps it (a bisection, not a scan of
        # every segment per address).
        self._loads = RangeMap(loads)
        # With ld's -z separate-code layout (a read-only segment besides the executable
        # one), executable segments hold only code, so the signature scan can skip them.
        # If a device-code section turns out to lie there after all, the caller reads
        # the file again without skipping.
        # The wrapper records (.nvFatBinSegment, flags WA) sit in a writable segment; a
        # stream's section table comes too late to ask for them, so keep the writable
        # segments (bounded) as they pass; a file on disk reads them only where such a
        # segment holds them: both reads, and the loader, agree on damaged headers.
        budget = MAX_RW_KEPT
        for f, off, filesz in load_flags:  # a segment outside the file: the sections judge
            if f & 2 and 0 < filesz <= budget and off + filesz <= self.size:
                budget -= filesz
                self._rw_ranges.append((off, off + filesz))
                if not self.scan.resident:
                    self._get(off, filesz, self._keep_rw(off))
        if self._skip_code and any(f & 7 == 4 for f, _, _ in load_flags):
            for f, off, filesz in load_flags:
                if f & 1 and filesz:
                    self.scan.skip.append((self.base + off, self.base + off + filesz))
        for at, n in rodata_windows(load_flags, self.size):  # a static runtime's mark
            self._get(at, n, lambda b: self._static.append(has_static_cudart(b)), "PT_LOAD")
        if dyn and dyn[1]:
            self._get(dyn[0], dyn[1], self._dynamic_section, "PT_DYNAMIC")

    def _keep_rw(self, off: int) -> Callable[[bytes], None]:
        return lambda b: self._rw.append((off, b))

    def _vaddr_to_off(self, vaddr: int) -> int | None:
        hit = self._loads.get(vaddr)
        return None if hit is None else hit[1] + (vaddr - hit[0])

    def _dynamic_section(self, data: bytes) -> None:
        """Keep only the entries cuwheel reports, each kind within its budget."""
        fmt = "<qQ" if self._cls == 2 else "<iI"
        usable = len(data) - len(data) % struct.calcsize(fmt)
        strtab = strsz = None
        over: dict[str, int] = {}
        for count, (tag, val) in enumerate(struct.iter_unpack(fmt, data[:usable])):
            if tag == DT_NULL:
                break
            if count >= MAX_DYNAMIC:
                self.anomalies.add(f"PT_DYNAMIC: more than {MAX_DYNAMIC} entries before "
                                   "DT_NULL; the rest are not read")
                break
            if tag == DT_NEEDED:
                self._named_dynamic = True
                if len(self._needed) < MAX_NEEDED:
                    self._needed.append(val)
                else:
                    over["DT_NEEDED"] = MAX_NEEDED
            elif tag in (DT_RPATH, DT_RUNPATH):
                self._named_dynamic = True
                if len(self._paths) < MAX_PATH_ENTRIES:
                    self._paths.append((tag, val))
                else:
                    over["DT_RPATH / DT_RUNPATH"] = MAX_PATH_ENTRIES
            elif tag == DT_SONAME:
                self._named_dynamic = True
                if self._soname is None:
                    self._soname = val
            elif tag == DT_FLAGS_1:
                self._pie |= bool(val & DF_1_PIE)
            elif tag == DT_STRTAB:
                strtab = val
            elif tag == DT_STRSZ:
                strsz = val
        for what, limit in over.items():
            self.anomalies.add(f"PT_DYNAMIC: more than {limit} {what} entries; the rest are "
                               "not read")
        if strtab is None or not strsz:
            if self._named_dynamic:
                self.anomalies.add("PT_DYNAMIC: no DT_STRTAB / DT_STRSZ, so its names are "
                                   "not read")
            return
        off = self._vaddr_to_off(strtab)
        if off is None:
            self.anomalies.add(f"DT_STRTAB 0x{strtab:x} lies in no loaded segment, so the "
                               "dynamic names are not read")
            return
        if off < self.size < off + strsz:  # a string table cut by the end of the file
            self.anomalies.add(f"dynamic string table at 0x{off:x}+0x{strsz:x} is cut at the "
                               f"end of the {self._unit}")
            strsz = self.size - off
        self._get(off, strsz, partial(setattr, self, "_dynstr"), "dynamic string table")

    def _sections(self, data: bytes) -> None:
        fmt = "<IIQQQQIIQQ" if self._cls == 2 else "<IIIIIIIIII"
        for rec in struct.iter_unpack(fmt, data):
            name, sh_type, flags, _addr, off, size, link, info, align = rec[:9]
            self._shdrs.append((name, sh_type, off, size, link, flags, align))
            if sh_type in VERSION_SECTIONS and size and sh_type not in self._version_at:
                self._version_at[sh_type] = (off, size, info)
        index = self._shstrndx
        if index == SHN_XINDEX and self._shdrs:  # the real index is in section 0's sh_link
            index = self._shdrs[0][4]
        names_at: tuple[int, int] | None = None
        if 0 < index < len(self._shdrs):
            _, _, off, size, _, _, _ = self._shdrs[index]
            if size:
                names_at = (off, size)
        elif index:
            self.anomalies.add(f"e_shstrndx {index} names no section: the section names are "
                               "unknown")
        if names_at is not None:
            off, size = names_at
            if off >= 0 and off + size <= self.size and size <= MAX_TABLE:
                self._get(off, size, self._names, ".shstrtab")
            else:
                self.anomalies.add(f".shstrtab at 0x{off:x}+0x{size:x} lies outside the "
                                   f"{self._unit}: the section names are unknown")
                names_at = None
        if names_at is None:
            self._names(b"")
        # .dynsym: the first one (the linker writes one; more are a lie that would only
        # make us read the same table again)
        for _name, sh_type, off, size, _link, _, _ in self._shdrs:
            if sh_type == SHT_DYNSYM and size:
                self._get(off, size, partial(setattr, self, "_dynsym_data"), ".dynsym")
                break
        # The versioning sections: the first of each type, as for .dynsym.
        for sh_type, (off, size, _info) in self._version_at.items():
            self._get(off, size, partial(self._version_data.__setitem__, sh_type),
                      VERSION_SECTIONS[sh_type])

    def _names(self, data: bytes) -> None:
        table = StringTable(data, ".shstrtab", self.budget, self.anomalies, encoding="latin-1")
        regions = []
        for name_off, sh_type, off, size, _link, flags, align in self._shdrs:
            name = (table.get(name_off) if data else None) or ""
            if sh_type == SHT_NOBITS:  # no file bytes
                continue
            if (name == ".nvFatBinSegment" and self._wrapper_section is None
                    and 0 < size <= MAX_RW_KEPT and off + size <= self.size):
                self._wrapper_section = (off, size)
            region = section_region(
                name, name or "(unnamed)", off, size, self.size, self.base, self._unit,
                self.anomalies, device=DEVICE_SECTIONS,
                # SHT_PROGBITS, SHF_ALLOC and not SHF_EXECINSTR: loadable data, except
                # the tables the toolchain itself writes there.
                searchable=sh_type == 1 and flags & 6 == 2
                and not name.startswith(NOT_DATA_SECTIONS),
                # sh_addralign: the pads between the containers of aligned inputs
                pad=max(16, min(align, PAD_LIMIT)),
            )  # fmt: skip
            if region is not None:
                regions.append(region)
        self.facts.sections = regions
        if self._wrapper_section is not None and self.scan.resident:
            off, size = self._wrapper_section
            if not any(a <= off and off + size <= b for a, b in self._rw_ranges):
                return
            self._get(off, size, partial(setattr, self, "_wrapper_bytes"), ".nvFatBinSegment")

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
        facts.static_cudart = any(self._static)
        if self._pie and facts.file_type == "shared":
            facts.file_type = "executable"
        data = self._dynstr
        if data is None:
            return facts
        names = StringTable(data, "dynamic string table", self.budget, self.anomalies)
        for val in self._needed:
            name = names.get(val)
            if name is not None:
                facts.needed.append(name)
        if self._soname is not None:
            facts.soname = names.get(self._soname)
        lists = StringTable(data, "dynamic string table", self.budget, self.anomalies,
                            limit=MAX_PATH_LIST)
        facts.rpath, facts.runpath = search_paths(self._paths, lists, self.anomalies)
        # .dynsym's string table (sh_link) is .dynstr, which DT_STRTAB already gave.
        syms = dynamic_symbols(self._dynsym_data, self._cls, names, self._version_at,
                               self._version_data, self.anomalies)
        facts.exported, facts.undefined = syms.exported, syms.undefined
        facts.version_needs, facts.version_defs = syms.version_needs, syms.version_defs
        return facts
