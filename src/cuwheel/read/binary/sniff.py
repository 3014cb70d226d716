"""Recognise a file by its magic bytes and read it into inventory ``Binary`` facts.

Formats: host ELF (shared object, executable, relocatable object), PE/COFF images,
``ar`` archives of ELF objects, and raw device code (cubin, fatbin, PTX text).
"""

from __future__ import annotations

import bisect
import dataclasses
import struct
from collections.abc import Callable, Iterator

from cuwheel.errors import InputError, Malformed, StreamError
from cuwheel.model.arch import Arch, Variant
from cuwheel.model.inventory import (
    Binary,
    CodeKind,
    Compression,
    FatbinContainer,
    FatbinEntry,
    UndefinedSymbol,
)
from cuwheel.read.binary.ar import AR_MAGIC, ArReader
from cuwheel.read.binary.elf import ElfFacts, ElfReader
from cuwheel.read.binary.hostrefs import MAX_HOST_FILE, needs_host_reads, with_host_reads
from cuwheel.read.binary.pe import PeFacts, PeReader
from cuwheel.read.bytes.regions import Region, merge_ranges
from cuwheel.read.bytes.stream import Chunk, Scan
from cuwheel.read.bytes.tables import Anomalies, NameBudget
from cuwheel.read.device.candidate import Candidate
from cuwheel.read.device.containers import (
    ContainerCollector,
    assign_containers,
    unsafe_skips,
)
from cuwheel.read.device.cubin import EM_CUDA, parse_cubin
from cuwheel.read.device.fatbin import CONTAINER_MAGIC, CONTAINER_SIGNATURE
from cuwheel.read.device.payloads import PayloadMode
from cuwheel.read.device.ptx import looks_like_ptx, parse_ptx_header, ptx_names

__all__ = ["SNIFF_BYTES", "ChunkSource", "read_binary", "sniff"]

# How much of a file's start is needed to recognise it (PTX may open with a banner).
SNIFF_BYTES = 1024
MAX_PASSES = 4
# Raw cubins and PTX files are read whole; beyond this they are not plausible.
MAX_RAW_DEVICE_FILE = 512 << 20

ChunkSource = Callable[[], Iterator[Chunk]]


def sniff(prefix: bytes) -> str | None:
    """The format of a file from its first bytes, or None for anything else."""
    if prefix[:4] == b"\x7fELF":
        if len(prefix) >= 20 and struct.unpack_from("<H", prefix, 18)[0] == EM_CUDA:
            return "cubin"
        return "elf"
    if prefix[:2] == b"MZ":
        return "pe"
    if prefix[:8] == AR_MAGIC:
        return "ar"
    if prefix[:4] == CONTAINER_MAGIC:
        return "fatbin"
    if looks_like_ptx(prefix):
        return "ptx"
    return None


def _run(
    scan: Scan,
    open_chunks: ChunkSource,
    collector: ContainerCollector,
    regions: Callable[[], list[Region]],
) -> None:
    """Stream the file through ``scan``.

    A file that arrives as one chunk (on disk, or small) is resident: its device-code
    sections are walked container by container and only its other data sections are
    searched for the signature.  A streamed file is searched everywhere as it passes,
    since its section table comes last.
    """
    chunks = iter(open_chunks())
    first = next(chunks, None)
    if first is not None:
        scan.feed(first)
    if scan.resident:
        found = regions()
        for region in found:
            if region.device_code:
                collector.walk_region(region)
            elif region.searchable:
                collector.search_region(region)
        # Bytes no section claims are searched too, as a stream search sees them: then
        # both ways of reading a file find the same containers (assign_containers drops
        # what a stream search finds inside sections that are not searched).
        # (A signature that starts in a gap counts even where it runs on into the next
        # section: the stream sees it there too, and outside every section it is kept.)
        for start, end in _gaps(found, scan.size):
            collector.search_region(Region("", start, min(end + 7, scan.size), False, False))
        # A stream skips the executable segments of a -z separate-code file (unless a
        # device-code section lies there, when it reads again without skipping); what
        # starts there is no candidate from disk either, so both reads agree.
        if scan.skip and not _skipped_device_code(found, scan.skip):
            collector.discard_in(scan.skip)
        collector.measure_padding([r for r in found if r.device_code])
        scan.serve()
        scan.finish()
        # Run the source to its end: a wheel member checks its size and CRC there (and
        # a file on disk is closed), even when its one chunk was all that was needed.
        if next(chunks, None) is not None:
            raise StreamError(f"the data is longer than its declared size of {scan.size} bytes")
        return
    scan.on_signature = collector.on_signature
    scan.scan_now()
    for chunk in chunks:
        scan.feed(chunk)
    scan.finish()
    while scan.missed and scan.passes < MAX_PASSES:
        scan.restart()
        for chunk in open_chunks():
            scan.feed(chunk)
            if not scan.pending:
                break
        if scan.pending:
            scan.finish()
    if scan.missed:
        raise StreamError("its structures could not be located in a bounded number of passes")
    if scan.search_code:
        # The code ranges were searched as everything else: what was found there is what
        # a read without the skip finds, which is the answer when a device-code section
        # lies there; otherwise (rare: a stray signature in code) the read that skips
        # them is.  Either way a file whose device code lies in its executable segment
        # (cuFFT's) is decompressed once, not twice.
        if collector.starting_in(scan.skip) and not _skipped_device_code(regions(),
                                                                          scan.skip):
            raise _Reread(keep_code=True)
    elif _skipped_device_code(regions(), scan.skip):
        raise _Reread(keep_code=False)  # code ranges that hold a device-code section
    if unsafe_skips(collector.candidates):
        raise _Reread(keep_code=True)  # a false candidate's extent


def _skipped_device_code(regions: list[Region], skip: list[tuple[int, int]]) -> bool:
    """Whether a skipped range overlaps a device-code section (bisection over the merged
    ranges: thousands of segments times thousands of sections would be quadratic)."""
    starts, ends = merge_ranges(skip)
    for r in regions:
        if r.device_code:
            i = bisect.bisect_right(ends, r.start)  # first range ending after r.start
            if i < len(starts) and starts[i] < r.end:
                return True
    return False


def _gaps(regions: list[Region], size: int) -> list[tuple[int, int]]:
    """The ranges of [0, size) that no region covers."""
    out, at = [], 0
    for r in sorted(regions, key=lambda r: r.start):
        if r.start > at:
            out.append((at, min(r.start, size)))
        at = max(at, r.end)
    if at < size:
        out.append((at, size))
    return out


class _Reread(Exception):
    """A shortcut of the signature search proved unsafe for this file: read it again
    without it (rare: a false signature hit, or device code in code segments).  The
    skip of code segments is kept unless device code lies there: it defines what is
    searched (a read from disk skips them too), the skip of known extents only saves
    work."""

    def __init__(self, *, keep_code: bool) -> None:
        super().__init__()
        self.keep_code = keep_code


def read_binary(
    path: str,
    size: int,
    open_chunks: ChunkSource,
    kind: str,
    *,
    payload: PayloadMode = "sample",
) -> list[Binary]:
    """Read one file of a known ``kind`` (from ``sniff``).

    Raises InputError when the file as a whole cannot be read (its own header or
    table); a damaged structure inside it is recorded in ``Binary.anomalies`` and the
    rest is kept (docs/inspect.md, "Anomalies").  ``open_chunks`` returns a fresh
    iterator over the file's bytes each time it is called (a second pass is rare and
    stops early).  An archive gives one Binary per ELF member.
    """
    try:
        try:
            return _read(path, size, open_chunks, kind, payload)
        except _Reread as again:
            try:
                return _read(path, size, open_chunks, kind, payload, again.keep_code, False,
                             False)
            except _Reread:  # (cannot happen: the same sections, no known extents skipped)
                return _read(path, size, open_chunks, kind, payload, False, False, False)
    except InputError:
        raise
    except Malformed as exc:
        # A parser's own error for malformed bytes; any other exception is a bug and
        # surfaces as one (the fuzz tests run every reader on mutated real files).
        raise InputError(path, str(exc)) from None


def _read(
    path: str,
    size: int,
    open_chunks: ChunkSource,
    kind: str,
    payload: PayloadMode,
    skip_code: bool = True,
    skip_known: bool = True,
    search_code: bool = True,
) -> list[Binary]:
    if kind in ("cubin", "ptx"):
        return [_read_raw_device(path, size, open_chunks, kind, payload == "kernels")]
    scan = Scan(size, signature=CONTAINER_SIGNATURE)
    scan.search_code = search_code
    collector = ContainerCollector(scan, payload=payload, skip_known=skip_known)
    budget = NameBudget()  # names decoded, over the whole file
    if kind in ("elf", "pe"):
        notes = Anomalies()
        host = (ElfReader if kind == "elf" else PeReader)(
            scan, 0, size, skip_code=skip_code, anomalies=notes, budget=budget)
        _run(scan, open_chunks, collector, lambda: host.facts.sections)
        facts = host.finish()
        containers = _place(collector, facts.sections, facts.wrappers, notes)
        if payload == "kernels" and kind == "elf" and any(map(needs_host_reads, containers)):
            containers = with_host_reads(containers, _whole(open_chunks, size))
        return [_host_binary(path, kind, size, facts, containers, notes)]
    if kind == "ar":
        members: list[tuple[str, int, int, ElfReader]] = []

        def on_member(name: str, start: int, length: int, problem: str | None) -> None:
            if length < 52:  # shorter than any ELF header: not an object, no reader
                return
            mnotes = Anomalies()
            if problem is not None:
                mnotes.add(problem)
            members.append((name, start, length,
                            ElfReader(scan, start, length, head=False, lenient=True,
                                      member=True, anomalies=mnotes, budget=budget)))

        ArReader(scan, size, on_member, budget)
        _run(scan, open_chunks, collector,
             lambda: [r for m in members if m[3].is_elf for r in m[3].facts.sections])
        out = []
        offsets = sorted(collector.candidates)
        kept_all: list[FatbinContainer] = []
        for name, start, length, reader in members:
            if not reader.is_elf:
                continue
            mfacts = reader.finish()
            lo = bisect.bisect_left(offsets, start)
            hi = bisect.bisect_left(offsets, start + length)
            mine = {o: collector.candidates[o] for o in offsets[lo:hi]}
            containers, problems = assign_containers(mine, mfacts.sections)
            kept_all += containers
            for p in problems:
                reader.anomalies.add(p)
            out.append(
                Binary(
                    path=f"{path}({name})",
                    format="elf",
                    size=length,
                    file_type=mfacts.file_type or None,
                    machine=mfacts.machine or None,
                    archive=path,
                    member=name,
                    needed=tuple(mfacts.needed),
                    exported=tuple(mfacts.exported),
                    containers=tuple(containers),
                    anomalies=reader.anomalies.result(),
                )
            )
        _check_skips(collector.candidates, kept_all)
        return out
    if kind == "fatbin":
        whole = Region("fatbin", 0, size, device_code=True, relocatable=False)
        _run(scan, open_chunks, collector, lambda: [whole])
        containers, problems = assign_containers(collector.candidates, [whole])
        _check_skips(collector.candidates, containers)
        problems = [p.replace("fatbin container", "container", 1) for p in problems]
        if not containers:  # no container could be read: nothing of the file is
            _raise_first(path, problems)
            raise InputError(path, f"no complete fatbin container in its {size} bytes")
        notes = Anomalies()
        for p in problems:
            notes.add(p)
        return [
            Binary(
                path=path,
                format="fatbin",
                size=size,
                machine="cuda",
                containers=tuple(
                    FatbinContainer(c.offset, c.size, None, False, False, c.entries)
                    for c in containers
                ),
                anomalies=notes.result(),
            )
        ]
    raise InputError(path, f"unsupported file kind {kind!r}")


def _whole(open_chunks: ChunkSource, size: int) -> memoryview | None:
    """The whole file again, for the host-code search (read/binary/hostrefs.py), up to
    MAX_HOST_FILE; None when it is larger or does not arrive whole."""
    if size > MAX_HOST_FILE:
        return None
    data = b"".join(bytes(c[0 : len(c)]) for c in open_chunks())
    return memoryview(data) if len(data) == size else None


def _host_binary(path: str, kind: str, size: int, facts: ElfFacts | PeFacts,
                 containers: list[FatbinContainer], notes: Anomalies) -> Binary:
    """The Binary of a host ELF or PE file (an ELF file's linkage in full)."""
    elf = isinstance(facts, ElfFacts)
    binary = Binary(path=path, format=kind, size=size,
                    # an ELF file's unknown type or machine is None; a PE image has both
                    file_type=(facts.file_type or None) if elf else facts.file_type,
                    machine=(facts.machine or None) if elf else facts.machine,
                    needed=tuple(facts.needed), exported=tuple(facts.exported),
                    containers=tuple(containers), anomalies=notes.result())
    if not isinstance(facts, ElfFacts):
        # A PE image's functions imported by name, each with the DLL that must export it.
        return dataclasses.replace(binary, undefined=tuple(
            UndefinedSymbol(name, None, dll) for dll, name in dict.fromkeys(facts.imported)))
    return dataclasses.replace(
        binary, rpath=tuple(facts.rpath), runpath=tuple(facts.runpath), soname=facts.soname,
        undefined=tuple(facts.undefined), version_needs=tuple(facts.version_needs),
        version_defs=tuple(facts.version_defs), static_cudart=facts.static_cudart)


def _place(
    collector: ContainerCollector,
    sections: list[Region],
    wrappers: dict[int, int],
    notes: Anomalies,
) -> list[FatbinContainer]:
    """The collected candidates placed in the file's sections; problems become anomalies."""
    containers, problems = assign_containers(collector.candidates, sections, wrappers=wrappers)
    _check_skips(collector.candidates, containers)
    for p in problems:
        notes.add(p)
    return containers


def _check_skips(candidates: dict[int, Candidate], kept: list[FatbinContainer]) -> None:
    """A streamed file skipped the search of each container's extent as soon as its header
    was read; that is safe only for containers that were kept (one dropped, e.g. for
    running past its section, may hide others that a read from disk finds)."""
    skipped = [c.offset for c in candidates.values() if c.skipped]
    if skipped:
        offsets = {c.offset for c in kept}
        if any(o not in offsets for o in skipped):
            raise _Reread(keep_code=True)


def _raise_first(path: str, problems: list[str]) -> None:
    if problems:
        extra = f" (and {len(problems) - 1} more problems)" if len(problems) > 1 else ""
        raise InputError(path, problems[0] + extra)


def _read_raw_device(path: str, size: int, open_chunks: ChunkSource, kind: str,
                     names: bool) -> Binary:
    if size > MAX_RAW_DEVICE_FILE:
        raise InputError(path, f"{size} bytes is too large for a {kind} file")
    data = b"".join(bytes(c[:]) for c in open_chunks())
    if len(data) != size:
        raise InputError(path, f"read {len(data)} bytes, expected {size}")
    if kind == "cubin":
        facts = parse_cubin(data, kernel_names=names)
        if facts is None:
            raise InputError(path, "not a 64-bit little-endian CUDA ELF")
        variant: Variant = ""
        if facts.arch_specific or (facts.arch_option or "").endswith("a"):
            variant = "a"
        elif (facts.arch_option or "").endswith("f"):
            variant = "f"
        if not 10 <= facts.sm <= 999:
            raise InputError(path, f"cubin SM number {facts.sm} is out of range")
        entry = dataclasses.replace(
            _whole_file_entry(CodeKind.SASS, Arch(facts.sm, variant), (1, facts.abi_version),
                              size, False),
            toolkit=facts.toolkit, relocatable=facts.relocatable, kernels=facts.kernels,
            kernel_names=facts.kernel_names, data_names=facts.data_names)
        container = FatbinContainer(0, size, None, False, facts.relocatable, (entry,),
                                    toolkit=facts.toolkit)
        return Binary(path=path, format="cubin", size=size, machine="cuda",
                      file_type="relocatable" if facts.relocatable else "executable",
                      containers=(container,))
    header = parse_ptx_header(data[:1 << 16])
    if header is None:
        raise InputError(path, "PTX text without a .version and .target")
    target = header.target
    num = target.removeprefix("sm_").removeprefix("compute_")
    variant_s = num[-1] if num[-1:] in ("a", "f") else ""
    digits = num[: len(num) - len(variant_s)]
    if not digits.isdigit() or not 10 <= int(digits) <= 999:
        raise InputError(path, f"unknown PTX target {target!r}")
    pvariant: Variant = "a" if variant_s == "a" else "f" if variant_s == "f" else ""
    entry = _whole_file_entry(CodeKind.PTX, Arch(int(digits), pvariant), header.version, size,
                              "debug" in header.options)
    if names:
        kernels, variables = ptx_names(data)
        entry = dataclasses.replace(entry, kernel_names=kernels, data_names=variables)
    container = FatbinContainer(0, size, None, False, False, (entry,))
    return Binary(path=path, format="ptx", size=size, machine="cuda", containers=(container,),
                  ptx_version=f"{header.version[0]}.{header.version[1]}")


def _whole_file_entry(kind: CodeKind, arch: Arch, code_version: tuple[int, int], size: int,
                      debug: bool) -> FatbinEntry:
    """The one entry of a raw cubin or PTX file: the whole file, stored, at offset 0."""
    return FatbinEntry(offset=0, kind=kind, arch=arch, code_version=code_version, flags=0,
                       header_size=0, stored_size=size, compression=Compression.NONE,
                       compressed_size=0, uncompressed_size=size, host="unknown", debug=debug)
