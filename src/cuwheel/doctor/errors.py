"""Run-time CUDA error texts, as users paste them, mapped to causes, codes and the command
that finds the culprit (``data/errors.toml``; docs/doctor.md#error-texts).

The patterns are data; this module validates them when first used and matches a text
against them.  A text is cut at :data:`MAX_TEXT` characters, so a pasted log of any size
costs bounded time.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from cuwheel._validate import Checker
from cuwheel.errors import CatalogError

__all__ = ["MAX_TEXT", "ErrorMatch", "ErrorText", "error_texts", "match_errors"]

DATA_FILE = "errors.toml"
# A traceback is a few KiB; a whole CI log is cut, not scanned to its end.  Every known
# error is one line; a line is cut too, so that no pattern backtracks over a whole log.
MAX_TEXT = 256 << 10
MAX_LINE = 4096


@dataclass(frozen=True)
class ErrorText:
    """One known error: the pattern that recognises it and what it means."""

    id: str
    pattern: re.Pattern[str]
    title: str
    cause: str
    codes: tuple[str, ...]
    command: str


@dataclass(frozen=True)
class ErrorMatch:
    """A known error found in a text: which, the text matched, and what it names."""

    error: ErrorText
    matched: str
    library: str | None = None
    symbol: str | None = None


def _parse(data: dict[str, object]) -> tuple[ErrorText, ...]:
    from cuwheel.checks.codes import CODES
    from cuwheel.knowledge._load import read_meta, tables

    chk = Checker(DATA_FILE)
    read_meta(data, chk)
    for key in data.keys() - {"meta", "error"}:
        chk.problem(key, "unknown table")
    out: list[ErrorText] = []
    seen: set[str] = set()
    for i, raw in enumerate(tables(data, "error", chk)):
        where = f"[[error]] #{i + 1}"
        f = chk.fields(raw, where, {"id": str, "pattern": str, "title": str, "cause": str,
                                    "codes": list, "command": str})  # fmt: skip
        if len(f) != 6:
            continue
        where = f"[[error]] {f['id']}"
        if f["id"] in seen:
            chk.problem(where, "defined twice")
        seen.add(f["id"])
        try:
            pattern = re.compile(f["pattern"], re.IGNORECASE)
        except re.error as exc:
            chk.problem(where, f"pattern: {exc}")
            continue
        for group in pattern.groupindex:
            if group not in ("library", "symbol"):
                chk.problem(where, f"unknown group {group!r} (library, symbol)")
        for code in f["codes"]:
            if code not in CODES:
                chk.problem(where, f"unknown code {code!r}")
        if not f["command"].startswith("cuwheel "):
            chk.problem(where, "command must be a cuwheel command")
        out.append(ErrorText(f["id"], pattern, f["title"], " ".join(f["cause"].split()),
                             tuple(f["codes"]), f["command"]))  # fmt: skip
    if chk.problems:
        raise CatalogError(chk.problems)
    return tuple(out)


@functools.cache
def error_texts() -> tuple[ErrorText, ...]:
    """Every known error of ``data/errors.toml``, in file order (most specific first)."""
    from cuwheel.knowledge._load import read_data_file

    return _parse(read_data_file(DATA_FILE))


def match_errors(text: str) -> tuple[ErrorMatch, ...]:
    """The known errors in ``text``, in the data's order; a match that overlaps one found
    before it (the generic ``undefined symbol`` under nvJitLink's) is left out.  Empty when
    nothing is known: the caller says "no match", never a guess."""
    lines = [ln[:MAX_LINE] for ln in text[:MAX_TEXT].splitlines()]
    taken: list[tuple[int, int, int]] = []  # (line, start, end)
    out: list[ErrorMatch] = []
    for err in error_texts():
        found = next(((n, m) for n, line in enumerate(lines)
                      if (m := err.pattern.search(line)) is not None), None)  # fmt: skip
        if found is None:
            continue
        i, m = found
        if any(i == n and m.start() < end and start < m.end() for n, start, end in taken):
            continue
        taken.append((i, *m.span()))
        groups = m.groupdict()
        out.append(ErrorMatch(err, m[0], groups.get("library"), groups.get("symbol")))
    return tuple(out)
