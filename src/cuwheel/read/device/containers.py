"""Find and walk fatbin containers in a binary as it streams past.

Every place where the container signature occurs becomes a candidate; a candidate is
kept only if its entries walk exactly to its declared end
(docs/formats.md#fatbin-container-header, #entry-header).
Which section holds each container is decided afterwards, once the host reader knows
the section table: candidates in a device-code section must be valid (else that is an
anomaly of the binary, and the other containers are still kept), candidates elsewhere
that do not validate are just bytes that look alike.
"""

from __future__ import annotations

import bisect
from functools import partial

from cuwheel.errors import FatbinError
from cuwheel.model.inventory import FatbinContainer
from cuwheel.read.bytes.regions import PAD_LIMIT, TAIL_PAD, Region, merge_ranges
from cuwheel.read.bytes.stream import Scan
from cuwheel.read.bytes.tables import RangeMap
from cuwheel.read.device.candidate import Candidate
from cuwheel.read.device.fatbin import (
    CONTAINER_HEADER_SIZE,
    CONTAINER_SIGNATURE,
    ENTRY_FIXED_SIZE,
    EntryHeader,
    make_entry,
    parse_container_header,
    parse_entry_header,
)
from cuwheel.read.device.payloads import Decodes, PayloadMode

__all__ = ["ContainerCollector", "assign_containers"]

# Far beyond any real library (cuFFT: 24k containers and entries) and small enough that a
# hostile file cannot make the inventory itself exhaust memory.
MAX_CANDIDATES = 1_000_000
MAX_ENTRIES = 2_000_000


class ContainerCollector:
    """Registers with a Scan; collects candidate containers in [base, base + size)."""

    def __init__(self, scan: Scan, *, payload: PayloadMode = "sample",
                 skip_known: bool = True) -> None:
        """``payload``: "none" (headers only), "sample" (decode the start of up to three cubins
        in containers 0, 1, 2, 4, 8, ... to read the toolkit), "all" (every cubin, whole) or
        "kernels" (every cubin and PTX text, whole, with its entry kernels' names)."""
        self.scan = scan
        self.payload = payload
        self.decodes = Decodes(payload)
        self.candidates: dict[int, Candidate] = {}
        self.entries = 0
        self.skip_known = skip_known
        self._last_hit = -PAD_LIMIT

    def walk_region(self, region: Region) -> None:
        """Follow the container chain of a device-code section of a resident file.

        Zero padding is stepped over in one read per run (``Scan.zeros_from``).  Bytes
        that are no container, or a container that does not validate, do not end the
        walk: it goes on from the next signature in the section, so one damaged
        container loses only itself (assign_containers reports what was not tiled)."""
        at, end = region.start, region.end
        scan = self.scan
        # Every signature that starts in the section counts, even one the section's end
        # cuts (a stream search sees it too): it is then reported, not missed.
        reach = min(end + len(CONTAINER_SIGNATURE) - 1, scan.size)
        while at < end:
            head = scan.peek(at, 8)
            if head == CONTAINER_SIGNATURE:
                cand = self._candidate(at)
                if cand is not None:
                    self._read_resident(cand)
                else:
                    cand = self.candidates[at]
                if cand.valid:
                    at = cand.end
                    continue
                at += 8
            elif head[:1] == b"\0":
                at = scan.zeros_from(at, end)
                continue
            nxt = scan.find(CONTAINER_SIGNATURE, at, reach)
            if nxt < 0:
                return
            at = nxt

    def search_region(self, region: Region) -> None:
        """Look for containers anywhere in a data section of a resident file."""
        for hit in self.scan.find_signatures(region.start, region.end):
            cand = self._candidate(hit)
            if cand is not None:
                self._read_resident(cand)

    def discard_in(self, ranges: list[tuple[int, int]]) -> None:
        """Forget the candidates that start in any of ``ranges``."""
        for off in self.starting_in(ranges):
            del self.candidates[off]

    def starting_in(self, ranges: list[tuple[int, int]]) -> list[int]:
        """The offsets of the candidates that start in any of ``ranges``."""
        starts, ends = merge_ranges(ranges)
        out = []
        for off in self.candidates:
            i = bisect.bisect_right(starts, off) - 1
            if i >= 0 and off < ends[i]:
                out.append(off)
        return out

    def measure_padding(self, regions: list[Region]) -> None:
        """Count the zeros around each candidate in a device-code section of a resident
        file (a streamed file has them counted as it passes, in on_signature)."""
        offsets = sorted(self.candidates)
        peek, size = self.scan.peek, self.scan.size
        for region in regions:
            lo = bisect.bisect_left(offsets, region.start)
            hi = bisect.bisect_left(offsets, region.end)
            for off in offsets[lo:hi]:
                cand = self.candidates[off]
                if cand.lead_zeros < 0:
                    before = peek(max(0, off - PAD_LIMIT), min(off, PAD_LIMIT))
                    cand.lead_zeros = len(before) - len(before.rstrip(b"\0"))
                if cand.trail_zeros < 0 and cand.end:
                    after = peek(cand.end, max(0, min(TAIL_PAD, size - cand.end)))
                    cand.trail_zeros = len(after) - len(after.lstrip(b"\0"))

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
        if cand.offset + CONTAINER_HEADER_SIZE > self.scan.size:
            cand.error = "truncated container header"
            return
        self._container(cand, self.scan.peek(cand.offset, CONTAINER_HEADER_SIZE), walk=False)
        if cand.error is None:
            self._walk(cand, cand.offset + CONTAINER_HEADER_SIZE)

    def on_signature(self, offset: int) -> None:
        """A signature seen while streaming: walk the candidate through requests."""
        cand = self._candidate(offset)
        if cand is None:
            return
        # The zeros before it, counted back to PAD_LIMIT bytes but not past the previous
        # signature seen (its byte 6, 0x10, is not zero): the bytes just went by, so they
        # are still in the window, and the requests of all candidates add up to no more
        # than the file.
        floor = max(0, offset - PAD_LIMIT, self._last_hit + 7)
        self._last_hit = offset
        if floor < offset:
            self.scan.request(floor, offset - floor, lambda b: _count_lead(cand, b))
        else:
            cand.lead_zeros = 0
        if offset + CONTAINER_HEADER_SIZE > self.scan.size:
            cand.error = "truncated container header"
            return
        head = self.scan.buffered(offset, CONTAINER_HEADER_SIZE)
        if head is not None:  # usually: it has just streamed in
            self._container(cand, head)
        else:
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
            tail = min(TAIL_PAD, self.scan.size - cand.end)
            if tail > 0:
                self.scan.request(cand.end, tail, lambda b: _count_trail(cand, b))
            else:
                cand.trail_zeros = 0
            self._walk(cand, cand.offset + CONTAINER_HEADER_SIZE)

    def _walk(self, cand: Candidate, at: int, data: bytes | None = None) -> None:
        """Walk the entries from ``at`` (``data``: its fixed header, when given) in a loop
        while their headers are at hand (a resident file, or bytes just streamed in); the
        first that is not is requested and its callback walks on: never a recursion."""
        scan = self.scan
        while at != cand.end:
            if not _entry_fits(cand, at):
                return
            if data is None:
                data = scan.buffered(at, ENTRY_FIXED_SIZE)
                if data is None:
                    scan.request(at, ENTRY_FIXED_SIZE, partial(self._walk, cand, at))
                    return
            hdr = _entry_header(cand, at, data)
            if hdr is None:
                return
            if _long_header(hdr):
                # If not at hand, it runs past the stream's head, and so does the next.
                data = scan.buffered(at, hdr.header_size)
                if data is None:
                    scan.request(at, hdr.header_size, partial(self._add, cand, at, hdr))
            if data is not None:
                self._add(cand, at, hdr, data)
            at += hdr.size
            data = None
        cand.complete = True

    def _add(self, cand: Candidate, at: int, hdr: EntryHeader, header_bytes: bytes) -> None:
        self.entries += 1
        if self.entries > MAX_ENTRIES:
            raise FatbinError(f"more than {MAX_ENTRIES} fatbin entries")
        index = len(cand.entries)
        cand.entries.append(make_entry(hdr, at, header_bytes))
        plan = self.decodes.plan(cand, hdr)
        if plan is None:
            return
        start, take, limit = at + hdr.header_size, plan[0], plan[1]
        cand.decodes += 1
        if (data := self.scan.buffered(start, take)) is not None:  # decoded before the
            self.decodes.decode(cand, index, hdr, data, limit)  # next entry: the toolkit
        else:
            self.scan.request(start, take,
                              lambda b: self.decodes.decode(cand, index, hdr, b, limit))


def _entry_fits(cand: Candidate, at: int) -> bool:
    """Whether an entry header fits before the container's end (else that is its error)."""
    if at + ENTRY_FIXED_SIZE > cand.end:
        cand.error = f"{cand.end - at} stray bytes after the last entry"
        return False
    return True


def _entry_header(cand: Candidate, at: int, data: bytes) -> EntryHeader | None:
    """The entry header at ``at`` (its fixed part in ``data``), or None with the error."""
    try:
        return parse_entry_header(data, cand.end - at)
    except FatbinError as exc:
        cand.error = f"entry at 0x{at:x}: {exc}"
        return None


def _long_header(hdr: EntryHeader) -> bool:
    """An entry whose header carries an identifier past its fixed part."""
    return bool(hdr.identifier_length) and hdr.header_size > ENTRY_FIXED_SIZE


def _count_lead(cand: Candidate, data: bytes) -> None:
    cand.lead_zeros = len(data) - len(data.rstrip(b"\0"))


def _count_trail(cand: Candidate, data: bytes) -> None:
    cand.trail_zeros = len(data) - len(data.lstrip(b"\0"))


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
    sections (a corrupt container there, or bytes that are no container).  A candidate's
    section is found by bisection (the first section in table order that holds it), and
    each section's tiling is checked over its own containers only: n log n in all.
    """
    problems: list[str] = []
    kept: list[tuple[Candidate, Region | None]] = []
    lookup = RangeMap((r.start, r.end, i) for i, r in enumerate(regions))
    tiles: dict[int, list[Candidate]] = {}  # device-code section -> its kept containers
    broken: dict[int, list[int]] = {}  # device-code section -> offsets of bad candidates
    last_end = -1
    for off in sorted(candidates):
        cand = candidates[off]
        if off < last_end:
            continue  # inside a container already kept (e.g. in a stored payload)
        found = lookup.get(off)
        ri = -1 if found is None else found
        region = regions[ri] if ri >= 0 else None
        if region is not None and not (region.device_code or region.searchable):
            continue  # code or toolchain tables: not searched when the file is on disk
        if cand.valid and (region is None or cand.end <= region.end):
            kept.append((cand, region))
            last_end = cand.end
            if region is not None and region.device_code:
                tiles.setdefault(ri, []).append(cand)
        elif region is not None and region.device_code:
            reason = cand.error or f"container runs past the end of {region.name}"
            problems.append(f"{where}{region.name} container at 0x{off:x}: {reason}")
            broken.setdefault(ri, []).append(off)
    # Device-code sections must be tiled by containers, allowing the zero pads that align
    # them (Region.pad; docs/formats.md#padding-between-containers).  A gap that holds a bad
    # candidate was reported with it.
    for ri, region in enumerate(regions):
        if not region.device_code:
            continue
        mine = tiles.get(ri, [])
        bad = broken.get(ri, [])
        cursor = region.start
        prev: Candidate | None = None
        following: list[Candidate | None] = [*mine, None]
        for tile in following:
            nxt = tile.offset if tile is not None else region.end
            gap = nxt - cursor
            if gap > 0 and not _holds(bad, cursor, nxt):
                problem = _judge_gap(region, gap, tile, prev)
                if problem:
                    problems.append(f"{where}{region.name}: {problem.format(cursor)}")
            if tile is not None:
                cursor = tile.end
                prev = tile
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


def _judge_gap(
    region: Region, gap: int, nxt: Candidate | None, prev: Candidate | None
) -> str | None:
    """What is wrong with ``gap`` bytes of a device-code section before container ``nxt``
    (None: the section's end) after ``prev`` (None: the section's start); None if they
    are padding.  The message has ``{:x}`` for the gap's offset."""
    if nxt is None and prev is None:  # no container at all: nothing was measured
        return "bytes at 0x{:x} are not a fatbin container" if gap >= TAIL_PAD else None
    if nxt is not None:
        zeros, limit = nxt.lead_zeros, region.pad
    else:
        zeros, limit = prev.trail_zeros, TAIL_PAD  # type: ignore[union-attr]
    if gap > zeros:
        return "bytes at 0x{:x} are not a fatbin container"
    if gap >= limit:
        return f"{gap} zero bytes at 0x{{:x}} are more than alignment padding (under {limit})"
    return None


def _holds(offsets: list[int], start: int, end: int) -> bool:
    """Whether the sorted ``offsets`` has one in [start, end)."""
    i = bisect.bisect_left(offsets, start)
    return i < len(offsets) and offsets[i] < end
