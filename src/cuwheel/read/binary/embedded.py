"""Bytes already in memory read as binaries (an ExecuTorch segment, an exported program's
member), and the CUDA ELF images embedded whole in a host library's data, which no
section table names (docs/artifacts.md)."""

from __future__ import annotations

import contextlib
import struct
from collections.abc import Callable, Iterator

from cuwheel.errors import InputError
from cuwheel.model.inventory import Binary, Problem
from cuwheel.read.binary.sniff import SNIFF_BYTES, read_binary, sniff
from cuwheel.read.bytes.stream import Chunk
from cuwheel.read.device.cubin import EM_CUDA

__all__ = ["MAX_EMBEDDED", "container_ranges", "embedded_cubins", "one_chunk", "read_bytes"]

# Embedded images read per host library; the rest are not looked for.
MAX_EMBEDDED = 4096


def container_ranges(hosts: list[Binary]) -> list[tuple[int, int]]:
    """The extents of the fatbin containers of host binaries (ELF, PE)."""
    return [(c.offset, c.offset + c.size) for b in hosts if b.format in ("elf", "pe")
            for c in b.containers]


def embedded_cubins(display: str, data: bytes, limit: int = MAX_EMBEDDED,
                    skip: list[tuple[int, int]] | None = None) -> list[Binary]:
    """CUDA ELF images embedded whole in a host library's data (AOTInductor's
    ``embed_kernel_binary``, ExecuTorch's CUDA backend): each read as a cubin named
    ``display@0xOFFSET``.  The image ends at the later of its section and program header
    tables (the CUDA ELF layout puts the section headers last).  Cubins inside the fatbin
    containers in ``skip`` (offset ranges) are the containers' entries already: not again."""
    out: list[Binary] = []
    skip = skip or []
    pos = data.find(b"\x7fELF", 1)
    while pos != -1 and len(out) < limit:
        inside = next((end for start, end in skip if start <= pos < end), None)
        if inside is not None:
            pos = data.find(b"\x7fELF", inside)
            continue
        if pos + 64 <= len(data) and data[pos + 4] == 2 and data[pos + 5] == 1:
            e_machine, = struct.unpack_from("<H", data, pos + 18)
            if e_machine == EM_CUDA:
                phoff, shoff = struct.unpack_from("<QQ", data, pos + 32)
                phentsize, phnum, shentsize, shnum = struct.unpack_from("<HHHH", data, pos + 54)
                end = max(shoff + shentsize * shnum, phoff + phentsize * phnum)
                if 64 <= end <= len(data) - pos:
                    image = data[pos : pos + end]
                    name = f"{display}@0x{pos:x}"
                    # bytes that only look like an ELF header are skipped
                    with contextlib.suppress(InputError):
                        out += read_binary(name, len(image), one_chunk(image), "cubin")
                    pos = data.find(b"\x7fELF", pos + end)
                    continue
        pos = data.find(b"\x7fELF", pos + 1)
    return out


def one_chunk(data: bytes) -> Callable[[], Iterator[Chunk]]:
    """A chunk source of bytes already in memory."""

    def gen() -> Iterator[Chunk]:
        yield data

    return gen


def read_bytes(display: str, data: bytes) -> tuple[list[Binary], list[Problem]]:
    """A member's bytes as binaries (and the cubins embedded in a host library)."""
    kind = sniff(data[:SNIFF_BYTES])
    if kind is None:
        return [], []
    try:
        bins = read_binary(display, len(data), one_chunk(data), kind)
    except InputError as exc:
        return [], [Problem(exc.path, exc.problem)]
    if kind in ("elf", "pe"):
        bins += embedded_cubins(display, data, skip=container_ranges(bins))
    return bins, []
