"""Trim a real published wheel into a small fixture wheel with the same device-code shape.

    python tests/data/real/trim_real.py REAL.whl OUT_DIR

For every library of the real wheel, the fixture has a member of the same path: an ELF
shared object (built with tests/binbuild.py) with the real DT_NEEDED and DT_SONAME, and in
``.nv_fatbin`` (``__nv_relfatbin`` for relocatable containers) one container for each
distinct kind of container of the real library: same entries (kind, architecture, variant,
PTX ISA) and the same toolkit.  The container is copied byte for byte from the real file
(the smallest of its kind) when it is at most ``COPY_LIMIT`` bytes; a larger one is
rebuilt from the library's smallest real entries of the same kind, architecture and
version (header and payload copied whole from another container: ``manifest.txt`` says
which); a PTX text over ``PTX_LIMIT`` keeps only its ``.version`` / ``.target`` lines.
The METADATA's Requires-Dist lines are kept.  The real wheels' sha256 are in SOURCES
below: the fixture is remade only from those
bytes.  Container counts and offsets are not kept (one per kind).

Nothing here is used by cuwheel; the container offsets are read with cuwheel's inspect.
"""

from __future__ import annotations

import hashlib
import os
import struct
import sys
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))  # tests/

import binbuild  # noqa: E402
from binbuild import Elf, Sec  # noqa: E402
from wheelfactory import make_wheel  # noqa: E402

# file name -> sha256 of the wheel as published on the package index
SOURCES = {
    "faiss_gpu-1.7.2-cp310-cp310-manylinux_2_17_x86_64.manylinux2014_x86_64.whl":
        "c98abc1aac06cb4cb94de223b3186bd4a60d15fd3cae42271604168abc081ca5",
    "bitsandbytes-0.50.2-py3-none-manylinux_2_24_x86_64.whl":
        "55348a9a4a21bfd99cf8c7b32fe67b4030ae5c2a05738e03c1747f65fa6ec283",
    "vllm-0.19.1-cp38-abi3-manylinux_2_31_x86_64.whl":
        "71a87f46cafab4489c69a5c5c83b870d0235e5694d8222303d460576293dc719",
}
COPY_LIMIT = 96 * 1024
PTX_LIMIT = 16 * 1024
_VARIANT = 0x300000  # the entry flags of "a" and "f" targets


_ENTRY = struct.Struct("<HHIQIIHHIIIQQQ")
_LZ4, _ZSTD = 0x2000, 0x8000


def _as_executable(whole: bytes) -> bytes:
    """A relocatable (ET_REL) cubin entry as an executable one: the payload decompressed,
    e_type set to ET_EXEC, stored uncompressed (a linked image's entries are ET_EXEC)."""
    f = list(_ENTRY.unpack_from(whole, 0))
    hsize, psize, csize, flags, usize = f[2], f[3], f[4], f[11], f[13]
    payload = whole[hsize : hsize + psize]
    if flags & _LZ4:
        import lz4.block

        payload = lz4.block.decompress(payload[:csize], uncompressed_size=usize)
    elif flags & _ZSTD:
        import zstandard

        payload = zstandard.ZstdDecompressor().decompress(payload[:csize], max_output_size=usize)
    cubin = bytearray(payload[:usize] if flags & (_LZ4 | _ZSTD) else payload)
    struct.pack_into("<H", cubin, 16, 2)  # e_type = ET_EXEC
    cubin += bytes(-len(cubin) % 8)
    f[3], f[4], f[11], f[13] = len(cubin), 0, flags & ~(_LZ4 | _ZSTD), len(cubin)
    header = bytearray(whole[:hsize])
    _ENTRY.pack_into(header, 0, *f)
    return bytes(header) + bytes(cubin)


def _small_ptx(whole: bytes, arch: str) -> bytes:
    """A PTX entry with the real header and, for its text, only the directives that name
    its ISA and target (a PTX module's facts; the kernels are left out), stored."""
    f = list(_ENTRY.unpack_from(whole, 0))
    hsize, vminor, vmajor = f[2], f[6], f[7]
    text = f".version {vmajor}.{vminor}\n.target {arch}\n.address_size 64\n".encode() + b"\0"
    text += bytes(-len(text) % 8)
    f[3], f[4], f[11], f[13] = len(text), 0, f[11] & ~(_LZ4 | _ZSTD), len(text)
    header = bytearray(whole[:hsize])
    _ENTRY.pack_into(header, 0, *f)
    return bytes(header) + text


def _standin(entries: list[bytes]) -> bytes:
    """A container of the given whole entries (header + payload each)."""
    body = b"".join(e + bytes(-len(e) % 8) for e in entries)
    return struct.pack("<IHHQ", 0xBA55ED50, 1, 16, len(body)) + body


def _elf(needed: list[str], soname: str | None, fat: bytes, rel: bytes) -> bytes:
    names = [*needed, *([soname] if soname else [])]
    dynstr = bytearray(b"\0")
    offs = []
    for n in names:
        offs.append(len(dynstr))
        dynstr += n.encode() + b"\0"
    entries = [(1, o) for o in offs[: len(needed)]]
    if soname:
        entries.append((14, offs[-1]))
    dyn = binbuild.dynamic([(5, 0x1000), (10, len(dynstr)), *entries])
    secs = [Sec(".dynstr", bytes(dynstr), sh_type=3, align=0x1000),
            Sec(".dynamic", dyn, sh_type=6, flags=3)]
    if fat:
        secs.append(Sec(".nv_fatbin", fat, align=8))
    if rel:
        secs.append(Sec("__nv_relfatbin", rel, align=8))
    return binbuild.elf64(Elf(secs))


def trim(wheel: str, out_dir: str) -> str:
    import cuwheel

    name = os.path.basename(wheel)
    with open(wheel, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    if SOURCES.get(name) not in (None, digest):
        raise SystemExit(f"{name}: sha256 {digest} is not the published wheel's")
    inv = cuwheel.inspect([wheel], payload="all")
    members: dict[str, bytes] = {}
    notes = [f"{name} sha256={digest}"]
    with zipfile.ZipFile(wheel) as zf:
        meta = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        requires = tuple(
            line.split(":", 1)[1].strip()
            for line in zf.read(meta).decode().splitlines()
            if line.startswith("Requires-Dist:")
        )
        for b in inv.binaries:
            if b.archive is not None or b.format != "elf":
                continue
            member = b.path.rsplit("!", 1)[-1]
            data = zf.read(member) if b.containers else b""
            kinds: dict[tuple[object, ...], list[tuple[int, int, bool]]] = {}
            for c in b.containers:
                key = (c.relocatable, tuple(f"{e.name}/{e.code_version[0]}.{e.code_version[1]}"
                                            for e in c.entries), str(c.toolkit),
                       c.device_link, tuple(e.kernels for e in c.entries), c.section)
                kinds.setdefault(key, []).append((c.offset, c.size, c.relocatable))
            smallest: dict[tuple[object, ...], bytes] = {}
            for c in b.containers:
                for e in c.entries:
                    k = (e.kind, e.arch, e.code_version, e.flags & _VARIANT)
                    whole = data[e.offset : e.offset + e.header_size + e.stored_size]
                    if e.relocatable and not c.relocatable:
                        continue
                    if e.relocatable:
                        whole = _as_executable(whole)
                    if e.kind.value == "ptx" and len(whole) > PTX_LIMIT:
                        whole = _small_ptx(whole, e.arch.sass)
                    if k not in smallest or len(whole) < len(smallest[k]):
                        smallest[k] = whole
            by_offset = {c.offset: c for c in b.containers}
            fat, rel = bytearray(), bytearray()
            for key, found in kinds.items():
                off, size, relocatable = min(found, key=lambda x: x[1])
                raw = data[off : off + size]
                if size > COPY_LIMIT:
                    raw = _standin([smallest[(e.kind, e.arch, e.code_version, e.flags & _VARIANT)]
                                    for e in by_offset[off].entries])
                    codes = " ".join(str(k).split("/")[0] for k in key[1])  # type: ignore[union-attr]
                    notes.append(f"{member}: [{codes}] toolkit {key[2]}: the smallest of "
                                 f"{len(found)} is {size} B, rebuilt as {len(raw)} B")
                dest = rel if relocatable else fat
                dest += raw + bytes(-len(raw) % 8)
            members[member] = _elf(list(b.needed), b.soname, bytes(fat), bytes(rel))
    stem = name[: -len(".whl")].split("-")
    out = make_wheel(out_dir, members, name=stem[0], version=stem[1],
                     tag="-".join(stem[-3:]), requires=requires)
    with open(os.path.join(out_dir, "manifest.txt"), "a", encoding="utf-8") as f:
        f.write("\n".join(notes) + "\n")
    return out


if __name__ == "__main__":
    print(trim(sys.argv[1], sys.argv[2]))
