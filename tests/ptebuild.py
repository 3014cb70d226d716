"""A minimal writer of ExecuTorch program flatbuffers (``.pte``) for hostile inputs: the
layout docs/artifacts.md#executorch describes (root offset, "ET12", an "eh00" header with
the segment base offset at byte 24, tables with vtables, forward uoffsets).  Only the
fields read/artifacts/executorch.py reads: Program 0 version, 1 execution plans, 4 segments,
7 named data; ExecutionPlan 0 name, 7 delegates; Delegate 0 id, 2 compile specs;
CompileSpec 0 key; DataSegment 0 offset, 1 size; NamedData 0 key, 1 segment index.

A :class:`Shared` value is written once, after everything else, and every field naming it
points at that one copy (so 90,000 compile specs can share one 1 MiB key)."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any


@dataclass(eq=False)
class Shared:
    value: Any
    patches: list[int] = field(default_factory=list)


# a field: (index, kind, value); kind "u32", "u64", "str", "vec" (of tables), "tab"
Field = tuple[int, str, Any]


class Builder:
    def __init__(self) -> None:
        self.buf = bytearray(32)  # root offset, identifier, eh00 header
        self.shared: list[Shared] = []

    def _pad(self, a: int) -> None:
        self.buf += b"\0" * (-len(self.buf) % a)

    def table(self, fields: list[Field]) -> int:
        n = max((i for i, _, _ in fields), default=-1) + 1
        slots = {i: 4 + 8 * k for k, (i, _, _) in enumerate(fields)}
        tsize = 4 + 8 * len(fields)
        self._pad(2)
        vt = len(self.buf)
        self.buf += struct.pack("<HH", 4 + 2 * n, tsize)
        self.buf += b"".join(struct.pack("<H", slots.get(i, 0)) for i in range(n))
        self._pad(8)
        t = len(self.buf)
        self.buf += struct.pack("<i", t - vt) + b"\0" * (tsize - 4)
        later = []
        for i, kind, value in fields:
            pos = t + slots[i]
            if kind == "u32":
                struct.pack_into("<I", self.buf, pos, value)
            elif kind == "u64":
                struct.pack_into("<Q", self.buf, pos, value)
            else:
                later.append((pos, kind, value))
        for pos, kind, value in later:
            self._ref(pos, kind, value)
        return t

    def _ref(self, pos: int, kind: str, value: Any) -> None:
        if isinstance(value, Shared):
            if not value.patches:
                self.shared.append(value)
            value.patches.append((pos, kind))  # type: ignore[arg-type]
            return
        struct.pack_into("<I", self.buf, pos, self._obj(kind, value) - pos)

    def _obj(self, kind: str, value: Any) -> int:
        if kind == "str":
            self._pad(4)
            at = len(self.buf)
            data = value if isinstance(value, bytes) else value.encode()
            self.buf += struct.pack("<I", len(data)) + data + b"\0"
            return at
        if kind == "tab":
            return self.table(value)
        assert kind == "vec"
        self._pad(4)
        at = len(self.buf)
        self.buf += struct.pack("<I", len(value)) + b"\0" * (4 * len(value))
        for k, item in enumerate(value):
            self._ref(at + 4 + 4 * k, "tab", item)
        return at

    def finish(self, root: list[Field], segment_data: bytes = b"") -> bytes:
        t = self.table(root)
        for s in self.shared:
            kind = s.patches[0][1]  # type: ignore[index]
            at = self._obj(kind, s.value)
            for pos, _ in s.patches:  # type: ignore[misc]
                struct.pack_into("<I", self.buf, pos, at - pos)
        struct.pack_into("<I", self.buf, 0, t)
        self.buf[4:8] = b"ET12"
        self.buf[8:12] = b"eh00"
        struct.pack_into("<I", self.buf, 12, 24)
        self._pad(16)
        base = len(self.buf)
        struct.pack_into("<QQ", self.buf, 16, base, base)
        return bytes(self.buf) + segment_data


def program(*, plans: list[list[Field]] = (), segments: list[tuple[int, int]] = (),  # type: ignore[assignment]
            named: list[tuple[Any, int]] = (), segment_data: bytes = b"") -> bytes:  # type: ignore[assignment]
    """A .pte: its execution plans (fields of each), segments (offset, size from the
    segment base) and named data (key, segment index), then ``segment_data``."""
    b = Builder()
    root: list[Field] = [(0, "u32", 0)]
    if plans:
        root.append((1, "vec", plans))
    if segments:
        root.append((4, "vec", [[(0, "u64", o), (1, "u64", n)] for o, n in segments]))
    if named:
        root.append((7, "vec", [[(0, "str", k), (1, "u32", i)] for k, i in named]))
    return b.finish(root, segment_data)


def delegate_plan(method: str, backend: str, keys: list[Any]) -> list[Field]:
    """An execution plan with one delegate whose compile specs have these keys."""
    specs = [[(0, "str", k)] for k in keys]
    return [(0, "str", method), (7, "vec", [[(0, "str", backend), (2, "vec", specs)]])]
