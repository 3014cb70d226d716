"""Windows PE/COFF images (Microsoft PE format spec): sections, imports, exports.

Device code sits in sections whose names the linker cut to 8 bytes: ``.nv_fatb`` and
``__nv_rel`` (binary-formats.md 1.6); their bytes are ``min(VirtualSize,
SizeOfRawData)`` from ``PointerToRawData``.  Reads by requests on a Scan like the ELF
reader; pefile needs the whole image in memory, which a streamed DLL is not.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from cuwheel.readers.devicecode import PAD_LIMIT, Region
from cuwheel.readers.stream import Scan

__all__ = ["PE_MACHINES", "PeFacts", "PeReader"]

PE_MACHINES = {0x14C: "i386", 0x8664: "AMD64", 0xAA64: "ARM64", 0xA641: "ARM64EC"}
# Truncated (and full, for COFF objects with a string table) device-code section names.
DEVICE_SECTIONS = {
    ".nv_fatb": False,
    ".nv_fatbin": False,
    "__nv_rel": True,
    "__nv_relfatbin": True,
}
MAX_NAME = 512
MAX_TABLE = 64 << 20


class PeError(ValueError):
    pass


@dataclass
class PeFacts:
    file_type: str = ""
    machine: str = ""
    sections: list[Region] = field(default_factory=list)
    needed: list[str] = field(default_factory=list)
    exported: list[str] = field(default_factory=list)
    # .nvFatBi wrapper records: container file offset -> version (2 = device-link step)
    wrappers: dict[int, int] = field(default_factory=dict)


class PeReader:
    def __init__(self, scan: Scan, base: int, size: int, *, skip_code: bool = False) -> None:
        self.scan = scan
        self._skip_code = skip_code
        self.base = base
        self.size = size
        self.facts = PeFacts()
        self._secs: list[tuple[str, int, int, int, int]] = []  # name, va, vsize, rawsize, rawptr
        self._chars: list[int] = []
        self._imports: dict[int, str] = {}  # descriptor order -> dll name
        self._exports: list[str] = []
        self._image_base = 0
        self._strtab_off = 0
        self._get(0, 64, self._dos)

    def _get(self, off: int, length: int, cb: object) -> None:
        if off < 0 or length <= 0 or off + length > self.size:
            raise PeError(f"PE structure at 0x{off:x} lies outside the file")
        if length > MAX_TABLE:
            raise PeError(f"PE table of {length} bytes is implausibly large")
        self.scan.request(self.base + off, length, cb)  # type: ignore[arg-type]

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
            if magic == 0x20B:
                (self._image_base,) = struct.unpack_from("<Q", data, 24)
                ndir_at, dir_at = 108, 112
            elif magic == 0x10B:
                (self._image_base,) = struct.unpack_from("<I", data, 28)
                ndir_at, dir_at = 92, 96
            else:
                raise PeError(f"unknown optional header magic 0x{magic:x}")
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
        for (name, _va, vsize, rawsize, rawptr) in self._secs:
            length = min(vsize, rawsize) if vsize else rawsize
            if name == ".nvFatBi" and rawptr and 0 < length <= MAX_TABLE:
                self._get(rawptr, length, self._wrapper_records)
        if long_names and self._strtab_off and self._strtab_off + 4 <= self.size:
            self._get(self._strtab_off, 4, self._strtab_size)
        else:
            self._set_regions(None)
        if len(dirs) > 0 and dirs[0][0]:
            off = self._rva(dirs[0][0])
            if off is not None:
                self._get(off, 40, self._export_dir)
        if len(dirs) > 1 and dirs[1][0]:
            off = self._rva(dirs[1][0])
            if off is not None:
                self._get(off, max(dirs[1][1], 20), lambda b: self._import_dir(b, 20, False))
        if len(dirs) > 13 and dirs[13][0]:
            off = self._rva(dirs[13][0])
            if off is not None:
                self._get(off, max(dirs[13][1], 32), lambda b: self._import_dir(b, 32, True))

    def _wrapper_records(self, data: bytes) -> None:
        for magic, version, addr, _prelinked in struct.iter_unpack(
            "<IIQQ", data[: len(data) - len(data) % 24]
        ):
            if magic != 0x466243B1 or addr < self._image_base:
                continue
            off = self._rva(addr - self._image_base)
            if off is not None:
                self.facts.wrappers[self.base + off] = version

    def _strtab_size(self, data: bytes) -> None:
        (n,) = struct.unpack_from("<I", data)
        if n < 4 or self._strtab_off + n > self.size:
            self._set_regions(None)
            return
        self._get(self._strtab_off, n, self._set_regions)

    def _set_regions(self, strtab: bytes | None) -> None:
        regions = []
        for (name, _va, vsize, rawsize, rawptr), chars in zip(self._secs, self._chars, strict=True):
            if name.startswith("/") and strtab is not None and name[1:].isdigit():
                o = int(name[1:])
                end = strtab.find(b"\0", o)
                name = strtab[o : end if end >= 0 else len(strtab)].decode("latin-1")
            length = min(vsize, rawsize) if vsize else rawsize
            if not rawptr or not length:
                continue
            if rawptr + length > self.size:
                raise PeError(f"section {name} runs past the end of the file")
            relocatable = DEVICE_SECTIONS.get(name)
            regions.append(
                Region(
                    name=name,
                    start=self.base + rawptr,
                    end=self.base + rawptr + length,
                    device_code=relocatable is not None,
                    relocatable=bool(relocatable),
                    # initialised data, not code or executable
                    searchable=relocatable is None
                    and chars & 0x20000060 == 0x40
                    and name not in (".pdata", ".xdata", ".reloc", ".rsrc", ".idata",
                                     ".edata", ".tls", ".CRT", ".nvFatBi", "__nv_mod"),
                    # An image keeps no section alignment (only COFF objects do), so any
                    # alignment up to PAD_LIMIT is believed.
                    pad=PAD_LIMIT,
                )
            )
        self.facts.sections = regions

    def _rva(self, rva: int) -> int | None:
        for _name, va, vsize, rawsize, rawptr in self._secs:
            if va <= rva < va + max(vsize, rawsize) and rva - va < rawsize:
                return rawptr + (rva - va)
        return None

    def _string(self, rva: int, cb: object) -> None:
        off = self._rva(rva)
        if off is None or off >= self.size:
            return
        self._get(off, min(MAX_NAME, self.size - off), cb)

    def _import_dir(self, data: bytes, step: int, delay: bool) -> None:
        for i in range(len(data) // step):
            rec = data[i * step : (i + 1) * step]
            if not any(rec):
                break
            if delay:
                attrs, name_rva = struct.unpack_from("<II", rec, 0)
                if not attrs & 1 and name_rva >= self._image_base:
                    name_rva -= self._image_base  # old delay-load descriptors hold VAs
            else:
                (name_rva,) = struct.unpack_from("<I", rec, 12)
            key = (1 << 20) * int(delay) + i
            self._string(name_rva, lambda b, k=key: self._imports.__setitem__(k, _cstr(b)))

    def _export_dir(self, data: bytes) -> None:
        nnames, _funcs, names_rva = struct.unpack_from("<III", data, 24)
        if not nnames:
            return
        off = self._rva(names_rva)
        if off is None:
            return
        self._get(off, nnames * 4, self._export_names)

    def _export_names(self, data: bytes) -> None:
        rvas = [r for (r,) in struct.iter_unpack("<I", data)]
        offs = [o for o in (self._rva(r) for r in rvas) if o is not None]
        if not offs:
            return
        # Names are stored together; one request covers them all.
        lo, hi = min(offs), min(max(offs) + MAX_NAME, self.size)

        def names(blob: bytes) -> None:
            for o in offs:
                self._exports.append(_cstr(blob[o - lo : o - lo + MAX_NAME]))

        self._get(lo, hi - lo, names)

    def finish(self) -> PeFacts:
        self.facts.needed = [self._imports[k] for k in sorted(self._imports)]
        self.facts.exported = list(dict.fromkeys(self._exports))
        return self.facts


def _cstr(data: bytes) -> str:
    end = data.find(b"\0")
    return data[: end if end >= 0 else len(data)].decode("latin-1")
