"""What each byte of device code costs in the file and in the wheel's zip (docs/size.md).

A zip member is one deflate stream, so its compressed size has no exact split among the
fatbin entries inside it.  It is apportioned (size/deflate.py): the binary is deflated
again as one stream (raw deflate, level 6, as ``wheel`` and ``zipfile`` write members),
flushed at every entry boundary, each entry getting the bytes its input produced, and the
member's real compressed size is shared in proportion.  Binaries over the budget are
sampled: one 64 KiB block in ``stride``, each deflated alone and scaled by the bytes it
stands for.

For a what-if scenario the binary is streamed as the rebuild would leave it (dropped
entries cut out, payloads compressed again the way nvcc's fatbinary does for each
``--compress-mode``: size/recompress.py) and deflated as one stream; the ratio to the
deflate of the binary as it is calibrates it against the member's real size.  Nothing
here judges: the ledger and the what-if do.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from cuwheel.errors import CuwheelError, InputError
from cuwheel.model.inventory import Binary, Inventory, Source
from cuwheel.read.sources.wheelfile import WheelFile
from cuwheel.read.sources.zipdir import Member
from cuwheel.size.deflate import ZIP_LEVEL, deflate_spans
from cuwheel.size.modes import MODES
from cuwheel.size.recompress import recompress, recompress_all, simulate
from cuwheel.size.scenario import Scenario

__all__ = [
    "MODES",
    "BinaryBytes",
    "SourceBytes",
    "measure",
    "recompress",
]

# Bytes deflated per binary before sampling starts (one block in ``stride``).
DEFLATE_BUDGET = 192 << 20
# Payload bytes recompressed per binary for the compression what-if before entries are
# sampled.
RECOMPRESS_BUDGET = 96 << 20


@dataclass(frozen=True)
class BinaryBytes:
    """Measured costs of one binary; entries in ``Binary.entries()`` order."""

    path: str
    size: int  # bytes of the file (or archive member)
    zipped: int | None  # the zip member's compressed size; None outside a wheel
    zip_method: str | None  # "deflate", "stored", ... (None outside a wheel)
    deflated: tuple[int, ...]  # estimated raw-deflate size of each entry (header + payload)
    deflated_rest: int  # the same for every other byte of the binary
    sampled: bool  # some blocks were estimated from a sample
    # mode -> per entry (stored bytes, estimated deflate size) after recompression
    recompressed: dict[str, tuple[tuple[int, int], ...]] = field(default_factory=dict)
    # Small enough to simulate: the raw-deflate size of the whole binary as it is, and
    # of the bytes each scenario leaves (dropped entries cut out, payloads recompressed).
    whole: int | None = None
    simulated: dict[Scenario, int] = field(default_factory=dict)

    @property
    def scale(self) -> float:
        """Real compressed bytes per estimated deflate byte (1.0 outside a wheel)."""
        total = sum(self.deflated) + self.deflated_rest
        if self.zipped is None or total <= 0:
            return 1.0
        return self.zipped / total

    def entry_zipped(self, i: int) -> float:
        return self.deflated[i] * self.scale


@dataclass(frozen=True)
class SourceBytes:
    """A source's file size and its binaries' measurements."""

    path: str
    kind: str
    size: int  # the wheel file (or file, or sum of a directory's binaries)
    binaries: dict[str, BinaryBytes]
    members_zipped: int = 0  # all members' compressed sizes (wheels)


_METHODS = {0: "stored", 8: "deflate", 12: "bzip2", 14: "lzma", 93: "zstd"}


def measure(
    inventory: Inventory,
    *,
    modes: Iterable[str] = (),
    scenarios: Iterable[Scenario] = (),
    budget: int = DEFLATE_BUDGET,
    recompress_budget: int = RECOMPRESS_BUDGET,
) -> tuple[SourceBytes, ...]:
    """Read every binary with device code again and measure it.  Raises InputError."""
    plans = tuple(dict.fromkeys(scenarios))
    wanted = tuple(dict.fromkeys((*modes, *(s.compression for s in plans if s.compression))))
    for m in wanted:
        if m not in MODES:
            raise CuwheelError(f"unknown compression mode {m!r} (one of {', '.join(MODES)})")
    return tuple(
        _source(s, wanted, plans, budget, recompress_budget) for s in inventory.sources
    )


def _source(
    source: Source,
    modes: tuple[str, ...],
    plans: tuple[Scenario, ...],
    budget: int,
    rbudget: int,
) -> SourceBytes:
    out: dict[str, BinaryBytes] = {}
    if source.kind == "wheel":
        with WheelFile(source.path) as wf:
            zipped_all = sum(m.compress_size for m in wf.members)
            for b in source.binaries:
                name = source.member(b.archive or b.path)
                m = wf.infos.get(name) if name else None
                if m is None:
                    continue
                chunks = _member_chunks(wf, m)
                zipped = None if b.archive else m.compress_size
                method = _METHODS.get(m.method, str(m.method))
                out[b.path] = _binary(b, chunks, zipped, method, modes, plans, budget, rbudget)
        size = os.stat(source.path).st_size
        return SourceBytes(source.path, source.kind, size, out, zipped_all)
    for b in source.binaries:
        path = b.archive or b.path
        out[b.path] = _binary(
            b, _path_chunks(path), None, None, modes, plans, budget, rbudget
        )
    size = (
        os.stat(source.path).st_size
        if source.kind == "file"
        else sum(b.size for b in source.binaries)
    )
    return SourceBytes(source.path, source.kind, size, out)


def _member_chunks(wf: WheelFile, m: Member) -> Callable[[], Iterator[bytes]]:
    return lambda: wf.chunks(m)


def _path_chunks(path: str) -> Callable[[], Iterator[bytes]]:
    return lambda: _file_chunks(path)


def _file_chunks(path: str) -> Iterator[bytes]:
    try:
        from cuwheel._paths import open_untrusted

        with open_untrusted(path) as f:  # regular only: a FIFO is refused, not waited on
            while chunk := f.read(4 << 20):
                yield chunk
    except OSError as exc:
        raise InputError(path, exc.strerror or str(exc)) from None


def _binary(
    b: Binary,
    chunks: Callable[[], Iterator[bytes]],
    zipped: int | None,
    method: str | None,
    modes: tuple[str, ...],
    plans: tuple[Scenario, ...],
    budget: int,
    rbudget: int,
) -> BinaryBytes:
    entries = list(b.entries())
    if b.archive:  # an ar member: entries counted at their stored size, nothing deflated
        return BinaryBytes(b.path, b.size, None, method, (), 0, False)
    spans = [(e.offset, e.offset + e.header_size + e.stored_size) for e in entries]
    stride = max(1, -(-b.size // budget))
    deflated, rest = deflate_spans(chunks(), spans, b.size, stride)
    recompressed: dict[str, tuple[tuple[int, int], ...]] = {}
    if modes and entries:
        recompressed = recompress_all(chunks(), entries, modes, rbudget)
    whole: int | None = None
    simulated: dict[Scenario, int] = {}
    if plans and entries and not b.archive:
        # level 1 past the budget: ~5x faster; the ratio to the member's real size
        # calibrates it (docs/size.md#accuracy)
        level = ZIP_LEVEL if b.size <= budget else 1
        whole = simulate(chunks(), entries, Scenario(), level)
        simulated = {p: simulate(chunks(), entries, p, level) for p in plans}
    return BinaryBytes(
        b.path, b.size, zipped, method, tuple(deflated), rest, stride > 1, recompressed,
        whole, simulated,
    )  # fmt: skip
