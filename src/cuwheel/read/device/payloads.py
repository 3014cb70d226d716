"""Which fatbin entry payloads are decoded, and what is read from them
(docs/formats.md#payloads-and-compression, #cubin-toolkit-notes, #cubin-entry-kernels).

Modes, cheapest first: "none" (headers only); "sample" (the start of up to MAX_DECODES
cubins in containers 0, 1, 2, 4, 8, ..., until one names the toolkit that built it: one
nvcc run makes a container, so its cubins share it); "all" (every cubin whole);
"kernels" (every cubin and every PTX text whole, with the names of their entry kernels).
"""

from __future__ import annotations

import dataclasses
from typing import Literal, get_args

from cuwheel.errors import FatbinError
from cuwheel.model.inventory import CodeKind, Compression
from cuwheel.read.device.candidate import Candidate
from cuwheel.read.device.cubin import parse_cubin
from cuwheel.read.device.fatbin import EntryHeader, decompress_prefix
from cuwheel.read.device.ptx import ptx_names

__all__ = [
    "MAX_CUBIN",
    "MAX_DECODES",
    "MAX_KERNEL_BYTES",
    "PAYLOAD_MODES",
    "PAYLOAD_PREFIX_IN",
    "PAYLOAD_PREFIX_OUT",
    "Decodes",
    "PayloadMode",
]

# What is decoded of the entry payloads, cheapest first (the module docstring).
PayloadMode = Literal["none", "sample", "all", "kernels"]
PAYLOAD_MODES: tuple[PayloadMode, ...] = get_args(PayloadMode)
# Payload bytes decoded per cubin to find its ELF header and toolkit note.  The notes sit
# after the symbol and string tables; in big cubins that can be far in, and then the
# toolkit stays unknown rather than costing a full decompression.
PAYLOAD_PREFIX_IN = 128 << 10
PAYLOAD_PREFIX_OUT = 256 << 10
# Cubins decoded per container at most, when looking for its toolkit.
MAX_DECODES = 3
# In "all" and "kernels" mode each cubin (and PTX text) is decoded whole, up to this size.
MAX_CUBIN = 256 << 20
# Bytes of kernel names one binary keeps (each distinct name counted once): past it, the
# entries' names are not read (None), so a hostile file cannot make the inventory hold
# more.  torch 2.14.1's libtorch_cuda.so holds about 40 MB of distinct names.
MAX_KERNEL_BYTES = 128 << 20


class Decodes:
    """The payload decodes of one binary's containers, in one mode."""

    def __init__(self, payload: PayloadMode) -> None:
        self.payload = payload
        self.kernels = payload == "kernels"
        self._names: dict[str, str] = {}  # one string object per distinct name
        self._name_bytes = 0

    def plan(self, cand: Candidate, hdr: EntryHeader) -> tuple[int, int] | None:
        """(stored bytes to read, bytes to decode at most) for the entry ``hdr`` of
        ``cand``, or None when it is not decoded."""
        if not hdr.payload_size or self.payload == "none":
            return None
        stored = hdr.compressed_size or hdr.payload_size
        if hdr.kind is CodeKind.PTX and self.kernels:
            return (stored, hdr.uncompressed_size) if hdr.uncompressed_size <= MAX_CUBIN \
                else None
        if hdr.kind is not CodeKind.SASS:
            return None
        if self.payload in ("all", "kernels"):
            if hdr.uncompressed_size > MAX_CUBIN:
                return None
            return stored, hdr.uncompressed_size
        i = cand.index
        if cand.toolkit is not None or cand.decodes >= MAX_DECODES or (i & (i - 1)):
            return None
        if hdr.compression is Compression.LZ4:
            if hdr.uncompressed_size > PAYLOAD_PREFIX_OUT:
                return None
            return stored, hdr.uncompressed_size  # raw LZ4 decodes only whole
        return min(stored, PAYLOAD_PREFIX_IN), PAYLOAD_PREFIX_OUT

    def _keep(self, names: tuple[str, ...]) -> tuple[str, ...] | None:
        out = []
        for n in names:
            kept = self._names.get(n)
            if kept is None:
                self._name_bytes += len(n)
                if self._name_bytes > MAX_KERNEL_BYTES:
                    return None
                kept = self._names[n] = n
            out.append(kept)
        return tuple(out)

    def decode(self, cand: Candidate, index: int, hdr: EntryHeader, data: bytes,
               limit: int) -> None:
        """Decode entry ``index`` of ``cand`` from its stored bytes ``data`` and record
        what it says."""
        # A payload error never replaces an error of the entry walk, which always replaces
        # it: a resident file decodes payloads during the walk, a streamed one after it,
        # and both must name the same error.
        try:
            prefix = decompress_prefix(
                hdr.compression, data, hdr.compressed_size, hdr.uncompressed_size, limit
            )
        except FatbinError as exc:
            if cand.error is None:
                cand.error = f"entry {index}: {exc}"
            return
        entry = cand.entries[index]
        if hdr.kind is CodeKind.PTX:
            kernels, variables = ptx_names(prefix)
            cand.entries[index] = dataclasses.replace(
                entry, kernel_names=self._keep(kernels),
                data_names=None if variables is None else self._keep(variables))
            return
        facts = parse_cubin(prefix, kernel_names=self.kernels)
        if facts is None:
            if prefix and cand.error is None:
                cand.error = f"entry {index}: the SASS payload is not a CUDA ELF"
            return
        if facts.toolkit is not None and cand.toolkit is None:
            cand.toolkit = facts.toolkit
        names = self._keep(facts.kernel_names) if facts.kernel_names is not None else None
        variables = self._keep(facts.data_names) if facts.data_names is not None else None
        cand.entries[index] = dataclasses.replace(
            entry, toolkit=facts.toolkit, relocatable=facts.relocatable, kernels=facts.kernels,
            kernel_names=names, data_names=variables,
        )
