"""Find and walk fatbin containers in a binary as it streams past.

Every place where the container signature occurs becomes a candidate; a candidate is
kept only if its entries walk exactly to its declared end (binary-formats.md 2-3).
Which section holds each container is decided afterwards, once the host reader knows
the section table: candidates in a device-code section must be valid (else the file is
corrupt), candidates elsewhere that do not validate are just bytes that look alike.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from cuwheel.model.inventory import CodeKind, Compression, FatbinContainer, FatbinEntry, Toolkit
from cuwheel.read.cubin import parse_cubin
from cuwheel.read.fatbin import (
    CONTAINER_HEADER_SIZE,
    CONTAINER_SIGNATURE,
    ENTRY_FIXED_SIZE,
    EntryHeader,
    FatbinError,
    decompress_prefix,
    make_entry,
    parse_container_header,
    parse_entry_header,
)
from cuwheel.read.stream import Scan

__all__ = ["Candidate", "ContainerCollector", "Region", "assign_containers"]

# Payload bytes decoded per cubin to find its ELF header and toolkit note.  The notes sit
# after the symbol and string tables; in big cubins that can be far in, and then the
# toolkit stays unknown rather than costing a full decompression.
PAYLOAD_PREFIX_IN = 128 << 10
PAYLOAD_PREFIX_OUT = 256 << 10
# Cubins decoded per container at most, when looking for its toolkit.
MAX_DECODES = 3
# In "all" mode each cubin is decoded whole, up to this size.
MAX_CUBIN = 256 << 20
# Far beyond any real library (cuFFT: 24k containers and entries) and small enough that a
# hostile file cannot make the inventory itself exhaust memory.
MAX_CANDIDATES = 1_000_000
MAX_ENTRIES = 2_000_000


@dataclass
class Candidate:
    offset: int
    end: int = 0
    entries: list[FatbinEntry] = field(default_factory=list)
    error: str | None = None
    complete: bool = False
    toolkit: Toolkit | None = None
    decodes: int = 0
    index: int = 0  # order among the candidates found
    skipped: bool = False  # its extent was left out of the signature search

    @property
    def valid(self) -> bool:
        return self.complete and self.error is None


@dataclass(frozen=True)
class Region:
    """A section of the host file (absolute offsets)."""

    name: str
    start: int
    end: int
    device_code: bool  # one of the named fatbin sections
    relocatable: bool  # __nv_relfatbin / __nv_rel
    # Worth a signature search: allocated, initialised, non-executable data.
    searchable: bool = False


class ContainerCollector:
    """Registers with a Scan; collects candidate containers in [base, base + size)."""

    def __init__(self, scan: Scan, *, payload: str = "sample", skip_known: bool = True) -> None:
        """``payload``: "none" (headers only), "sample" (decode the start of one cubin in
        containers 0, 1, 2, 4, 8, ... to read the toolkit) or "all" (every cubin, whole)."""
        self.scan = scan
        self.payload = payload
        self.candidates: dict[int, Candidate] = {}
        self.entries = 0
        self.skip_known = skip_known

    def walk_region(self, region: Region) -> None:
        """Follow the container chain of a device-code section of a resident file."""
        at, end = region.start, region.end
        peek = self.scan.peek
        while at + 16 <= end:
            head = peek(at, 8)
            if head == CONTAINER_SIGNATURE:
                cand = self._candidate(at)
                if cand is None:
                    return
                self._read_resident(cand)
                if not cand.valid:
                    return  # assign_containers reports the section
                at = cand.end
            elif head == bytes(8):
                at += 8  # zero padding that aligns containers (binary-formats.md 1.6)
            else:
                return  # not a container: assign_containers reports the section

    def search_region(self, region: Region) -> None:
        """Look for containers anywhere in a data section of a resident file."""
        for hit in self.scan.find_signatures(region.start, region.end):
            cand = self._candidate(hit)
            if cand is not None:
                self._read_resident(cand)

    def _candidate(self, offset: int) -> Candidate | None:
        if offset in self.candidates:
            return None
        if len(self.candidates) >= MAX_CANDIDATES:
            raise FatbinError(f"more than {MAX_CANDIDATES} fatbin container signatures")
        cand = Candidate(offset, index=len(self.candidates))
        self.candidates[offset] = cand
        return cand

    def _read_resident(self, cand: Candidate) -> None:
        """Walk a container of a resident file in a loop: no requests, no recursion."""
        peek = self.scan.peek
        if cand.offset + CONTAINER_HEADER_SIZE > self.scan.size:
            cand.error = "truncated container header"
            return
        self._container(cand, peek(cand.offset, CONTAINER_HEADER_SIZE), walk=False)
        if cand.error is not None:
            return
        at = cand.offset + CONTAINER_HEADER_SIZE
        while at != cand.end:
            if at + ENTRY_FIXED_SIZE > cand.end:
                cand.error = f"{cand.end - at} stray bytes after the last entry"
                return
            data = peek(at, ENTRY_FIXED_SIZE)
            try:
                hdr = parse_entry_header(data, cand.end - at)
            except FatbinError as exc:
                cand.error = f"entry at 0x{at:x}: {exc}"
                return
            if hdr.identifier_length and hdr.header_size > ENTRY_FIXED_SIZE:
                data = peek(at, hdr.header_size)
            self._add(cand, at, hdr, data)
            at += hdr.size
        cand.complete = True

    def on_signature(self, offset: int) -> None:
        """A signature seen while streaming: walk the candidate through requests."""
        cand = self._candidate(offset)
        if cand is None:
            return
        if offset + CONTAINER_HEADER_SIZE > self.scan.size:
            cand.error = "truncated container header"
            return
        self.scan.request(offset, CONTAINER_HEADER_SIZE, lambda b: self._container(cand, b))

    def _container(self, cand: Candidate, data: bytes, walk: bool = True) -> None:
        try:
            hdr = parse_container_header(data)
        except FatbinError as exc:
            cand.error = str(exc)
            return
        cand.end = cand.offset + hdr.size
        if cand.end > self.scan.size:
            cand.error = (
                f"container claims {hdr.payload_size} payload bytes, past the end of the file"
            )
            return
        if self.skip_known and not self.scan.resident and hdr.payload_size:
            # The entries are walked through their headers; searching the payloads for
            # more signatures is wasted work.  If this candidate proves invalid, the
            # caller reads the file again without skipping (see unsafe_skips).
            cand.skipped = True
            self.scan.skip_known.append((cand.offset + CONTAINER_HEADER_SIZE, cand.end))
        if walk:
            self._next_entry(cand, cand.offset + CONTAINER_HEADER_SIZE)

    def _next_entry(self, cand: Candidate, at: int) -> None:
        if at == cand.end:
            cand.complete = True
            return
        if at + ENTRY_FIXED_SIZE > cand.end:
            cand.error = f"{cand.end - at} stray bytes after the last entry"
            return
        self.scan.request(at, ENTRY_FIXED_SIZE, lambda b: self._entry(cand, at, b))

    def _entry(self, cand: Candidate, at: int, data: bytes) -> None:
        try:
            hdr = parse_entry_header(data, cand.end - at)
        except FatbinError as exc:
            cand.error = f"entry at 0x{at:x}: {exc}"
            return
        if hdr.identifier_length and hdr.header_size > ENTRY_FIXED_SIZE:
            self.scan.request(at, hdr.header_size, lambda b: self._add(cand, at, hdr, b))
        else:
            self._add(cand, at, hdr, data)
        self._next_entry(cand, at + hdr.size)

    def _add(self, cand: Candidate, at: int, hdr: EntryHeader, header_bytes: bytes) -> None:
        self.entries += 1
        if self.entries > MAX_ENTRIES:
            raise FatbinError(f"more than {MAX_ENTRIES} fatbin entries")
        index = len(cand.entries)
        cand.entries.append(make_entry(hdr, at, header_bytes))
        if hdr.kind is not CodeKind.SASS or not hdr.payload_size or self.payload == "none":
            return
        start = at + hdr.header_size
        stored = hdr.compressed_size or hdr.payload_size
        if self.payload == "all":
            if hdr.uncompressed_size > MAX_CUBIN:
                return
            take, limit = stored, hdr.uncompressed_size
        else:
            # Sample: the toolkit is the same for a container's cubins (one nvcc run), and
            # containers 0, 1, 2, 4, 8... cover a binary without decoding them all.
            i = cand.index
            if cand.toolkit is not None or cand.decodes >= MAX_DECODES or (i & (i - 1)):
                return
            if hdr.compression is Compression.LZ4:
                if hdr.uncompressed_size > PAYLOAD_PREFIX_OUT:
                    return
                take, limit = stored, hdr.uncompressed_size  # raw LZ4 decodes only whole
            else:
                take, limit = min(stored, PAYLOAD_PREFIX_IN), PAYLOAD_PREFIX_OUT
        cand.decodes += 1
        if self.scan.resident:
            self._payload(cand, index, hdr, self.scan.peek(start, take), limit)
        else:
            self.scan.request(start, take, lambda b: self._payload(cand, index, hdr, b, limit))

    def _payload(
        self, cand: Candidate, index: int, hdr: EntryHeader, data: bytes, limit: int
    ) -> None:
        try:
            prefix = decompress_prefix(
                hdr.compression, data, hdr.compressed_size, hdr.uncompressed_size, limit
            )
        except FatbinError as exc:
            cand.error = f"entry {index}: {exc}"
            return
        facts = parse_cubin(prefix)
        if facts is None:
            if prefix:
                cand.error = f"entry {index}: the SASS payload is not a CUDA ELF"
            return
        if facts.toolkit is not None and cand.toolkit is None:
            cand.toolkit = facts.toolkit
        entry = cand.entries[index]
        cand.entries[index] = dataclasses.replace(
            entry, toolkit=facts.toolkit, relocatable=facts.relocatable
        )


def unsafe_skips(candidates: dict[int, Candidate]) -> bool:
    """Whether a skipped extent belonged to a candidate that did not validate."""
    return any(c.skipped and not c.valid for c in candidates.values())


def assign_containers(
    candidates: dict[int, Candidate],
    regions: list[Region],
    *,
    where: str = "",
    wrappers: dict[int, int] | None = None,
) -> tuple[list[FatbinContainer], list[str]]:
    """Keep valid, non-overlapping containers and name the section of each.

    Returns the containers in file order and the problems found in device-code
    sections (a corrupt container there, or bytes that are no container).
    """
    problems: list[str] = []
    kept: list[tuple[Candidate, Region | None]] = []
    last_end = -1
    for off in sorted(candidates):
        cand = candidates[off]
        if off < last_end:
            continue  # inside a container already kept (e.g. in a stored payload)
        region = next((r for r in regions if r.start <= off < r.end), None)
        if region is not None and not (region.device_code or region.searchable):
            continue  # code or toolchain tables: not searched when the file is on disk
        if cand.valid and (region is None or cand.end <= region.end):
            kept.append((cand, region))
            last_end = cand.end
        elif region is not None and region.device_code:
            reason = cand.error or f"container runs past the end of {region.name}"
            problems.append(f"{where}{region.name} container at 0x{off:x}: {reason}")
    # Device-code sections must be tiled by containers, allowing the zero pads that keep
    # containers 8- or 16-aligned (binary-formats.md 1.6).
    for region in regions:
        if not region.device_code:
            continue
        cursor = region.start
        for cand, r in kept:
            if r is not region:
                continue
            if cand.offset - cursor >= 16:
                problems.append(
                    f"{where}{region.name}: bytes at 0x{cursor:x} are not a fatbin container"
                )
            cursor = cand.end
        if region.end - cursor >= 16 and not any(
            region.start <= o < region.end and not candidates[o].valid for o in candidates
        ):
            problems.append(
                f"{where}{region.name}: bytes at 0x{cursor:x} are not a fatbin container"
            )
    containers = [
        FatbinContainer(
            offset=cand.offset,
            size=cand.end - cand.offset,
            section=region.name if region else None,
            named_section=bool(region and region.device_code),
            relocatable=bool(region and region.relocatable),
            entries=tuple(cand.entries),
            toolkit=cand.toolkit,
            device_link=(wrappers[cand.offset] == 2) if wrappers and cand.offset in wrappers
            else None,
        )
        for cand, region in kept
    ]
    return containers, problems
