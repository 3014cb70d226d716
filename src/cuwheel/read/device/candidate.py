"""A fatbin container found in a binary, as the container walk (containers.py) and the
payload decodes (payloads.py) fill it in; it becomes a ``FatbinContainer`` once kept."""

from __future__ import annotations

from dataclasses import dataclass, field

from cuwheel.model.inventory import FatbinEntry, Toolkit

__all__ = ["Candidate"]


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
    # Zero bytes right before the container (counted up to PAD_LIMIT) and right after its
    # end (up to TAIL_PAD); -1 until measured.  Measured the same way whether the file is
    # resident or streamed, so both ways of reading judge a gap alike.
    lead_zeros: int = -1
    trail_zeros: int = -1

    @property
    def valid(self) -> bool:
        return self.complete and self.error is None
