"""A scan's checkpoint is its own output: records are appended to the JSON Lines file as
they complete, so a run that is stopped (Ctrl-C, SIGTERM, a crash) loses at most the
wheels in flight, and a run with ``--resume`` skips every wheel the file has already
judged (docs/scan.md, streaming).

A wheel counts as done by its URL or path and its sha256: an index that now lists
another file under the same URL (a new sha256) is scanned again, and a record that
judged nothing (a download that failed) is retried.  A file on disk, whose sha256 is
known only by hashing it, is done by its path.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from cuwheel._paths import open_untrusted
from cuwheel.scan.inputs import WheelRef

__all__ = ["Checkpoint"]


class Checkpoint:
    """What a record file holds, read one line at a time (never every record at once)."""

    def __init__(self) -> None:
        self.judged: set[tuple[str, str | None]] = set()  # (input, sha256)
        self.inputs: set[str] = set()  # inputs with a judged record
        self.records = 0  # valid records in the file

    @classmethod
    def read(cls, path: str, damaged: list[Any]) -> Checkpoint:
        """The checkpoint of the record file at ``path`` (none there: an empty one).  A
        damaged line is skipped (and listed in ``damaged``), never the end of the valid
        records after it; a last line that an interrupted run cut short (no newline) is
        removed, so the next record starts on a line of its own."""
        from cuwheel.scan.record import RecordFile

        cp = cls()
        if not os.path.exists(path):
            return cp
        with open_untrusted(path) as f:
            rf = RecordFile(f, path, damaged)
            for rec in rf:
                cp.records += 1
                if rec.get("inventory") is None:
                    continue  # not judged: scanned again
                cp.judged.add((rec["input"], (rec.get("wheel") or {}).get("sha256")))
                cp.inputs.add(rec["input"])
        if rf.whole != os.path.getsize(path):
            os.truncate(path, rf.whole)
        return cp

    def done(self, ref: WheelRef) -> bool:
        if ref.sha256 is not None:
            return (ref.input, ref.sha256) in self.judged
        return ref.input in self.inputs

    def remaining(self, refs: Sequence[WheelRef]) -> list[WheelRef]:
        return [r for r in refs if not self.done(r)]
