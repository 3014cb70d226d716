"""The bounded helpers every binary reader shares: the anomaly list of one binary, the
budget of names decoded per file, string tables decoded once per offset, and maps of
possibly overlapping ranges (docs/inspect.md, "Limits on hostile input")."""

from __future__ import annotations

import bisect
import heapq
import itertools
import struct
from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

from cuwheel.errors import StreamError

__all__ = [
    "MAX_ANOMALIES",
    "MAX_NAME",
    "MAX_NAME_BYTES",
    "Anomalies",
    "NameBudget",
    "RangeMap",
    "StringTable",
    "guarded",
]

T = TypeVar("T")


# -- budgets on what is decoded (docs/inspect.md, "Limits on hostile input") ----------
# One decoded name (symbol, section, DT_NEEDED, member name); a longer one is cut.
MAX_NAME = 4096
# Bytes of names decoded per file, over all its string tables (each offset once); a
# string table is at most 256 MiB, and real ones are tens of MB at most.
MAX_NAME_BYTES = 128 << 20
# Anomalies kept per binary; the rest are counted.
MAX_ANOMALIES = 64


class Anomalies:
    """The per-structure problems of one binary (one line each, naming the structure and
    its offset).  Kept in sorted order, the first MAX_ANOMALIES distinct ones, the rest
    counted: the result does not depend on the order the structures were read in, which
    differs between a file read from disk and one streamed."""

    def __init__(self) -> None:
        self._kept: dict[str, int] = {}  # message -> times added
        self._more = 0

    def add(self, message: str) -> None:
        kept = self._kept
        if message in kept:
            kept[message] += 1
            return
        kept[message] = 1
        if len(kept) > MAX_ANOMALIES:
            last = max(kept)
            self._more += kept.pop(last)

    def __bool__(self) -> bool:
        return bool(self._kept)

    def result(self) -> tuple[str, ...]:
        out = sorted(self._kept)
        if self._more:
            out.append(f"(and {self._more} more anomalies)")
        return tuple(out)


def guarded(cb: Callable[[bytes], None], what: str, anomalies: Anomalies,
            error: type[Exception]) -> Callable[[bytes], None]:
    """``cb`` for a structure read on its own: the format's own ``error`` and the
    malformed bytes that struct, int or indexing trip on become anomalies (``what``
    names the structure); a StreamError (the file's own limits, such as the request
    budget) still ends the whole read."""

    def run(data: bytes) -> None:
        try:
            cb(data)
        except StreamError:
            raise
        except error as exc:
            anomalies.add(str(exc))
        except (struct.error, ValueError, IndexError) as exc:
            anomalies.add(f"{what}: malformed ({exc})")

    return run


class NameBudget:
    """Bytes of names one file may still decode (MAX_NAME_BYTES)."""

    def __init__(self, limit: int = MAX_NAME_BYTES) -> None:
        self.left = limit
        self.limit = limit


class StringTable:
    """NUL-terminated strings of one string table, each offset decoded once (cached) and
    cut at ``limit`` bytes, the bytes decoded counted against the file's NameBudget: a
    million references to one long string cost one decode, and a million overlapping
    offsets into one unterminated string no more than the budget.  The cache holds one
    entry per offset asked for, and callers bound how many they ask (MAX_SYMBOLS ...)."""

    def __init__(self, data: bytes, what: str, budget: NameBudget, anomalies: Anomalies,
                 *, limit: int = MAX_NAME, encoding: str = "utf-8",
                 end: bytes = b"\0") -> None:
        self.data = data
        self.what = what
        self.budget = budget
        self.anomalies = anomalies
        self.limit = limit
        self.encoding = encoding
        self.end = end
        self._cache: dict[int, str | None] = {}
        self._noted: set[str] = set()  # kinds of problem already recorded for this table

    def _note(self, kind: str, message: str) -> None:
        """Record the first problem of each kind only: a table with a million bad offsets
        is one anomaly (the first in the order the table is read, which is fixed)."""
        if kind not in self._noted:
            self._noted.add(kind)
            self.anomalies.add(message)

    def get(self, off: int) -> str | None:
        """The string at ``off``; None when ``off`` is outside the table or the file's
        name budget is spent (each recorded as an anomaly)."""
        cache = self._cache
        if off in cache:
            return cache[off]
        data, limit = self.data, self.limit
        value: str | None
        if not 0 <= off < len(data):
            self._note("outside", f"{self.what}: offset 0x{off:x} lies outside its "
                       f"{len(data)} bytes")
            value = None
        elif self.budget.left <= 0:
            self.anomalies.add(f"names: more than {self.budget.limit} bytes decoded; the "
                               "rest are not read")
            value = None
        else:
            stop = data.find(self.end, off, off + limit + len(self.end))
            cut = stop < 0 and off + limit < len(data)
            if stop < 0:
                stop = min(len(data), off + limit)
            raw = data[off:stop]
            self.budget.left -= len(raw)
            value = raw.decode(self.encoding, "replace")
            if cut:
                self._note("cut", f"{self.what}: the string at 0x{off:x} is longer than "
                           f"{limit} bytes (cut)")
                value += "..."
        cache[off] = value
        return value

    def many(self, offsets: Iterable[int]) -> list[str | None]:
        """``[self.get(o) for o in offsets]``, with the common case (an offset inside the
        table, a terminated string within the limit, budget left) in one tight loop that
        skips the cache: a library exports tens of thousands of names, nearly all at
        distinct offsets.  A repeated offset is decoded again and charged to the budget
        again, so the work stays bounded by it (docs/inspect.md#limits)."""
        data, end, enc = self.data, self.end, self.encoding
        size, reach, budget = len(data), self.limit + len(self.end), self.budget
        find, slow = data.find, self.get
        out: list[str | None] = []
        keep = out.append
        for off in offsets:
            stop = find(end, off, off + reach) if 0 <= off < size and budget.left > 0 else -1
            if stop < 0:  # outside, cut or over budget: get() records why
                keep(slow(off))
                continue
            keep(data[off:stop].decode(enc, "replace"))
            budget.left -= stop - off
        return out


class RangeMap(Generic[T]):
    """Point lookups over [start, end) ranges that may overlap: the range given first wins,
    as a linear search in table order would answer (section and segment tables of hostile
    files overlap).  Built in n log n; each lookup is a bisection."""

    def __init__(self, ranges: Iterable[tuple[int, int, T]]) -> None:
        items = [(s, e, i, v) for i, (s, e, v) in enumerate(ranges) if e > s]
        items.sort(key=lambda r: (r[0], r[2]))
        starts: list[int] = []
        ends: list[int] = []
        values: list[T] = []
        if all(a[1] <= b[0] for a, b in itertools.pairwise(items)):  # the usual case: disjoint
            for s, e, _i, v in items:
                starts.append(s)
                ends.append(e)
                values.append(v)
        else:
            # Sweep the boundaries; among the ranges covering a piece, the lowest index wins.
            cuts = sorted({x for s, e, _i, _v in items for x in (s, e)})
            active: list[tuple[int, int, int]] = []  # (index, end, position in items)
            k = 0
            for a, b in itertools.pairwise(cuts):
                while k < len(items) and items[k][0] <= a:
                    heapq.heappush(active, (items[k][2], items[k][1], k))
                    k += 1
                while active and active[0][1] <= a:
                    heapq.heappop(active)
                if not active:
                    continue
                v = items[active[0][2]][3]
                if ends and ends[-1] == a and values[-1] is v:
                    ends[-1] = b  # same range continues
                else:
                    starts.append(a)
                    ends.append(b)
                    values.append(v)
        self._starts, self._ends, self._values = starts, ends, values

    def get(self, point: int) -> T | None:
        i = bisect.bisect_right(self._starts, point) - 1
        if i >= 0 and point < self._ends[i]:
            return self._values[i]
        return None
