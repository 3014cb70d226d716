"""Windows PE/COFF images (Microsoft PE format spec): sections, imports, exports.

Device code sits in sections whose names the linker cut to 8 bytes: ``.nv_fatb`` and
``__nv_rel`` (docs/formats.md#pe-images); their bytes are ``min(VirtualSize,
SizeOfRawData)`` from ``PointerToRawData``.  Reads by requests on a Scan like the ELF
reader; pefile needs the whole image in memory, which a streamed DLL is not.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass, field

from cuwheel.errors import PeError
from cuwheel.read.bytes.regions import PAD_LIMIT, Region, section_region
from cuwheel.read.bytes.stream import Scan
from cuwheel.read.bytes.tables import (
    MAX_NAME,
    Anomalies,
    NameBudget,
    RangeMap,
    StringTable,
    guarded,
)

__all__ = ["PE_MACHINES", "PeFacts", "PeReader"]

PE_MACHINES = {0x14C: "i386", 0x8664: "AMD64", 0xAA64: "ARM64", 0xA641: "ARM64EC"}
# Truncated (and full, for COFF objects with a string table) device-code section names.
DEVICE_SECTIONS = {
    ".nv_fatb": False,
    ".nv_fatbin": False,
    "__nv_rel": True,
    "__nv_relfatbin": True,
}
MAX_TABLE = 64 << 20
# Budgets per image (what is beyond is not read, an anomaly): import descriptors (real
# DLLs: a few dozen), export names (torch_cpu.dll-sized DLLs: some 100k) and functions
# imported by name, all DLLs together (torch_python.dll: some 20k).
MAX_IMPORTS = 10_000
MAX_EXPORTS = 2_000_000
MAX_IMPORT_NAMES = 2_000_000
# Import lookup table entries asked for at a time (a table ends at a zero entry).
_THUNKS = 512
WRAPPER_MAGIC = 0x466243B1
# Sections that never hold embedded data (not searched for containers).
NOT_DATA = (".pdata", ".xdata", ".reloc", ".rsrc", ".idata", ".edata", ".tls", ".CRT",
            ".nvFatBi", "__nv_mod")


@dataclass
class PeFacts:
    file_type: str = ""
    machine: str = ""
    sections: list[Region] = field(default_factory=list)
    needed: list[str] = field(default_factory=list)
    exported: list[str] = field(default_factory=list)
    # Functions imported by name: (DLL, name) in descriptor and table order; by ordinal
    # ones have no name and are not listed.
    imported: list[tuple[str, str]] = field(default_factory=list)
    # .nvFatBi wrapper records: container file offset -> version (2 = device-link step)
    wrappers: dict[int, int] = field(default_factory=dict)


class PeReader:
    """The DOS, COFF and optional headers and the section table are the image's own
    (PeError when unreadable); the string table of long section names, a section's raw
    data, the import and export directories and their names are read on their own: a
    damaged one is recorded in ``anomalies`` and the rest is kept."""

    def __init__(
        self,
        scan: Scan,
        base: int,
        size: int,
        *,
        skip_code: bool = False,
        anomalies: Anomalies | None = None,
        budget: NameBudget | None = None,
    ) -> None:
        self.scan = scan
        self._skip_code = skip_code
        self.base = base
        self.size = size
        self.facts = PeFacts()
        self.anomalies = Anomalies() if anomalies is None else anomalies
        self.budget = NameBudget() if budget is None else budget
        self._secs: list[tuple[str, int, int, int, int]] = []  # name, va, vsize, rawsize, rawptr
        self._chars: list[int] = []
        self._map: RangeMap[tuple[int, int]] = RangeMap(())  # rva -> (va, rawptr)
        self._imports: dict[int, str] = {}  # descriptor order -> dll name
        # Import lookup tables by RVA -> names, each read once however many descriptors
        # name it, and descriptor order -> its table's RVA.
        self._by_name: dict[int, list[str]] = {}
        self._table_of: dict[int, int] = {}
        self._names_left = MAX_IMPORT_NAMES
        self._thunk = 8  # PE32+; 4 in PE32
        self._exports: list[str] = []
        self._image_base = 0
        self._strtab_off = 0
        self._get(0, 64, self._dos)

    def _get(self, off: int, length: int, cb: Callable[[bytes], None],
             what: str | None = None) -> None:
        """Ask for [off, off + length).  ``what`` names a structure read on its own (a
        failure is an anomaly); None is the image's own headers."""
        problem = None
        if off < 0 or length <= 0 or off + length > self.size:
            problem = f"{what or 'PE structure'} at 0x{off:x} lies outside the file"
        elif length > MAX_TABLE:
            problem = f"{what or 'PE table'} of {length} bytes is implausibly large"
        if problem is not None:
            if what is None:
                raise PeError(problem)
            self.anomalies.add(problem)
            return
        if what is not None:
            cb = guarded(cb, what, self.anomalies, PeError)
        self.scan.request(self.base + off, length, cb)

    def _dos(self, data: bytes) -> None:
        if data[:2] != b"MZ" or len(data) < 64:
            raise PeError("not a PE file (no MZ header)")
        (lfanew,) = struct.unpack_from("<I", data, 0x3C)
        self._get(lfanew, 24, lambda b: self._coff(lfanew, b))

    def _coff(self, at: int, data: bytes) -> None:
        if data[:4] != b"PE\0\0":
            raise PeError("no PE signature at e_lfanew")
        machine, nsec, _ts, symptr, nsym, optsize, chars = struct.unpack_from("<HHIIIHH", data, 4)
        self.facts.machine = PE_MACHINES.get(machine, f"machine-0x{machine:x}")
        self.facts.file_type = "dll" if chars & 0x2000 else "exe"
        if symptr and nsym:
            self._strtab_off = symptr + nsym * 18
        self._nsec = nsec
        self._get(at + 24, optsize + nsec * 40, lambda b: self._headers(optsize, b))

    def _headers(self, optsize: int, data: bytes) -> None:
        dirs: list[tuple[int, int]] = []
        if optsize >= 2:
            (magic,) = struct.unpack_from("<H", data, 0)
            if magic == 0x20B and optsize >= 112:
                (self._image_base,) = struct.unpack_from("<Q", data, 24)
                ndir_at, dir_at = 108, 112
            elif magic == 0x10B and optsize >= 96:
                (self._image_base,) = struct.unpack_from("<I", data, 28)
                ndir_at, dir_at = 92, 96
                self._thunk = 4
            else:
                raise PeError(f"unknown optional header magic 0x{magic:x} (size {optsize})")
            (ndir,) = struct.unpack_from("<I", data, ndir_at)
            ndir = min(ndir, 16, (optsize - dir_at) // 8)
            dirs = [struct.unpack_from("<II", data, dir_at + 8 * i) for i in range(ndir)]
        long_names = False
        for i in range(self._nsec):
            rec = data[optsize + 40 * i : optsize + 40 * (i + 1)]
            if len(rec) < 40:
                raise PeError("truncated section table")
            raw_name = rec[:8].rstrip(b"\0").decode("latin-1")
            vsize, va, rawsize, rawptr = struct.unpack_from("<IIII", rec, 8)
            (chars,) = struct.unpack_from("<I", rec, 36)
            long_names |= raw_name.startswith("/")
            self._secs.append((raw_name, va, vsize, rawsize, rawptr))
            self._chars.append(chars)
            if self._skip_code and chars & 0x20000020 and rawptr:  # code: no device code
                self.scan.skip.append((self.base + rawptr, self.base + rawptr + rawsize))
        # An RVA is in the first section whose raw data holds it (a bisection per lookup).
        self._map = RangeMap((va, va + rawsize, (va, rawptr))
                             for _n, va, _vs, rawsize, rawptr in self._secs)
        for (name, _va, vsize, rawsize, rawptr) in self._secs:
            length = min(vsize, rawsize) if vsize else rawsize
            if name == ".nvFatBi" and rawptr and 0 < length <= MAX_TABLE:
                if rawptr + length <= self.size:  # best effort; the first one only
                    self._get(rawptr, length, self._wrapper_records, ".nvFatBi")
                break
        if long_names and self._strtab_off and self._strtab_off + 4 <= self.size:
            self._get(self._strtab_off, 4, self._strtab_size, "COFF string table")
        else:
            if long_names:
                self.anomalies.add("long section names without a readable COFF string "
                                   "table: their names are unknown")
            self._set_regions(None)
        if len(dirs) > 0 and dirs[0][0]:
            off = self._dir(dirs[0][0], "export directory")
            if off is not None:
                self._get(off, 40, self._export_dir, "export directory")
        if len(dirs) > 1 and dirs[1][0]:
            off = self._dir(dirs[1][0], "import directory")
            if off is not None:
                self._get(off, max(dirs[1][1], 20), lambda b: self._import_dir(b, 20, False),
                          "import directory")
        if len(dirs) > 13 and dirs[13][0]:
            off = self._dir(dirs[13][0], "delay-load import directory")
            if off is not None:
                self._get(off, max(dirs[13][1], 32), lambda b: self._import_dir(b, 32, True),
                          "delay-load import directory")

    def _dir(self, rva: int, what: str) -> int | None:
        off = self._rva(rva)
        if off is None:
            self.anomalies.add(f"{what} RVA 0x{rva:x} lies in no section's data")
        return off

    def _wrapper_records(self, data: bytes) -> None:
        for magic, version, addr, _prelinked in struct.iter_unpack(
            "<IIQQ", data[: len(data) - len(data) % 24]
        ):
            if magic != WRAPPER_MAGIC or addr < self._image_base:
                continue
            off = self._rva(addr - self._image_base)
            if off is not None:
                self.facts.wrappers[self.base + off] = version

    def _strtab_size(self, data: bytes) -> None:
        (n,) = struct.unpack_from("<I", data)
        if n < 4 or self._strtab_off + n > self.size or n > MAX_TABLE:
            self.anomalies.add(f"COFF string table at 0x{self._strtab_off:x} claims {n} "
                               "bytes, past the end of the file: long section names unknown")
            self._set_regions(None)
            return
        self._get(self._strtab_off, n, self._set_regions, "COFF string table")

    def _set_regions(self, strtab: bytes | None) -> None:
        table = (StringTable(strtab, "COFF string table", self.budget, self.anomalies,
                             encoding="latin-1") if strtab is not None else None)
        regions = []
        for (name, _va, vsize, rawsize, rawptr), chars in zip(self._secs, self._chars, strict=True):
            if name.startswith("/") and table is not None and name[1:].isdigit():
                name = table.get(int(name[1:])) or name
            length = min(vsize, rawsize) if vsize else rawsize
            if not rawptr or not length:
                continue
            region = section_region(
                name, name, rawptr, length, self.size, self.base, "file", self.anomalies,
                device=DEVICE_SECTIONS,
                # initialised data, not code or executable
                searchable=chars & 0x20000060 == 0x40 and name not in NOT_DATA,
                # An image keeps no section alignment (only COFF objects do), so any
                # alignment up to PAD_LIMIT is believed.
                pad=PAD_LIMIT,
            )
            if region is not None:
                regions.append(region)
        self.facts.sections = regions

    def _rva(self, rva: int) -> int | None:
        hit = self._map.get(rva)
        return None if hit is None else hit[1] + (rva - hit[0])

    def _import_dir(self, data: bytes, step: int, delay: bool) -> None:
        what = "delay-load import" if delay else "import"
        by_rva: dict[int, list[int]] = {}  # one read per distinct name
        for i in range(len(data) // step):
            rec = data[i * step : (i + 1) * step]
            if not any(rec):
                break
            if i >= MAX_IMPORTS:
                self.anomalies.add(f"{what} directory: more than {MAX_IMPORTS} descriptors; "
                                   "the rest are not read")
                break
            key = (1 << 20) * int(delay) + i
            if delay:
                attrs, name_rva = struct.unpack_from("<II", rec, 0)
                (table,) = struct.unpack_from("<I", rec, 16)  # import name table
                if not attrs & 1 and name_rva >= self._image_base:
                    name_rva -= self._image_base  # old delay-load descriptors hold VAs
                    table -= self._image_base if table >= self._image_base else 0
            else:
                (name_rva,) = struct.unpack_from("<I", rec, 12)
                lookup, first = struct.unpack_from("<I8xI", rec, 0)
                table = lookup or first  # no lookup table: the address table's first state
            by_rva.setdefault(name_rva, []).append(key)
            if table:
                if table not in self._by_name:
                    self._by_name[table] = []
                    self._lookup_table(table, table, what)
                self._table_of[key] = table
        for name_rva, keys in by_rva.items():
            off = self._rva(name_rva)
            if off is None or off >= self.size:
                self.anomalies.add(f"{what} name RVA 0x{name_rva:x} lies in no section's data")
                continue
            self._get(off, min(MAX_NAME + 1, self.size - off),
                      self._import_name(keys, f"{what} name at 0x{off:x}"), f"{what} name")

    def _lookup_table(self, key: int, rva: int, what: str) -> None:
        """The import lookup table of one descriptor (PE32+: 8-byte entries, PE32: 4;
        the top bit marks an import by ordinal, else the low 31 bits are the RVA of a
        2-byte hint and the name), read ``_THUNKS`` entries at a time to its zero entry."""
        off = self._rva(rva)
        if off is None or off >= self.size:
            self.anomalies.add(f"{what} lookup table RVA 0x{rva:x} lies in no section's data")
            return
        width = self._thunk
        n = min(_THUNKS, (self.size - off) // width)
        if n <= 0:
            return

        def take(data: bytes) -> None:
            rvas = []
            fmt = "<Q" if width == 8 else "<I"
            ended = False
            for (v,) in struct.iter_unpack(fmt, data[: len(data) - len(data) % width]):
                if not v:
                    ended = True
                    break
                if not v >> (8 * width - 1):
                    rvas.append(v & 0x7FFFFFFF)
            if len(rvas) > self._names_left:
                self.anomalies.add(f"more than {MAX_IMPORT_NAMES} functions imported by "
                                   "name; the rest are not read")
                self._names_left = 0
                return
            self._names_left -= len(rvas)
            self._hint_names(key, rvas, what)
            if not ended and n == _THUNKS:
                self._lookup_table(key, rva + n * width, what)

        self._get(off, n * width, take, f"{what} lookup table")

    def _hint_names(self, key: int, rvas: list[int], what: str) -> None:
        offs = [(i, o) for i, r in enumerate(rvas)
                if (o := self._rva(r)) is not None and o + 2 < self.size]
        if len(offs) < len(rvas):
            self.anomalies.add(f"{what}: a hint/name RVA lies in no section's data")
        if not offs:
            return
        # A linker stores one DLL's names together; one request covers them.
        lo = min(o for _, o in offs)
        hi = min(max(o for _, o in offs) + 2 + MAX_NAME + 1, self.size)
        names = self._by_name.setdefault(key, [])  # key: the table's RVA
        if hi - lo > MAX_TABLE:
            self.anomalies.add(f"{what}: hint/name entries spread over more than "
                               f"{MAX_TABLE} bytes; not read")
            return

        def take(blob: bytes) -> None:
            table = StringTable(blob, f"{what} names", self.budget, self.anomalies,
                                encoding="latin-1")
            for _, o in offs:
                name = table.get(o - lo + 2)
                if name is not None:
                    names.append(name)

        self._get(lo, hi - lo, take, f"{what} names")

    def _import_name(self, keys: list[int], what: str) -> Callable[[bytes], None]:
        def take(data: bytes) -> None:
            name = StringTable(data, what, self.budget, self.anomalies,
                               encoding="latin-1").get(0)
            if name is not None:
                for k in keys:
                    self._imports[k] = name

        return take

    def _export_dir(self, data: bytes) -> None:
        nnames, _funcs, names_rva = struct.unpack_from("<III", data, 24)
        if not nnames:
            return
        if nnames > MAX_EXPORTS:
            self.anomalies.add(f"export directory: more than {MAX_EXPORTS} names; the rest "
                               "are not read")
            nnames = MAX_EXPORTS
        off = self._dir(names_rva, "export name table")
        if off is None:
            return
        self._get(off, nnames * 4, self._export_names, "export name table")

    def _export_names(self, data: bytes) -> None:
        offs = []
        for (r,) in struct.iter_unpack("<I", data):
            o = self._rva(r)
            if o is None:
                self.anomalies.add(f"export name RVA 0x{r:x} lies in no section's data")
            elif o < self.size:
                offs.append(o)
        if not offs:
            return
        # Names are stored together; one request covers them all.
        lo, hi = min(offs), min(max(offs) + MAX_NAME + 1, self.size)

        def names(blob: bytes) -> None:
            table = StringTable(blob, "export names", self.budget, self.anomalies,
                                encoding="latin-1")
            for o in offs:
                name = table.get(o - lo)
                if name is not None:
                    self._exports.append(name)

        self._get(lo, hi - lo, names, "export names")

    def finish(self) -> PeFacts:
        self.facts.needed = [self._imports[k] for k in sorted(self._imports)]
        left = MAX_IMPORT_NAMES
        for k in sorted(self._table_of):
            if k not in self._imports:
                continue
            names = self._by_name[self._table_of[k]]
            if len(names) > left:  # descriptors sharing tables: the names, once more each
                self.anomalies.add(f"more than {MAX_IMPORT_NAMES} functions imported by "
                                   "name; the rest are not read")
                break
            left -= len(names)
            self.facts.imported.extend((self._imports[k], n) for n in names)
        self.facts.exported = list(dict.fromkeys(self._exports))
        return self.facts
