"""The driver stub ``lib/stubs/libcuda.so`` for a toolkit assembled from wheels.

NVIDIA's redist ``cuda_cudart`` archive ships ``lib/stubs/libcuda.so``: a library with the
driver API's symbols that programs link against on machines without a driver (CMake's
``CUDA::cuda_driver`` is found there); at run time the real driver's ``libcuda.so.1`` is
loaded instead.  No NVIDIA wheel carries it, so a wheels-built tree gets one written here:
an ELF64 shared object (System V ABI, ``DT_SONAME libcuda.so.1``) that defines every
driver function the tree's own ``include/cuda.h`` declares or maps a name to (``cuMemAlloc
-> cuMemAlloc_v2``, the ``_ptds`` / ``_ptsz`` per-thread variants), each returning
``CUDA_ERROR_STUB_LIBRARY`` (34), as NVIDIA's stub does.  docs/toolkit.md, Layout.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterable
from pathlib import Path

from cuwheel.knowledge.platforms import load_platforms

__all__ = ["RETURN_34", "driver_symbols", "e_machine", "write_driver_stub"]

CUDA_ERROR_STUB_LIBRARY = 34
# The code of `return 34;` (System V calling conventions), per ELF machine; the e_machine
# number is the platform table's (data/platforms.toml).
RETURN_34: dict[str, bytes] = {
    # mov eax, 34; ret
    "x86_64": b"\xb8" + struct.pack("<I", CUDA_ERROR_STUB_LIBRARY) + b"\xc3",
    # mov w0, #34; ret
    "aarch64": struct.pack("<II", 0x52800000 | (CUDA_ERROR_STUB_LIBRARY << 5), 0xD65F03C0),
}


def e_machine(machine: str) -> int | None:
    """The ELF e_machine of ``machine`` (x86_64 -> 62), as data/platforms.toml records it;
    None for a machine of no Linux platform."""
    return next((p.binary_code for p in load_platforms().platforms
                 if p.binary_format == "elf" and p.binary_machine == machine), None)  # fmt: skip

_DECL = re.compile(r"\bCUDAAPI\s+(cu[A-Z]\w*)\s*\(")
_DEFINE = re.compile(r"^\s*#\s*define\s+(cu[A-Z]\w*)\s+(.+)$", re.M)
_NAME = re.compile(r"(__CUDA_API_PT(?:DS|SZ)\s*\(\s*)?\b(cu[A-Z]\w*)")


def driver_symbols(header: str) -> list[str]:
    """The driver API's exported names that ``cuda.h`` declares or #defines a call to."""
    names = set(_DECL.findall(header))
    for alias, body in _DEFINE.findall(header):
        found = _NAME.findall(body)
        if not found:
            continue
        names.add(alias)
        for macro, name in found:
            names.add(name)
            if macro:
                names.add(f"{name}_{'ptds' if 'PTDS' in macro else 'ptsz'}")
    return sorted(names)


def _sysv_hash(name: bytes) -> int:
    h = 0
    for c in name:
        h = ((h << 4) + c) & 0xFFFFFFFF
        g = h & 0xF0000000
        if g:
            h ^= g >> 24
        h &= ~g & 0xFFFFFFFF
    return h


def _align(n: int, a: int) -> int:
    return (n + a - 1) // a * a


def stub_library(symbols: Iterable[str], machine: str, soname: str = "libcuda.so.1") -> bytes:
    """An ELF64 little-endian shared object defining ``symbols`` as functions that return
    34; one PT_LOAD (read + execute), PT_DYNAMIC, .hash / .dynsym / .dynstr / .text /
    .dynamic and section headers (the link editor reads the dynamic symbols through them)."""
    number, code = e_machine(machine), RETURN_34[machine]
    if number is None:
        raise KeyError(machine)
    names = sorted(set(symbols))
    dynstr = bytearray(b"\0")
    offsets = {}
    for n in [soname, *names]:
        offsets[n] = len(dynstr)
        dynstr += n.encode() + b"\0"
    nsyms = len(names) + 1
    nbucket = max(1, nsyms // 2)
    buckets = [0] * nbucket
    chain = [0] * nsyms
    for i, n in enumerate(names, start=1):
        b = _sysv_hash(n.encode()) % nbucket
        chain[i] = buckets[b]
        buckets[b] = i
    hash_ = struct.pack(f"<II{nbucket}I{nsyms}I", nbucket, nsyms, *buckets, *chain)

    ehsize, phentsize, phnum = 64, 56, 2
    off_hash = _align(ehsize + phentsize * phnum, 8)
    off_dynsym = _align(off_hash + len(hash_), 8)
    off_dynstr = off_dynsym + 24 * nsyms
    off_text = _align(off_dynstr + len(dynstr), 16)
    off_dynamic = _align(off_text + len(code), 8)
    dyn = [
        (14, offsets[soname]),  # DT_SONAME
        (4, off_hash),  # DT_HASH
        (5, off_dynstr),  # DT_STRTAB
        (6, off_dynsym),  # DT_SYMTAB
        (10, len(dynstr)),  # DT_STRSZ
        (11, 24),  # DT_SYMENT
        (0, 0),  # DT_NULL
    ]
    dynamic = b"".join(struct.pack("<qQ", t, v) for t, v in dyn)
    shstr = b"\0.hash\0.dynsym\0.dynstr\0.text\0.dynamic\0.shstrtab\0"
    off_shstr = off_dynamic + len(dynamic)
    off_sh = _align(off_shstr + len(shstr), 8)
    load_end = off_dynamic + len(dynamic)

    symtab = bytearray(24)  # the null symbol
    for n in names:
        # STB_GLOBAL, STT_FUNC; st_shndx 4 = .text
        symtab += struct.pack("<IBBHQQ", offsets[n], 0x12, 0, 4, off_text, len(code))

    out = bytearray(off_sh + 64 * 7)
    out[0:16] = b"\x7fELF\x02\x01\x01" + bytes(9)  # ELF64, little-endian, SysV
    out[16:64] = struct.pack(
        "<HHIQQQIHHHHHH", 3, number, 1, 0, ehsize, off_sh, 0, ehsize, phentsize, phnum,
        64, 7, 6,
    )  # fmt: skip
    # PT_LOAD (R+X) over the file from 0; PT_DYNAMIC (R)
    out[64:120] = struct.pack("<IIQQQQQQ", 1, 5, 0, 0, 0, load_end, load_end, 0x1000)
    out[120:176] = struct.pack(
        "<IIQQQQQQ", 2, 4, off_dynamic, off_dynamic, off_dynamic, len(dynamic), len(dynamic), 8
    )
    out[off_hash : off_hash + len(hash_)] = hash_
    out[off_dynsym : off_dynsym + len(symtab)] = symtab
    out[off_dynstr : off_dynstr + len(dynstr)] = dynstr
    out[off_text : off_text + len(code)] = code
    out[off_dynamic : off_dynamic + len(dynamic)] = dynamic
    out[off_shstr : off_shstr + len(shstr)] = shstr

    def sh(name: bytes, type_: int, flags: int, off: int, size: int, link: int = 0,
           info: int = 0, align: int = 1, entsize: int = 0) -> bytes:  # fmt: skip
        idx = shstr.index(b"\0" + name + b"\0") + 1 if name else 0
        addr = off if flags & 2 else 0  # SHF_ALLOC: loaded at its file offset
        return struct.pack(
            "<IIQQQQIIQQ", idx, type_, flags, addr, off, size, link, info, align, entsize
        )

    headers = b"".join([
        bytes(64),
        sh(b".hash", 5, 2, off_hash, len(hash_), 2, 0, 8, 4),
        sh(b".dynsym", 11, 2, off_dynsym, len(symtab), 3, 1, 8, 24),
        sh(b".dynstr", 3, 2, off_dynstr, len(dynstr)),
        sh(b".text", 1, 6, off_text, len(code), 0, 0, 16),
        sh(b".dynamic", 6, 2, off_dynamic, len(dynamic), 3, 0, 8, 16),
        sh(b".shstrtab", 3, 0, off_shstr, len(shstr)),
    ])  # fmt: skip
    out[off_sh : off_sh + len(headers)] = headers
    return bytes(out)


def write_driver_stub(tree: Path, machine: str) -> Path | None:
    """Write ``lib/stubs/libcuda.so`` into a Linux toolkit tree that has ``include/cuda.h``
    and no stub of its own; returns its path, or None when there was nothing to do."""
    header = tree / "include" / "cuda.h"
    stub = tree / "lib" / "stubs" / "libcuda.so"
    if (stub.exists() or stub.is_symlink() or not header.is_file()
            or machine not in RETURN_34 or e_machine(machine) is None):  # fmt: skip
        return None
    symbols = driver_symbols(header.read_text(encoding="utf-8", errors="replace"))
    if not symbols:
        return None
    stub.parent.mkdir(parents=True, exist_ok=True)
    stub.write_bytes(stub_library(symbols, machine))
    stub.chmod(0o755)
    return stub
