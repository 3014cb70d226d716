"""System V / GNU ``ar`` static archives: member headers and the long-name table.

60-byte member headers (name 0-15, decimal size 48-57, terminator 58-59), data padded
to an even offset; ``/`` is the symbol table, ``//`` the long names, ``/N`` a long name
at offset N (binary-formats.md 1.3).  Each ELF member is handed to a callback.
"""

from __future__ import annotations

from collections.abc import Callable

from cuwheel.errors import ArError
from cuwheel.read.stream import Scan

__all__ = ["AR_MAGIC", "ArError", "ArReader"]

AR_MAGIC = b"!<arch>\n"
_HEADER = 60


class ArReader:
    """Walks member headers; calls ``on_member(name, data_offset, size)`` for each member."""

    def __init__(self, scan: Scan, size: int, on_member: Callable[[str, int, int], None]) -> None:
        self.scan = scan
        self.size = size
        self.on_member = on_member
        self._long_names = b""
        self.members: list[tuple[str, int, int]] = []
        scan.request(0, len(AR_MAGIC), self._magic)

    def _magic(self, data: bytes) -> None:
        if data != AR_MAGIC:
            raise ArError("not an ar archive")
        self._next(len(AR_MAGIC))

    def _next(self, at: int) -> None:
        if at >= self.size:
            return
        if at + _HEADER > self.size:
            raise ArError(f"truncated member header at 0x{at:x}")
        self.scan.request(at, _HEADER, lambda b: self._header(at, b))

    def _header(self, at: int, data: bytes) -> None:
        if data[58:60] != b"`\n":
            raise ArError(f"bad member header at 0x{at:x}")
        raw = data[:16].decode("latin-1").rstrip()
        size_field = data[48:58].decode("latin-1").strip()
        if not size_field.isdigit():
            raise ArError(f"bad member size {size_field!r} at 0x{at:x}")
        size = int(size_field)
        start = at + _HEADER
        if start + size > self.size:
            raise ArError(f"member at 0x{at:x} claims {size} bytes, past the end of the archive")
        nxt = start + size + (size & 1)
        if raw == "//":
            def take(b: bytes) -> None:
                self._long_names = b
            if size:
                self.scan.request(start, size, take)
        elif raw in ("/", "/SYM64/", "__.SYMDEF", "__.SYMDEF SORTED"):
            pass  # symbol index
        else:
            if raw.startswith("/") and raw[1:].isdigit():
                o = int(raw[1:])
                end = self._long_names.find(b"/\n", o)
                name = self._long_names[o : end if end >= 0 else None].decode("latin-1")
            elif raw.startswith("#1/") and raw[3:].isdigit():
                # BSD: the name is the first N bytes of the data; rare here, named as-is.
                name = raw
            else:
                name = raw[:-1] if raw.endswith("/") else raw
            self.members.append((name, start, size))
            self.on_member(name, start, size)
        self._next(nxt)
