"""Trim the exported programs that make_artifacts.py wrote, for committing.

    python3 tests/data/artifacts/trim.py DEVICE_OUT tests/data/artifacts

Each ``.pt2`` is rewritten member by member (names and order kept, deflated): in every
host ELF library the bytes of its executable sections (``.text``, ``.plt`` ...: machine
code, SHF_EXECINSTR), of ``.symtab`` / ``.strtab`` (the static symbol table), of the
unwinding tables and of the relocations are zeroed, so the 2.3 MB wrapper library
deflates to about 140 KB; its headers, dynamic section,
dynamic symbols and versions, read-only data and any cubin embedded there are the
exporter's bytes.  Cubins, fatbins, sources and metadata are kept as exported.  The Triton
cache is unpacked into two caches: ``triton_cache_inductor`` (the kernel Inductor compiled,
assembled by CUDA 13.0's ptxas) and ``triton_cache_bundled`` (the kernels compiled with
Triton's own bundled ptxas, CUDA 12.8, for sm_80 and sm_90a), keeping each kernel's
``.cubin``, ``.ptx`` and ``.json``; the launcher libraries are left out.
"""

from __future__ import annotations

import os
import shutil
import struct
import sys
import tarfile
import zipfile

SHF_EXECINSTR = 0x4
SHT_SYMTAB, SHT_STRTAB = 2, 3
# unwinding tables and relocations: nothing cuwheel reads
_ZEROED = {b".eh_frame", b".eh_frame_hdr", b".gcc_except_table", b".rela.dyn", b".rela.plt"}


def trim_elf(data: bytes) -> bytes:
    if data[:4] != b"\x7fELF" or data[4] != 2 or struct.unpack_from("<H", data, 18)[0] == 190:
        return data
    out = bytearray(data)
    shoff, = struct.unpack_from("<Q", data, 40)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 58)
    str_off = struct.unpack_from("<Q", data, shoff + shstrndx * shentsize + 24)[0]
    for i in range(shnum):
        h = shoff + i * shentsize
        name, sh_type, flags = struct.unpack_from("<IIQ", data, h)
        off, size = struct.unpack_from("<QQ", data, h + 24)
        sname = data[str_off + name : data.index(b"\0", str_off + name)]
        if sh_type == 8:  # NOBITS
            continue
        if (flags & SHF_EXECINSTR or sh_type == SHT_SYMTAB or sname in _ZEROED
                or (sh_type == SHT_STRTAB and sname == b".strtab")):
            out[off : off + size] = bytes(size)
    return bytes(out)


def trim_pt2(src: str, dst: str) -> None:
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            data = zin.read(info)
            if info.filename.endswith(".so"):
                data = trim_elf(data)
            zout.writestr(info, data, compress_type=zipfile.ZIP_DEFLATED, compresslevel=9)


def split_cache(tgz: str, dest: str) -> None:
    with tarfile.open(tgz) as t:
        names = t.getnames()
        for member in t.getmembers():
            if not member.isfile():
                continue
            parts = member.name.split("/")
            if len(parts) != 3 or not parts[2].endswith((".cubin", ".ptx", ".json")):
                continue
            if parts[2].startswith("__grp__"):
                continue
            kernel = parts[2].rsplit(".", 1)[0]
            inductor = kernel.startswith("triton_")
            which = "triton_cache_inductor" if inductor else "triton_cache_bundled"
            out = os.path.join(dest, which, parts[1], parts[2])
            os.makedirs(os.path.dirname(out), exist_ok=True)
            f = t.extractfile(member)
            assert f is not None
            with open(out, "wb") as o:
                o.write(f.read())
        assert names


def main(src: str, dest: str) -> None:
    for name in sorted(os.listdir(src)):
        if name.endswith(".pt2"):
            trim_pt2(os.path.join(src, name), os.path.join(dest, name))
    for which in ("triton_cache_inductor", "triton_cache_bundled"):
        shutil.rmtree(os.path.join(dest, which), ignore_errors=True)
    split_cache(os.path.join(src, "triton_cache.tgz"), dest)
    shutil.copy(os.path.join(src, "meta.json"), os.path.join(dest, "meta.json"))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
