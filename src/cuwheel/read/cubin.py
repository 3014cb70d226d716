"""Cubins: the device ELF files (``e_machine`` 190, EM_CUDA) inside fatbins.

Reads what docs/formats.md#cubin-identification describes: the ELF ABI version and
``e_flags`` (SM number position depends on the ABI), ``e_type`` (ET_REL for -rdc code),
and the toolkit release recorded in ``.note.nv.tkinfo`` / ``.note.nv.cuinfo`` (ABI v8)
or in ``e_version`` (ABI v7).  Works on a whole cubin or on a decompressed prefix.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass

from cuwheel.model.inventory import Toolkit

__all__ = ["EM_CUDA", "MAX_KERNELS", "CubinFacts", "entry_kernels", "entry_symbols", "parse_cubin"]

EM_CUDA = 190
ET_REL = 1
ET_EXEC = 2
_NOTE_NAME = b"NVIDIA Corp\x00"
_NT_TKINFO = 2000
_NT_CUINFO = 1000
_SHT_NV_COMPAT = 0x70000086
_EF_V7_ARCH_SPECIFIC = 0x800
_RELEASE = re.compile(rb"release (\d+)\.(\d+), V(\d+\.\d+\.\d+)")
_ARCH_OPT = re.compile(rb"-arch[ =](sm|compute)_(\d+)([af]?)\b")


@dataclass(frozen=True)
class CubinFacts:
    abi_version: int
    elf_type: int  # 1 ET_REL, 2 ET_EXEC
    sm: int  # from e_flags, read per ABI version
    toolkit: Toolkit | None
    arch_specific: bool | None  # .nv.compat attribute 9 ("a"); None when unseen
    arch_option: str | None  # the "-arch" value recorded by the tool, e.g. "sm_100f"
    kernels: bool | None = None  # has a .text.<kernel> section; None: not in the bytes read
    # The entry kernels' (mangled) names in symbol-table order; None when the symbol
    # table lies beyond the bytes read or was not asked for.
    kernel_names: tuple[str, ...] | None = None
    # Its defined device variables (:func:`entry_symbols`), read with the kernel names.
    data_names: tuple[str, ...] | None = None

    @property
    def relocatable(self) -> bool:
        return self.elf_type == ET_REL


# A tkinfo note is a few hundred bytes; its text is searched in this much at most, and
# at most this many note names are looked at: a payload of nothing but note headers
# claiming the rest of the cubin would otherwise cost its size squared.
_NOTE_BODY = 4096
_MAX_NOTES = 256


def _toolkit_from_notes(data: bytes) -> tuple[Toolkit | None, str | None]:
    """Find the first NVIDIA tkinfo (or cuinfo) note anywhere in ``data``."""
    cuinfo: Toolkit | None = None
    pos = data.find(_NOTE_NAME)
    seen = 0
    while pos >= 12 and seen < _MAX_NOTES:
        seen += 1
        namesz, descsz, ntype = struct.unpack_from("<III", data, pos - 12)
        desc = pos + 12
        if namesz == 12 and desc + descsz <= len(data):
            body = data[desc : desc + min(descsz, _NOTE_BODY)]
            if ntype == _NT_TKINFO:
                m = _RELEASE.search(body)
                if m:
                    a = _ARCH_OPT.search(body)
                    arch = a.group(1) + b"_" + a.group(2) + a.group(3) if a else None
                    tk = Toolkit(int(m.group(1)), int(m.group(2)), "tkinfo", m.group(3).decode())
                    return tk, arch.decode() if arch else None
            elif ntype == _NT_CUINFO and descsz >= 6 and cuinfo is None:
                code = struct.unpack_from("<H", body, 4)[0]
                if code:
                    cuinfo = Toolkit(code // 10, code % 10, "cuinfo")
        pos = data.find(_NOTE_NAME, pos + 1)
    return cuinfo, None


def _nv_compat_arch_specific(data: bytes) -> bool | None:
    """Attribute 9 of the ``.nv.compat`` section, when the section headers are present."""
    if len(data) < 64:
        return None
    shoff, = struct.unpack_from("<Q", data, 40)
    shentsize, shnum = struct.unpack_from("<HH", data, 58)
    if shentsize != 64 or shoff + shnum * 64 > len(data):
        return None
    for i in range(shnum):
        sh_type, = struct.unpack_from("<I", data, shoff + i * 64 + 4)
        if sh_type != _SHT_NV_COMPAT:
            continue
        off, size = struct.unpack_from("<QQ", data, shoff + i * 64 + 24)
        blob = data[off : off + size]
        p = 0
        while p + 2 <= len(blob):
            fmt, attr = blob[p], blob[p + 1]
            if fmt == 0:
                break
            if fmt == 2:
                if attr == 9 and p + 2 < len(blob):
                    return blob[p + 2] == 1
                p += 4
            elif fmt == 3:
                p += 4
            elif fmt == 4 and p + 4 <= len(blob):
                p += 4 + struct.unpack_from("<H", blob, p + 2)[0]
            else:
                break
        return False
    return None


def _has_kernels(data: bytes) -> bool | None:
    """Whether the cubin has a kernel: a ``.text.<name>`` section (docs/formats.md
    #cubin-identification; nvcc's device-link stub has none).  None when the section
    table or its names lie beyond ``data`` (a prefix of a big cubin)."""
    shoff, = struct.unpack_from("<Q", data, 40)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 58)
    if shentsize != 64 or not 0 < shnum <= 0xFFFF or shstrndx >= shnum:
        return None
    if shoff + shnum * 64 > len(data):
        return None
    str_off, str_size = struct.unpack_from("<QQ", data, shoff + shstrndx * 64 + 24)
    if str_off + str_size > len(data):
        return None
    names = data[str_off : str_off + str_size]
    for i in range(shnum):
        name_off, = struct.unpack_from("<I", data, shoff + i * 64)
        if names.startswith(b".text.", name_off):
            return True
    return False


# Entry kernels read per cubin at most (the largest real cubins hold a few thousand), and
# the bytes of one name (tables.MAX_NAME; a longer one is cut).
MAX_KERNELS = 1 << 16
_MAX_KERNEL_NAME = 4096
_SHT_SYMTAB = 2
_STT_FUNC = 2
_STT_OBJECT = 1
# st_other bit 0x10 marks a CUDA entry function (a __global__ kernel; cuobjdump -elf shows
# it as ENTRY in the symbol table's Other column): docs/formats.md#cubin-entry-kernels.
_STO_CUDA_ENTRY = 0x10
_SYM = struct.Struct("<IBBHQQ")


def entry_kernels(data: bytes) -> tuple[str, ...] | None:
    """The names of the entry kernels of a whole cubin: the ``STT_FUNC`` symbols of its
    ``SHT_SYMTAB`` section whose ``st_other`` has the CUDA entry bit, in table order, each
    once, at most MAX_KERNELS, each cut to 4,096 bytes.  None when the section table, the
    symbol table or its string table lies beyond ``data``."""
    found = entry_symbols(data)
    return None if found is None else found[0]


def entry_symbols(data: bytes) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """(entry kernels as :func:`entry_kernels` reads them, device variables): the second
    are the defined ``STT_OBJECT`` symbols (``__device__`` / ``__constant__`` data a host
    may register and read), in table order, each once, bounded as the kernels are."""
    if len(data) < 64:
        return None
    shoff, = struct.unpack_from("<Q", data, 40)
    shentsize, shnum = struct.unpack_from("<HH", data, 58)
    if shentsize != 64 or not 0 < shnum <= 0xFFFF or shoff + shnum * 64 > len(data):
        return None
    found: tuple[list[str], list[str]] = ([], [])
    seen: tuple[set[bytes], set[bytes]] = (set(), set())
    for i in range(shnum):
        sh_type, = struct.unpack_from("<I", data, shoff + i * 64 + 4)
        if sh_type != _SHT_SYMTAB:
            continue
        off, size, link = struct.unpack_from("<QQI", data, shoff + i * 64 + 24)
        if off + size > len(data) or link >= shnum:
            return None
        str_off, str_size = struct.unpack_from("<QQ", data, shoff + link * 64 + 24)
        if str_off + str_size > len(data):
            return None
        strings = data[str_off : str_off + str_size]
        for at in range(off, off + size - _SYM.size + 1, _SYM.size):
            st_name, st_info, st_other, st_shndx, _, _ = _SYM.unpack_from(data, at)
            if st_info & 0xF == _STT_FUNC and st_other & _STO_CUDA_ENTRY:
                kind = 0
            elif st_info & 0xF == _STT_OBJECT and st_shndx:
                kind = 1
            else:
                continue
            end = strings.find(b"\0", st_name, st_name + _MAX_KERNEL_NAME)
            raw = strings[st_name : end if end >= 0 else st_name + _MAX_KERNEL_NAME]
            if raw and len(found[kind]) < MAX_KERNELS and raw not in seen[kind]:
                seen[kind].add(raw)
                found[kind].append(raw.decode("utf-8", "replace"))
    return tuple(found[0]), tuple(found[1])


def parse_cubin(data: bytes, *, kernel_names: bool = False) -> CubinFacts | None:
    """Facts from a cubin or a prefix of one; None when it is not a CUDA ELF.
    ``kernel_names``: also read the entry kernels' names (:func:`entry_kernels`)."""
    if len(data) < 64 or data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return None
    e_type, e_machine, e_version = struct.unpack_from("<HHI", data, 16)
    if e_machine != EM_CUDA:
        return None
    abi = data[8]
    e_flags, = struct.unpack_from("<I", data, 48)
    # ABI v8 moved the SM number from bits 0-7 to bits 8-15 (docs/formats.md#cubin-elf-flags).
    sm = (e_flags >> 8) & 0xFF if abi >= 8 else e_flags & 0xFF
    toolkit, arch_option = _toolkit_from_notes(data)
    arch_specific = _nv_compat_arch_specific(data)
    # ABI v7 marks an `a` cubin with e_flags bit 0x800 (docs/formats.md#cubin-elf-flags).
    if abi < 8 and e_flags & _EF_V7_ARCH_SPECIFIC:
        arch_specific = True
    if toolkit is None and abi < 8 and e_version >= 80:
        toolkit = Toolkit(e_version // 10, e_version % 10, "e_version")
    symbols = entry_symbols(data) if kernel_names else None
    return CubinFacts(
        abi_version=abi,
        elf_type=e_type,
        sm=sm,
        toolkit=toolkit,
        arch_specific=arch_specific,
        arch_option=arch_option,
        kernels=_has_kernels(data),
        kernel_names=symbols[0] if symbols else None,
        data_names=symbols[1] if symbols else None,
    )
