"""System V / GNU ``ar`` static archives: member headers and the long-name table.

60-byte member headers (name 0-15, decimal size 48-57, terminator 58-59), data padded
to an even offset; ``/`` is the symbol table, ``//`` the long names, ``/N`` a long name
at offset N (docs/formats.md#static-archives).  Each member is handed to a callback.

The chain of member headers is the archive's own table: a header that cannot be read,
or a member that claims bytes past the end, makes the archive unreadable (ArError).  A
long name that cannot be found is a problem of that member only.
"""

from __future__ import annotations

from collections.abc import Callable

from cuwheel.errors import ArError
from cuwheel.read.bytes.stream import Scan
from cuwheel.read.bytes.tables import MAX_NAME, NameBudget

__all__ = ["AR_MAGIC", "MAX_MEMBERS", "ArReader"]

AR_MAGIC = b"!<arch>\n"
_HEADER = 60
# Members per archive: far above real static libraries (thousands of objects); each
# costs a header read and, for a possible ELF object, a reader.
MAX_MEMBERS = 200_000

# on_member(name, data offset, size, problem with the name or None)
OnMember = Callable[[str, int, int, "str | None"], None]


class ArReader:
    """Walks member headers; calls ``on_member(name, data_offset, size, problem)`` for each
    member (``problem``: why its long name is unknown, or None)."""

    def __init__(self, scan: Scan, size: int, on_member: OnMember,
                 budget: NameBudget | None = None) -> None:
        self.scan = scan
        self.size = size
        self.on_member = on_member
        self.budget = NameBudget() if budget is None else budget
        self._long_names = b""
        self._names: dict[int, tuple[str, str | None]] = {}  # long name offset -> name
        self.count = 0
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
        self.count += 1
        if self.count > MAX_MEMBERS:
            raise ArError(f"more than {MAX_MEMBERS} members")
        nxt = start + size + (size & 1)
        if raw == "//":
            def take(b: bytes) -> None:
                self._long_names = b
                self._names = {}
            if size:
                self.scan.request(start, size, take)
        elif raw in ("/", "/SYM64/", "__.SYMDEF", "__.SYMDEF SORTED"):
            pass  # symbol index
        else:
            problem = None
            if raw.startswith("/") and raw[1:].isdigit():
                name, problem = self._long_name(int(raw[1:]))
                # Each member's path holds its own copy of the name: charged per member,
                # so a million members sharing one long name cost no more than the budget.
                if self.budget.left < len(name):
                    name, problem = raw, (f"names: more than {self.budget.limit} bytes "
                                          "decoded; the rest are not read")
                self.budget.left -= len(name)
            elif raw.startswith("#1/") and raw[3:].isdigit():
                # BSD: the name is the first N bytes of the data; rare here, named as-is.
                name = raw
            else:
                name = raw[:-1] if raw.endswith("/") else raw
            self.on_member(name, start, size, problem)
        self._next(nxt)

    def _long_name(self, off: int) -> tuple[str, str | None]:
        """The GNU long name at ``off`` (ends at "/\\n"), once per offset, at most MAX_NAME
        bytes; (the raw "/N", the problem) when it cannot be read."""
        hit = self._names.get(off)
        if hit is not None:
            return hit
        table = self._long_names
        out: tuple[str, str | None]
        if off >= len(table):
            out = (f"/{off}", f"member name /{off} lies outside the long-name table "
                   f"({len(table)} bytes)")
        else:
            end = table.find(b"/\n", off, off + MAX_NAME + 2)
            stop = end if end >= 0 else min(len(table), off + MAX_NAME)
            name = table[off:stop].decode("latin-1")
            problem = None
            if end < 0 and off + MAX_NAME < len(table):
                name += "..."
                problem = f"member name /{off} is longer than {MAX_NAME} bytes (cut)"
            out = (name, problem)
        self._names[off] = out
        return out
